import Dispatch
import Foundation
import JSONText
import Quire
import Synchronization

/// `quire-bench store`: how fast `DocumentStore` commits edits to disk and
/// opens a store with many documents. Every figure is on a real file with
/// the store's durability settings (WAL, `synchronous = FULL`): an edit
/// counts once its commit has returned.
public struct StoreBenchmark: Sendable {
    public struct Options: Sendable {
        /// Edits per measured run, per thread for the group commit.
        public var edits = 300
        /// Keystrokes per transaction when typing is batched.
        public var batch = 50
        /// Threads (each on its own document) for the group commit.
        public var threads = 8
        /// Documents in the store that is opened.
        public var documents = 1_000
        /// Measured runs after one warm-up run.
        public var runs = 5
        /// Where the store files are made (and removed): the disk measured.
        public var directory = NSTemporaryDirectory()

        public init() {}
    }

    public var options: Options
    /// Times of one run: `edits` single-keystroke edits, one commit each.
    public var single: Spread
    /// Times of one run: `edits` keystrokes, `batch` to a commit.
    public var batched: Spread
    /// Times of one run: `threads` threads making `edits` single edits each.
    public var group: Spread
    /// Opening the store of `documents` documents and listing them.
    public var open: Spread
    /// The same, then loading every document.
    public var openAndLoad: Spread

    public static func run(_ options: Options) throws -> StoreBenchmark {
        let scratch = options.directory + "/quire-bench-store-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var run = 0
        /// Times `body` on a fresh store file, once to warm up and `runs` times.
        func timedOnFreshStores(_ body: (DocumentStore) throws -> Void) throws -> Spread {
            var samples: [UInt64] = []
            for index in 0...options.runs {
                run += 1
                let path = "\(scratch)/run\(run).quire"
                defer { removeStoreFile(path) }
                let store = try DocumentStore(path: path)
                let start = DispatchTime.now().uptimeNanoseconds
                try body(store)
                if index > 0 { samples.append(DispatchTime.now().uptimeNanoseconds - start) }
            }
            return Spread(nanoseconds: samples)!
        }

        let single = try timedOnFreshStores { store in
            let (id, text) = try makeTextDocument(in: store)
            for _ in 0..<options.edits { try type(1, into: text, of: id, in: store) }
        }
        let batched = try timedOnFreshStores { store in
            let (id, text) = try makeTextDocument(in: store)
            for start in stride(from: 0, to: options.edits, by: options.batch) {
                try type(min(options.batch, options.edits - start), into: text, of: id, in: store)
            }
        }
        let group = try timedOnFreshStores { store in
            let documents = try (0..<options.threads).map { _ in try makeTextDocument(in: store) }
            try onThreads(documents.count) { thread in
                let (id, text) = documents[thread]
                for _ in 0..<options.edits { try type(1, into: text, of: id, in: store) }
            }
        }
        let (open, openAndLoad) = try measureOpening(path: "\(scratch)/documents.quire", options)
        return StoreBenchmark(options: options, single: single, batched: batched, group: group, open: open, openAndLoad: openAndLoad)
    }

    /// A document with an empty text object, created outside the timed part.
    private static func makeTextDocument(in store: DocumentStore) throws -> (DocumentID, ObjectID) {
        let id = try store.createDocument()
        return (id, try store.edit(id) { tx in try tx.putObject(.root, key: "text", kind: .text) })
    }

    /// One transaction of `keystrokes` keystrokes at the end of the text, as
    /// an editor records typing: one insert per key.
    private static func type(_ keystrokes: Int, into text: ObjectID, of id: DocumentID, in store: DocumentStore) throws {
        try store.edit(id) { tx in
            for _ in 0..<keystrokes { try tx.insertText(text, at: tx.document.textCount(text), "a") }
        }
    }

    /// Makes a store of `options.documents` small notes (a title and a body
    /// text of a few hundred characters, a few edits each), then times opening it.
    private static func measureOpening(path: String, _ options: Options) throws -> (Spread, Spread) {
        defer { removeStoreFile(path) }
        do {
            let store = try DocumentStore(path: path)
            let ids = try (0..<options.documents).map { _ in try store.createDocument() }
            // Several threads, so that the edits share disk syncs.
            try onThreads(options.threads) { thread in
                for id in stride(from: thread, to: ids.count, by: options.threads).map({ ids[$0] }) {
                    try store.edit(id) { tx in
                        try tx.put(.root, key: "title", .string("Note \(id)"))
                        try tx.insertText(tx.putObject(.root, key: "body", kind: .text), at: 0,
                                          String(repeating: "Some words of a note. ", count: 10))
                    }
                    try store.edit(id) { tx in try tx.put(.root, key: "pinned", .bool(true)) }
                }
            }
        }
        var open: [UInt64] = [], openAndLoad: [UInt64] = []
        for run in 0...options.runs {
            let start = DispatchTime.now().uptimeNanoseconds
            let store = try DocumentStore(path: path)
            let documents = try store.documents()
            let opened = DispatchTime.now().uptimeNanoseconds
            for document in documents { _ = try store.read(document.id) { $0.changeCount } }
            let loaded = DispatchTime.now().uptimeNanoseconds
            guard documents.count == options.documents else {
                throw StoreBenchmarkError(description: "the store lists \(documents.count) documents, not \(options.documents)")
            }
            if run > 0 {
                open.append(opened - start)
                openAndLoad.append(loaded - start)
            }
        }
        return (Spread(nanoseconds: open)!, Spread(nanoseconds: openAndLoad)!)
    }

    /// Runs `body(thread)` on `count` threads of their own (not a pool that
    /// would cap them at the number of cores: threads waiting for a disk sync
    /// are what group commit gathers) and rethrows the first error.
    private static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws {
        let done = DispatchGroup()
        let firstError = Mutex<(any Error)?>(nil)
        for thread in 0..<count {
            done.enter()
            Thread {
                do { try body(thread) } catch { firstError.withLock { $0 = $0 ?? error } }
                done.leave()
            }.start()
        }
        done.wait()
        if let error = firstError.withLock({ $0 }) { throw error }
    }

    private static func removeStoreFile(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }
}

public struct StoreBenchmarkError: Error, CustomStringConvertible {
    public var description: String
}

extension StoreBenchmark {
    /// The figures, in the order of the table: edits per second, then opening times.
    public var measures: [Measure] {
        let o = options
        return [
            Measure("single-edit commits, 1 thread", "edits/s", single.perSecond(o.edits)),
            Measure("typing batched \(o.batch) keys a commit", "edits/s", batched.perSecond(o.edits)),
            Measure("group commit, \(o.threads) threads", "edits/s", group.perSecond(o.edits * o.threads)),
            Measure("open a store of \(o.documents) documents", "ms", open),
            Measure("open it and load every document", "ms", openAndLoad),
        ]
    }

    /// The figures as an aligned table, one row per figure.
    public var table: String {
        func number(_ value: Double) -> String { String(format: value >= 100 ? "%.0f" : "%.2f", value) }
        let rows = [["measure", "unit", "median", "min", "max"]] + measures.map { measure in
            [measure.name, measure.unit, number(measure.median),
             measure.spread.map { number($0.lowerBound) } ?? "–", measure.spread.map { number($0.upperBound) } ?? "–"]
        }
        let widths = (0..<5).map { column in rows.map { $0[column].count }.max()! }
        return rows.map { row in
            row.enumerated().map { column, text in
                let padding = String(repeating: " ", count: widths[column] - text.count)
                return column < 2 ? text + padding : padding + text
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// One JSON object on one line.
    public var jsonLine: String {
        let o = options
        func round(_ value: Double) -> JSONValue { .double((value * 1000).rounded() / 1000) }
        let single = single.perSecond(o.edits)
        let batched = batched.perSecond(o.edits)
        let group = group.perSecond(o.edits * o.threads)
        return JSONValue.orderedObject([
            ("edits", .integer(o.edits)),
            ("batch", .integer(o.batch)),
            ("threads", .integer(o.threads)),
            ("documents", .integer(o.documents)),
            ("runs", .integer(o.runs)),
            ("singleEditsPerSecond", round(single.median)),
            ("singleEditsPerSecondMin", round(single.min)),
            ("singleEditsPerSecondMax", round(single.max)),
            ("batchedEditsPerSecond", round(batched.median)),
            ("batchedEditsPerSecondMin", round(batched.min)),
            ("batchedEditsPerSecondMax", round(batched.max)),
            ("groupEditsPerSecond", round(group.median)),
            ("groupEditsPerSecondMin", round(group.min)),
            ("groupEditsPerSecondMax", round(group.max)),
            ("openMs", round(open.median)),
            ("openMsMin", round(open.min)),
            ("openMsMax", round(open.max)),
            ("openAndLoadMs", round(openAndLoad.median)),
            ("openAndLoadMsMin", round(openAndLoad.min)),
            ("openAndLoadMsMax", round(openAndLoad.max)),
        ]).compact
    }
}
