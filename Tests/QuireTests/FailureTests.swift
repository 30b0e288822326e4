import CSQLite
import Foundation
import QuireTestSupport
import Testing
@testable import Quire

/// A full disk or a read-only file: a clear error, nothing half-saved, and
/// the store still usable.
@Suite struct FailureTests {
    /// An app shows `error.localizedDescription`; Foundation makes it
    /// "The operation could not be completed. (QuireStore.StoreError error 0.)"
    /// for an error that is not a `LocalizedError`, which names nothing.
    @Test func anErrorsLocalizedDescriptionSaysWhatIsWrong() throws {
        try withTemporaryDirectory { directory in
            let store = try DocumentStore(path: directory + "/store.quire")
            var shown: [String] = []
            do { _ = try store.read("groceries") { $0.versionVector } } catch { shown.append(error.localizedDescription) }
            let id = try store.createDocument()
            do { try store.edit(id) { tx in try tx.insertText(.root, at: 0, "milk") } } catch { shown.append(error.localizedDescription) }
            try Data("not a store".utf8).write(to: URL(fileURLWithPath: directory + "/notes.txt"))
            do { _ = try DocumentStore(path: directory + "/notes.txt") } catch { shown.append(error.localizedDescription) }
            do { _ = try store.apply(bundles: [(id, [[1, 2, 3]])]) } catch { shown.append(error.localizedDescription) }
            #expect(shown == [
                "no document groceries in this store",
                "object root is a map, not a text",
                "the file is not a SQLite database (or is encrypted): file is not a database (SQLite code 26), setting journal_mode, in \(directory)/notes.txt",
                "the changes given for document \(id) were refused: not a Quire change bundle (wrong magic number)",
            ])
        }
    }

    @Test func aFullDiskFailsTheEditAndLeavesTheStoreUsable() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let store = try DocumentStore(path: path)
            let id = try store.createDocument()
            let text = try store.edit(id) { tx in try tx.putObject(.root, key: "body", kind: .text) }
            try store.edit(id) { tx in try tx.insertText(text, at: 0, "kept") }
            let before = try store.state(id)

            // SQLite reports SQLITE_FULL once the file would pass max_page_count.
            let pages = try store.database.query(sql: "PRAGMA page_count")[0].int64(0)
            try store.database.execute(sql: "PRAGMA max_page_count = \(pages)")
            let big = Self.printableNoise(count: 200_000, seed: 1)
            #expect {
                try store.edit(id) { tx in try tx.insertText(text, at: 0, big) }
            } throws: { error in
                guard let error = error as? DatabaseError else { return false }
                return error.primaryCode == SQLITE_FULL && error.description.contains("disk is full")
            }
            #expect(try store.state(id) == before)

            try store.database.execute(sql: "PRAGMA max_page_count = 1073741823")
            try store.edit(id) { tx in try tx.insertText(text, at: 4, "!") }
            #expect(try store.read(id) { try $0.text(text) } == "kept!")
            #expect(try DocumentStore(path: path).read(id) { try $0.text(text) } == "kept!")
        }
    }

    /// Threads edit their own documents while the disk fills up: commits
    /// share transactions, and whichever fail, every edit that returned is
    /// on disk and no other is, in memory or in the file.
    @Test func concurrentEditsOnAFillingDiskKeepExactlyTheAcknowledgedOnes() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let store = try DocumentStore(path: path)
            let ids = try (0..<4).map { _ in try store.createDocument() }
            let texts = try ids.map { id in try store.edit(id) { tx in try tx.putObject(.root, key: "body", kind: .text) } }
            let pages = try store.database.query(sql: "PRAGMA page_count")[0].int64(0)
            try store.database.execute(sql: "PRAGMA max_page_count = \(pages + 10)")
            let chunk = Self.printableNoise(count: 1_000, seed: 2)
            let acknowledged = Acknowledged()
            DispatchQueue.concurrentPerform(iterations: ids.count) { thread in
                for _ in 0..<20 {
                    if (try? store.edit(ids[thread]) { tx in try tx.insertText(texts[thread], at: 0, chunk) }) != nil {
                        acknowledged.add(thread)
                    }
                }
            }
            #expect(acknowledged.total < 80, "the disk never filled up")
            let reopened = try DocumentStore(path: path)
            for (thread, id) in ids.enumerated() {
                let expected = acknowledged.count(thread) * chunk.count
                #expect(try store.read(id) { try $0.textCount(texts[thread]) } == expected)
                #expect(try reopened.read(id) { try $0.textCount(texts[thread]) } == expected)
            }
        }
    }

    /// Text that takes room in the file: a log row stores a large bundle
    /// compressed (`StoredBundle`), and a repeated letter would take next to
    /// none, leaving the disk never full. Random printable ASCII keeps
    /// about 80% of its bytes.
    static func printableNoise(count: Int, seed: UInt64) -> String {
        String(decoding: FreeSpaceTests.noise(count: count, seed: seed).map { 0x21 + $0 % 94 }, as: UTF8.self)
    }

    final class Acknowledged: @unchecked Sendable {
        private let lock = NSLock()
        private var counts: [Int: Int] = [:]
        func add(_ thread: Int) { lock.withLock { counts[thread, default: 0] += 1 } }
        func count(_ thread: Int) -> Int { lock.withLock { counts[thread, default: 0] } }
        var total: Int { lock.withLock { counts.values.reduce(0, +) } }
    }

    @Test func aReadOnlyStoreReadsAndRefusesWrites() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let id: DocumentID = "note"
            do {
                let store = try DocumentStore(path: path)
                try store.create(id: id)
                try store.edit(id) { tx in try tx.put(.root, key: "title", .string("hello")) }
            }
            let readOnly = try DocumentStore(path: path, readOnly: true)
            let isReadOnly: (any Error) -> Bool = { error in
                (error as? DatabaseError)?.primaryCode == SQLITE_READONLY
            }
            #expect(performing: { try readOnly.edit(id) { tx in try tx.put(.root, key: "title", .string("changed")) } },
                    throws: isReadOnly)
            #expect(performing: { try readOnly.create(id: "other") }, throws: isReadOnly)
            #expect(try readOnly.read(id) { try $0.get(.root, key: "title") } == .scalar(.string("hello")))

            let writable = try DocumentStore(path: path)
            try writable.edit(id) { tx in try tx.put(.root, key: "title", .string("changed")) }
            #expect(try writable.read(id) { $0.changeCount } == 2)
        }
    }
}
