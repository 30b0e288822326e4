import Foundation
import QuireTestSupport
import Testing
@testable import Quire

/// The store file gives back the space compaction frees (`Specs/storage.md`,
/// "Growth"), with sizes from SQLite's own counts and the file's length.
@Suite struct FreeSpaceTests {
    /// `count` bytes of seeded noise, which no compression shrinks.
    static func noise(count: Int, seed: UInt64) -> [UInt8] {
        var random = SeededGenerator(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    static func fileLength(_ path: String) throws -> Int64 {
        try (FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? -1
    }

    /// A new store at `path` whose document `id` had an attachment of 4
    /// KiB of noise replaced `edits × perEdit` times, the last with seed
    /// `edits × perEdit - 1`, and a peer that holds all of it, which lets
    /// compaction delete its log.
    static func storeReplacingAnAttachment(at path: String, _ id: DocumentID, edits: Int, perEdit: Int) throws -> DocumentStore {
        let store = try DocumentStore(path: path)
        try store.create(id: id)
        for edit in 0..<edits {
            try store.edit(id) { tx in
                for index in 0..<perEdit { try tx.put(.root, key: "file", .bytes(Self.noise(count: 4096, seed: UInt64(edit * perEdit + index)))) }
            }
        }
        try store.acknowledge(peer: "hub", id: id, version: store.read(id) { $0.versionVector })
        return store
    }

    @Test func compactingALongLogGivesItsPagesBackAndTheFileShrinks() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire"
            let id: DocumentID = "attachment"
            // 1.6 MB of log, 4 KB of state.
            let store = try Self.storeReplacingAnAttachment(at: path, id, edits: 4, perEdit: 100)
            // The newest change's row stays; this one is small.
            try store.edit(id) { tx in try tx.put(.root, key: "name", .string("scan.pdf")) }
            try store.acknowledge(peer: "hub", id: id, version: store.read(id) { $0.versionVector })
            let grown = try store.database.freeSpace()
            #expect(grown.fileBytes > 1_600_000 && grown.freeBytes < 100_000)
            try store.compact(id, keepHistory: false)

            let compacted = try store.database.freeSpace()
            #expect(compacted.freeBytes == 0)
            #expect(compacted.fileBytes < 200_000)
            #expect(try Self.fileLength(path) == compacted.fileBytes)
            try store.close()
            let reopened = try DocumentStore(path: path)
            #expect(try reopened.read(id) { try $0.get(.root, key: "file") } == .scalar(.bytes(Self.noise(count: 4096, seed: 399))))
            #expect(try reopened.read(id) { try $0.get(.root, key: "name") } == .scalar(.string("scan.pdf")))
        }
    }

    @Test func compactingAFewRowsLeavesTheirPagesForLaterWrites() throws {
        try withTemporaryDirectory { directory in
            let id: DocumentID = "note"
            let store = try Self.storeReplacingAnAttachment(at: directory + "/notes.quire", id, edits: 40, perEdit: 1)
            let grown = try store.database.freeSpace()
            try store.compact(id, keepHistory: false)
            // 160 KB freed: under 1 MiB, not worth writing the file again.
            let compacted = try store.database.freeSpace()
            #expect(compacted.fileBytes >= grown.fileBytes)
            #expect(compacted.freeBytes > 100_000)
        }
    }
}
