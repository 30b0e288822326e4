import Quire
@testable import QuireSync
import QuireTestSupport
import Testing

/// The tokens file of `quire serve --tokens`, as an operator's editor or a
/// careless copy writes it. A file written from known tokens (any spacing,
/// comments, blank lines, LF, CRLF or CR line ends) must read back as
/// exactly those tokens; a damaged one must read as a file or be refused
/// naming a line it has, never trap. Run longer with
/// `QUIRE_FUZZ_SEEDS=5000 swift test --filter TokensFileFuzz`.
@Suite struct TokensFileFuzzTests {
    @Test func aFileWithCRLFLineEndsReadsOneTokenALine() throws {
        let tokens = try AccessTokens(parsing: "laptop rw\r\nphone ro groceries\r\n")
        #expect(tokens.byToken == [
            "laptop": Access(token: "laptop", canWrite: true),
            "phone": Access(token: "phone", canWrite: false, documents: ["groceries"]),
        ])
    }

    @Test func aWrittenFileReadsBackAsItsTokens() throws {
        for seed in 1...UInt64(fuzzSeedCount(default: 300)) {
            var rng = SeededGenerator(seed: seed)
            let (text, expected) = Self.randomFile(using: &rng)
            let read = try AccessTokens(parsing: text)
            #expect(read.byToken == expected, "seed \(seed): \(text.debugDescription)")
        }
    }

    @Test func aDamagedFileReadsOrNamesOneOfItsLines() throws {
        for seed in 1...UInt64(fuzzSeedCount(default: 300)) {
            var rng = SeededGenerator(seed: seed)
            var bytes = Array(Self.randomFile(using: &rng).text.utf8)
            guard !bytes.isEmpty else { continue }
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let index = Int.random(in: 0..<bytes.count, using: &rng)
                bytes[index] = [UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: " "), UInt8(ascii: "#"), 0, 0xFF,
                                UInt8.random(in: 0...255, using: &rng)].randomElement(using: &rng)!
            }
            // As `quire serve` reads the file.
            let text = String(decoding: bytes, as: UTF8.self)
            do {
                _ = try AccessTokens(parsing: text)
            } catch {
                let lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).count
                #expect((1...lines).contains(error.line), "seed \(seed): \(error) in a file of \(lines) lines")
                #expect(!error.reason.isEmpty, "seed \(seed): a refusal without a reason")
            }
        }
    }

    /// A tokens file of up to eight tokens, and what it grants.
    static func randomFile(using rng: inout SeededGenerator) -> (text: String, expected: [String: Access]) {
        let lineEnd = ["\n", "\r\n", "\r"].randomElement(using: &rng)!
        let space = { (rng: inout SeededGenerator) in [" ", "  ", "\t", " \t "].randomElement(using: &rng)! }
        let word = { (rng: inout SeededGenerator) in
            String((0..<Int.random(in: 1...12, using: &rng)).map { _ in "abcdefXYZ0123456789-_.é😀".randomElement(using: &rng)! })
        }
        var lines: [String] = []
        var expected: [String: Access] = [:]
        for _ in 0..<Int.random(in: 0...8, using: &rng) {
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: lines.append(Bool.random(using: &rng) ? "" : space(&rng))
            case 1: lines.append("#" + word(&rng) + space(&rng) + word(&rng))
            default:
                let token = word(&rng)
                guard expected[token] == nil else { continue }
                let canWrite = Bool.random(using: &rng)
                let documents = Bool.random(using: &rng) ? nil : Set((0..<Int.random(in: 1...3, using: &rng)).map { _ in
                    DocumentID(rawValue: word(&rng))!
                })
                var line = (Bool.random(using: &rng) ? space(&rng) : "") + token + space(&rng) + (canWrite ? "rw" : "ro")
                for id in documents.map(Array.init) ?? [] { line += space(&rng) + id.rawValue }
                if Bool.random(using: &rng) { line += space(&rng) + "# " + word(&rng) }
                lines.append(line)
                expected[token] = Access(token: token, canWrite: canWrite, documents: documents)
            }
        }
        return (lines.joined(separator: lineEnd) + (Bool.random(using: &rng) ? lineEnd : ""), expected)
    }
}
