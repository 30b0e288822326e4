import Foundation
import QuireTestSupport
import Synchronization
import Testing
@testable import Quire

/// `DocumentStore.backup(to:replacing:)`: a copy of an open store that
/// holds every committed change, and writes under a new replica id
/// wherever it is restored.
@Suite struct BackupTests {
    /// The numbers a store's "log" document lists, in order.
    private static func numbers(in store: DocumentStore, _ list: ObjectID) throws -> [Int64] {
        try store.read("log") { doc in
            try doc.list(list).compactMap { value -> Int64? in
                if case .scalar(.int(let number)) = value { return number }
                return nil
            }
        }
    }

    private static func makeLog(_ store: DocumentStore) throws -> ObjectID {
        try store.create(id: "log")
        return try store.edit("log") { tx in try tx.putObject(.root, key: "numbers", kind: .list) }
    }

    @Test func aBackupTakenWhileAnotherConnectionWritesHoldsEveryCommittedChange() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", backupPath = directory + "/backup.quire"
            let store = try DocumentStore(path: path)
            let list = try Self.makeLog(store)
            // Another connection to the file, as another process's would be,
            // appends 1, 2, 3... and counts the edits that returned.
            let writer = try DocumentStore(path: path)
            let acknowledged = Atomic<Int64>(0), stop = Atomic<Bool>(false)
            let wrote = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                var next: Int64 = 1
                while !stop.load(ordering: .relaxed) {
                    do { try writer.edit("log") { tx in try tx.insert(list, at: try tx.document.list(list).count, .int(next)) } } catch { break }
                    acknowledged.store(next, ordering: .sequentiallyConsistent)
                    if next == 20 { wrote.signal() }
                    next += 1
                }
                wrote.signal()
            }
            wrote.wait()
            let before = acknowledged.load(ordering: .sequentiallyConsistent)
            try store.backup(to: backupPath)
            let after = acknowledged.load(ordering: .sequentiallyConsistent)
            stop.store(true, ordering: .relaxed)
            wrote.wait()
            #expect(before >= 20)

            #expect(!FileManager.default.fileExists(atPath: backupPath + "-wal"))
            let restored = try DocumentStore(path: backupPath)
            let numbers = try Self.numbers(in: restored, list)
            // One moment of the file: every edit acknowledged before the
            // backup began, none in part, none out of order.
            #expect(numbers == Array(1...Int64(numbers.count)))
            #expect(Int64(numbers.count) >= before && Int64(numbers.count) <= after + 1)
            #expect(restored.replicaID != store.replicaID)
            #expect(try restored.database.integrityCheck())
        }
    }

    /// `cp backup notes.quire` writes into the original's file, keeping its
    /// inode and so its fingerprint: the backup must still take a new id,
    /// as the original made changes after it under its own.
    @Test func aBackupCopiedOverTheOriginalFileTakesANewReplicaID() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", backupPath = directory + "/backup.quire"
            let original: ReplicaID
            do {
                let store = try DocumentStore(path: path)
                original = store.replicaID
                let list = try Self.makeLog(store)
                try store.backup(to: backupPath)
                try store.edit("log") { tx in try tx.insert(list, at: 0, .int(1)) }
                try store.close()
            }
            let inode = try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int
            let backup = try Data(contentsOf: URL(fileURLWithPath: backupPath))
            let handle = try #require(FileHandle(forWritingAtPath: path))
            try handle.truncate(atOffset: 0)
            try handle.write(contentsOf: backup)
            try handle.close()
            #expect(try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int == inode)

            let restored = try DocumentStore(path: path)
            #expect(restored.replicaID != original)
            // Its earlier id's changes stay its own (the outbox offers them).
            #expect(try restored.database.query(sql: "SELECT count(*) FROM local_replicas")[0].int64(0) == 2)
            #expect(try DocumentStore(path: path).replicaID == restored.replicaID)
        }
    }

    @Test func aBackupReplacesAFileOnlyWhenTold() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", backupPath = directory + "/backup.quire"
            let store = try DocumentStore(path: path)
            _ = try Self.makeLog(store)
            try Data("keep me".utf8).write(to: URL(fileURLWithPath: backupPath))
            #expect(throws: StoreError.backupDestinationExists(backupPath)) { try store.backup(to: backupPath) }
            #expect(try String(contentsOfFile: backupPath, encoding: .utf8) == "keep me")
            try store.backup(to: backupPath, replacing: true)
            #expect(try DocumentStore(path: backupPath, readOnly: true).documents().map(\.id) == ["log"])
            // Nothing of the copies is left beside it.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".partial-") }.isEmpty)
        }
    }

    @Test func aBackupDeletesWhatAKilledBackupLeftButNotARunningOnes() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", backupPath = directory + "/backup.quire"
            let store = try DocumentStore(path: path)
            _ = try Self.makeLog(store)
            var host = [CChar](repeating: 0, count: 256)
            #expect(gethostname(&host, host.count) == 0)
            // The name ends at its terminating zero (`String(cString:)` on an array is deprecated).
            let hostName = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // No process has the largest process id; this test's process runs.
            let ended = backupPath + ".partial-\(hostName)-\(Int32.max)-7"
            let running = backupPath + ".partial-\(hostName)-\(getpid())-8"
            let otherMachine = backupPath + ".partial-\(hostName)x-\(Int32.max)-9"
            for file in [ended, ended + "-wal", running, otherMachine] {
                try Data("half a copy".utf8).write(to: URL(fileURLWithPath: file))
            }
            try store.backup(to: backupPath)
            let left = Set(try FileManager.default.contentsOfDirectory(atPath: directory).map { directory + "/" + $0 })
            #expect(!left.contains(ended) && !left.contains(ended + "-wal"))
            #expect(left.contains(running) && left.contains(otherMachine) && left.contains(backupPath))
        }
    }

    @Test func aBackupRefusesTheStoreItselfAFolderAndAnOpenStore() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", openPath = directory + "/open.quire"
            let store = try DocumentStore(path: path)
            let refusal = { (destination: String) -> String? in
                do { try store.backup(to: destination, replacing: true) } catch let error as StoreError {
                    if case .backupRefused(_, let reason) = error { return reason }
                } catch {}
                return nil
            }
            #expect(refusal(path)?.hasPrefix("it is the store itself") == true)
            #expect(refusal(directory)?.hasPrefix("it is a folder") == true)
            #expect(refusal(directory + "/missing/backup.quire")?.hasPrefix("its folder") == true)
            // A store another program has open: replacing its file would
            // leave its -wal to be read into the backup.
            let other = try DocumentStore(path: openPath)
            try other.create(id: "other")
            #expect(FileManager.default.fileExists(atPath: openPath + "-wal"))
            #expect(refusal(openPath)?.contains("-wal") == true)
            #expect(try other.documents().map(\.id) == ["other"])
        }
    }

    /// A read-only open (`quire inspect`, `merge`'s other store) leaves an
    /// empty `-wal` on closing, which only a writer's last close deletes:
    /// no program has the file open, so `--force` replaces it. Open, with
    /// its `-wal` as empty, it is still refused.
    @Test func aBackupReplacesAStoreThatOnlyAReadOnlyOpenLeftAWalBeside() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", oldPath = directory + "/old.quire"
            let store = try DocumentStore(path: path)
            _ = try Self.makeLog(store)
            try DocumentStore(path: oldPath).close()
            let holder = try DocumentStore(path: oldPath)
            #expect(try FileManager.default.attributesOfItem(atPath: oldPath + "-wal")[.size] as? Int == 0)
            #expect(throws: (any Error).self) { try store.backup(to: oldPath, replacing: true) }
            try holder.close()
            #expect(!FileManager.default.fileExists(atPath: oldPath + "-wal"))

            let reader = try DocumentStore(path: oldPath, readOnly: true)
            #expect(try reader.documents().isEmpty)
            try reader.close()
            #expect(try FileManager.default.attributesOfItem(atPath: oldPath + "-wal")[.size] as? Int == 0)
            try store.backup(to: oldPath, replacing: true)
            #expect(try DocumentStore(path: oldPath).documents().map(\.id) == ["log"])
        }
    }
}
