import QuireTestSupport
import Testing
@testable import Quire

/// The store file `Specs/storage.md` describes ("Store schema"): its
/// version and every table and column, as a new store holds them. A
/// schema change that leaves the spec behind fails here.
@Suite struct StoreSchemaSpecTests {
    @Test func aNewStoreHoldsTheTablesAndColumnsOfTheSpec() throws {
        try withTemporaryDirectory { directory in
            let store = try DocumentStore(path: directory + "/notes.quire")
            #expect(StoreSchema.latestVersion == 9)
            #expect(try store.database.query(sql: "PRAGMA user_version")[0].int64(0) == 9)
            let tables = try store.database.query(
                sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            ).map { try $0.text(0) }
            var columns: [String: [String]] = [:]
            for table in tables {
                columns[table] = try store.database.query(sql: "SELECT name FROM pragma_table_info(?)", arguments: [.text(table)])
                    .map { try $0.text(0) }
            }
            #expect(columns == [
                "replica": ["singleton", "replica_id", "file_fingerprint"],
                "local_replicas": ["replica_id", "created_at"],
                "documents": ["id", "created_at", "removed_at", "log_start_seq", "number"],
                "changes": ["seq", "document", "replica", "first_counter", "last_counter", "first_lamport", "last_lamport",
                            "time", "is_local", "data"],
                "parked_changes": ["document_id", "replica", "first_counter", "last_counter", "data"],
                "snapshots": ["id", "document_id", "covers_seq", "created_at", "frame"],
                "peer_acknowledgements": ["peer", "document_id", "replica", "counter"],
                "sync_cursors": ["peer", "log_id", "seq", "synced_at"],
                "rejected_changes": ["peer", "document_id", "replica", "first_counter", "last_counter", "status", "reason",
                                     "rejected_at"],
                "document_versions": ["document_id", "replica", "counter"],
                "removal_marks": ["seq", "document"],
                "refused_documents": ["peer", "document_id"],
                "replaced_documents": ["document_id", "kept_as"],
            ])
            // `changes` is unique on (document, replica, first_counter), indexed
            // on (document, seq), with a partial index of the local changes.
            let indexes = try store.database.query(
                sql: "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'changes' AND sql IS NOT NULL ORDER BY name"
            ).map { "\(try $0.text(0)): \(try $0.text(1))" }
            #expect(indexes == ["changes_document: CREATE INDEX changes_document ON changes(document, seq)",
                                "changes_local: CREATE INDEX changes_local ON changes(is_local, document) WHERE is_local = 1"])
            #expect(try store.database.query(sql: "SELECT sql FROM sqlite_master WHERE name = 'changes'")[0].text(0)
                .contains("UNIQUE (document, replica, first_counter)"))
        }
    }
}
