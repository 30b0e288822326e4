import Testing
@testable import QuireCore

/// A document's own history goes into bundles as it grows (every
/// `bundleSize` changes, lowered here to 3) and reads back exactly as
/// the same history held decoded.
@Suite struct ChangeHistoryTests {
    /// The same edits made on a document that bundles its history every 3
    /// records (`bundled`) and on one that keeps it decoded (`decoded`):
    /// typing, deleting and inserting in one change, multi-byte scalars, a
    /// list and a map, and changes of a second replica applied one by one.
    /// `versions` holds the version after each step.
    struct Twins {
        var bundled = Document(replica: ReplicaID(0xA))
        var decoded = Document(replica: ReplicaID(0xA))
        var versions: [VersionVector] = []
        var text = ObjectID.root

        init() throws {
            bundled.history.bundleSize = 3
            var other = Document(replica: ReplicaID(0xB))
            let (text, list) = try transact { tx in
                (try tx.putObject(.root, key: "text", kind: .text), try tx.putObject(.root, key: "list", kind: .list))
            }
            self.text = text
            try other.apply(bundled.allChanges())
            for step in 0..<20 {
                try transact { tx in try tx.insertText(text, at: step, step % 5 == 0 ? "é😀" : "x") }
                if step % 4 == 1 {
                    try transact { tx in
                        try tx.deleteText(text, at: 1, count: 2)
                        try tx.insertText(text, at: 1, "ab")
                        try tx.insert(list, at: 0, .int(Int64(step)))
                        try tx.put(.root, key: "step", .int(Int64(step)))
                    }
                }
                if step % 6 == 2 {
                    try other.apply(bundled.changes(since: other.versionVector))
                    try other.transact { tx in try tx.insertText(text, at: 0, "B") }
                    for change in try other.changes(since: bundled.versionVector) {
                        try bundled.apply([change])
                        try decoded.apply([change])
                        versions.append(bundled.versionVector)
                    }
                }
            }
        }

        private mutating func transact<Result>(_ body: (inout Transaction) throws -> Result) throws -> Result {
            _ = try decoded.transact(body)
            let result = try bundled.transact(body)
            versions.append(bundled.versionVector)
            return result
        }
    }

    @Test func aBundledHistoryReadsBackAsTheDecodedOne() throws {
        let twins = try Twins()
        let (bundled, decoded) = (twins.bundled, twins.decoded)
        #expect(bundled.history.bundles.count > 5)
        #expect(bundled.history.records.count < 3)
        #expect(try bundled.allChanges() == decoded.allChanges())
        for version in [VersionVector()] + twins.versions {
            #expect(try bundled.changes(since: version) == decoded.changes(since: version))
            #expect(try bundled.changes(from: VersionVector(), to: version) == decoded.changes(from: VersionVector(), to: version))
        }
        for replica in bundled.versionVector.replicas {
            for counter in 1...(bundled.versionVector[replica] + 1) {
                let id = OpID(replica: replica, counter: counter)
                #expect(try bundled.history.change(containing: id, bundled.objects) == decoded.history.change(containing: id, decoded.objects))
            }
        }
        // Each bundle's version is exactly that of its changes and those
        // before it, both replicas' changes interleaved.
        let all = try decoded.allChanges()
        var version = VersionVector()
        var bundledCount = 0
        for bundle in bundled.history.bundles {
            for change in all[bundledCount..<bundledCount + bundle.count] {
                version[change.replica] = max(version[change.replica], change.lastID.counter)
            }
            bundledCount += bundle.count
            #expect(bundle.version == version)
        }
        // The bundles leave the text out: the state holds it.
        #expect(bundled.history.bundles.allSatisfy { ChangeEncoding.elidesText(checked: $0.bytes) })
        #expect(try ChangeEncoding.decode(bundled.encodeChanges()) == decoded.allChanges())

        let loaded = try Document(snapshot: bundled.encodeSnapshot(), replica: ReplicaID(0xC))
        #expect(try loaded.allChanges() == decoded.allChanges())
        #expect(loaded.encodeSnapshot(includeHistory: false) == decoded.encodeSnapshot(includeHistory: false))
    }

    /// A peer sends the whole history again, to the document and to one
    /// loaded from its snapshot (whose bundles all carry the snapshot's
    /// version): in one call, whose duplicates share the bundles decoded
    /// to compare them, every change is found held and equal, and a change
    /// that reuses a held id with other content is still caught after the
    /// genuine ones before it.
    @Test func aHistorySentAgainIsFoundHeldChangeByChange() throws {
        let twins = try Twins()
        let all = try twins.decoded.allChanges()
        let loaded = try Document(snapshot: twins.bundled.encodeSnapshot(), replica: ReplicaID(0xC))
        for doc in [twins.bundled, loaded] {
            var again = doc
            #expect(try again.apply(all) == 0)
            #expect(again.encodeSnapshot() == doc.encodeSnapshot())
            for index in stride(from: 1, to: all.count, by: 5) {
                var forged = all[index]
                forged.time += 1
                var target = doc
                #expect(throws: DocumentError.conflictingChange(forged.id)) { try target.apply(all[..<index] + [forged]) }
            }
        }
    }

    /// The change just made is held decoded, even when it filled the records.
    /// (Each keystroke has its own time, so that each has its own record.)
    @Test func theLastChangeIsTheOneJustMade() throws {
        var doc = Document(replica: ReplicaID(1))
        doc.history.bundleSize = 2
        let text = try doc.transact { tx in try tx.putObject(.root, key: "t", kind: .text) }
        for index in 0..<7 {
            try doc.transact(time: Int64(index)) { tx in try tx.insertText(text, at: index, "x") }
            let last = try #require(doc.lastChange)
            #expect(last.lastID == OpID(replica: ReplicaID(1), counter: doc.versionVector[ReplicaID(1)]))
            #expect(last.operations == [.insert(object: text, origin: index == 0 ? nil : OpID(replica: ReplicaID(1), counter: UInt64(index + 1)),
                                                content: .text("x"))])
        }
        #expect(doc.history.bundles.count == 7)
    }

    /// Changes that each start a record (here, typing at the front) are
    /// bundled once they fill `recordsPerBundle` records, long before they
    /// reach `changesPerBundle` changes, and read back as they were made.
    @Test func manyRecordsGoIntoABundleBeforeManyChangesDo() throws {
        var doc = Document(replica: ReplicaID(1))
        let text = try doc.transact { tx in try tx.putObject(.root, key: "t", kind: .text) }
        var made = try doc.allChanges()
        for _ in 0..<(ChangeHistory.recordsPerBundle + 10) {
            try doc.transact { tx in try tx.insertText(text, at: 0, "x") }
            made.append(try #require(doc.lastChange))
        }
        #expect(doc.history.bundles.count == 1)
        #expect(doc.history.records.count < 20)
        #expect(try doc.allChanges() == made)
    }

    /// A transaction that throws is undone by replaying the history, bundles included.
    @Test func aThrowingTransactionAfterBundlingLeavesTheDocumentAsItWas() throws {
        let twins = try Twins()
        var doc = twins.bundled
        #expect(throws: DocumentError.self) {
            try doc.transact { tx in
                try tx.insertText(twins.text, at: 0, "lost")
                try tx.deleteText(twins.text, at: 0, count: 10_000)
            }
        }
        #expect(doc.encodeSnapshot(includeHistory: false) == twins.decoded.encodeSnapshot(includeHistory: false))
        #expect(try doc.allChanges() == twins.decoded.allChanges())
    }
}

/// Keystrokes typed one after another go into one record
/// (`ChangeHistory.Record.keystrokes`) and read back as the changes they were.
@Suite struct KeystrokeRunTests {
    /// Edits at the end of a text, with the changes they must make written
    /// out independently of the history: typing runs of ASCII, two-byte and
    /// four-byte scalars, broken by a two-scalar insert, a backspace, a
    /// change of time and a transaction of two operations, and a keystroke
    /// in a transaction that throws; runs of backspaces and of the delete
    /// key, broken where the next element was not typed next to the last.
    struct Session {
        static let replica = ReplicaID(7)
        var doc = Document(replica: replica)
        var expected: [Change] = []
        var visible: [OpID] = []
        /// The id of the last put of the key "round", which the next one overwrites.
        var lastPut: OpID?
        let text: ObjectID

        init(bundleSize: Int) throws {
            doc.history.bundleSize = bundleSize
            text = try doc.transact { tx in try tx.putObject(.root, key: "text", kind: .text) }
            expected = try doc.allChanges()
            for round in 0..<12 {
                for key in ["a", "b", "é", "c", "👋", "d"] { try type(key, time: Int64(round / 4)) }
                if round % 3 == 0 { try type("e\u{301}", time: Int64(round / 4)) }
                // Backspaces over what was just typed, at times into what was typed before.
                if round % 2 == 1 { for _ in 0..<(round % 4 == 1 ? 1 : round == 7 ? 16 : 4) { try backspace(time: Int64(round / 4)) } }
                // The delete key, in what was typed this round and the one before.
                if round % 3 == 2 {
                    let index = visible.count - 12
                    for _ in 0..<(round == 8 ? 9 : 3) { try delete(at: index, time: Int64(round / 4)) }
                }
                if round % 4 == 2 {
                    // A keystroke that would go on the run, in a transaction that throws: no change.
                    let (text, end, before) = (text, visible.count, doc.encodeSnapshot())
                    #expect(throws: DocumentError.self) {
                        try doc.transact(time: Int64(round / 4)) { tx in
                            try tx.insertText(text, at: end, "z")
                            try tx.deleteText(text, at: 0, count: end + 2)
                        }
                    }
                    #expect(doc.encodeSnapshot() == before)
                }
                if round % 5 == 4 {
                    let (text, end, origin, pred) = (text, visible.count, visible.last, lastPut.map { [$0] } ?? [])
                    try record(time: 99, { tx in
                        try tx.insertText(text, at: end, "x")
                        try tx.put(.root, key: "round", .int(Int64(round)))
                    }, operations: { id in
                        [.insert(object: text, origin: origin, content: .text("x")),
                         .put(object: .root, key: "round", value: .scalar(.int(Int64(round))), pred: pred)]
                    }, typed: 1)
                    lastPut = OpID(replica: Self.replica, counter: doc.versionVector[Self.replica])
                }
            }
        }

        private var nextID: OpID { OpID(replica: Self.replica, counter: doc.versionVector[Self.replica] + 1) }

        mutating func type(_ key: String, time: Int64) throws {
            let (text, end, origin) = (text, visible.count, visible.last)
            try record(time: time, { tx in try tx.insertText(text, at: end, key) },
                       operations: { _ in [.insert(object: text, origin: origin, content: .text(key))] },
                       typed: key.unicodeScalars.count)
        }

        mutating func backspace(time: Int64) throws {
            try delete(at: visible.count - 1, time: time)
        }

        mutating func delete(at index: Int, time: Int64) throws {
            let target = visible.remove(at: index)
            let text = text
            try record(time: time, { tx in try tx.deleteText(text, at: index, count: 1) },
                       operations: { _ in [.delete(object: text, target: IDRun(start: target, length: 1))] }, typed: 0)
        }

        /// Runs `edit` as one transaction and notes the change it must make.
        private mutating func record(time: Int64, _ edit: (inout Transaction) throws -> Void,
                                     operations: (OpID) -> [Operation], typed: Int) throws {
            let id = nextID
            let change = Change(id: id, lamport: doc.maxLamport + 1, parents: doc.heads, time: time, operations: operations(id))
            try doc.transact(time: time, edit)
            // Keep the model in step: the ids typed are the change's first.
            visible += (0..<typed).map { id.advanced(by: UInt64($0)) }
            #expect(doc.lastChange == change)
            expected.append(change)
        }
    }

    @Test(arguments: [3, ChangeHistory.changesPerBundle])
    func keystrokesReadBackAsTheChangesTheyWere(bundleSize: Int) throws {
        let session = try Session(bundleSize: bundleSize)
        let (doc, expected) = (session.doc, session.expected)
        #expect(doc.changeCount == expected.count)
        #expect(try doc.allChanges() == expected)
        if doc.history.bundles.isEmpty {
            // Typing runs share records: far fewer records than changes.
            #expect(doc.history.records.count < expected.count / 2)
        } else {
            // A run stops at `bundleSize` keystrokes, so that no bundle holds
            // much more than `bundleSize` changes (a decoding limit).
            #expect(doc.history.bundles.allSatisfy { $0.count < 2 * bundleSize })
            #expect(doc.history.bundles.contains { $0.count > bundleSize })
        }
        for cut in stride(from: 0, through: expected.count, by: 7) {
            var version = VersionVector()
            for change in expected[..<cut] { version[change.replica] = change.lastID.counter }
            #expect(try doc.changes(since: version) == Array(expected[cut...]))
            #expect(try doc.changes(from: VersionVector(), to: version) == Array(expected[..<cut]))
        }
        for change in expected {
            for counter in change.counters {
                #expect(try doc.history.change(containing: OpID(replica: change.replica, counter: counter), doc.objects) == change)
            }
        }
        #expect(try ChangeEncoding.decode(doc.encodeChanges()) == expected)
        let loaded = try Document(snapshot: doc.encodeSnapshot(), replica: ReplicaID(8))
        #expect(try loaded.allChanges() == expected)

        // A replica applying the changes one by one holds them the same way.
        var remote = Document(replica: ReplicaID(9))
        remote.history.bundleSize = bundleSize
        for change in expected { try remote.apply([change]) }
        #expect(try remote.allChanges() == expected)
        #expect(remote.history.records.count == doc.history.records.count)
        #expect(try remote.text(session.text) == doc.text(session.text))
    }
}
