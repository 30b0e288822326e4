import Foundation
@testable import QuireBenchKit
import QuireTestSupport
import Testing

/// `bytes` compressed by the system's /bin/gzip, independent of our zlib use.
func gzipped(_ bytes: [UInt8]) throws -> [UInt8] {
    try withTemporaryDirectory { directory in
        let path = directory + "/data"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = [path]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path + ".gz")))
    }
}

@Suite struct GzipTests {
    let sample = Array((0..<200_000).map { "line \($0) of some text\n" }.joined().utf8)

    @Test func roundTripsWhatGzipMade() throws {
        let compressed = try gzipped(sample)
        #expect(compressed.count < sample.count / 4)
        #expect(try Gzip.decompress(compressed) == sample)
    }

    @Test func concatenatedMembersDecompressToTheirConcatenation() throws {
        let a = try gzipped(Array("first\n".utf8))
        let b = try gzipped(Array("second\n".utf8))
        #expect(try Gzip.decompress(a + b) == Array("first\nsecond\n".utf8))
    }

    @Test func rejectsDataThatIsNotGzip() {
        #expect(throws: GzipError(description: "not gzip data (no 1f 8b magic number)")) {
            try Gzip.decompress(Array("{\"txns\": []}".utf8))
        }
    }

    @Test func reportsTruncatedData() throws {
        let compressed = try gzipped(sample)
        let error = #expect(throws: GzipError.self) { try Gzip.decompress(Array(compressed.dropLast(100))) }
        #expect(error?.description.contains("truncated") == true)
    }

    @Test func reportsCorruptData() throws {
        var compressed = try gzipped(sample)
        for index in stride(from: 40, to: compressed.count - 40, by: 97) { compressed[index] ^= 0x5a }
        let error = #expect(throws: GzipError.self) { try Gzip.decompress(compressed) }
        #expect(error?.description.contains("corrupt gzip data") == true)
    }

    @Test func stopsAtTheOutputLimit() throws {
        let compressed = try gzipped(sample)
        let error = #expect(throws: GzipError.self) { try Gzip.decompress(compressed, outputLimit: 1000) }
        #expect(error?.description.contains("exceeds the limit of 1000 bytes") == true)
    }
}
