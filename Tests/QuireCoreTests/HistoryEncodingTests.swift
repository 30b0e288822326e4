import Testing
import QuireTestSupport
@testable import QuireCore

/// `Document.encodeChanges(since:)` writes a history straight from its
/// bundles and records (`ChangeHistory.encodedWithText`): the bytes must be
/// exactly those that encoding the history's `Change` values, regrouped by
/// replica, gives, from every form a history is held in, whole or from any
/// version on.
@Suite struct HistoryEncodingTests {
    /// What encoding the history change by change gives.
    static func encodedFromChanges(_ doc: Document, since version: VersionVector? = nil) throws -> [UInt8] {
        ChangeEncoding.encode(try doc.changes(since: version ?? doc.history.start).groupedByReplica())
    }

    /// Checks that `doc`'s history written straight is the one written from
    /// its changes, whole and from versions that cut it anywhere (after
    /// every few changes, and at every few counters of each replica, inside
    /// runs of typing), and that a fresh replica applying it gets `doc`'s state.
    static func expectSameBytes(_ doc: Document, _ comment: Comment) throws {
        let direct = try doc.history.encodedWithText(from: doc.history.start, doc.objects)
        #expect(direct == (try encodedFromChanges(doc)), comment)
        #expect(try doc.encodeChanges(since: doc.history.start) == direct, comment)
        var cuts: [VersionVector] = []
        var version = doc.history.start
        for (index, change) in try doc.changes(since: doc.history.start).enumerated() {
            version[change.replica] = change.lastID.counter
            if index % 11 == 2 { cuts.append(version) }
        }
        for replica in doc.versionVector.replicas {
            for counter in stride(from: doc.history.start[replica], through: doc.versionVector[replica], by: 7) {
                var cut = doc.history.start
                cut[replica] = counter
                cuts.append(cut)
            }
        }
        for cut in cuts {
            #expect(try doc.encodeChanges(since: cut) == (try encodedFromChanges(doc, since: cut)), "\(comment) since \(cut)")
        }
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

    /// Writers taking turns, each typing after merging the other's turn:
    /// their changes interleave, in the order `groupedByReplica` keeps.
    @Test func writersTakingTurnsAreWrittenAsTheirChangesWouldBe() throws {
        var docs = [Document(replica: ReplicaID(1)), Document(replica: ReplicaID(2))]
        docs[0].history.bundleSize = 7
        let text = try docs[0].transact { tx in try tx.putObject(.root, key: "text", kind: .text) }
        for turn in 0..<12 {
            let (writer, reader) = (turn % 2, 1 - turn % 2)
            try docs[writer].apply(docs[reader].changes(since: docs[writer].versionVector))
            for index in 0..<(3 + turn) {
                try docs[writer].transact { tx in try tx.insertText(text, at: index, turn % 3 == 0 ? "ö" : "t") }
            }
        }
        try docs[0].apply(docs[1].changes(since: docs[0].versionVector))
        #expect(docs[0].history.bundles.count > 3)
        try Self.expectSameBytes(docs[0], "turns")
    }

    /// A writer's change that names only changes applied before its
    /// writer's run ended does not wait: grouped, it moves up to that run.
    /// One that names a change applied after the run ended keeps its place.
    @Test func aChangeThatNeedNotWaitIsRegrouped() throws {
        var setup = Document(replica: ReplicaID(9))
        let text = try setup.transact { tx in try tx.putObject(.root, key: "text", kind: .text) }
        var (a, b, c) = (Document(replica: ReplicaID(1)), Document(replica: ReplicaID(2)), Document(replica: ReplicaID(3)))
        try a.apply(setup.allChanges())
        try b.apply(setup.allChanges())
        try c.apply(setup.allChanges())
        try b.transact { tx in try tx.insertText(text, at: 0, "b") }
        try a.transact { tx in try tx.insertText(text, at: 0, "a") }
        // c takes b's, then a's change, types, and takes a's next one, which merged b's.
        try c.apply(b.changes(since: c.versionVector))
        let aFirst = try a.changes(since: c.versionVector)
        try c.apply(aFirst)
        try c.transact { tx in try tx.insertText(text, at: 0, "c") }
        try a.apply(b.changes(since: a.versionVector))
        try a.transact { tx in try tx.insertText(text, at: 0, "A") }
        try c.apply(a.changes(since: c.versionVector))
        #expect(try c.allChanges().map(\.id.replica) == [9, 2, 1, 3, 1].map { ReplicaID(UInt64($0)) })
        try Self.expectSameBytes(c, "a's second change need not wait")
        #expect(try ChangeEncoding.decode(c.encodeChanges()).map(\.id.replica) == [9, 2, 1, 1, 3].map { ReplicaID(UInt64($0)) })

        // Taken after a's first change and d's own, b's change is written
        // after a's run ended, and a's next change, which names it, waits.
        var d = Document(replica: ReplicaID(4))
        try d.apply(setup.allChanges())
        try d.apply(aFirst)
        try d.transact { tx in try tx.insertText(text, at: 0, "d") }
        try d.apply(b.changes(since: d.versionVector))
        try d.apply(a.changes(since: d.versionVector))
        #expect(try d.allChanges().map(\.id.replica) == [9, 1, 4, 2, 1].map { ReplicaID(UInt64($0)) })
        try Self.expectSameBytes(d, "a's second change waits for b's")
        #expect(try ChangeEncoding.decode(d.encodeChanges()).map(\.id.replica) == [9, 1, 4, 2, 1].map { ReplicaID(UInt64($0)) })
    }

    /// Histories of writers editing concurrently, applied as they met,
    /// some of which grouping reorders.
    @Test func concurrentWritersAreWrittenInTheGroupedOrder() throws {
        var reordered = 0
        for (seed, replicas) in [(3, 2), (4, 3), (6, 2), (7, 2), (8, 3), (9, 2)] as [(UInt64, Int)] {
            let doc = try BulkApplyTests.typedDocument(seed: seed, replicas: replicas)
            try Self.expectSameBytes(doc, "seed \(seed)")
            let changes = try doc.allChanges()
            let grouped = changes.groupedByReplica()
            if grouped != changes { reordered += 1 }
            // The same changes, each after its parents, with fewer switches between writers.
            #expect(Set(grouped.map(\.id)) == Set(changes.map(\.id)))
            var written = Set<OpID>()
            for change in grouped {
                #expect(change.parents.allSatisfy(written.contains), "seed \(seed): \(change.id) before a parent")
                written.formUnion(change.counters.map { OpID(replica: change.replica, counter: $0) })
            }
            func switches(_ changes: [Change]) -> Int { zip(changes, changes.dropFirst()).filter { $0.replica != $1.replica }.count }
            #expect(switches(grouped) <= switches(changes), "seed \(seed)")
        }
        #expect(reordered > 0)
    }

    /// The decoder reuses one array for every change's parents: each
    /// change's read back, whether the count stays, grows or shrinks from
    /// the change before, implicit parents among them.
    @Test func parentsOfEveryCountReadBackChangeAfterChange() throws {
        let (a, b, c) = (ReplicaID(1), ReplicaID(2), ReplicaID(3))
        let parentLists: [[OpID]] = [
            [], [OpID(replica: a, counter: 1)], [OpID(replica: a, counter: 2)],
            [OpID(replica: a, counter: 3), OpID(replica: b, counter: 2)],
            [OpID(replica: a, counter: 4), OpID(replica: b, counter: 3)],
            [OpID(replica: b, counter: 5)], [OpID(replica: c, counter: 7)],
            [OpID(replica: a, counter: 6), OpID(replica: b, counter: 6), OpID(replica: c, counter: 8)],
            [OpID(replica: b, counter: 9)],
        ]
        var changes: [Change] = []
        for (index, parents) in parentLists.enumerated() {
            let id = OpID(replica: [a, b, c][index % 3], counter: UInt64(10 + index))
            changes.append(Change(id: id, lamport: UInt64(20 + index), parents: parents,
                                  operations: [.put(object: .root, key: "k", value: .scalar(.int(Int64(index))), pred: [])]))
        }
        // One that names the change before, and that alone: written as "implicit".
        changes.append(Change(id: OpID(replica: b, counter: 19), lamport: 29, parents: [changes[8].id],
                              operations: [.put(object: .root, key: "k", value: .scalar(.null), pred: [])]))
        #expect(try ChangeEncoding.decode(ChangeEncoding.encode(changes)).map(\.parents) == changes.map(\.parents))
    }

    /// A bundle finds each operation's key by comparing the few it names,
    /// or through a dictionary past `NotedKeys`' eight: keys noted before
    /// and after the ninth, spelled apart but canonically equivalent
    /// ("é" as one scalar and as two) among them, read back as written.
    /// Every other operation names its key by a string of the same bytes
    /// made apart, in a storage of its own: found by its bytes, not by
    /// the two words that find the string noted.
    @Test func everyKeyOfABundleReadsBackWhetherFewOrMany() throws {
        let keys = ["z", "\u{E9}", "e\u{301}", "a"] + (1...16).map { "key\($0)" }
        func madeApart(_ key: String) -> String {
            var copy = ""
            copy.reserveCapacity(32)  // not a small string, whatever its length
            copy.append(key)
            return copy
        }
        #expect(keys.allSatisfy { madeApart($0).hasSameBytes(as: $0) && !madeApart($0).hasSameBits(as: $0) })
        for keyCount in [1, 3, 8, 9, 20] {
            let named = Array(keys.prefix(keyCount))
            var changes: [Change] = []
            for index in 0..<3 * keyCount {
                // Each key is put, then removed, then put again, in an order that jumps about.
                let key = index % 2 == 0 ? named[(index * 7) % keyCount] : madeApart(named[(index * 7) % keyCount])
                let id = OpID(replica: ReplicaID(1), counter: UInt64(1 + index))
                let operation: Operation = index % 3 == 1
                    ? .remove(object: .root, key: key, pred: [])
                    : .put(object: .root, key: key, value: .scalar(.int(Int64(index))), pred: [])
                changes.append(Change(id: id, lamport: UInt64(1 + index), parents: changes.last.map { [$0.id] } ?? [],
                                      operations: [operation]))
            }
            let decoded = try ChangeEncoding.decode(ChangeEncoding.encode(changes))
            #expect(decoded.map(\.operations) == changes.map(\.operations), "\(keyCount) keys")
            // By their bytes: `String`'s == takes the two spellings of "é" for one.
            func keyBytes(_ changes: [Change]) -> [[UInt8]] {
                changes.flatMap(\.operations).map { operation in
                    switch operation {
                    case .put(_, let key, _, _), .remove(_, let key, _): Array(key.utf8)
                    default: []
                    }
                }
            }
            #expect(keyBytes(decoded) == keyBytes(changes), "\(keyCount) keys")
        }
    }

    /// Two writers' edits (`SnapshotVersionTests.sample()`), then one
    /// writer's typing, backspacing and typing inside what it typed, held
    /// in bundles of four changes and in records.
    static func smallHistory() throws -> Document {
        var (doc, text) = try SnapshotVersionTests.sample()
        doc.history.bundleSize = 4
        for (index, letter) in "typing".enumerated() {
            try doc.transact(time: 1_000) { tx in try tx.insertText(text, at: 4 + index, String(letter)) }
        }
        for _ in 0..<2 { try doc.transact(time: 1_040) { tx in try tx.deleteText(text, at: 9, count: 1) } }
        for (index, letter) in "in ß".enumerated() {
            try doc.transact(time: 1_080) { tx in try tx.insertText(text, at: 6 + index, String(letter)) }
        }
        return doc
    }

    /// `smallHistory()`'s `encodeChanges()` as the code of e32494d wrote it,
    /// in `QCHG` version 3: still read, as the same changes.
    static let smallHistoryBytesVersion3 = """
        5143484703ec01020a000000000000000b000000000000000305636f756e74046c69737404746578740f06040003011800021e00060400\
        030318000709010002031600040400030104071113040d060003d00f0a0007500050060006030704021801120700020004030700050204\
        040e02040408020a070001000401030022010d07000100040d090010010d1c010c0400030106020a010302060102080005090c03071506\
        030d1601030202040102080005091c132a21050501030401040702010002060000000203061a68c3a96c6c6f2077c3b6726c6421597479\
        70696e67696e20c39f0d080208010402060374776f08030b1d952b
        """

    /// `smallHistory()`'s `encodeChanges()` in `QCHG` version 5 (review177,
    /// origins as review177's follow-up writes them, the own replica's
    /// parent implied as review190 does).
    static let smallHistoryBytes = """
        5143484705e401020a000000000000000b000000000000000305636f756e74046c69737404746578740f050800050132023c0005080005\
        03320711010003042c0003090001030904000b0c0005d00f17500900500e06050708023001120d00020008030d00050208041c020804\
        1002090d00010008010500460d0d000100080d110010010d38010b080005010c02140105020e021000051105030c0606050d2c01050202\
        080102100005111c132a21050901030801040d020100020c0000000205061a68c3a96c6c6f2077c3b6726c642159747970696e67696e20\
        c39f0d080208010402060374776f080383920553
        """

    /// The bytes a history is written in are the format's, not only the
    /// same whichever way the history is held: pinned for a small one.
    @Test func aSmallHistorysBytesAreThoseWrittenBefore() throws {
        let doc = try Self.smallHistory()
        #expect(doc.history.bundles.count > 1 && doc.history.hasRecords)
        // Compared as hex, so that a failure shows the bytes written.
        func hex(_ bytes: [UInt8]) -> String { bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }
        let pinned = Self.smallHistoryBytes
        let loaded = try Document(snapshot: doc.encodeSnapshot(), replica: ReplicaID(0xC))
        let written = [try doc.encodeChanges(), try Self.encodedFromChanges(doc), try loaded.encodeChanges()].map(hex)
        #expect(written == [pinned, pinned, pinned])
        let version3 = try SnapshotVersionTests.bytes(Self.smallHistoryBytesVersion3)
        #expect(try ChangeEncoding.decode(version3) == ChangeEncoding.decode(try doc.encodeChanges()))
        // What a sync answers a client of a build before version 5 with is
        // what those builds wrote.
        let forOlderReaders = ChangeEncoding.encode(try doc.allChanges().groupedByReplica(), version: ChangeEncoding.olderReadersVersion)
        #expect(hex(forOlderReaders) == Self.smallHistoryBytesVersion3)
    }

    /// A snapshot's history may hold a caught-up bundle with its text, and
    /// its state is not made from that history: where the two disagree,
    /// encoding the history reports it rather than trapping.
    @Test func aStateWhoseTextIsNotTheHistorysIsReported() throws {
        var source = Document(replica: ReplicaID(1))
        let text = try source.transact { tx in try tx.putObject(.root, key: "t", kind: .text) }
        for index in 0..<30 { try source.transact { tx in try tx.insertText(text, at: 2 * index, "ab") } }
        var copy = Document(replica: ReplicaID(2))
        try copy.applyEncoded(source.encodeChanges())
        try copy.transact { tx in try tx.insertText(text, at: 0, "z") }
        var cut = VersionVector()
        cut[ReplicaID(1)] = 20
        #expect(try copy.encodeChanges(since: cut) == (try Self.encodedFromChanges(copy, since: cut)))
        // One letter typed after the cut becomes a scalar of two bytes.
        let slot = try #require(copy.objects.slots[text]).index
        copy.objects.texts[slot].content.bytes[40] = 0xE9
        for version in [VersionVector(), cut] {
            #expect(throws: DocumentError.self) { try copy.encodeChanges(since: version) }
        }
    }
}
