import Foundation
@testable import QuireSync
import Quire
import QuireTestSupport
import Testing

/// The server store's large rows and parked changes are stored as zstd
/// frames (`StoredBundle`, schema version 2) and served as the bundles they
/// hold (`Specs/sync.md`, "Server store").
@Suite struct CompressedServerLogTests {
    /// A sentence repeated: compressible, and above the threshold.
    static let longText = String(repeating: "a line typed into a note, and typed again. ", count: 30)

    /// Replica 1's text: the object, then `count` inserts of `longText` typed at the start, one change each.
    static func typing(count: Int) throws -> [Change] {
        var writer = Document(replica: ReplicaID(1))
        let body = try writer.transact { tx in try tx.putObject(.root, key: "body", kind: .text) }
        for _ in 0..<count { try writer.transact { tx in try tx.insertText(body, at: 0, longText) } }
        return try writer.changes(since: VersionVector())
    }

    /// Runs `body` with the path of a server log in a new directory, removed afterwards.
    static func withStorePath(_ body: (String) throws -> Void) throws {
        try withTemporaryDirectory { directory in try body(directory + "/server.db") }
    }

    /// The stored `data` of every row of `table` (`log`, `parked`), in counter order.
    static func storedData(_ path: String, _ table: String) throws -> [[UInt8]] {
        let database = try Database(path: path, readOnly: true)
        defer { database.close() }
        return try database.query(sql: "SELECT data FROM \(table) ORDER BY document_id, replica, first_counter").map { try $0.blob(0) }
    }

    /// Every bundle a page from the start sends, in order.
    static func served(_ log: ServerLog, known: [DocumentID: VersionVector] = [:]) throws -> [[UInt8]] {
        try log.page(after: 0, access: .unrestricted, known: known, maxBytes: .max).documents.flatMap(\.bundles)
    }

    @Test func aLargeRunIsStoredAsAFrameAndServedAsTheBundleItWas() throws {
        try Self.withStorePath { path in
            let log = try ServerLog(path: path)
            let changes = try Self.typing(count: 3)
            // A small change (the text object) in one push, then a run of the three large ones.
            _ = try log.push([("doc", [changes[0]])], by: .unrestricted, limits: .init())
            _ = try log.push([("doc", Array(changes[1...]))], by: .unrestricted, limits: .init())
            let rows = try Self.storedData(path, "log")
            let run = ChangeEncoding.encode(changes[1...])
            #expect(rows.count == 2 && rows[0] == ChangeEncoding.encode([changes[0]]))
            #expect(Zstd.isFrame(rows[1]) && rows[1].count < run.count / 4)
            // On the wire, the bytes an uncompressed row sent; and, for a client
            // holding the run's start, the rest as before.
            #expect(try Self.served(log) == [ChangeEncoding.encode([changes[0]]), run])
            let holdsTwo: [DocumentID: VersionVector] = ["doc": VersionVector([ReplicaID(1): changes[1].lastID.counter])]
            #expect(try Self.served(log, known: holdsTwo) == [ChangeEncoding.encode(changes[2...])])
            // The same changes again are no conflict (compared with the compressed row's); other content under their id is.
            #expect(try log.pushCountingNew([("doc", changes)], by: .unrestricted, limits: .init()).newChanges == 0)
            var other = changes[2]
            other.lamport += 1
            #expect(throws: SyncFailure.self) { try log.push([("doc", [other])], by: .unrestricted, limits: .init()) }
            #expect(try Self.schemaVersion(path) == 2)
        }
    }

    /// A parked change large enough is stored compressed, and logged when
    /// its dependency comes; a push rebuilds its document from compressed rows.
    @Test func aLargeParkedChangeIsCompressedAndLoggedWhenReady() throws {
        try Self.withStorePath { path in
            let changes = try Self.typing(count: 3)
            do {
                let log = try ServerLog(path: path)
                _ = try log.push([("doc", [changes[0], changes[2]])], by: .unrestricted, limits: .init())
                let parked = try Self.storedData(path, "parked")
                #expect(parked.count == 1 && Zstd.isFrame(parked[0]))
            }
            // A new process: the document is rebuilt from the log to check the push.
            let log = try reopenServerLog(path)
            #expect(try log.push([("doc", [changes[1]])], by: .unrestricted, limits: .init())["doc"]?[ReplicaID(1)] == changes[2].lastID.counter)
            #expect(try Self.storedData(path, "parked").isEmpty)
            var reader = Document(replica: ReplicaID(9))
            for bundle in try Self.served(log) { try reader.applyEncoded(bundle) }
            #expect(reader.versionVector == VersionVector([ReplicaID(1): changes[2].lastID.counter]))
        }
    }

    /// A store an older build wrote (schema 1, every row as it is) opens,
    /// takes schema 2, and serves its old rows beside new compressed ones.
    @Test func aStoreAnOlderBuildWroteServesItsRowsBesideNewOnes() throws {
        try Self.withStorePath { path in
            let changes = try Self.typing(count: 2)
            do { _ = try ServerLog(path: path) }
            // What an older build wrote: version 1, the large change as its bundle.
            let database = try Database(path: path)
            try database.execute(sql: "PRAGMA user_version = 1")
            for (seq, change) in changes[0...1].enumerated() {
                try database.execute(
                    sql: "INSERT INTO log(seq, document_id, replica, first_counter, last_counter, last_lamport, data) VALUES (?, 'doc', ?, ?, ?, ?, ?)",
                    arguments: [.integer(Int64(seq + 1)), .replica(ReplicaID(1)), .unsigned(change.id.counter), .unsigned(change.lastID.counter),
                                .unsigned(change.lastLamport), .blob(ChangeEncoding.encode([change]))])
            }
            database.close()

            let log = try reopenServerLog(path)
            #expect(try Self.schemaVersion(path) == 2)
            // Its document rebuilt from the old rows to check a new change, logged compressed.
            _ = try log.push([("doc", [changes[2]])], by: .unrestricted, limits: .init())
            #expect(try Self.storedData(path, "log").map(Zstd.isFrame) == [false, false, true])
            #expect(try Self.served(log) == changes.map { ChangeEncoding.encode([$0]) })
        }
    }

    /// A compressed row that does not decompress: a page, and a push to its
    /// document, are refused with 422 naming the document (the client syncs
    /// the others); the rest stays, and the other documents take pushes.
    @Test func aDamagedCompressedRowIsAClearErrorNamingItsDocument() throws {
        try Self.withStorePath { path in
            let changes = try Self.typing(count: 2)
            do {
                let log = try ServerLog(path: path)
                _ = try log.push([("groceries", changes)], by: .unrestricted, limits: .init())
            }
            let database = try Database(path: path)
            // The frame's last bytes cut off.
            try database.execute(sql: "UPDATE log SET data = substr(data, 1, length(data) - 8) WHERE seq = 1")
            database.close()

            let log = try reopenServerLog(path)
            #expect {
                _ = try Self.served(log)
            } throws: { error in
                (error as? SyncFailure)?.damagedDocument?.rawValue == "groceries"
            }
            var writer = Document(replica: ReplicaID(1))
            try writer.apply(changes)
            try writer.transact { tx in try tx.insertText(ObjectID(changes[0].id), at: 0, "x") }
            let next = writer.lastChange!
            do throws(SyncFailure) {
                _ = try log.push([("groceries", [next])], by: .unrestricted, limits: .init())
                Issue.record("a push onto a damaged log was taken")
            } catch {
                #expect(error.status == 422 && error.damagedDocument?.rawValue == "groceries", "\(error)")
            }
            var elsewhere = Document(replica: ReplicaID(2))
            try elsewhere.transact { tx in try tx.put(.root, key: "k", .int(1)) }
            #expect(try log.push([("other", [elsewhere.lastChange!])], by: .unrestricted, limits: .init())["other"]?[ReplicaID(2)] == 1)
            #expect(try Self.storedData(path, "log").count == 2)
        }
    }

    /// A parked change that does not decode failed every push to its
    /// document with 500, which a client tries five times and then ends
    /// its whole sync with, sync after sync: it is damage as a log row's
    /// is, refused with 422 naming the document, and the parked row stays.
    @Test func aDamagedParkedChangeIsRefusedAsItsDocumentsDamage() throws {
        try Self.withStorePath { path in
            let changes = try Self.typing(count: 2)
            do {
                let log = try ServerLog(path: path)
                // Parked: its replica's previous change is not logged.
                _ = try log.push([("groceries", [changes[2]])], by: .unrestricted, limits: .init())
            }
            let database = try Database(path: path)
            try database.execute(sql: "UPDATE parked SET data = x'00112233'")
            database.close()

            let log = try reopenServerLog(path)
            do throws(SyncFailure) {
                _ = try log.push([("groceries", Array(changes[0...1]))], by: .unrestricted, limits: .init())
                Issue.record("a push onto a damaged parked change was taken")
            } catch {
                #expect(error.status == 422 && error.damagedDocument?.rawValue == "groceries", "\(error)")
            }
            #expect(try Self.storedData(path, "parked") == [[0x00, 0x11, 0x22, 0x33]])
        }
    }

    /// The server store's tables and columns are those `Specs/sync.md`
    /// ("Server store") lists, at schema version 2.
    @Test func aNewServerStoreHoldsTheTablesOfTheSpec() throws {
        try Self.withStorePath { path in
            _ = try ServerLog(path: path)
            #expect(try Self.schemaVersion(path) == 2)
            let database = try Database(path: path, readOnly: true)
            defer { database.close() }
            var columns: [String: [String]] = [:]
            for table in try database.query(sql: "SELECT name FROM sqlite_master WHERE type = 'table'").map({ try $0.text(0) }) {
                columns[table] = try database.query(sql: "SELECT name FROM pragma_table_info(?)", arguments: [.text(table)])
                    .map { try $0.text(0) }
            }
            #expect(columns == [
                "server": ["singleton", "log_id"],
                "log": ["seq", "document_id", "replica", "first_counter", "last_counter", "last_lamport", "data"],
                "parked": ["document_id", "replica", "first_counter", "data"],
                "replica_owners": ["replica", "token"],
            ])
        }
    }

    static func schemaVersion(_ path: String) throws -> Int64 {
        let database = try Database(path: path, readOnly: true)
        defer { database.close() }
        return try database.query(sql: "PRAGMA user_version")[0].int64(0)
    }
}
