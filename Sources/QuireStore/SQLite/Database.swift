import CSQLite
import Foundation

/// One SQLite database file, safe to use from several threads.
///
/// All work goes through one connection guarded by a lock, so calls from
/// different threads run one after the other. Group statements that belong
/// together in `write` (or `read`): they run in one transaction.
///
///     let db = try Database(path: "/tmp/notes.sqlite")
///     try db.write { db in
///         try db.execute(sql: "CREATE TABLE IF NOT EXISTS notes(id INTEGER PRIMARY KEY, body BLOB)")
///         try db.execute(sql: "INSERT INTO notes(body) VALUES (?)", arguments: [.blob([1, 2, 3])])
///     }
///     let rows = try db.query(sql: "SELECT id, body FROM notes")
///
/// **Transactions do not nest.** Calling any method of the `Database` from
/// inside a `read` or `write` closure on the same thread throws a
/// `DatabaseError` with `SQLITE_MISUSE`, instead of deadlocking or quietly
/// joining the outer transaction. Use the connection passed to the closure.
/// (Savepoints would give nesting, but no caller needs it yet, and an inner
/// "commit" that is not one is easy to misread.)
public final class Database: @unchecked Sendable {
    // @unchecked: every access to `connection` and `isInUse` holds `lock`.

    /// The file path, or ":memory:".
    public let path: String

    /// Milliseconds to wait for a lock held by another process before
    /// failing with SQLITE_BUSY.
    public static let busyTimeout: Int32 = 5_000

    /// Bytes a `-wal` is cut back to when SQLite next writes it from the
    /// start, after a checkpoint has copied it all into the file: the size
    /// SQLite's automatic checkpoint lets it reach (1,000 pages of 4 KiB).
    public static let walSizeLimit = 4 << 20

    /// Recursive, so that a nested call on the same thread gets in and finds
    /// `isInUse` set (a clear error) instead of deadlocking.
    private let lock = NSRecursiveLock()
    /// nil once closed.
    private var connection: DatabaseConnection?
    /// True while a closure runs on the connection. As only the lock holder
    /// reads it, seeing it set means a nested call from that same thread.
    private var isInUse = false

    /// Opens the database at `path`, creating the file if needed.
    /// A missing or empty file with a deleted database's `-wal` beside it
    /// (`walOfAnotherDatabase`) is refused with `SQLITE_CANTOPEN`, the
    /// message naming it, and nothing is made.
    ///
    /// With `readOnly`, the file must exist and every write fails with
    /// `SQLITE_READONLY`; nothing is set up, so it opens files of any schema
    /// version for inspection.
    public convenience init(path: String, readOnly: Bool = false) throws {
        // SQLite would open a private temporary or in-memory database for
        // these names, and the data would vanish when it closes.
        guard !path.isEmpty, path != ":memory:" else {
            throw DatabaseError(extendedCode: SQLITE_CANTOPEN,
                                message: path.isEmpty ? "the database path is empty" : "\":memory:\" is no file; Database.inMemory() opens a database in memory",
                                file: path)
        }
        if !readOnly, let wal = Self.walOfAnotherDatabase(beside: Self.file(namedBy: path)) {
            throw DatabaseError(extendedCode: SQLITE_CANTOPEN, message: Self.refusal(besideLogFilesOfAnotherDatabase: [wal]), file: path)
        }
        try self.init(
            path: path,
            flags: readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
            writeAheadLog: !readOnly)
    }

    /// What `body` reads from the SQLite file at `path`, opened read-only
    /// and closed again, so that looking writes nothing (opening it for use
    /// would switch it to WAL); nil when it does not open as SQLite or the
    /// read fails (opening it for use then says why).
    ///
    ///     let kind = Database.peek(atPath: path, StoreSchema.foreignKind) ?? nil
    ///
    /// A file with a hot journal (a process stopped in the middle of a
    /// rollback-journal transaction: a store is switched to WAL in its first
    /// one, so a `quire init` killed then leaves one) is opened for writing
    /// instead, without switching it to WAL: a read-only connection cannot
    /// roll the journal back, and what the file holds is what is left once
    /// it is, which any opener's first read does anyway.
    public static func peek<T>(atPath path: String, _ body: (DatabaseConnection) throws -> T) -> T? {
        let database: Database
        do {
            database = try Database(path: path, readOnly: true)
        } catch let error as DatabaseError where error.extendedCode == Self.readOnlyRollback {
            guard let recovering = try? Database(path: path, flags: SQLITE_OPEN_READWRITE, writeAheadLog: false) else { return nil }
            database = recovering
        } catch {
            return nil
        }
        defer { database.close() }
        return try? database.read(body)
    }

    /// SQLITE_READONLY_ROLLBACK, which Swift does not import (a macro of
    /// an expression): a read-only connection met a hot journal.
    public static let readOnlyRollback = SQLITE_READONLY | (3 << 8)
    /// SQLITE_READONLY_DIRECTORY, as above: a read-only connection could
    /// not make a `-wal` file in the database's directory.
    static let readOnlyDirectory = SQLITE_READONLY | (6 << 8)

    /// The file `path` names, symbolic links resolved: where SQLite keeps
    /// the database's `-wal` and `-shm` files, and what a lock file or the
    /// file's identity (`ReplicaIdentity.fingerprint`) must be taken from,
    /// so that they are the same whichever path, a link's or the file's,
    /// reaches it. A link to a missing file is followed too, as SQLite
    /// does, which makes the file where the link points
    /// (`resolvingSymlinksInPath` leaves such a link as it is).
    public static func file(namedBy path: String) -> String {
        var file = URL(fileURLWithPath: path).path
        // At most SQLite's SQLITE_MAX_SYMLINK links, so that a loop ends.
        for _ in 0..<100 {
            guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: file) else { break }
            file = link.hasPrefix("/") ? link : ((file as NSString).deletingLastPathComponent as NSString).appendingPathComponent(link)
        }
        return URL(fileURLWithPath: file).resolvingSymlinksInPath().path
    }

    /// A private database that lives in memory until it is closed; for tests
    /// and scratch work. It cannot use WAL, which needs a file.
    public static func inMemory() throws -> Database {
        try Database(path: ":memory:", flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, writeAheadLog: false)
    }

    private init(path: String, flags: Int32, writeAheadLog: Bool) throws {
        self.path = path
        // A name beginning with "file:" is a URI to a SQLite built to take
        // them (Debian's is): "./" keeps it the file's name it is here.
        let name = path.hasPrefix("file:") ? "./" + path : path
        do {
            connection = try Self.connect(name, flags: flags, writeAheadLog: writeAheadLog, path: path)
        } catch let error as DatabaseError where flags & SQLITE_OPEN_READONLY != 0 {
            // A WAL file read-only in a directory this process cannot write
            // (an app's bundle, a read-only mount, another user's folder):
            // SQLite cannot make the `-wal` and `-shm` it reads through.
            switch Self.unmadeLogFiles(error, path: path) {
            case nil:
                throw error
            case .noCommitsWaiting:
                // The file alone is the whole database, and SQLite reads it so
                // when told it cannot change; only a process that may write
                // the directory could change it.
                guard let immutable = try? Self.connect(Self.immutableURI(path), flags: flags | SQLITE_OPEN_URI, writeAheadLog: false, path: path) else {
                    throw error
                }
                connection = immutable
            case .commitsWaiting(let folder):
                // Read alone, the file would lack them (SQLite finds no way to
                // read a `-wal` without a `-shm`, even in exclusive locking mode).
                let file = Self.file(namedBy: path)
                throw DatabaseError(extendedCode: Self.readOnlyDirectory, message: "\(file)-wal holds commits not yet checkpointed into "
                    + "the file, and SQLite cannot make the \(file)-shm it reads them through, as the folder \(folder) is not writable: "
                    + "read alone, the file would lack those commits, so it is not opened; open it for writing once, as someone who may "
                    + "write the folder (closing it then checkpoints them), or copy the file and its -wal together to a folder you can write",
                    file: path)
            }
        }
    }

    /// An open connection to `name`, set up, or the failure naming `path`.
    private static func connect(_ name: String, flags: Int32, writeAheadLog: Bool, path: String) throws -> DatabaseConnection {
        var handle: OpaquePointer?
        // FULLMUTEX makes SQLite lock internally too. Our own lock is what
        // keeps a transaction's statements together; SQLite's guards the calls
        // that can happen outside it, such as a Statement finalized by
        // whichever thread releases it last.
        let code = sqlite3_open_v2(name, &handle, flags | SQLITE_OPEN_FULLMUTEX, nil)
        guard code == SQLITE_OK, let handle else {
            let error = handle.map { DatabaseError(handle: $0, sql: nil) }
                ?? DatabaseError(extendedCode: code, message: String(cString: sqlite3_errstr(code)))
            sqlite3_close_v2(handle)
            let message = error.primaryCode == SQLITE_CANTOPEN
                ? whyUnopened(path, readOnly: flags & SQLITE_OPEN_READONLY != 0, sqliteSays: error.message) : error.message
            throw DatabaseError(extendedCode: error.extendedCode, message: message, file: path)
        }
        // From here on, `connection` owns the handle and closes it if setup throws.
        let connection = DatabaseConnection(handle: handle)
        do { try setUp(connection, writeAheadLog: writeAheadLog) } catch let error as DatabaseError {
            // SQLite's messages name no file, and the first statement is where
            // a file that is no database fails: say which.
            throw DatabaseError(extendedCode: error.extendedCode, message: error.message, sql: error.sql, file: path)
        }
        return connection
    }

    /// Why SQLite could not open `path`, as the file system shows it:
    /// SQLite says "unable to open database file" whether the file, its
    /// folder or a permission is missing. What it says, when none shows.
    private static func whyUnopened(_ path: String, readOnly: Bool, sqliteSays message: String) -> String {
        var isFolder: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isFolder)
        let folder = (path as NSString).deletingLastPathComponent
        if exists && isFolder.boolValue { return "it is a folder, not a file" }
        if !exists && readOnly { return "there is no such file (a read-only open makes none)" }
        if !exists && !folder.isEmpty && !FileManager.default.fileExists(atPath: folder) { return "its folder \(folder) does not exist" }
        if !exists, let reason = whyNoFileCanBeMade(in: folder) { return reason }
        return message + " (no permission?)"
    }

    /// Why this process cannot make a file in the existing `folder` ("" for
    /// the current one), as a new database needs (its `-wal` and `-shm`
    /// too): `its folder FOLDER is not one you may write to (REASON)`; nil
    /// when it can. SQLite would say only "unable to open database file".
    public static func whyNoFileCanBeMade(in folder: String) -> String? {
        let folder = folder.isEmpty ? FileManager.default.currentDirectoryPath : folder
        guard access(folder, W_OK | X_OK) != 0 else { return nil }
        return "its folder \(folder) is not one you may write to (\(String(cString: strerror(errno))))"
    }

    /// What a read-only open finds beside a file whose `-wal` and `-shm` it
    /// could not make (`unmadeLogFiles`).
    private enum UnmadeLogFiles {
        /// No `-wal`, or an empty one: the file is the whole database.
        case noCommitsWaiting
        /// A `-wal` holds commits the file lacks, in a folder this process may not write.
        case commitsWaiting(folder: String)
    }

    /// Whether a read-only open of the file at `path` failed for want of
    /// the `-wal` and `-shm` files beside it, which it could not make, and
    /// whether a `-wal` there holds commits; nil when it failed otherwise.
    private static func unmadeLogFiles(_ error: DatabaseError, path: String) -> UnmadeLogFiles? {
        guard error.extendedCode == readOnlyDirectory || error.primaryCode == SQLITE_CANTOPEN else { return nil }
        let file = Self.file(namedBy: path)
        guard FileManager.default.fileExists(atPath: file) else { return nil }
        guard let log = try? FileManager.default.attributesOfItem(atPath: file + "-wal") else { return .noCommitsWaiting }
        guard log[.type] as? FileAttributeType == .typeRegular else { return nil }
        if log[.size] as? Int == 0 { return .noCommitsWaiting }
        let folder = (file as NSString).deletingLastPathComponent
        return access(folder, W_OK) != 0 ? .commitsWaiting(folder: folder) : nil
    }

    /// The URI opening the file at `path` as one nothing changes (SQLite's
    /// `immutable`): read without a `-wal` or `-shm`, and without locks.
    private static func immutableURI(_ path: String) -> String {
        let file = URL(fileURLWithPath: Self.file(namedBy: path)).path
        // The characters a URI's path would take for more than themselves.
        let escaped = file.unicodeScalars.map { scalar in
            "%?#".unicodeScalars.contains(scalar) ? "%" + String(scalar.value, radix: 16, uppercase: true) : String(scalar)
        }.joined()
        return "file:" + escaped + "?immutable=1"
    }

    /// The settings every connection runs with (`Specs/storage.md`).
    private static func setUp(_ connection: DatabaseConnection, writeAheadLog: Bool) throws {
        let handle = connection.handle
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, Self.busyTimeout)
        if writeAheadLog {
            // WAL: readers do not block the writer and a commit appends to the
            // log instead of rewriting pages in place. The mode is stored in
            // the file; SQLite answers with the mode actually in effect.
            let mode = try connection.query(sql: "PRAGMA journal_mode = WAL").first?.text(0)
            guard mode == "wal" else {
                throw DatabaseError(
                    extendedCode: SQLITE_ERROR,
                    message: "could not switch to WAL mode (still \(mode ?? "unknown"))")
            }
            // A `-wal` grows to hold the largest transaction (a sync taking
            // a long history) and, while any connection keeps the file open,
            // would stay that size for good: SQLite writes it again from the
            // start after a checkpoint but never shortens it unless told.
            _ = try connection.query(sql: "PRAGMA journal_size_limit = \(Self.walSizeLimit)")
        }
        // FULL: with WAL, each commit syncs the log to disk, so an
        // acknowledged edit survives an OS crash or power loss. NORMAL only
        // syncs at checkpoints: it survives the process crashing but may lose
        // the last commits if the machine goes down.
        try connection.execute(sql: "PRAGMA synchronous = FULL")
        // Off by default in SQLite, per connection.
        try connection.execute(sql: "PRAGMA foreign_keys = ON")
    }

    deinit {
        close()
    }

    /// Closes the connection. Later calls throw a `DatabaseError` whose
    /// `isAfterClose` is set; closing twice is harmless.
    /// Called from inside a `read` or `write` closure, the connection closes
    /// when that closure's transaction has ended.
    public func close() {
        lock.lock()
        defer { lock.unlock() }
        connection = nil
    }

    /// Runs `body` in a write transaction and returns its result.
    ///
    /// The transaction commits when `body` returns and rolls back if it
    /// throws (the error is rethrown). It starts with `BEGIN IMMEDIATE`,
    /// which takes the file's write lock at once: a deferred transaction that
    /// reads first and writes later can fail halfway with SQLITE_BUSY when
    /// another process writes in between. Another process's lock is waited
    /// for while that process keeps committing; held for `busyTimeout`
    /// without a commit, it fails the call with SQLITE_BUSY.
    ///
    ///     let id = try db.write { db in
    ///         try db.execute(sql: "INSERT INTO notes(body) VALUES (?)", arguments: [.blob(bytes)])
    ///         return db.lastInsertedRowID
    ///     }
    public func write<T>(_ body: (DatabaseConnection) throws -> T) throws -> T {
        try withConnection { connection in
            try connection.transaction(begin: connection.beginWriting, body)
        }
    }

    /// Runs `body` in a read transaction: all its queries see the same
    /// snapshot of the file. Writing inside it fails with SQLITE_READONLY.
    ///
    ///     let total = try db.read { db in
    ///         try db.query(sql: "SELECT count(*) FROM notes")[0].int64(0)
    ///     }
    public func read<T>(_ body: (DatabaseConnection) throws -> T) throws -> T {
        try withConnection { connection in
            connection.isReadOnly = true
            defer { connection.isReadOnly = false }
            return try connection.transaction(begin: { try connection.execute(sql: "BEGIN DEFERRED") }, body)
        }
    }

    /// Runs one statement in its own transaction; see `DatabaseConnection.execute`.
    public func execute(sql: String, arguments: [DatabaseValue] = []) throws {
        try withConnection { try $0.execute(sql: sql, arguments: arguments) }
    }

    /// Runs one query in its own transaction; see `DatabaseConnection.query`.
    public func query(sql: String, arguments: [DatabaseValue] = []) throws -> [Row] {
        try withConnection { try $0.query(sql: sql, arguments: arguments) }
    }

    /// True when `PRAGMA integrity_check` finds nothing wrong.
    ///
    /// It reads the whole file, so it is slow on large stores. A file too
    /// damaged to check makes it throw (`SQLITE_CORRUPT` or `SQLITE_NOTADB`).
    public func integrityCheck() throws -> Bool {
        let rows = try query(sql: "PRAGMA integrity_check")
        return try rows.count == 1 && rows[0].text(0) == "ok"
    }

    /// Runs `body` with the connection while holding the lock.
    private func withConnection<T>(_ body: (DatabaseConnection) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        guard !isInUse else {
            throw DatabaseError(
                extendedCode: SQLITE_MISUSE,
                message: "the Database was used from inside its own read/write closure; "
                    + "use the connection passed to the closure (transactions do not nest)")
        }
        guard let connection else {
            throw DatabaseError.closed(path)
        }
        isInUse = true
        defer { isInUse = false }
        do {
            return try body(connection)
        } catch let error as DatabaseError where error.file == nil {
            // Named here, once for every call: SQLite's messages name no file.
            throw DatabaseError(extendedCode: error.extendedCode, message: error.message, sql: error.sql, file: path)
        }
    }
}
