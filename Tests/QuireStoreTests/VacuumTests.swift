import CSQLite
import Foundation
@testable import QuireStore
import QuireTestSupport
import Testing

/// Opens a file database in a temporary directory holding `blobs` rows of
/// 64 KiB pseudo-random bytes, every other one then deleted when
/// `deletingHalf` (free pages scattered among used ones, as compaction
/// leaves them).
private func withBloatedDatabase(blobs: Int, deletingHalf: Bool = true, _ body: (Database, String) throws -> Void) throws {
    try withTemporaryDirectory { directory in
        let path = directory + "/store.sqlite"
        let db = try Database(path: path)
        defer { db.close() }
        try db.write { db in
            try db.execute(sql: "CREATE TABLE blobs(id INTEGER PRIMARY KEY, body BLOB)")
            for index in 0..<blobs {
                try db.execute(sql: "INSERT INTO blobs(body) VALUES (?)",
                               arguments: [.blob(pseudoRandomBytes(count: 64 << 10, seed: UInt64(index + 1)))])
            }
        }
        if deletingHalf { try db.execute(sql: "DELETE FROM blobs WHERE id % 2 = 0") }
        try body(db, path)
    }
}

/// Every row of `blobs`, as id and bytes.
private func blobs(_ db: DatabaseConnection) throws -> [[Int64: [UInt8]]] {
    try db.query(sql: "SELECT id, body FROM blobs ORDER BY id").map { [try $0.int64(0): try $0.blob(1)] }
}

private func fileLength(_ path: String) throws -> Int64 {
    try (FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? -1
}

@Suite struct VacuumTests {
    @Test func aFileMostlyFreeIsWrittenAgainSmallerWithEveryRow() throws {
        // 64 blobs of 64 KiB, 32 deleted: about 2 MiB of 4 free.
        try withBloatedDatabase(blobs: 64) { db, path in
            let before = try db.freeSpace()
            #expect(before.freeBytes >= 2 << 20 && before.freeShare >= 0.45 && before.isWorthVacuuming)
            let kept = try db.read(blobs)
            #expect(db.vacuumIfMostlyFree())
            let after = try db.freeSpace()
            #expect(after.freeBytes == 0)
            #expect(after.fileBytes <= before.fileBytes - before.freeBytes)
            // The file itself, not only SQLite's count: the checkpoint cut it.
            #expect(try fileLength(path) == after.fileBytes)
            #expect(try db.read(blobs) == kept)
            #expect(try db.integrityCheck())
            // Nothing left to give back: the next check leaves it.
            #expect(!db.vacuumIfMostlyFree())
        }
    }

    @Test func littleFreeSpaceIsLeftForLaterWritesToReuse() throws {
        // 3 of 48 blobs deleted (0.19 MiB), under a quarter and under 1 MiB;
        // then 14 of 48 (0.88 MiB), over a quarter but under 1 MiB.
        try withBloatedDatabase(blobs: 48, deletingHalf: false) { db, _ in
            try db.execute(sql: "DELETE FROM blobs WHERE id <= 3")
            #expect(!db.vacuumIfMostlyFree())
            try db.execute(sql: "DELETE FROM blobs WHERE id <= 14")
            let space = try db.freeSpace()
            #expect(space.freeShare >= 0.25 && space.freeBytes < 1 << 20)
            #expect(!db.vacuumIfMostlyFree())
            #expect(try db.freeSpace() == space)
        }
    }

    @Test func anotherConnectionReadingMeanwhileKeepsItsStateAndTheFileShrinksLater() throws {
        try withBloatedDatabase(blobs: 64) { db, path in
            let reader = try Database(path: path)
            defer { reader.close() }
            let expected = try reader.read(blobs)
            let before = try db.freeSpace()
            try reader.read { reading throws in
                let first = try blobs(reading)
                // WAL: the vacuum commits while the other connection reads.
                #expect(db.vacuumIfMostlyFree())
                let again = try blobs(reading)
                #expect(first == expected && again == expected)
            }
            #expect(try reader.read(blobs) == expected)
            #expect(try db.freeSpace().fileBytes < before.fileBytes - before.freeBytes / 2)
            reader.close()
            db.close()
            // The last close checkpoints what the reader held back.
            #expect(try fileLength(path) <= before.fileBytes - before.freeBytes)
        }
    }

    @Test func aVacuumThatCannotHaveTheWriteLockFailsAfterTheBusyTimeoutLeavingTheFile() throws {
        try withBloatedDatabase(blobs: 64) { db, path in
            let writer = try Database(path: path)
            defer { writer.close() }
            let before = try db.freeSpace()
            let kept = try db.read(blobs)
            // Another connection holds the write lock past the busy timeout.
            try writer.write { _ in #expect(!db.vacuumIfMostlyFree()) }
            #expect(try db.freeSpace() == before)
            #expect(try db.read(blobs) == kept)
            // Once it is free, the next check gives the space back.
            #expect(db.vacuumIfMostlyFree())
            #expect(try db.freeSpace().freeBytes == 0)
        }
    }
}
