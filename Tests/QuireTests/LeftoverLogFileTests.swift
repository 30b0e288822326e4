import Foundation
import QuireStore
import QuireTestSupport
import Testing
@testable import Quire

/// `rm notes.quire` leaves the store's `-wal` (and `-shm`) behind, with the
/// commits a program still holding the file, or killed, had not yet
/// checkpointed. SQLite replays any `-wal` it finds beside a file over that
/// file's pages, whichever database wrote it: a new store made there read
/// the deleted store's pages for its own (review110's damaged backup).
@Suite struct LeftoverLogFileTests {
    /// Makes the store at `path` with notes, then leaves only its `-wal`,
    /// with those commits, as a program killed while holding it does;
    /// returns that `-wal`'s bytes.
    private static func leaveTheWalOfADeletedStore(at path: String) throws -> Data {
        let store = try DocumentStore(path: path)
        for number in 1...5 { try store.create(id: DocumentID(rawValue: "gone-\(number)")!) }
        let wal = try Data(contentsOf: URL(fileURLWithPath: path + "-wal"))
        #expect(wal.count > 0)
        try store.close()
        unlink(path)
        try wal.write(to: URL(fileURLWithPath: path + "-wal"))
        return wal
    }

    @Test func aBackupIsNotWrittenWhereADeletedStoresWalIsLeft() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", gonePath = directory + "/gone.quire"
            let store = try DocumentStore(path: path)
            try store.create(id: "kept")
            let wal = try Self.leaveTheWalOfADeletedStore(at: gonePath)
            let refusal = #expect(throws: StoreError.self) { try store.backup(to: gonePath) }
            guard case .backupRefused(_, let reason)? = refusal else { Issue.record("\(String(describing: refusal))"); return }
            #expect(reason.hasPrefix("\(gonePath)-wal is beside it"), "\(reason)")
            #expect(!FileManager.default.fileExists(atPath: gonePath))
            #expect(try Data(contentsOf: URL(fileURLWithPath: gonePath + "-wal")) == wal)

            // Moved away, as the refusal says, the backup is the store's.
            try FileManager.default.removeItem(atPath: gonePath + "-wal")
            try store.backup(to: gonePath)
            #expect(try DocumentStore(path: gonePath).documents().map(\.id) == ["kept"])
        }
    }

    /// A program that still has the deleted store open keeps its `-wal`
    /// and writes on into it: refused too, even with nothing in it yet.
    @Test func aBackupIsNotWrittenWhereAStoreStillOpenWasDeleted() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", gonePath = directory + "/gone.quire"
            let store = try DocumentStore(path: path)
            let holder = try DocumentStore(path: gonePath)
            try holder.database.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            #expect(try FileManager.default.attributesOfItem(atPath: gonePath + "-wal")[.size] as? Int == 0)
            unlink(gonePath)
            #expect(throws: StoreError.self) { try store.backup(to: gonePath) }
            try holder.create(id: "still written")
            #expect(try holder.documents().map(\.id) == ["still written"])
        }
    }

    @Test func aStoreIsNotCreatedWhereADeletedStoresWalIsLeft() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire"
            let wal = try Self.leaveTheWalOfADeletedStore(at: path)
            // SQLite itself deleted the -wal here, without a word.
            let refusal = #expect(throws: DatabaseError.self) { try DocumentStore(path: path) }
            #expect(refusal?.message.hasPrefix("\(path)-wal is beside it") == true, "\(String(describing: refusal))")
            #expect(try Data(contentsOf: URL(fileURLWithPath: path + "-wal")) == wal)
            #expect(!FileManager.default.fileExists(atPath: path))

            try FileManager.default.removeItem(atPath: path + "-wal")
            #expect(try DocumentStore(path: path).documents().isEmpty)
        }
    }

    /// Through a link to the deleted file, SQLite makes the file where the
    /// link points and deletes the `-wal` there; the check looked beside
    /// the link, where there is none.
    @Test func aStoreIsNotCreatedThroughALinkWhereADeletedStoresWalIsLeft() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", link = directory + "/link.quire"
            let wal = try Self.leaveTheWalOfADeletedStore(at: path)
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "notes.quire")
            #expect(throws: DatabaseError.self) { try DocumentStore(path: link) }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path + "-wal")) == wal)
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    /// What a read-only open leaves on closing (an empty `-wal` no program
    /// holds) has nothing to replay: the file is made beside it.
    @Test func aStoreIsCreatedBesideTheEmptyWalOfAReadOnlyOpen() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire"
            try DocumentStore(path: path).close()
            try DocumentStore(path: path, readOnly: true).close()
            #expect(try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int == 0)
            unlink(path)
            #expect(try DocumentStore(path: path).documents().isEmpty)
        }
    }
}
