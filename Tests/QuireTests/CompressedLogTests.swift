import Foundation
import QuireTestSupport
import Testing
@testable import Quire

/// Log rows and parked changes large enough to be stored as zstd frames
/// (`StoredBundle`) read back through every path that reads them.
@Suite struct CompressedLogTests {
    /// A sentence repeated: compressible, and above the threshold.
    static let longText = String(repeating: "a line typed into a note, and typed again. ", count: 30)

    /// The stored `data` of every row of `table` (`changes`, `parked_changes`) of the document.
    static func storedData(_ database: Database, _ table: String, _ id: DocumentID) throws -> [[UInt8]] {
        let document = table == "changes" ? "document = (SELECT number FROM documents WHERE id = ?)" : "document_id = ?"
        return try database.query(sql: "SELECT data FROM \(table) WHERE \(document)", arguments: [.text(id.rawValue)]).map { try $0.blob(0) }
    }

    /// Replica 77's note: its text made, then `longText` typed twice, a change each.
    static func remoteTyping() throws -> (document: Document, body: ObjectID) {
        var remote = Document(replica: ReplicaID(77))
        let body = try remote.transact { tx in
            let body = try tx.putObject(.root, key: "body", kind: .text)
            try tx.insertText(body, at: 0, longText)
            return body
        }
        try remote.transact { tx in try tx.insertText(body, at: 0, longText) }
        return (remote, body)
    }

    @Test func compressedRowsReadBackThroughEveryPath() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let store = try DocumentStore(path: path)
            // A local edit, logged through `ChangeLog.append(_:)`.
            try store.create(id: "local")
            try store.edit("local") { tx in try tx.insertText(tx.putObject(.root, key: "body", kind: .text), at: 0, Self.longText) }
            let localChanges = try store.changes("local")

            // A peer's catch-up bundle, logged as it came (`append(run:encodedAs:)`),
            // and a change of another peer that waits for the one before it.
            let (remote, body) = try Self.remoteTyping()
            let remoteChanges = try remote.changes(since: VersionVector())
            try store.apply(bundles: [("remote", [ChangeEncoding.encode(remoteChanges)])])
            var late = Document(replica: ReplicaID(88))
            try late.apply(remoteChanges)
            try late.transact { tx in try tx.insertText(body, at: 0, "first ") }
            try late.transact { tx in try tx.insertText(body, at: 0, Self.longText) }
            let lateChanges = try late.changes(since: remote.versionVector)
            try store.apply("remote", [lateChanges[1]])

            for (table, id) in [("changes", "local"), ("changes", "remote"), ("parked_changes", "remote")] as [(String, DocumentID)] {
                let rows = try Self.storedData(store.database, table, id)
                #expect(!rows.isEmpty && rows.allSatisfy(Zstd.isFrame), "\(table) of \(id)")
            }

            // Another store on the file: loading, the log, the outbox, the parked change.
            let reopened = try DocumentStore(path: path)
            #expect(try reopened.read("local") { document in
                guard case .object(.text, let text)? = try document.get(.root, key: "body") else { return nil }
                return try document.text(text)
            } == Self.longText)
            #expect(try reopened.changes("local") == localChanges)
            #expect(try reopened.changes("remote") == remoteChanges)
            #expect(try reopened.changes("remote", since: VersionVector([ReplicaID(77): remoteChanges[0].lastID.counter])) == [remoteChanges[1]])
            #expect(try reopened.outbox(peer: nil) == ["local": localChanges])
            #expect(try reopened.apply("remote", [lateChanges[0]]) == 2)
            #expect(try reopened.read("remote") { try $0.text(body) } == Self.longText + "first " + Self.longText + Self.longText)
            // A bundle already logged is found the same, not a conflicting change.
            #expect(try reopened.apply("remote", remoteChanges) == 0)

            // The first store learns of those commits by reading their rows.
            let events = try store.checkForOutsideCommits()
            #expect(events.map(\.document) == ["remote"])
            #expect(events.first?.changeIDs == lateChanges.map(\.id))
        }
    }

    /// `ChangeLog.changeCount` (what `quire compact` reports) counts from
    /// each row's bundle header what decoding the log counts: a catch-up
    /// row (a run, compressed) and a local edit of several operations. A
    /// row's counters would not do: they span operations.
    @Test func aLogsChangesAreCountedFromItsRowsWithoutDecodingThem() throws {
        try withTemporaryDirectory { directory in
            let store = try DocumentStore(path: directory + "/store.quire")
            let (remote, body) = try Self.remoteTyping()
            try store.apply(bundles: [("doc", [ChangeEncoding.encode(try remote.changes(since: VersionVector()))])])
            try store.edit("doc") { tx in
                try tx.insertText(body, at: 0, "ab")
                try tx.put(.root, key: "k", .int(1))
            }
            let (counted, counters) = try store.database.read { db in
                (try ChangeLog.changeCount(document: "doc", db),
                 try db.query(sql: "SELECT sum(last_counter - first_counter + 1) FROM changes")[0].int64(0))
            }
            #expect(try Self.storedData(store.database, "changes", "doc").map(Zstd.isFrame) == [true, false])
            #expect(try store.changes("doc").count == 3 && counted == 3)
            #expect(counters > 3)
        }
    }
}
