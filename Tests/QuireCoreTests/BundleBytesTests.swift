import Testing
import QuireTestSupport
@testable import QuireCore

/// The bytes `BundleWriter` writes, pinned by their digest for seeded
/// histories of every kind of operation and of writers editing at once, in
/// the three forms written: a history's records as a snapshot keeps them
/// (text elided), the history sent to a peer, and `ChangeEncoding.encode`
/// of its changes with their text. The digests are those the code of
/// 20e086b wrote (the records' still; the sent forms' since `QCHG`
/// version 5, review177, its origins, review177's follow-up, and its
/// implied parents, review190): a faster writer must write the same bytes.
@Suite struct BundleBytesTests {
    /// FNV-1a, 64 bits: enough to tell one bundle from another.
    static func digest(_ bytes: [UInt8]) -> UInt64 {
        bytes.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }

    /// (size, digest) of the records' bundle, `encodeChanges()` and
    /// `ChangeEncoding.encode` of `doc`'s changes.
    static func written(_ doc: Document) throws -> [String] {
        #expect(doc.history.hasRecords)
        return [doc.history.encodedRecords(), try doc.encodeChanges(), ChangeEncoding.encode(try doc.allChanges())].map {
            "\($0.count) \(String(digest($0), radix: 16))"
        }
    }

    /// One writer's edits of texts, lists, maps and counters, all held as records.
    @Test(arguments: [
        (1, ["1297 6a5ab7f5e5b6de0f", "2092 f02512eb29978792", "2092 f02512eb29978792"]),
        (2, ["1256 341a06e7b9406101", "2192 e4ca54a2b61a8244", "2192 e4ca54a2b61a8244"]),
        (3, ["1145 3d51038125e6b610", "2033 3fc77c3016674a1e", "2033 3fc77c3016674a1e"]),
    ] as [(UInt64, [String])])
    func oneWritersEditsAreWrittenAsBefore(seed: UInt64, pinned: [String]) throws {
        let (doc, _) = try HistoryEncodingTests.edited(seed: seed, bundleSize: 1 << 14)
        #expect(doc.history.bundles.isEmpty)
        let written = try Self.written(doc)
        #expect(written == pinned, "seed \(seed)")
    }

    /// A history held in bundles (its own, every few changes; loaded from
    /// its snapshot; caught up from a peer, with its text) sent to a peer,
    /// whole and from a version inside it: the digests e1928c2 wrote, in
    /// `QCHG` version 5 since review177 (and its follow-up).
    @Test(arguments: [
        (1, ["2092 f02512eb29978792", "1082 78d92482cb6b3aca", "2092 f02512eb29978792", "2117 d624cd0047495c56"]),
        (2, ["2192 e4ca54a2b61a8244", "1269 234593503967dc59", "2192 e4ca54a2b61a8244", "2214 a5ea4107c22d62ec"]),
        (5, ["2012 75b6e43c9ac85514", "1051 2e0470b1f218267", "2012 75b6e43c9ac85514", "2035 3265ee2654e13508"]),
    ] as [(UInt64, [String])])
    func historiesHeldInBundlesAreSentAsBefore(seed: UInt64, pinned: [String]) throws {
        let (doc, text) = try HistoryEncodingTests.edited(seed: seed, bundleSize: 5)
        #expect(doc.history.bundles.count > 3)
        var half = VersionVector()
        half[doc.replica] = doc.versionVector[doc.replica] / 2
        let loaded = try Document(snapshot: doc.encodeSnapshot(), replica: ReplicaID(5))
        var caughtUp = Document(replica: ReplicaID(9))
        try caughtUp.applyEncoded(doc.encodeChanges())
        try caughtUp.transact { tx in try tx.insertText(text, at: 1, "é") }
        let sent = [try doc.encodeChanges(), try doc.encodeChanges(since: half), try loaded.encodeChanges(), try caughtUp.encodeChanges()]
        #expect(sent.map { "\($0.count) \(String(Self.digest($0), radix: 16))" } == pinned, "seed \(seed)")
    }

    /// Writers typing and deleting at once, at random places.
    @Test(arguments: [
        (3, 2, ["1848 ce29d7e6a4959479", "2291 89515d30fe98452b", "2310 33889e3a45ab728f"]),
        (4, 3, ["1954 bf5ceb38994e6509", "2440 ba0debe027a801d0", "2464 8709389eaef4137e"]),
        (8, 3, ["1816 1428cad992784510", "2322 c3a8951b3b8deb34", "2351 3a5d0368bf12c5d8"]),
    ] as [(UInt64, Int, [String])])
    func concurrentWritersAreWrittenAsBefore(seed: UInt64, replicas: Int, pinned: [String]) throws {
        let doc = try BulkApplyTests.typedDocument(seed: seed, replicas: replicas)
        let written = try Self.written(doc)
        #expect(written == pinned, "seed \(seed)")
    }

    /// Two writers typing into one text at once, `alphabet`'s letters
    /// only: one of ASCII, one with a Latin-1 letter (narrow storage, not
    /// ASCII). Long enough for runs, counters and Lamport values of
    /// several varint bytes, and for tombstones between runs.
    static func typedText(seed: UInt64, alphabet: [String]) throws -> Document {
        var rng = SeededGenerator(seed: seed)
        var docs = [Document(replica: ReplicaID(1)), Document(replica: ReplicaID(0x1_0000_0002))]
        let text = try docs[0].transact { tx in try tx.putObject(.root, key: "text", kind: .text) }
        try docs[1].apply(try docs[0].allChanges())
        for round in 0..<40 {
            let writer = round % 2
            var position = Int.random(in: 0...(try docs[writer].textCount(text)), using: &rng)
            for _ in 0..<Int.random(in: 1...40, using: &rng) {
                if position > 0 && Int.random(in: 0..<4, using: &rng) == 0 {
                    try docs[writer].transact { tx in try tx.deleteText(text, at: position - 1, count: 1) }
                    position -= 1
                } else {
                    try docs[writer].transact { tx in try tx.insertText(text, at: position, alphabet.randomElement(using: &rng)!) }
                    position += 1
                }
            }
            if round % 5 == 4 { try docs[1 - writer].apply(try docs[writer].changes(since: docs[1 - writer].versionVector)) }
        }
        try docs[0].apply(try docs[1].changes(since: docs[0].versionVector))
        return docs[0]
    }

    /// Snapshots, state alone and with history, of texts in each of the
    /// storage's forms (ASCII, Latin-1, wide) and of lists, maps and
    /// counters: the bytes 6994f92 wrote, which a faster encode must keep.
    @Test func snapshotsAreWrittenAsBefore() throws {
        let documents = [
            try Self.typedText(seed: 1, alphabet: ["a", "b", " ", "\n"]),
            try Self.typedText(seed: 2, alphabet: ["a", "é", " "]),
            try HistoryEncodingTests.edited(seed: 1, bundleSize: 5).0,
            try BulkApplyTests.typedDocument(seed: 4, replicas: 3),
        ]
        let written = documents.flatMap { doc in
            [doc.encodeSnapshot(includeHistory: false), doc.encodeSnapshot()].map { "\($0.count) \(String(Self.digest($0), radix: 16))" }
        }
        #expect(written == ["1983 6c9b2643ffeb25b5", "3830 15da44aaa2800665", "2618 64543768c7afc4b6", "4664 e8eb140be442568c",
                            "1612 8123a8e5b8a6ef16", "8540 cd0fe6e16b7c6ac", "1317 3f3bef81b3586e86", "3274 7e9c4e06b6e54d40"])
    }

    /// A snapshot seals its recorded changes straight into its history
    /// (`FinishedBundle.seal(into:)`): the bundle there is the one they
    /// encode to alone, and the loaded history is the same. Long strings
    /// written over each other under one key (as in crdt-benchmarks B3.3)
    /// fill the values far past any first buffer.
    @Test func aSnapshotsRecordsAreTheBundleTheyEncodeToAlone() throws {
        var doc = Document(replica: ReplicaID(1))
        for change in 1...40 {
            try doc.transact { tx in try tx.put(.root, key: "v", .string(String(repeating: String(change), count: 1000))) }
        }
        #expect(doc.history.hasRecords)
        let records = doc.history.encodedRecords()
        let snapshot = doc.encodeSnapshot()
        // The records' bundle is the body's last part, before the snapshot's checksum.
        #expect(Array(snapshot[(snapshot.count - 4 - records.count)..<(snapshot.count - 4)]) == records)
        let loaded = try Document(snapshot: snapshot, replica: ReplicaID(99))
        #expect(try loaded.allChanges() == doc.allChanges())
    }
}
