import CSQLite
import Foundation
import QuireTestSupport
import Testing
@testable import Quire

/// Schema version 1 is the first released version. Every later version's
/// migration gets a test here on a file made by the version before it, with
/// unsent changes in the outbox.
@Suite struct MigrationTests {
    /// `makeVersion1Store`, migrated up to `version` (as that release left
    /// it), then `edit` run on the file; returns the outbox.
    static func makeStore(version: Int, path: String, _ edit: (Database) throws -> Void = { _ in }) throws -> [DocumentID: [Change]] {
        let outbox = try makeVersion1Store(path: path)
        let database = try Database(path: path)
        defer { database.close() }
        try StoreSchema.migrator(upTo: version).migrate(database)
        try edit(database)
        return outbox
    }

    /// A store made at `version` (`makeStore`), then opened by this
    /// program, which upgrades it: at the latest version, its outbox kept.
    static func upgradedStore(fromVersion version: Int, path: String) throws -> DocumentStore {
        let outbox = try makeStore(version: version, path: path)
        let store = try DocumentStore(path: path)
        #expect(try store.database.query(sql: "PRAGMA user_version")[0].int64(0) == Int64(StoreSchema.latestVersion))
        #expect(try store.outbox(peer: "server") == outbox)
        return store
    }

    /// A store file exactly as schema version 1 writes it (made with the
    /// version 1 migration only): two documents with local changes no peer
    /// has acknowledged, and a parked remote change.
    static func makeVersion1Store(path: String) throws -> [DocumentID: [Change]] {
        let database = try Database(path: path)
        defer { database.close() }
        try StoreSchema.migrator(upTo: 1).migrate(database)
        var outbox: [DocumentID: [Change]] = [:]
        try database.write { db in
            let replica = try ReplicaIdentity.establish(db, fingerprint: ReplicaIdentity.fingerprint(ofFile: path), now: 0)
            for id in ["first", "second"] {
                try db.execute(sql: "INSERT INTO documents(id, created_at) VALUES (?, 0)", arguments: [.text(id)])
                var document = Document(replica: replica)
                for index in 0..<3 {
                    try document.transact { tx in try tx.put(.root, key: "k\(index)", .int(Int64(index))) }
                    try Self.logAsBeforeVersion5([document.lastChange!], document: id, isLocal: true, db)
                    outbox[DocumentID(rawValue: id)!, default: []].append(document.lastChange!)
                }
            }
            let early = Change(id: OpID(replica: ReplicaID(77), counter: 2), lamport: 9, parents: [],
                               operations: [.put(object: .root, key: "remote", value: .scalar(.null), pred: [])])
            try ParkedChanges.park([early], document: "first", db)
        }
        let version = try database.query(sql: "PRAGMA user_version")[0].int64(0)
        precondition(version == 1, "the fixture must be schema version 1")
        return outbox
    }

    /// Four changes of replica 77, each setting root key `r` to 0, 1, 2, 3.
    static func remoteChanges() throws -> [Change] {
        var remote = Document(replica: ReplicaID(77))
        for index in 0..<4 { try remote.transact { tx in try tx.put(.root, key: "r", .int(Int64(index))) } }
        return try remote.changes(since: VersionVector())
    }

    /// Logs changes as schema versions 1 to 4 did, a row each naming its
    /// document by id, which `ChangeLog.append` no longer writes.
    static func logAsBeforeVersion5(_ changes: [Change], document: String, isLocal: Bool, _ db: DatabaseConnection) throws {
        for change in changes {
            try db.execute(
                sql: """
                    INSERT INTO changes(document_id, replica, first_counter, last_counter, first_lamport, last_lamport,
                                        parents, time, is_local, data)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    .text(document), .replica(change.replica), .unsigned(change.id.counter), .unsigned(change.lastID.counter),
                    .unsigned(change.lamport), .unsigned(change.lastLamport), .text(change.parents.map(\.description).joined(separator: " ")),
                    .integer(change.time), .integer(isLocal ? 1 : 0), .blob(ChangeEncoding.encode([change])),
                ])
        }
    }

    @Test func aVersion1StoreOpensWithItsOutboxAndParkedChanges() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/v1.quire"
            let outbox = try Self.makeVersion1Store(path: path)
            #expect(outbox.values.map(\.count) == [3, 3])
            let store = try DocumentStore(path: path)
            #expect(try store.outbox(peer: "server") == outbox)
            #expect(try store.read("first") { $0.pendingCount } == 1)
            // Version 2's sync state starts empty and works.
            #expect(try store.syncCursor(peer: "server") == nil)
            try store.setSyncCursor(SyncCursor(logID: 1, seq: 5), peer: "server")
            #expect(try store.syncCursor(peer: "server") == SyncCursor(logID: 1, seq: 5))
            #expect(try store.rejectedChanges(peer: "server").isEmpty)
            #expect(try store.database.query(sql: "PRAGMA user_version")[0].int64(0) == Int64(StoreSchema.latestVersion))
        }
    }

    /// Version 3 lets a log row hold a run of changes. A version 2 file
    /// (one change a row) with unsent changes keeps its outbox, and a
    /// catch-up bundle applied afterwards is logged as one row beside the
    /// old rows, and reloads.
    @Test func aVersion2StoreKeepsItsOutboxAndLogsRunsAfterwards() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/v2.quire"
            let database = try Database(path: path)
            try StoreSchema.migrator(upTo: 2).migrate(database)
            let replica = try database.write { db in
                let replica = try ReplicaIdentity.establish(db, fingerprint: ReplicaIdentity.fingerprint(ofFile: path), now: 0)
                try db.execute(sql: "INSERT INTO documents(id, created_at) VALUES ('notes', 0)")
                var document = Document(replica: replica)
                for index in 0..<3 {
                    try document.transact { tx in try tx.put(.root, key: "k\(index)", .int(Int64(index))) }
                    try Self.logAsBeforeVersion5([document.lastChange!], document: "notes", isLocal: true, db)
                }
                return replica
            }
            database.close()

            let store = try DocumentStore(path: path)
            #expect(store.replicaID == replica)
            #expect(try store.outbox(peer: "server")["notes"]?.count == 3)
            var remote = Document(replica: ReplicaID(99))
            for index in 0..<50 { try remote.transact { tx in try tx.put(.root, key: "r", .int(Int64(index))) } }
            #expect(try store.apply(bundles: [("notes", [remote.encodeChanges()])]) == 50)
            #expect(try store.database.query(sql: "SELECT count(*) FROM changes")[0].int64(0) == 4)
            #expect(try store.outbox(peer: "server")["notes"]?.count == 3)

            let reopened = try DocumentStore(path: path)
            #expect(try reopened.read("notes") { try $0.get(.root, key: "r") } == .scalar(.int(49)))
            #expect(try reopened.changes("notes").count == 53)
            #expect(try reopened.changes("notes", since: VersionVector([ReplicaID(99): 20])).count == 33)
        }
    }

    /// Version 4 keeps each document's version vector beside the log. A
    /// version 3 file gets it from the log, and for a compacted document
    /// from the snapshot that replaced its log rows; a parked change is not
    /// in it. Later commits keep it up to date.
    @Test func aVersion3StoreGetsTheVersionOfEachDocument() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/v3.quire"
            let database = try Database(path: path)
            try StoreSchema.migrator(upTo: 3).migrate(database)
            let remoteChanges = try Self.remoteChanges()
            let replica = try database.write { db in
                let replica = try ReplicaIdentity.establish(db, fingerprint: ReplicaIdentity.fingerprint(ofFile: path), now: 0)
                for id in ["local", "compacted", "empty"] {
                    try db.execute(sql: "INSERT INTO documents(id, created_at) VALUES (?, 0)", arguments: [.text(id)])
                }
                var local = Document(replica: replica)
                for index in 0..<3 {
                    try local.transact { tx in try tx.put(.root, key: "k", .int(Int64(index))) }
                    try Self.logAsBeforeVersion5([local.lastChange!], document: "local", isLocal: true, db)
                }
                // Compacted: the remote rows are gone, a snapshot holds them.
                var compacted = Document(replica: replica)
                try compacted.apply(remoteChanges.dropLast())
                try Self.logAsBeforeVersion5(Array(remoteChanges.dropLast()), document: "compacted", isLocal: false, db)
                let coversSeq = try db.query(sql: "SELECT max(seq) FROM changes WHERE document_id = 'compacted'")[0].int64(0)
                try SnapshotStore.write(compacted, id: "compacted", coversSeq: coversSeq, now: 0, db)
                // Every remote row, as compaction then deleted them (it now keeps the newest change's).
                try db.execute(sql: "DELETE FROM changes WHERE document_id = 'compacted'")
                try db.execute(sql: "UPDATE documents SET log_start_seq = ? WHERE id = 'compacted'", arguments: [.integer(coversSeq)])
                try compacted.transact { tx in try tx.put(.root, key: "after", .bool(true)) }
                try Self.logAsBeforeVersion5([compacted.lastChange!], document: "compacted", isLocal: true, db)
                let waiting = Change(id: OpID(replica: ReplicaID(88), counter: 2), lamport: 9, parents: [],
                                     operations: [.put(object: .root, key: "early", value: .scalar(.null), pred: [])])
                try ParkedChanges.park([waiting], document: "compacted", db)
                return replica
            }
            #expect(try database.query(sql: "SELECT count(*) FROM changes WHERE document_id = 'compacted'")[0].int64(0) == 1)
            database.close()

            let store = try DocumentStore(path: path)
            let versions = try store.versionVectors()
            #expect(versions == ["local": [replica: 3], "compacted": [ReplicaID(77): 3, replica: 1], "empty": VersionVector()])
            for (id, version) in versions { #expect(try store.read(id) { $0.versionVector } == version) }
            try store.apply("compacted", [remoteChanges.last!])
            try store.edit("empty") { tx in try tx.put(.root, key: "k", .int(1)) }
            #expect(try store.versionVectors() == ["local": [replica: 3], "compacted": [ReplicaID(77): 4, replica: 1], "empty": [replica: 1]])
        }
    }

    /// Version 5 names a log row's document by its number. A version 4
    /// file keeps every row under the same `seq`, the AUTOINCREMENT record
    /// above a compacted document's deleted rows, the snapshot, the
    /// acknowledgements, sync cursor, rejected changes and documents
    /// (removed, empty); new documents get the next number.
    @Test func aVersion4StoreKeepsItsLogUnderDocumentNumbers() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/v4.quire"
            let database = try Database(path: path)
            try StoreSchema.migrator(upTo: 3).migrate(database)
            let remoteChanges = try Self.remoteChanges()
            var logged: [DocumentID: [Change]] = [:]
            _ = try database.write { db in
                let replica = try ReplicaIdentity.establish(db, fingerprint: ReplicaIdentity.fingerprint(ofFile: path), now: 0)
                for id in ["notes", "mixed", "compacted", "empty", "removed"] {
                    try db.execute(sql: "INSERT INTO documents(id, created_at) VALUES (?, 7)", arguments: [.text(id)])
                }
                try db.execute(sql: "UPDATE documents SET removed_at = 8 WHERE id = 'removed'")
                for id in ["notes", "mixed", "removed"] {
                    var document = Document(replica: replica)
                    if id == "mixed" {
                        try document.apply(remoteChanges)
                        try Self.logAsBeforeVersion5(remoteChanges, document: id, isLocal: false, db)
                        logged[DocumentID(rawValue: id)!, default: []] += remoteChanges
                    }
                    for index in 0..<3 {
                        try document.transact { tx in try tx.put(.root, key: "k", .int(Int64(index))) }
                        try Self.logAsBeforeVersion5([document.lastChange!], document: id, isLocal: true, db)
                        logged[DocumentID(rawValue: id)!, default: []].append(document.lastChange!)
                    }
                }
                // Compacted: its snapshot holds the remote changes, whose rows,
                // the newest in the log, are gone.
                var compacted = Document(replica: replica)
                try compacted.apply(remoteChanges)
                try Self.logAsBeforeVersion5(remoteChanges, document: "compacted", isLocal: false, db)
                let coversSeq = try db.query(sql: "SELECT max(seq) FROM changes")[0].int64(0)
                try SnapshotStore.write(compacted, id: "compacted", coversSeq: coversSeq, now: 0, db)
                try db.execute(sql: "DELETE FROM changes WHERE document_id = 'compacted'")
                try db.execute(sql: "UPDATE documents SET log_start_seq = ? WHERE id = 'compacted'", arguments: [.integer(coversSeq)])
                try PeerAcknowledgements.acknowledge(peer: "server", document: "notes", version: [replica: 2], db)
                try SyncState.setCursor(SyncCursor(logID: 3, seq: 41), peer: "server", now: 9, db)
                try SyncState.reject(logged["mixed"]!.suffix(1), document: "mixed", peer: "server", status: 422, reason: "too big", now: 9, db)
                // Waits for counter 1 of replica 79, which no store here holds.
                let waiting = Change(id: OpID(replica: ReplicaID(79), counter: 2), lamport: 9, parents: [],
                                     operations: [.put(object: .root, key: "waiting", value: .scalar(.null), pred: [])])
                try ParkedChanges.park([waiting], document: "notes", db)
                return replica
            }
            try StoreSchema.migrator(upTo: 4).migrate(database)
            let seqs = try database.query(sql: "SELECT seq FROM changes ORDER BY seq").map { try $0.int64(0) }
            let highestSeq = try database.read(ChangeLog.highestSeq)
            #expect(highestSeq > seqs.last!)
            let versions = try database.read(DocumentVersions.all).map { "\($0.document) \($0.version)" }
            database.close()

            let store = try DocumentStore(path: path)
            #expect(try store.database.query(sql: "PRAGMA user_version")[0].int64(0) == Int64(StoreSchema.latestVersion))
            // Vacuumed: the old log's pages are not left in the file.
            #expect(try store.database.query(sql: "PRAGMA freelist_count")[0].int64(0) == 0)
            #expect(try store.database.query(sql: "SELECT name FROM pragma_table_info('changes')").map { try $0.text(0) }
                    == ["seq", "document", "replica", "first_counter", "last_counter", "first_lamport", "last_lamport", "time", "is_local", "data"])
            #expect(try store.database.query(sql: "SELECT seq FROM changes ORDER BY seq").map { try $0.int64(0) } == seqs)
            #expect(try store.database.read(ChangeLog.highestSeq) == highestSeq)
            #expect(try store.documents(includeRemoved: true).map { "\($0.id):\($0.isRemoved)" }
                    == ["compacted:false", "empty:false", "mixed:false", "notes:false", "removed:true"])
            for (id, changes) in logged { #expect(try store.changes(id) == changes) }
            #expect(try store.read("compacted") { try $0.get(.root, key: "r") } == .scalar(.int(3)))
            #expect(try store.read("mixed") { try $0.get(.root, key: "k") } == .scalar(.int(2)))
            #expect(try store.database.read(DocumentVersions.all).map { "\($0.document) \($0.version)" } == versions)
            #expect(try store.outbox(peer: "server") == ["notes": Array(logged["notes"]!.suffix(1)),
                                                          "mixed": Array(logged["mixed"]!.suffix(3)),
                                                          "removed": logged["removed"]!])
            #expect(try store.syncCursor(peer: "server") == SyncCursor(logID: 3, seq: 41))
            #expect(try store.rejectedChanges(peer: "server").map(\.lastCounter) == [3])
            #expect(try store.read("notes") { $0.pendingCount } == 1)

            // New rows go on above the old AUTOINCREMENT record, under new numbers.
            try store.edit("empty") { tx in try tx.put(.root, key: "k", .int(1)) }
            try store.create(id: "new")
            try store.edit("new") { tx in try tx.put(.root, key: "k", .int(2)) }
            #expect(try store.database.query(sql: "SELECT min(seq) FROM changes WHERE seq > ?", arguments: [.integer(seqs.last!)])[0].int64(0)
                    == highestSeq + 1)
            #expect(try store.database.query(sql: "SELECT number FROM documents WHERE id = 'new'")[0].int64(0) == 6)
            let reopened = try DocumentStore(path: path)
            #expect(try reopened.read("new") { try $0.get(.root, key: "k") } == .scalar(.int(2)))
            #expect(try reopened.changes("empty").count == 1)
        }
    }

    /// The upgrade to version 5 vacuums once it has committed; a vacuum
    /// killed or failed (a full disk) leaves the upgraded file with the old
    /// log's pages free, as migrating alone does here. The next open for
    /// writing gives them back.
    @Test func anUpgradeWhoseVacuumDidNotCompleteIsVacuumedAtTheNextOpen() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/v4.quire"
            let database = try Database(path: path)
            try StoreSchema.migrator(upTo: 3).migrate(database)
            var document = Document(replica: ReplicaID(77))
            try database.write { db in
                try db.execute(sql: "INSERT INTO documents(id, created_at) VALUES ('notes', 7)")
                for index in 0..<400 {
                    try document.transact { tx in try tx.put(.root, key: "k", .bytes(FreeSpaceTests.noise(count: 4096, seed: UInt64(index)))) }
                    try Self.logAsBeforeVersion5([document.lastChange!], document: "notes", isLocal: false, db)
                }
            }
            try StoreSchema.migrator.migrate(database)
            let upgraded = try database.freeSpace()
            #expect(try database.query(sql: "PRAGMA user_version")[0].int64(0) == Int64(StoreSchema.latestVersion))
            #expect(upgraded.freeBytes > 1_600_000 && upgraded.freeShare > 0.4)
            database.close()

            let store = try DocumentStore(path: path)
            let reopened = try store.database.freeSpace()
            #expect(reopened.freeBytes == 0)
            #expect(reopened.fileBytes <= upgraded.fileBytes - upgraded.freeBytes)
            #expect(try FreeSpaceTests.fileLength(path) == reopened.fileBytes)
            #expect(try store.changes("notes").count == 400)
            #expect(try store.read("notes") { try $0.get(.root, key: "k") } == .scalar(.bytes(FreeSpaceTests.noise(count: 4096, seed: 399))))
        }
    }

    /// Version 6 rewrites nothing: a version 5 store's rows, a large one
    /// stored as it is among them, read as before and keep their bytes,
    /// and only rows written after the upgrade are compressed.
    @Test func aVersion5StoreKeepsItsRowsAsTheyAreAndCompressesNewOnes() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/v5.quire"
            let database = try Database(path: path)
            try StoreSchema.migrator(upTo: 5).migrate(database)
            var document = Document(replica: ReplicaID(77))
            let long = String(repeating: "a paragraph pasted into the note. ", count: 40)
            try document.transact { tx in try tx.insertText(tx.putObject(.root, key: "body", kind: .text), at: 0, long) }
            try document.transact { tx in try tx.put(.root, key: "pinned", .bool(true)) }
            let logged = try document.changes(since: VersionVector())
            let early = Change(id: OpID(replica: ReplicaID(78), counter: 2), lamport: 9, parents: [],
                               operations: [.put(object: .root, key: "remote", value: .scalar(.string(long)), pred: [])])
            try database.write { db in
                _ = try ReplicaIdentity.establish(db, fingerprint: ReplicaIdentity.fingerprint(ofFile: path), now: 0)
                try db.execute(sql: "INSERT INTO documents(id, created_at, number) VALUES ('notes', 0, 1)")
                // As version 5 wrote them: each bundle as it is, however large;
                // local changes (under an earlier id of the store), unsent.
                for change in logged {
                    try db.execute(
                        sql: """
                            INSERT INTO changes(document, replica, first_counter, last_counter, first_lamport, last_lamport,
                                                time, is_local, data)
                            VALUES (1, ?, ?, ?, ?, ?, 0, 1, ?)
                            """,
                        arguments: [.replica(change.replica), .unsigned(change.id.counter), .unsigned(change.lastID.counter),
                                    .unsigned(change.lamport), .unsigned(change.lastLamport), .blob(ChangeEncoding.encode([change]))])
                }
                try DocumentVersions.raise(document: "notes", replicas: [ReplicaID(77)], to: document.versionVector, db)
                try db.execute(sql: "INSERT INTO parked_changes(document_id, replica, first_counter, last_counter, data) VALUES ('notes', 78, 2, 2, ?)",
                               arguments: [.blob(ChangeEncoding.encode([early]))])
            }
            let rowsBefore = try database.query(sql: "SELECT seq, data FROM changes UNION ALL SELECT 0, data FROM parked_changes")
                .map { [try $0.int64(0)] + (try $0.blob(1)).map(Int64.init) }
            database.close()

            let store = try DocumentStore(path: path)
            #expect(try store.database.query(sql: "PRAGMA user_version")[0].int64(0) == Int64(StoreSchema.latestVersion))
            #expect(try store.database.query(sql: "SELECT seq, data FROM changes UNION ALL SELECT 0, data FROM parked_changes")
                        .map { [try $0.int64(0)] + (try $0.blob(1)).map(Int64.init) } == rowsBefore)
            #expect(try store.changes("notes") == logged)
            #expect(try store.outbox(peer: "server") == ["notes": logged])
            #expect(try store.read("notes") { $0.pendingCount } == 1)
            try store.edit("notes") { tx in try tx.put(.root, key: "title", .string(long)) }
            let newest = try store.database.query(sql: "SELECT data FROM changes ORDER BY seq DESC LIMIT 1")[0].blob(0)
            #expect(Zstd.isFrame(newest))
            #expect(try DocumentStore(path: path).read("notes") { try $0.get(.root, key: "title") } == .scalar(.string(long)))
        }
    }

    /// Version 7 adds `removal_marks`, empty: a version 6 store keeps its
    /// outbox and its removed document, and a removal made after the
    /// upgrade is seen by another store on the file.
    @Test func aVersion6StoreKeepsItsDocumentsAndReportsLaterRemovals() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/v6.quire"
            let outbox = try Self.makeStore(version: 6, path: path) { database in
                try database.execute(sql: "UPDATE documents SET removed_at = 1 WHERE id = 'second'")
            }

            let store = try DocumentStore(path: path)
            #expect(try store.database.query(sql: "PRAGMA user_version")[0].int64(0) == Int64(StoreSchema.latestVersion))
            #expect(try store.outbox(peer: "server") == outbox)
            #expect(try store.documents(includeRemoved: true).map { [$0.id: $0.isRemoved] } == [["first": false], ["second": true]])
            #expect(try store.database.query(sql: "SELECT count(*) FROM removal_marks")[0].int64(0) == 0)
            #expect(try store.checkForOutsideCommits().isEmpty)
            let other = try DocumentStore(path: path)
            try other.restore("second")
            try other.remove("first")
            #expect(try store.checkForOutsideCommits().map { [$0.document: $0.isRemoved] } == [["second": false], ["first": true]])
        }
    }

    /// Version 8 adds `refused_documents`, empty: a version 7 store keeps
    /// its outbox, refuses nothing yet, and records a refusal.
    @Test func aVersion7StoreKeepsItsSyncStateAndRecordsRefusedDocuments() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/v7.quire"
            let store = try Self.upgradedStore(fromVersion: 7, path: path)
            #expect(try store.refusedDocuments(peer: "server").isEmpty)
            try store.setRefusedDocuments(["first"], peer: "server")
            #expect(try DocumentStore(path: path).refusedDocuments(peer: "server") == ["first"])
        }
    }

    /// Version 9 adds `replaced_documents`, empty: a version 8 store keeps
    /// its outbox, has replaced no copy yet, and records the next one.
    @Test func aVersion8StoreKeepsItsOutboxAndRecordsAReplacedCopy() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/v8.quire"
            let store = try Self.upgradedStore(fromVersion: 8, path: path)
            #expect(try store.replacedCopies().isEmpty)
            let kept = try #require(try store.discardCopy(of: "first", resyncingWith: "server") { _, copy in try copy.put(.root, key: "k", .int(1)) })
            #expect(try DocumentStore(path: path).replacedCopies() == ["first": kept])
        }
    }

    @Test func aStoreFromANewerVersionIsRefused() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/future.quire"
            _ = try Self.makeVersion1Store(path: path)
            let database = try Database(path: path)
            try database.execute(sql: "PRAGMA user_version = \(StoreSchema.latestVersion + 1)")
            database.close()
            let refusal = StoreError.unsupportedSchema(found: StoreSchema.latestVersion + 1, expected: StoreSchema.latestVersion)
            #expect(throws: refusal) { try DocumentStore(path: path) }
            #expect(throws: refusal) { try DocumentStore(path: path, readOnly: true) }
            #expect(refusal.description.contains("newer version of Quire") && !refusal.description.contains("migrate"))
        }
    }
}
