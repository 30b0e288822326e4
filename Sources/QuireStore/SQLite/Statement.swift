import CSQLite

/// A prepared SQL statement of one connection.
///
/// Get one from `DatabaseConnection.statement(sql:)`, which caches it, and
/// use it only inside the `read`/`write` closure that gave you the
/// connection. Reusing a statement skips parsing and planning the SQL again,
/// which matters in loops:
///
///     try db.write { db in
///         let insert = try db.statement(sql: "INSERT INTO notes(id, body) VALUES (?, ?)")
///         for (id, body) in notes {
///             try insert.execute(arguments: [.integer(id), .blob(body)])
///         }
///     }
///
/// Each `execute` and `fetchAll` starts from a clean state (reset, bindings
/// cleared) and leaves the statement reset, so a statement never holds a
/// read lock between uses. The cache has one statement per SQL text: while
/// stepping through one with `step()`, do not run the same SQL elsewhere,
/// or it restarts under you.
public final class Statement {
    public let sql: String
    private let handle: OpaquePointer
    /// The connection, to read error messages from.
    private let connection: OpaquePointer

    init(handle: OpaquePointer, connection: OpaquePointer, sql: String) {
        self.handle = handle
        self.connection = connection
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// True when running it cannot change the file (a `SELECT`, `BEGIN`).
    var isReadOnly: Bool { sqlite3_stmt_readonly(handle) != 0 }

    /// How many times SQLite compiled it again since it was prepared, for
    /// tests: a cached statement is recompiled only after something expires
    /// it (a schema change; setting some pragmas).
    var recompilations: Int { Int(sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_REPREPARE, 0)) }

    /// Runs the statement to completion, ignoring any rows it returns.
    public func execute(arguments: [DatabaseValue] = []) throws {
        try bind(arguments)
        defer { reset() }
        while try step() != nil {}
    }

    /// Runs the statement and returns all its rows.
    public func fetchAll(arguments: [DatabaseValue] = []) throws -> [Row] {
        try bind(arguments)
        defer { reset() }
        var rows: [Row] = []
        while let row = try step() { rows.append(row) }
        return rows
    }

    /// Resets the statement and binds `arguments` to its parameters `?1`, `?2`, ...
    ///
    /// The count must match the number of parameters in the SQL, so that a
    /// forgotten argument is an error instead of a silent NULL.
    public func bind(_ arguments: [DatabaseValue]) throws {
        reset()
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard arguments.count == expected else {
            throw DatabaseError(
                extendedCode: SQLITE_RANGE,
                message: "expected \(expected) arguments, got \(arguments.count)",
                sql: sql)
        }
        for (offset, value) in arguments.enumerated() {
            try bind(value, at: offset + 1)
        }
    }

    /// Binds one parameter. `index` counts from 1, as in SQLite (`?1`).
    public func bind(_ value: DatabaseValue, at index: Int) throws {
        let position = Int32(index)
        let code: Int32
        switch value {
        case .null:
            code = sqlite3_bind_null(handle, position)
        case .integer(let int):
            code = sqlite3_bind_int64(handle, position, int)
        case .real(let double):
            code = sqlite3_bind_double(handle, position, double)
        case .text(let string):
            // utf8CString is never empty (it ends with a NUL), so the pointer is
            // never nil, which would bind NULL instead of "". Passing the length
            // keeps strings with NUL characters whole.
            code = string.utf8CString.withUnsafeBufferPointer { chars in
                sqlite3_bind_text64(
                    handle, position, chars.baseAddress, UInt64(chars.count - 1), Self.transient, UInt8(SQLITE_UTF8))
            }
        case .blob(let bytes):
            code = bytes.isEmpty
                // An empty array may have no pointer, which would bind NULL.
                ? sqlite3_bind_zeroblob(handle, position, 0)
                : bytes.withUnsafeBytes { sqlite3_bind_blob64(handle, position, $0.baseAddress, UInt64($0.count), Self.transient) }
        }
        guard code == SQLITE_OK else { throw DatabaseError(handle: connection, sql: sql) }
    }

    /// Advances to the next row; returns nil when the statement is done.
    ///
    /// After an error the statement is reset, so it can be used again.
    public func step() throws -> Row? {
        switch sqlite3_step(handle) {
        case SQLITE_ROW:
            return Row(values: (0..<sqlite3_column_count(handle)).map(column), sql: sql)
        case SQLITE_DONE:
            return nil
        default:
            let error = DatabaseError(handle: connection, sql: sql)
            reset()
            throw error
        }
    }

    /// Ends the current run (releasing its locks) and clears the bindings.
    public func reset() {
        // sqlite3_reset repeats the last step's error, which step() has already thrown.
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// SQLite's `SQLITE_TRANSIENT`: "copy the bytes now", since Swift's
    /// buffers are only valid during the call. The C macro is a cast that
    /// Swift does not import.
    private static var transient: sqlite3_destructor_type {
        unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)
    }

    private func column(_ index: Int32) -> DatabaseValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(handle, index))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(handle, index))
        case SQLITE_TEXT:
            // Ask for the pointer before the length, as SQLite's documentation requires.
            let pointer = sqlite3_column_text(handle, index)
            let count = Int(sqlite3_column_bytes(handle, index))
            return .text(String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let pointer = sqlite3_column_blob(handle, index)
            let count = Int(sqlite3_column_bytes(handle, index))
            return .blob(Array(UnsafeRawBufferPointer(start: pointer, count: count)))
        default:
            return .null
        }
    }
}
