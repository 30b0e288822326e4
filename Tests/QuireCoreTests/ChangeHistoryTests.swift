import Testing
@testable import QuireCore

/// A document's own history goes into bundles as it grows (every
/// `recordsPerBundle` records, lowered here to 3) and reads back exactly as
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
            bundled.history.recordsPerBundle = 3
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

    /// The change just made is held decoded, even when it filled the records.
    @Test func theLastChangeIsTheOneJustMade() throws {
        var doc = Document(replica: ReplicaID(1))
        doc.history.recordsPerBundle = 2
        let text = try doc.transact { tx in try tx.putObject(.root, key: "t", kind: .text) }
        for index in 0..<7 {
            try doc.transact { tx in try tx.insertText(text, at: index, "x") }
            let last = try #require(doc.lastChange)
            #expect(last.lastID == OpID(replica: ReplicaID(1), counter: doc.versionVector[ReplicaID(1)]))
            #expect(last.operations == [.insert(object: text, origin: index == 0 ? nil : OpID(replica: ReplicaID(1), counter: UInt64(index + 1)),
                                                content: .text("x"))])
        }
        #expect(doc.history.bundles.count == 7)
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
