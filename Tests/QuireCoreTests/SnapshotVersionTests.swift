import Testing
@testable import QuireCore

/// Snapshots written by earlier versions of the encoding still load.
@Suite struct SnapshotVersionTests {
    /// Two replicas' edits to a text, a list, a map and a counter, with
    /// deleted runs from both, as in `version1Snapshot`.
    static func sample() throws -> (Document, ObjectID) {
        var a = Document(replica: ReplicaID(0xA))
        let (text, list) = try a.transact { tx in
            let text = try tx.putObject(.root, key: "text", kind: .text)
            try tx.insertText(text, at: 0, "héllo wörld")
            let list = try tx.putObject(.root, key: "list", kind: .list)
            try tx.insert(list, at: 0, .int(1))
            try tx.insert(list, at: 1, .string("two"))
            let counter = try tx.putObject(.root, key: "count", kind: .counter)
            try tx.increment(counter, by: 3)
            return (text, list)
        }
        var b = Document(replica: ReplicaID(0xB))
        try b.apply(a.changes(since: VersionVector()))
        try b.transact { tx in
            try tx.deleteText(text, at: 2, count: 3)
            try tx.insertText(text, at: 2, "Y")
        }
        try a.transact { tx in
            try tx.insertText(text, at: 11, "!")
            try tx.delete(list, at: 0)
        }
        try a.apply(b.changes(since: a.versionVector))
        return (a, text)
    }

    /// `sample()`'s state as version 1 of `encodeSnapshot(includeHistory: false)` wrote it.
    static let version1Snapshot = """
        51444f4301a301020a000000000000000b00000000000000150200131301041502001301040300010200010474657874000d01000104\
        6c697374001003000105636f756e740305636f756e74010010100803046c69737401000d0d080104746578740100010108020500020200\
        020368c3a9010415000101590004040103036c6c6f0007070006072077c3b6726c640012120001012102000e0e01010402000f0f000106\
        0374776f0600d4cab9a1
        """

    @Test func aVersion1SnapshotLoadsToTheSameState() throws {
        let (document, text) = try Self.sample()
        var hex = Self.version1Snapshot[...]
        var bytes: [UInt8] = []
        while !hex.isEmpty {
            bytes.append(try #require(UInt8(hex.prefix(2), radix: 16)))
            hex = hex.dropFirst(2)
        }
        let loaded = try Document(snapshot: bytes, replica: ReplicaID(0xC))
        #expect(try loaded.text(text) == "héY wörld!")
        #expect(loaded.encodeSnapshot(includeHistory: false) == document.encodeSnapshot(includeHistory: false))
        #expect(loaded.encodeSnapshot(includeHistory: false) != bytes)  // rewritten as the current version
    }

    @Test func theCurrentVersionRoundTrips() throws {
        let (document, text) = try Self.sample()
        let loaded = try Document(snapshot: document.encodeSnapshot(), replica: ReplicaID(0xC))
        #expect(try loaded.text(text) == "héY wörld!")
        #expect(loaded.encodeSnapshot() == document.encodeSnapshot())
    }

    /// A long-lived document has more changes than one bundle may hold: its
    /// history goes into bundles as it grows, and it reloads whole.
    @Test func aHistoryLongerThanOneBundleMayHoldReloads() throws {
        var doc = Document(replica: ReplicaID(1))
        doc.history.recordsPerBundle = 10
        var unbundled = Document(replica: ReplicaID(1))
        let text = try doc.transact { tx in try tx.putObject(.root, key: "t", kind: .text) }
        try unbundled.apply(doc.allChanges())
        var versions: [VersionVector] = []
        for index in 0..<24 {
            try doc.transact { tx in try tx.insertText(text, at: index, "x") }
            try unbundled.transact { tx in try tx.insertText(text, at: index, "x") }
            versions.append(doc.versionVector)
        }
        #expect(doc.history.bundles.count == 2)
        #expect(try doc.allChanges() == unbundled.allChanges())
        for version in [VersionVector(), versions[3], versions[12], versions[23]] {
            #expect(try doc.changes(since: version) == unbundled.changes(since: version))
        }
        #expect(try doc.history.change(containing: OpID(replica: ReplicaID(1), counter: 7)) == unbundled.history.change(containing: OpID(replica: ReplicaID(1), counter: 7)))

        let limits = DecodingLimits(maxChanges: 10)
        let loaded = try Document(snapshot: doc.encodeSnapshot(), replica: ReplicaID(2), limits: limits)
        #expect(try loaded.allChanges() == unbundled.allChanges())
        #expect(try loaded.text(text) == String(repeating: "x", count: 24))
        // The same history in one bundle is over the limit for one bundle.
        #expect(throws: DecodingError.self) { try Document(snapshot: unbundled.encodeSnapshot(), replica: ReplicaID(2), limits: limits) }
    }
}
