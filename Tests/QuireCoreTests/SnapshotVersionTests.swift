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

    /// `sample()`'s state as version 2 of `encodeSnapshot(includeHistory: false)` wrote it.
    static let version2Snapshot = """
        51444f43029a01020a000000000000000b00000000000000150200131301041502001301040300010200010474657874000d010001046c\
        697374001003000105636f756e740305636f756e74010010100803046c69737401000d0d08010474657874010001010802050004000401\
        002202000100070000000c000a00020f68c3a9596c6c6f2077c3b6726c642102000e0e01010402000f0f0001060374776f0600743334ab
        """

    /// `sample()` as version 2 of `encodeSnapshot()` wrote it: state and history, the history
    /// as a `QCHG` version 1 bundle, text included.
    static let version2SnapshotWithHistory = """
        51444f4302f102020a000000000000000b00000000000000150200131301041502001301040300010200010474657874000d010001046c\
        697374001003000105636f756e740305636f756e74010010100803046c69737401000d0d08010474657874010001010802050004000401\
        002202000100070000000c000a00020f68c3a9596c6c6f2077c3b6726c642102000e0e01010402000f0f0001060374776f060101d40151\
        43484701c901020a000000000000000b000000000000000305636f756e74046c6973740474657874030402000101020300040200010306\
        0101010001020201000201110203000401070202120100010201000203010001050102020401020c010001010100020101000501120100\
        01010100020d010001100101010d02010602000101020202020004010c010304010d020102020102020004011c01130401010103060102\
        0101010002030000000201060f68c3a96c6c6f2077c3b6726c6421590d080208010402060374776f08032ad77c95f3737229
        """

    static func bytes(_ hex: String) throws -> [UInt8] {
        var hex = hex[...]
        var bytes: [UInt8] = []
        while !hex.isEmpty {
            bytes.append(try #require(UInt8(hex.prefix(2), radix: 16)))
            hex = hex.dropFirst(2)
        }
        return bytes
    }

    @Test func aVersion1SnapshotLoadsToTheSameState() throws {
        let (document, text) = try Self.sample()
        let bytes = try Self.bytes(Self.version1Snapshot)
        let loaded = try Document(snapshot: bytes, replica: ReplicaID(0xC))
        #expect(try loaded.text(text) == "héY wörld!")
        #expect(loaded.encodeSnapshot(includeHistory: false) == document.encodeSnapshot(includeHistory: false))
        #expect(loaded.encodeSnapshot(includeHistory: false) != bytes)  // rewritten as the current version
        for sequence in loaded.objects.texts { sequence.checkInvariants() }
    }

    @Test func version2SnapshotsLoadWithAndWithoutHistory() throws {
        let (document, text) = try Self.sample()
        let state = try Document(snapshot: try Self.bytes(Self.version2Snapshot), replica: ReplicaID(0xC))
        #expect(try state.text(text) == "héY wörld!")
        #expect(state.encodeSnapshot(includeHistory: false) == document.encodeSnapshot(includeHistory: false))

        let bytes = try Self.bytes(Self.version2SnapshotWithHistory)
        let full = try Document(snapshot: bytes, replica: ReplicaID(0xC))
        #expect(full.encodeSnapshot(includeHistory: false) == document.encodeSnapshot(includeHistory: false))
        #expect(try full.allChanges() == document.allChanges())
        // Rewritten as version 3, its history bundle kept as it came (version 1, text included).
        let rewritten = full.encodeSnapshot()
        #expect(rewritten[4] == 3 && rewritten != bytes)
        let reloaded = try Document(snapshot: rewritten, replica: ReplicaID(0xD))
        #expect(try reloaded.allChanges() == document.allChanges())
        #expect(reloaded.encodeSnapshot() == rewritten)
    }

    @Test func theCurrentVersionRoundTrips() throws {
        let (document, text) = try Self.sample()
        let loaded = try Document(snapshot: document.encodeSnapshot(), replica: ReplicaID(0xC))
        #expect(try loaded.text(text) == "héY wörld!")
        #expect(loaded.encodeSnapshot() == document.encodeSnapshot())
        #expect(try loaded.allChanges() == document.allChanges())
    }

    /// `sample()` and then non-BMP text, a run deleted whole and a list of
    /// values, edited after the snapshot too.
    @Test func theHistoryTakesItsTextFromTheState() throws {
        var (document, text) = try Self.sample()
        guard case .object(.list, let list)? = try document.get(.root, key: "list") else {
            Issue.record("the sample has no list")
            return
        }
        try document.transact { tx in
            try tx.insertText(text, at: 0, "😀𝄞 ")
            try tx.insertText(text, at: 3, "zzz")
            try tx.deleteText(text, at: 3, count: 3)  // a whole insert, now only tombstones
            try tx.insert(list, at: 0, .string("😀"))
            try tx.put(.root, key: "title", .string("notes"))
        }
        #expect(try document.text(text) == "😀𝄞 héY wörld!")

        let full = document.encodeSnapshot()
        let stateOnly = document.encodeSnapshot(includeHistory: false)
        #expect(full[4] == UInt8(SnapshotEncoding.version))
        // Each inserted scalar is stored once, in the state: the history elides it.
        let zzz = Array("zzz".utf8), wide = Array("😀𝄞".utf8)
        #expect(occurrences(of: zzz, in: full) == 1 && occurrences(of: zzz, in: stateOnly) == 1)
        #expect(occurrences(of: wide, in: full) == 1)

        var loaded = try Document(snapshot: full, replica: ReplicaID(0xE))
        for sequence in loaded.objects.texts { sequence.checkInvariants() }
        for sequence in loaded.objects.lists { sequence.checkInvariants() }
        #expect(loaded.encodeSnapshot() == full)
        #expect(try loaded.allChanges() == document.allChanges())
        // Edits after loading (deleting all the text) leave the history's text readable.
        let length = try loaded.text(text).unicodeScalars.count
        try loaded.transact { tx in try tx.deleteText(text, at: 0, count: length) }
        #expect(try loaded.text(text) == "")
        #expect(try Array(loaded.allChanges().dropLast()) == document.allChanges())
        let first = try #require(try document.allChanges().first)
        #expect(try loaded.change(containing: first.id) == first)
        // A replica that catches up from the loaded document gets the same document.
        var fresh = Document(replica: ReplicaID(0xF))
        try fresh.apply(loaded.changes(since: VersionVector()))
        #expect(fresh.encodeSnapshot(includeHistory: false) == loaded.encodeSnapshot(includeHistory: false))
        // And the snapshot of the edited document round trips in turn.
        let again = try Document(snapshot: loaded.encodeSnapshot(), replica: ReplicaID(0x10))
        #expect(try again.allChanges() == loaded.allChanges())
    }

    /// A long-lived document has more changes than one bundle may hold: its
    /// history goes into bundles as it grows, and it reloads whole.
    @Test func aHistoryLongerThanOneBundleMayHoldReloads() throws {
        var doc = Document(replica: ReplicaID(1))
        doc.history.bundleSize = 10
        var unbundled = Document(replica: ReplicaID(1))
        let text = try doc.transact { tx in try tx.putObject(.root, key: "t", kind: .text) }
        try unbundled.apply(doc.allChanges())
        var versions: [VersionVector] = []
        for index in 0..<24 {
            // Each keystroke at its own time, so that each has its own record.
            try doc.transact(time: Int64(index)) { tx in try tx.insertText(text, at: index, "x") }
            try unbundled.transact(time: Int64(index)) { tx in try tx.insertText(text, at: index, "x") }
            versions.append(doc.versionVector)
        }
        #expect(doc.history.bundles.count == 2)
        #expect(try doc.allChanges() == unbundled.allChanges())
        for version in [VersionVector(), versions[3], versions[12], versions[23]] {
            #expect(try doc.changes(since: version) == unbundled.changes(since: version))
        }
        #expect(try doc.history.change(containing: OpID(replica: ReplicaID(1), counter: 7), doc.objects) == unbundled.history.change(containing: OpID(replica: ReplicaID(1), counter: 7), unbundled.objects))

        let limits = DecodingLimits(maxChanges: 10)
        let loaded = try Document(snapshot: doc.encodeSnapshot(), replica: ReplicaID(2), limits: limits)
        #expect(try loaded.allChanges() == unbundled.allChanges())
        #expect(try loaded.text(text) == String(repeating: "x", count: 24))
        // The same history in one bundle is over the limit for one bundle.
        #expect(throws: DecodingError.self) { try Document(snapshot: unbundled.encodeSnapshot(), replica: ReplicaID(2), limits: limits) }
    }
    /// Loading takes an ASCII text's widths from its counts, and measures
    /// any other text: offsets agree with the document that wrote it either way.
    @Test(arguments: ["plain ASCII text, deleted in part", "Latin-1: é, ü and ASCII", "mixed: é, 😀 and ASCII"])
    func loadedTextsKeepTheirUTF16AndUTF8Offsets(sample: String) throws {
        var doc = Document(replica: ReplicaID(1))
        let text = try doc.transact { tx in try tx.putObject(.root, key: "t", kind: .text) }
        try doc.transact { tx in try tx.insertText(text, at: 0, sample) }
        try doc.transact { tx in try tx.deleteText(text, at: 3, count: 4) }
        let loaded = try Document(snapshot: doc.encodeSnapshot(), replica: ReplicaID(2))
        let count = try doc.textCount(text)
        for index in 0...count {
            #expect(try loaded.utf16Offset(text, index: index) == doc.utf16Offset(text, index: index))
            #expect(try loaded.utf8Offset(text, index: index) == doc.utf8Offset(text, index: index))
        }
        loaded.objects.texts[0].checkInvariants()
        // Loaded text takes a byte a scalar unless a scalar needs more.
        #expect(loaded.objects.texts[0].content.form == .needed(for: sample.unicodeScalars.map(\.value).max() ?? 0))
    }
}

private func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
    guard haystack.count >= needle.count else { return 0 }
    return (0...(haystack.count - needle.count)).filter { haystack[$0..<$0 + needle.count].elementsEqual(needle) }.count
}
