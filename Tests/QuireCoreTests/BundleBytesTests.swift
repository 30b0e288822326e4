import Testing
import QuireTestSupport
@testable import QuireCore

/// The bytes `BundleWriter` writes, pinned by their digest for seeded
/// histories of every kind of operation and of writers editing at once, in
/// the three forms written: a history's records as a snapshot keeps them
/// (text elided), the history sent to a peer, and `ChangeEncoding.encode`
/// of its changes with their text. The digests are those the code of
/// 20e086b wrote: a faster writer must write the same bytes.
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
        (1, ["1297 6a5ab7f5e5b6de0f", "2209 5625899d7de4a2bd", "2209 5625899d7de4a2bd"]),
        (2, ["1256 341a06e7b9406101", "2364 dfc421c6b59bee02", "2364 dfc421c6b59bee02"]),
        (3, ["1145 3d51038125e6b610", "2160 a857d0a2e128c4e", "2160 a857d0a2e128c4e"]),
    ] as [(UInt64, [String])])
    func oneWritersEditsAreWrittenAsBefore(seed: UInt64, pinned: [String]) throws {
        let (doc, _) = try HistoryEncodingTests.edited(seed: seed, bundleSize: 1 << 14)
        #expect(doc.history.bundles.isEmpty)
        let written = try Self.written(doc)
        #expect(written == pinned, "seed \(seed)")
    }

    /// Writers typing and deleting at once, at random places.
    @Test(arguments: [
        (3, 2, ["1848 ce29d7e6a4959479", "2571 635c7b34dcf1acf3", "2601 7ce0d984dbdd1ac2"]),
        (4, 3, ["1954 bf5ceb38994e6509", "2673 8b8f9b6b75135a4f", "2725 120d2485a44c7131"]),
        (8, 3, ["1816 1428cad992784510", "2527 9bd5fd434e9eb721", "2563 45f8cf2dc3328f4f"]),
    ] as [(UInt64, Int, [String])])
    func concurrentWritersAreWrittenAsBefore(seed: UInt64, replicas: Int, pinned: [String]) throws {
        let doc = try BulkApplyTests.typedDocument(seed: seed, replicas: replicas)
        let written = try Self.written(doc)
        #expect(written == pinned, "seed \(seed)")
    }
}
