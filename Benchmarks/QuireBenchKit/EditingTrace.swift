import Foundation

/// One edit: at `position`, delete `deleteCount` scalars, then insert `inserted`.
/// Positions and counts are in Unicode scalars (code points), as in the trace files.
public struct Patch: Sendable, Equatable {
    public var position: Int
    public var deleteCount: Int
    /// The inserted text as the document API takes it.
    public var insertedText: String
    /// The same text as scalars, converted once at load time so that no replay
    /// pays for the conversion.
    public var inserted: [Unicode.Scalar]

    public init(position: Int, deleteCount: Int, insertedText: String) {
        self.position = position
        self.deleteCount = deleteCount
        self.insertedText = insertedText
        self.inserted = Array(insertedText.unicodeScalars)
    }

    /// Inserted plus deleted scalars: what a trace's `ops` counts.
    public var opCount: Int { deleteCount + inserted.count }
}

/// A trace typed by one person: transactions applied one after another.
public struct SequentialTrace: Sendable {
    public var endContent: String
    /// Each transaction's patches, to apply in order.
    public var txns: [[Patch]]
}

/// What a concurrent trace's merged text must be.
public enum ExpectedText: Sendable, Equatable {
    /// Exactly this text (the file's `endContent`).
    case exact(String)
    /// These scalars, in whatever order the CRDT gives inserts made
    /// concurrently at one place: Quire orders them by stamp, Yrs by client
    /// id, Loro by Fugue's rules, so no one text is right for every library.
    /// What is checked is that nothing was lost or duplicated. The file's
    /// `endContentSorted` holds the scalars in ascending order.
    case anyOrder(sortedScalars: String)

    /// `scalars` in the order `anyOrder` holds them: ascending by value.
    static func ascending(_ scalars: some Sequence<Unicode.Scalar>) -> [Unicode.Scalar] {
        scalars.sorted { $0.value < $1.value }
    }

    /// What is wrong with `text`, or nil when it is as expected.
    public func problem(with text: String) -> String? {
        switch self {
        case .exact(let expected):
            return scalarDifference(text.unicodeScalars, expected.unicodeScalars)
        case .anyOrder(let sorted):
            return scalarDifference(Self.ascending(text.unicodeScalars), sorted.unicodeScalars)
                .map { "sorted, \($0)" }
        }
    }
}

/// A trace typed by several agents at once: each transaction applies to the
/// merge of the states after its parents.
public struct ConcurrentTrace: Sendable {
    public struct Txn: Sendable {
        /// Indices of earlier transactions; empty means the empty document.
        public var parents: [Int]
        /// 0 ..< numAgents.
        public var agent: Int
        public var patches: [Patch]
    }
    public var expected: ExpectedText
    public var numAgents: Int
    /// The most agents a trace file may declare (the published traces have two).
    public static let maxAgents = 1024
    public var txns: [Txn]
}

/// A parsed editing trace (format: shared/traces/README.md).
public enum EditingTrace: Sendable {
    case sequential(SequentialTrace)
    case concurrent(ConcurrentTrace)

    public var kind: String {
        switch self {
        case .sequential: "sequential"
        case .concurrent: "concurrent"
        }
    }

    public var expected: ExpectedText {
        switch self {
        case .sequential(let trace): .exact(trace.endContent)
        case .concurrent(let trace): trace.expected
        }
    }

    public var txnCount: Int {
        switch self {
        case .sequential(let trace): trace.txns.count
        case .concurrent(let trace): trace.txns.count
        }
    }

    /// Inserted plus deleted scalars over the whole trace.
    public var opCount: Int {
        switch self {
        case .sequential(let trace): trace.txns.reduce(0) { $0 + $1.reduce(0) { $0 + $1.opCount } }
        case .concurrent(let trace): trace.txns.reduce(0) { $0 + $1.patches.reduce(0) { $0 + $1.opCount } }
        }
    }
}

/// Why a trace file could not be loaded; `description` names the file.
public struct TraceFileError: Error, CustomStringConvertible {
    public var path: String
    public var problem: String
    public var description: String { "\(path): \(problem)" }
}

extension EditingTrace {
    /// Reads, gunzips (for a `.gz` name) and parses a trace file.
    public static func load(path: String) throws(TraceFileError) -> EditingTrace {
        func fail(_ problem: String) -> TraceFileError { TraceFileError(path: path, problem: problem) }
        guard FileManager.default.fileExists(atPath: path) else { throw fail("no such file") }
        guard let data = FileManager.default.contents(atPath: path) else { throw fail("cannot read the file") }
        var bytes = [UInt8](data)
        if path.hasSuffix(".gz") {
            do { bytes = try Gzip.decompress(bytes) } catch { throw fail(error.description) }
        }
        // The JSON parser's "unexpected end of file" would read as a file cut short.
        guard !bytes.isEmpty else { throw fail("the file is empty") }
        do { return try parse(json: bytes) } catch { throw fail(error.description) }
    }

    /// Parses and validates a trace's JSON text.
    public static func parse(json: [UInt8]) throws(TraceFormatError) -> EditingTrace {
        let file: TraceJSON
        do {
            file = try JSONDecoder().decode(TraceJSON.self, from: Data(json))
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                throw TraceFormatError(description: "invalid JSON (\(syntaxErrorDetail(json) ?? context.debugDescription))")
            }
            throw TraceFormatError(describing: error)
        } catch {
            throw TraceFormatError(description: "invalid JSON (\(error))")
        }
        return try file.validated()
    }
}

/// What is wrong with text that is not JSON, with its position. `JSONDecoder`
/// only says "not valid JSON"; `JSONSerialization` says where, so ask it,
/// on this error path only.
private func syntaxErrorDetail(_ json: [UInt8]) -> String? {
    do {
        _ = try JSONSerialization.jsonObject(with: Data(json), options: .fragmentsAllowed)
        return nil
    } catch {
        return (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
    }
}

/// Why a trace's JSON is not a valid trace.
public struct TraceFormatError: Error, CustomStringConvertible {
    public var description: String

    /// Turns a decoder error about the JSON's shape into one line that says
    /// where in the file the problem is.
    init(describing error: DecodingError) {
        func path(_ context: DecodingError.Context) -> String {
            let components = context.codingPath.map { key in key.intValue.map { "[\($0)]" } ?? ".\(key.stringValue)" }
            return components.isEmpty ? "the top level" : String(components.joined().drop { $0 == "." })
        }
        switch error {
        case .dataCorrupted(let context):
            description = "bad value at \(path(context)): \(context.debugDescription)"
        case .keyNotFound(let key, let context):
            description = "missing key \"\(key.stringValue)\" at \(path(context))"
        case .typeMismatch(let type, let context):
            description = "wrong type at \(path(context)): expected \(type)"
        case .valueNotFound(let type, let context):
            description = "missing value at \(path(context)): expected \(type)"
        @unknown default:
            description = "\(error)"
        }
    }

    init(description: String) { self.description = description }
}

/// The JSON exactly as written in the file; `validated()` turns it into an `EditingTrace`.
private struct TraceJSON: Decodable {
    struct Txn: Decodable {
        var parents: [Int]?
        var agent: Int?
        var patches: [PatchJSON]
    }
    var kind: String?
    var startContent: String?
    /// A sequential trace has `endContent`; a concurrent one has it or
    /// `endContentSorted` (`ExpectedText.anyOrder`).
    var endContent: String?
    var endContentSorted: String?
    var numAgents: Int?
    var txns: [Txn]

    func validated() throws(TraceFormatError) -> EditingTrace {
        func fail(_ problem: String) -> TraceFormatError { TraceFormatError(description: problem) }
        func patches(of txn: Txn, at index: Int) throws(TraceFormatError) -> [Patch] {
            for (patchIndex, patch) in txn.patches.enumerated() where patch.position < 0 || patch.deleteCount < 0 {
                throw fail("txns[\(index)].patches[\(patchIndex)]: negative position or delete count")
            }
            return txn.patches.map { Patch(position: $0.position, deleteCount: $0.deleteCount, insertedText: $0.inserted) }
        }

        switch kind {
        case nil:
            // The replay starts from an empty document, as the format says.
            guard startContent?.isEmpty ?? true else { throw fail("startContent must be empty") }
            guard let endContent else { throw fail(#"missing key "endContent" at the top level"#) }
            guard endContentSorted == nil else { throw fail("endContentSorted is for concurrent traces only") }
            var txns: [[Patch]] = []
            txns.reserveCapacity(self.txns.count)
            for (index, txn) in self.txns.enumerated() { txns.append(try patches(of: txn, at: index)) }
            return .sequential(SequentialTrace(endContent: endContent, txns: txns))

        case "concurrent":
            guard let numAgents, numAgents > 0 else { throw fail("numAgents must be a positive integer") }
            // The replay keeps a replica per agent and its plan a table of
            // agents by agents: a hostile count would take all memory.
            guard numAgents <= ConcurrentTrace.maxAgents else {
                throw fail("numAgents must be at most \(ConcurrentTrace.maxAgents), not \(numAgents)")
            }
            let expected: ExpectedText
            switch (endContent, endContentSorted) {
            case (let text?, nil): expected = .exact(text)
            case (nil, let sorted?):
                guard sorted.unicodeScalars.elementsEqual(ExpectedText.ascending(sorted.unicodeScalars)) else {
                    throw fail("endContentSorted must list its scalars in ascending order")
                }
                expected = .anyOrder(sortedScalars: sorted)
            case (nil, nil): throw fail(#"missing key "endContent" (or "endContentSorted") at the top level"#)
            case (_?, _?): throw fail("a concurrent trace has endContent or endContentSorted, not both")
            }
            var txns: [ConcurrentTrace.Txn] = []
            txns.reserveCapacity(self.txns.count)
            for (index, txn) in self.txns.enumerated() {
                guard let agent = txn.agent, (0..<numAgents).contains(agent) else {
                    throw fail("txns[\(index)].agent must be an integer in 0..<\(numAgents)")
                }
                guard let parents = txn.parents, parents.allSatisfy({ (0..<index).contains($0) }) else {
                    throw fail("txns[\(index)].parents must list indices of earlier transactions")
                }
                txns.append(ConcurrentTrace.Txn(parents: parents, agent: agent, patches: try patches(of: txn, at: index)))
            }
            return .concurrent(ConcurrentTrace(expected: expected, numAgents: numAgents, txns: txns))

        case let other?:
            throw fail("unknown kind \"\(other)\" (expected \"concurrent\" or no kind for a sequential trace)")
        }
    }
}

/// `[position, numDeleted, insertedText]`.
private struct PatchJSON: Decodable {
    var position: Int
    var deleteCount: Int
    var inserted: String

    init(from decoder: any Decoder) throws {
        var fields = try decoder.unkeyedContainer()
        position = try fields.decode(Int.self)
        deleteCount = try fields.decode(Int.self)
        inserted = try fields.decode(String.self)
        guard fields.isAtEnd else {
            throw DecodingError.dataCorruptedError(in: fields, debugDescription: "a patch has exactly 3 elements")
        }
    }
}
