/// The tables of a Quire store file and the migrations that make them.
///
/// `Specs/storage.md`, "Store schema", describes every table and column.
/// Version 1 is the first released schema. Released migrations never
/// change; a new schema version is a new migration appended here, tested on
/// a file made by the previous version with a non-empty outbox.
///
///     let db = try Database(path: path)
///     try StoreSchema.upgrade(db)
public enum StoreSchema {
    /// Every migration, from an empty file (version 0) to `latestVersion`.
    public static let migrator = migrator(upTo: migrations.count)

    /// Every migration in order: migration `n` makes version `n + 1`.
    private static let migrations: [DatabaseMigrator.Migration] = [createVersion1, addSyncState, changeRuns, addDocumentVersions, numberDocuments,
                                                                      compressedBundles, addRemovalMarks, addRefusedDocuments,
                                                                      addReplacedDocuments]

    /// The migrations up to `version` only: how a test makes a file exactly
    /// as an older release wrote it.
    public static func migrator(upTo version: Int) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for (index, migration) in migrations.prefix(version).enumerated() {
            migrator.register(version: index + 1, migration)
        }
        return migrator
    }

    /// Brings the file to `latestVersion`, then, if a migration rebuilt the
    /// change log of a store that had one, vacuums it: the old log's pages
    /// would otherwise stay in the file as free pages, a store upgraded to
    /// be smaller growing by half. Returns the versions applied.
    ///
    /// A vacuum that fails (a full disk: it writes a copy) or is killed
    /// leaves the upgraded file with those free pages, which the next open
    /// for writing gives back (`Database.vacuumIfMostlyFree`, in
    /// `DocumentStore.init(path:)`).
    @discardableResult
    public static func upgrade(_ database: Database) throws -> [Int] {
        let applied = try migrator.migrate(database)
        if let first = applied.first, first > 1, applied.contains(versionNumberingDocuments) {
            try? database.vacuum()
        }
        return applied
    }

    /// The version whose migration rebuilds `changes` (`numberDocuments`):
    /// before it, a log row held its document's id, not its number.
    public static let versionNumberingDocuments = 5

    /// The schema version this program writes.
    public static var latestVersion: Int { migrator.latestVersion }

    /// The table every store has from its first version on: what marks a
    /// database as a store.
    private static let markingTable = "replica"

    /// Whether the database is a store (of any version).
    public static func holdsStore(_ db: DatabaseConnection) throws -> Bool {
        try !db.query(sql: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", arguments: [.text(markingTable)]).isEmpty
    }

    /// Whether the database is a store an older program wrote, which an
    /// open for writing upgrades.
    public static func holdsOlderStore(_ db: DatabaseConnection) throws -> Bool {
        try holdsStore(db) && db.query(sql: "PRAGMA user_version")[0].int64(0) < latestVersion
    }

    /// Whether the database holds no table, index or anything else: a
    /// file whose creation stopped before its first migration committed.
    public static func holdsNothing(_ db: DatabaseConnection) throws -> Bool {
        try db.query(sql: "SELECT 1 FROM sqlite_master LIMIT 1").isEmpty
    }

    /// What the database is when it holds tables but no store, for an error
    /// naming the file: opening it as a store would add the store's tables
    /// to another program's database. Nil for a store, or an empty file.
    public static func foreignKind(_ db: DatabaseConnection) throws -> String? {
        let tables = try Set(db.query(sql: "SELECT name FROM sqlite_master WHERE type = 'table'").map { try $0.text(0) })
        guard !tables.isEmpty, !tables.contains(markingTable) else { return nil }
        // QuireSync's ServerLog tables: the file given to `quire serve --store`.
        if tables.isSuperset(of: ["server", "log", "parked"]) { return "a sync server's log (the store of `quire serve`), not a notes store" }
        return "a SQLite database but not a Quire store"
    }

    /// Version 1: replica identity, documents, the op log, parked changes,
    /// snapshots and peer acknowledgements.
    @Sendable static func createVersion1(_ db: DatabaseConnection) throws {
        try db.executeScript("""
            CREATE TABLE replica(
                singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                replica_id INTEGER NOT NULL,
                file_fingerprint TEXT NOT NULL
            );
            CREATE TABLE local_replicas(
                replica_id INTEGER PRIMARY KEY,
                created_at INTEGER NOT NULL
            );
            CREATE TABLE documents(
                id TEXT PRIMARY KEY,
                created_at INTEGER NOT NULL,
                removed_at INTEGER,
                log_start_seq INTEGER NOT NULL DEFAULT 0
            );
            CREATE TABLE changes(
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                document_id TEXT NOT NULL REFERENCES documents(id),
                replica INTEGER NOT NULL,
                first_counter INTEGER NOT NULL,
                last_counter INTEGER NOT NULL,
                first_lamport INTEGER NOT NULL,
                last_lamport INTEGER NOT NULL,
                parents TEXT NOT NULL,
                time INTEGER NOT NULL,
                is_local INTEGER NOT NULL,
                data BLOB NOT NULL,
                UNIQUE (document_id, replica, first_counter)
            );
            CREATE INDEX changes_document ON changes(document_id, seq);
            CREATE INDEX changes_local ON changes(is_local, document_id) WHERE is_local = 1;
            CREATE TABLE parked_changes(
                document_id TEXT NOT NULL REFERENCES documents(id),
                replica INTEGER NOT NULL,
                first_counter INTEGER NOT NULL,
                last_counter INTEGER NOT NULL,
                data BLOB NOT NULL,
                PRIMARY KEY (document_id, replica, first_counter)
            ) WITHOUT ROWID;
            CREATE TABLE snapshots(
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                document_id TEXT NOT NULL REFERENCES documents(id),
                covers_seq INTEGER NOT NULL,
                created_at INTEGER NOT NULL,
                frame BLOB NOT NULL
            );
            CREATE INDEX snapshots_document ON snapshots(document_id, id);
            CREATE TABLE peer_acknowledgements(
                peer TEXT NOT NULL,
                document_id TEXT NOT NULL REFERENCES documents(id),
                replica INTEGER NOT NULL,
                counter INTEGER NOT NULL,
                PRIMARY KEY (peer, document_id, replica)
            ) WITHOUT ROWID;
            """)
    }

    /// Version 2: what a client keeps per sync server: its cursor in the
    /// server's log, and the local changes the server refused for good.
    @Sendable static func addSyncState(_ db: DatabaseConnection) throws {
        try db.executeScript("""
            CREATE TABLE sync_cursors(
                peer TEXT PRIMARY KEY,
                log_id INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                synced_at INTEGER NOT NULL
            );
            CREATE TABLE rejected_changes(
                peer TEXT NOT NULL,
                document_id TEXT NOT NULL REFERENCES documents(id),
                replica INTEGER NOT NULL,
                first_counter INTEGER NOT NULL,
                last_counter INTEGER NOT NULL,
                status INTEGER NOT NULL,
                reason TEXT NOT NULL,
                rejected_at INTEGER NOT NULL,
                PRIMARY KEY (peer, document_id, replica, first_counter)
            ) WITHOUT ROWID;
            """)
    }

    /// Version 3: a `changes` row may hold a run of several changes of one
    /// replica (`ChangeLog`). The tables are unchanged and every version 2
    /// row is a run of one; the new version number keeps an older program,
    /// which reads one change a row, from misreading the file.
    @Sendable static func changeRuns(_ db: DatabaseConnection) throws {}

    /// Version 4: each document's version vector beside the log
    /// (`DocumentVersions`), so that a sync need not load every document
    /// to state it; filled from the log and the snapshots of compacted
    /// documents.
    @Sendable static func addDocumentVersions(_ db: DatabaseConnection) throws {
        try db.executeScript("""
            CREATE TABLE document_versions(
                document_id TEXT NOT NULL REFERENCES documents(id),
                replica INTEGER NOT NULL,
                counter INTEGER NOT NULL,
                PRIMARY KEY (document_id, replica)
            ) WITHOUT ROWID;
            """)
        try DocumentVersions.fill(db)
    }

    /// Version 5: a log row names its document by the document's number
    /// (`documents.number`), not its id. A UUID id is 36 bytes, and the
    /// row and its three index entries each held it: a third of the file
    /// for short edits. Rebuilds `changes` with the same rows and `seq`
    /// values, and keeps SQLite's AUTOINCREMENT record, which `seq` never
    /// goes below (`ChangeLog.highestSeq`). Drops `parents`, the first
    /// change's parents as text, which nothing read: the bundle holds them.
    @Sendable static func numberDocuments(_ db: DatabaseConnection) throws {
        let highestSeq = try ChangeLog.highestSeq(db)
        try db.executeScript("""
            ALTER TABLE documents ADD COLUMN number INTEGER;
            UPDATE documents SET number = rowid;
            CREATE UNIQUE INDEX documents_number ON documents(number);
            CREATE TABLE numbered_changes(
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                document INTEGER NOT NULL REFERENCES documents(number),
                replica INTEGER NOT NULL,
                first_counter INTEGER NOT NULL,
                last_counter INTEGER NOT NULL,
                first_lamport INTEGER NOT NULL,
                last_lamport INTEGER NOT NULL,
                time INTEGER NOT NULL,
                is_local INTEGER NOT NULL,
                data BLOB NOT NULL,
                UNIQUE (document, replica, first_counter)
            );
            INSERT INTO numbered_changes
                SELECT c.seq, d.number, c.replica, c.first_counter, c.last_counter, c.first_lamport, c.last_lamport,
                       c.time, c.is_local, c.data
                FROM changes c LEFT JOIN documents d ON d.id = c.document_id ORDER BY c.seq;
            DROP TABLE changes;
            ALTER TABLE numbered_changes RENAME TO changes;
            CREATE INDEX changes_document ON changes(document, seq);
            CREATE INDEX changes_local ON changes(is_local, document) WHERE is_local = 1;
            DELETE FROM sqlite_sequence WHERE name = 'changes';
            """)
        try db.execute(sql: "INSERT INTO sqlite_sequence(name, seq) VALUES ('changes', ?)", arguments: [.integer(highestSeq)])
    }

    /// Version 6: a `changes` or `parked_changes` row may hold its bundle
    /// as a zstd frame (`StoredBundle`). The tables are unchanged and no
    /// row is rewritten (every older row is a bundle, which reads as
    /// before); the new version number keeps an older program, which would
    /// take a frame for a damaged row, from opening the file.
    @Sendable static func compressedBundles(_ db: DatabaseConnection) throws {}

    /// Version 7: each document's latest removal or restore
    /// (`RemovalMarks`), for a store to notice those another made. Starts
    /// empty: only a later change of a mark is news to anyone.
    @Sendable static func addRemovalMarks(_ db: DatabaseConnection) throws {
        try db.executeScript("""
            CREATE TABLE removal_marks(
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                document INTEGER NOT NULL UNIQUE REFERENCES documents(number)
            );
            """)
    }

    /// Version 8: the documents a client's last sync with each peer left
    /// out because this store refuses the peer's changes to them
    /// (`SyncState.refusedDocuments`): the next sync states every other
    /// document, so that it pulls only their rows and the new ones, not
    /// every row since the cursor held back behind them. No foreign key: a
    /// refused document may be one this store lacks.
    @Sendable static func addRefusedDocuments(_ db: DatabaseConnection) throws {
        try db.executeScript("""
            CREATE TABLE refused_documents(
                peer TEXT NOT NULL,
                document_id TEXT NOT NULL,
                PRIMARY KEY (peer, document_id)
            ) WITHOUT ROWID;
            """)
    }

    /// Version 9: the documents whose copy `discardCopy` dropped (`quire
    /// sync --take-theirs`), each with the document that keeps the dropped
    /// copy (`ReplacedDocuments`): the sync that brings the other side's
    /// copy may be a later one, after the one that dropped it failed, and
    /// still names it as replaced rather than as new. No foreign key: the
    /// document is missing until that sync.
    @Sendable static func addReplacedDocuments(_ db: DatabaseConnection) throws {
        try db.executeScript("""
            CREATE TABLE replaced_documents(
                document_id TEXT PRIMARY KEY,
                kept_as TEXT NOT NULL
            ) WITHOUT ROWID;
            """)
    }
}
