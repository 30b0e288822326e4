import CSQLite

/// The SQLite connection as seen inside `Database.read` and `Database.write`.
///
/// You never create one: the closure receives it while the database's lock
/// is held and a transaction is open. It is not `Sendable`, so it cannot be
/// handed to another thread, and it must not be kept after the closure
/// returns.
///
///     let count = try db.read { db in
///         try db.query(sql: "SELECT count(*) FROM notes")[0].int64(0)
///     }
public final class DatabaseConnection {
    let handle: OpaquePointer
    /// Prepared statements by SQL text; see `statement(sql:)`.
    private var statements: [String: Statement] = [:]
    /// True inside `Database.read`: statements that write are refused.
    /// (Not `PRAGMA query_only`: setting it expires every prepared
    /// statement, so each read compiled its statements again, more than
    /// half the time of loading a small document.)
    var isReadOnly = false

    init(handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        statements.removeAll()
        // close_v2 rather than close: if a statement is still alive somewhere,
        // the connection closes when that statement is finalized instead of
        // failing with SQLITE_BUSY.
        sqlite3_close_v2(handle)
    }

    /// The prepared statement for `sql`, from the cache or prepared now.
    ///
    /// `sql` must hold exactly one statement; use `executeScript` for several.
    /// Use parameters (`?`) rather than building SQL from values, both for
    /// safety and because every distinct text gets its own cache entry.
    /// Inside `Database.read`, a statement that writes throws `SQLITE_READONLY`.
    public func statement(sql: String) throws -> Statement {
        let statement: Statement
        if let cached = statements[sql] {
            statement = cached
        } else {
            statement = try prepare(sql: sql)
            statements[sql] = statement
        }
        guard !isReadOnly || statement.isReadOnly else {
            throw DatabaseError(extendedCode: SQLITE_READONLY, message: "a read transaction cannot write", sql: sql)
        }
        return statement
    }

    /// Runs one statement, ignoring any rows it returns.
    ///
    ///     try db.execute(sql: "INSERT INTO notes(id, title) VALUES (?, ?)", arguments: [1, "Groceries"])
    public func execute(sql: String, arguments: [DatabaseValue] = []) throws {
        try statement(sql: sql).execute(arguments: arguments)
    }

    /// Runs one statement and returns all its rows.
    ///
    ///     let titles = try db.query(sql: "SELECT title FROM notes WHERE id > ?", arguments: [10])
    public func query(sql: String, arguments: [DatabaseValue] = []) throws -> [Row] {
        try statement(sql: sql).fetchAll(arguments: arguments)
    }

    /// Runs several `;`-separated statements without arguments, such as a
    /// migration's `CREATE TABLE` and `CREATE INDEX`. Nothing is cached.
    public func executeScript(_ sql: String) throws {
        guard !isReadOnly else {
            throw DatabaseError(extendedCode: SQLITE_READONLY, message: "a read transaction cannot run a script", sql: sql)
        }
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        defer { sqlite3_free(message) }
        guard code == SQLITE_OK else {
            throw DatabaseError(
                extendedCode: sqlite3_extended_errcode(handle),
                message: message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code)),
                sql: sql)
        }
    }

    /// The rowid of the last row inserted on this connection.
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// The highest rowid SQLite's AUTOINCREMENT ever gave a row of `table`
    /// (its `sqlite_sequence` record), 0 before the first: unlike
    /// `max(rowid)`, it never goes down when the newest rows are deleted.
    public func highestAutoincrementedID(of table: String) throws -> Int64 {
        try query(sql: "SELECT seq FROM sqlite_sequence WHERE name = ?", arguments: [.text(table)]).first?.int64(0) ?? 0
    }

    /// Runs `body` between `begin` and `COMMIT`, or rolls back if it throws.
    func transaction<T>(begin: () throws -> Void, _ body: (DatabaseConnection) throws -> T) throws -> T {
        try begin()
        do {
            let result = try body(self)
            guard !isAutocommit else {
                throw DatabaseError(
                    extendedCode: SQLITE_MISUSE,
                    message: "the transaction was ended inside the closure; let read/write commit or roll back")
            }
            try execute(sql: "COMMIT")
            return result
        } catch {
            // SQLite may already have rolled back on its own (after SQLITE_FULL,
            // for example); otherwise roll back here. A failing ROLLBACK tells
            // less than the error that caused it, so that one is thrown.
            if !isAutocommit { try? execute(sql: "ROLLBACK") }
            throw error
        }
    }

    /// Begins a write transaction, taking the file's write lock. SQLite waits
    /// up to the busy timeout for another process's, trying now and then,
    /// and can miss every moment it is free while that process commits
    /// again and again (two processes writing flat out, a loaded host). So
    /// while the other process has committed during the wait, it is making
    /// progress, and the wait starts again; a lock held without a commit for
    /// the whole wait (a stopped process, one long transaction) still fails
    /// with SQLITE_BUSY, so that no writer hangs behind it.
    func beginWriting() throws {
        var seen = dataVersion
        while true {
            do { return try execute(sql: "BEGIN IMMEDIATE") } catch let error as DatabaseError where error.primaryCode == SQLITE_BUSY {
                guard dataVersion != seen else { throw error }
                seen = dataVersion
            }
        }
    }

    /// A number that changes whenever another connection has committed to
    /// the file, as of the last time this one began, or tried to begin, a
    /// transaction (each try of SQLite's wait does). Read from memory:
    /// `PRAGMA data_version` would begin a read transaction.
    private var dataVersion: UInt32 {
        var version: UInt32 = 0
        sqlite3_file_control(handle, "main", SQLITE_FCNTL_DATA_VERSION, &version)
        return version
    }

    /// True when no transaction is open.
    private var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    private func prepare(sql: String) throws -> Statement {
        var prepared: OpaquePointer?
        var hasMoreStatements = false
        let code = sql.withCString { start in
            var tail: UnsafePointer<CChar>?
            // PERSISTENT: a hint that the statement is cached and reused for long.
            let code = sqlite3_prepare_v3(handle, start, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, &tail)
            if code == SQLITE_OK, let tail {
                // sqlite3_prepare silently ignores everything after the first
                // statement; make that an error rather than lose statements.
                // A tail of blanks and comments prepares to no statement.
                var next: OpaquePointer?
                hasMoreStatements = sqlite3_prepare_v2(handle, tail, -1, &next, nil) != SQLITE_OK || next != nil
                sqlite3_finalize(next)
            }
            return code
        }
        guard code == SQLITE_OK else { throw DatabaseError(handle: handle, sql: sql) }
        guard let prepared else {
            throw DatabaseError(extendedCode: SQLITE_MISUSE, message: "the SQL holds no statement", sql: sql)
        }
        guard !hasMoreStatements else {
            sqlite3_finalize(prepared)
            throw DatabaseError(
                extendedCode: SQLITE_MISUSE,
                message: "the SQL holds more than one statement; use executeScript",
                sql: sql)
        }
        return Statement(handle: prepared, connection: handle, sql: sql)
    }
}
