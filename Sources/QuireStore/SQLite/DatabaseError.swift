import CSQLite

/// The one error type of the SQLite layer.
///
/// It keeps SQLite's *extended* result code (for example
/// `SQLITE_CONSTRAINT_UNIQUE`, 2067), SQLite's own message, and the SQL that
/// failed, and adds a plain-language explanation for the codes a person can
/// do something about (disk full, read-only file, corrupt file...).
///
///     do {
///         try db.execute(sql: "INSERT INTO notes(id) VALUES (?)", arguments: [1])
///     } catch let error as DatabaseError where error.primaryCode == SQLITE_CONSTRAINT {
///         print(error)  // "constraint violation: UNIQUE constraint failed: notes.id (SQLite code 2067), inserting into notes, in notes.db"
///     }
///
/// Errors that the layer itself detects (a nested transaction, a column of
/// the wrong type, a schema newer than the code) use the closest SQLite code:
/// `SQLITE_MISUSE`, `SQLITE_MISMATCH` or `SQLITE_ERROR`. A call after
/// `close()` is `SQLITE_MISUSE` with `isAfterClose` set.
public struct DatabaseError: Error, DescribedError, CustomDebugStringConvertible, Sendable {
    /// SQLite's extended result code; `primaryCode` is its low byte.
    public let extendedCode: Int32
    /// SQLite's message (`sqlite3_errmsg`) or the layer's own.
    public let message: String
    /// The SQL being prepared or run, if any.
    public let sql: String?
    /// The path of the `Database` that failed, which sets it: a program
    /// with several files open can say which one is damaged or read-only.
    public let file: String?

    /// True for a call made after `close()`: nothing is wrong with the
    /// file, and opening it again gives a database (or store) to call.
    public private(set) var isAfterClose = false

    public init(extendedCode: Int32, message: String, sql: String? = nil, file: String? = nil) {
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
        self.file = file
    }

    /// The error of every call on a `Database` after its `close()`; SQLite's
    /// words for it ("misuse of the database API") would read as a bug in
    /// the program rather than a call made too late.
    static func closed(_ path: String) -> DatabaseError {
        let message = path == ":memory:"
            ? "the store in memory is closed (close() was called): what it held went with it"
            : "the store at \(path) is closed (close() was called): open it again to use it"
        var error = DatabaseError(extendedCode: SQLITE_MISUSE, message: message, file: path)
        error.isAfterClose = true
        return error
    }

    /// The primary result code, such as `SQLITE_CONSTRAINT` or `SQLITE_FULL`.
    public var primaryCode: Int32 { extendedCode & 0xFF }

    /// What is wrong with the database's file, for the failures whose cure
    /// is the file's or waiting for another process (a tool tells its user
    /// what to do without SQLite's codes).
    public enum FileProblem: Sendable {
        /// Damaged, or not a database at all.
        case damaged
        /// Not writable: permissions, a read-only mount, or opened read-only.
        case readOnly
        /// Its disk is full.
        case diskFull
        /// Another process kept it locked past the busy timeout: the file
        /// is sound, and a try once that process is done will do.
        case busy
    }

    /// The file's problem, if the failure is one; nil for every other failure.
    public var fileProblem: FileProblem? {
        switch primaryCode {
        case SQLITE_CORRUPT, SQLITE_NOTADB: .damaged
        case SQLITE_READONLY, SQLITE_PERM: .readOnly
        case SQLITE_FULL: .diskFull
        case SQLITE_BUSY: .busy
        default: nil
        }
    }

    /// One line for a person: what is wrong, SQLite's message, the
    /// operation and the file. The SQL stays out (statements run over
    /// several lines, and name nothing a person can act on): it is in
    /// `sql` and `debugDescription`.
    public var description: String {
        // Its message says it all: SQLite never saw the call.
        guard !isAfterClose else { return message }
        var text = "\(explanation): \(message) (SQLite code \(extendedCode))"
        if let operation { text += ", \(operation)" }
        if let file { text += ", in \(file)" }
        return text
    }

    /// `description`, then the SQL that failed on lines of its own.
    public var debugDescription: String {
        sql.map { description + "\nSQL: " + $0 } ?? description
    }

    /// What the failed statement was doing, in words, from its first
    /// keywords: `inserting into changes`, `reading documents`,
    /// `setting journal_mode`; nil without SQL.
    public var operation: String? {
        guard let sql else { return nil }
        let words = sql.split(whereSeparator: { $0.isWhitespace || $0 == "(" || $0 == "=" || $0 == ";" }).map(String.init)
        guard let verb = words.first?.uppercased() else { return nil }
        /// The word after the first `keyword`, a table's name.
        func after(_ keyword: String) -> String? {
            words.firstIndex { $0.uppercased() == keyword }.flatMap { words.indices.contains($0 + 1) ? words[$0 + 1] : nil }
        }
        switch verb {
        case "INSERT", "REPLACE": return after("INTO").map { "inserting into \($0)" } ?? "inserting"
        case "UPDATE": return words.count > 1 ? "updating \(words[1])" : "updating"
        case "DELETE": return after("FROM").map { "deleting from \($0)" } ?? "deleting"
        case "SELECT", "WITH": return after("FROM").map { "reading \($0)" } ?? "reading"
        case "PRAGMA": return words.count > 1 ? (sql.contains("=") ? "setting \(words[1])" : "reading \(words[1])") : "running a pragma"
        case "BEGIN": return "beginning a transaction"
        case "COMMIT", "END": return "committing"
        case "ROLLBACK": return "rolling back"
        case "CREATE", "DROP", "ALTER": return "changing the schema"
        default: return "running \(verb)"
        }
    }

    /// What the primary code means for the person running the program.
    private var explanation: String {
        switch primaryCode {
        case SQLITE_FULL: "the disk is full, nothing was saved"
        case SQLITE_READONLY: "the database is read-only (file permissions, read-only mount, or opened read-only)"
        case SQLITE_CORRUPT: "the database file is corrupt"
        case SQLITE_NOTADB: "the file is not a SQLite database (or is encrypted)"
        case SQLITE_CANTOPEN: "the database file cannot be opened"
        case SQLITE_PERM: "permission denied"
        case SQLITE_IOERR: "disk I/O error"
        // Busy only after the busy timeout's wait (`Database.write`): waiting is what helps.
        case SQLITE_BUSY: "another connection or process kept the database locked past the busy timeout; try again once it is done"
        case SQLITE_LOCKED: "the database is locked by another connection or process"
        case SQLITE_CONSTRAINT: "constraint violation"
        case SQLITE_MISMATCH: "type mismatch"
        case SQLITE_MISUSE: "misuse of the database API"
        case SQLITE_NOMEM: "out of memory"
        case SQLITE_TOOBIG: "value too big"
        case SQLITE_RANGE: "parameter index out of range"
        default: "SQLite error"
        }
    }
}

extension DatabaseError {
    /// The error SQLite reports for the last failed call on `handle`.
    ///
    /// Read it right after the failing call and while holding the
    /// connection's lock: the next call on the connection replaces it.
    init(handle: OpaquePointer?, sql: String?) {
        self.init(
            extendedCode: sqlite3_extended_errcode(handle),
            message: String(cString: sqlite3_errmsg(handle)),
            sql: sql)
    }
}
