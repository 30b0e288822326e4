import CSQLite

/// Brings a database's schema up to date, one numbered migration at a time.
///
/// The schema version is SQLite's `PRAGMA user_version` (0 in a new file).
/// Migration `n` turns version `n - 1` into version `n`; each pending one
/// runs in its own write transaction, which also sets `user_version`, so a
/// crash leaves the file at a version it really has. A file whose version is
/// newer than the last registered migration was written by a newer program:
/// `migrate` refuses it rather than work with a schema it does not know.
///
///     var migrator = DatabaseMigrator()
///     migrator.register(version: 1) { db in
///         try db.executeScript("""
///             CREATE TABLE notes(id INTEGER PRIMARY KEY, body BLOB NOT NULL);
///             CREATE INDEX notes_body ON notes(body);
///             """)
///     }
///     migrator.register(version: 2) { db in
///         try db.execute(sql: "ALTER TABLE notes ADD COLUMN title TEXT")
///     }
///     try migrator.migrate(db)
///
/// Once released, a migration must never change: files in the field have
/// already run it. Fix mistakes with a new migration.
///
/// Limitation: `PRAGMA foreign_keys` cannot be switched inside a
/// transaction, so a migration that rebuilds a table referenced by foreign
/// keys must do it in a way that keeps them satisfied.
public struct DatabaseMigrator: Sendable {
    public typealias Migration = @Sendable (DatabaseConnection) throws -> Void

    private var migrations: [Migration] = []

    public init() {}

    /// The version the schema has once every migration has run.
    public var latestVersion: Int { migrations.count }

    /// Adds the migration that produces schema `version`.
    ///
    /// Versions are registered in order, starting at 1, without gaps; any
    /// other order is a programming error and traps.
    public mutating func register(version: Int, _ migration: @escaping Migration) {
        precondition(
            version == latestVersion + 1,
            "migration \(version) registered after \(latestVersion); register 1, 2, 3... in order")
        migrations.append(migration)
    }

    /// Runs the pending migrations in order and returns the versions applied
    /// (empty when the schema was already current).
    ///
    /// Throws `SQLITE_ERROR` if the file's schema is newer than
    /// `latestVersion`. If a migration throws, its transaction rolls back,
    /// the file stays at the previous version and the error is rethrown.
    @discardableResult
    public func migrate(_ db: Database) throws -> [Int] {
        // A current file, the usual case, is found so in a read transaction:
        // it takes no write lock, which another process may hold for long.
        guard try db.read({ db in try pendingVersion(db) }) != nil else { return [] }
        var applied: [Int] = []
        // Reading the version inside the write transaction means two
        // processes migrating the same file at once cannot both apply a step.
        while let version = try db.write({ db in try migrateOneStep(db) }) {
            applied.append(version)
        }
        return applied
    }

    /// The file's schema version if a migration is pending, else nil.
    private func pendingVersion(_ db: DatabaseConnection) throws -> Int? {
        let current = try Int(db.query(sql: "PRAGMA user_version")[0].int64(0))
        guard current <= latestVersion else {
            throw DatabaseError(
                extendedCode: SQLITE_ERROR,
                message: "the database's schema version \(current) is newer than this program's "
                    + "(\(latestVersion)); it was written by a newer version of Quire, "
                    + "which is needed to open it")
        }
        return current < latestVersion ? current : nil
    }

    /// Applies the next pending migration, if any, and returns its version.
    private func migrateOneStep(_ db: DatabaseConnection) throws -> Int? {
        guard let current = try pendingVersion(db) else { return nil }
        let next = current + 1
        try migrations[current](db)
        // PRAGMA takes no parameters; `next` is an Int, so this is safe.
        try db.execute(sql: "PRAGMA user_version = \(next)")
        return next
    }
}
