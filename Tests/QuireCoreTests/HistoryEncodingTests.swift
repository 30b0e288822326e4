import Testing
import QuireTestSupport
@testable import QuireCore

/// `Document.encodeChanges()` writes a whole history straight from its
/// bundles and records (`ChangeHistory.encodedWithText`): the bytes must be
/// exactly those that encoding the history's `Change` values gives, from
/// every form a history is held in.
@Suite struct HistoryEncodingTests {
    /// What encoding the history change by change gives.
    static func encodedFromChanges(_ doc: Document) throws -> [UInt8] {
        ChangeEncoding.encode(try doc.changes(since: doc.history.start).groupedByReplica())
    }

    /// Checks that `doc`'s history written straight is the one written from
    /// its changes, and that a fresh replica applying it gets `doc`'s state.
    static func expectSameBytes(_ doc: Document, _ comment: Comment) throws {
        let direct = try #require(try doc.history.encodedWithText(doc.objects), comment)
        #expect(direct == (try encodedFromChanges(doc)), comment)
        #expect(try doc.encodeChanges() == direct, comment)
        guard doc.history.start.isEmpty else { return }
        var fresh = Document(replica: ReplicaID(77))
        try fresh.applyEncoded(direct)
        #expect(fresh.encodeSnapshot(includeHistory: false) == doc.encodeSnapshot(includeHistory: false), comment)
    }

    /// One writer's edits: keystrokes, pastes of mixed widths, changes
    /// that type two letters each or alternate one wide scalar with two
    /// narrow ones (the same bytes, other scalars), replacements, and
    /// writes to a list, a map and a counter.
    static func edited(seed: UInt64, bundleSize: Int) throws -> (Document, text: ObjectID) {
        var rng = SeededGenerator(seed: seed)
        var doc = Document(replica: ReplicaID(5))
        doc.history.bundleSize = bundleSize
        let (text, list, counter) = try doc.transact { tx in
            (try tx.putObject(.root, key: "text", kind: .text), try tx.putObject(.root, key: "list", kind: .list),
             try tx.putObject(.root, key: "n", kind: .counter))
        }
        var time: Int64 = 1_700_000_000_000
        for _ in 0..<80 {
            time += Int64.random(in: 0...3, using: &rng) * 40
            let count = try doc.textCount(text)
            let position = Int.random(in: 0...count, using: &rng)
            switch Int.random(in: 0..<8, using: &rng) {
            case 0:
                try doc.transact(time: time) { tx in try tx.insertText(text, at: position, randomText(&rng, maxLength: 7)) }
            case 1:
                for step in 0..<Int.random(in: 2...9, using: &rng) {
                    try doc.transact(time: time + Int64(step)) { tx in try tx.insertText(text, at: position + 2 * step, "xy") }
                }
            case 2:
                for step in 0..<6 {
                    try doc.transact(time: time) { tx in try tx.insertText(text, at: position + (step + 1) / 2 * 3 - step % 2 * 2, step % 2 == 0 ? "é" : "ab") }
                }
            case 3 where count > 3:
                let start = Int.random(in: 0..<(count - 2), using: &rng)
                try doc.transact(time: time) { tx in
                    try tx.deleteText(text, at: start, count: 2)
                    try tx.insertText(text, at: start, randomText(&rng, maxLength: 3))
                }
            case 4 where count > 0:
                // Backspaces from the end, or the delete key at one place.
                let forward = Bool.random(using: &rng)
                for _ in 0..<min(count, Int.random(in: 1...6, using: &rng)) {
                    let now = try doc.textCount(text)
                    try doc.transact(time: time) { tx in try tx.deleteText(text, at: forward ? min(position, now - 1) : now - 1, count: 1) }
                }
            case 5:
                try doc.transact(time: time) { tx in
                    try tx.insert(list, at: 0, .int(Int64(position)))
                    try tx.put(.root, key: "k\(position % 3)", .string(randomText(&rng)))
                    try tx.increment(counter, by: 2)
                }
            default:
                for step in 0..<Int.random(in: 1...20, using: &rng) {
                    try doc.transact(time: time) { tx in try tx.insertText(text, at: position + step, randomText(&rng, maxLength: 1)) }
                }
            }
        }
        return (doc, text)
    }

    @Test(arguments: [(1, 3), (2, 5), (3, 1 << 14), (4, 64)] as [(UInt64, Int)])
    func aWritersOwnHistoryIsWrittenAsItsChangesWouldBe(seed: UInt64, bundleSize: Int) throws {
        let (doc, text) = try Self.edited(seed: seed, bundleSize: bundleSize)
        #expect(bundleSize > 100 || doc.history.bundles.count > 3)
        try Self.expectSameBytes(doc, "own history, seed \(seed)")

        // Loaded from its snapshot, the history is bundles that leave their text to the state.
        var loaded = try Document(snapshot: doc.encodeSnapshot(), replica: ReplicaID(5))
        #expect(try Self.encodedFromChanges(loaded) == (try Self.encodedFromChanges(doc)))
        try Self.expectSameBytes(loaded, "loaded, seed \(seed)")
        try loaded.transact { tx in try tx.insertText(text, at: 0, "after loading") }
        try Self.expectSameBytes(loaded, "loaded and edited, seed \(seed)")

        // Caught up from the whole history, a replica keeps the bundle with
        // its text, then records its own edits: those of a second writer.
        var other = Document(replica: ReplicaID(9))
        try other.applyEncoded(doc.encodeChanges())
        #expect(!other.history.bundles.isEmpty)
        for index in 0..<5 { try other.transact { tx in try tx.insertText(text, at: index, "ü") } }
        try other.transact { tx in try tx.deleteText(text, at: 0, count: 3) }
        try Self.expectSameBytes(other, "caught up and edited, seed \(seed)")
    }

    @Test func typedDocumentsOfOneWriterAreWrittenAsTheirChangesWouldBe() throws {
        for seed: UInt64 in 1...6 {
            try Self.expectSameBytes(try BulkApplyTests.typedDocument(seed: seed), "typed, seed \(seed)")
        }
    }

    /// Writers whose changes interleave are regrouped from `Change` values.
    @Test func interleavedWritersAreLeftToTheChanges() throws {
        let doc = try BulkApplyTests.typedDocument(seed: 3, replicas: 2)
        let replicas = try doc.allChanges().map(\.id.replica)
        #expect(zip(replicas, replicas.dropFirst()).filter { $0 != $1 }.count > 2)
        #expect(try doc.history.encodedWithText(doc.objects) == nil)
        #expect(try doc.encodeChanges() == (try Self.encodedFromChanges(doc)))
    }
}
