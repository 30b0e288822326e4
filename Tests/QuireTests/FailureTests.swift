import CSQLite
import Foundation
import Testing
@testable import Quire

/// A full disk or a read-only file: a clear error, nothing half-saved, and
/// the store still usable.
@Suite struct FailureTests {
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
            let big = String(repeating: "x", count: 200_000)
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
            #expect(try writable.read(id) { $0.changes.count } == 2)
        }
    }
}
