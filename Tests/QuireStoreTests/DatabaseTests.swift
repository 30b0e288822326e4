import CSQLite
import Dispatch
import Foundation
@testable import QuireStore
import QuireTestSupport
import Testing

/// Opens a file database in a temporary directory with a `notes` table.
private func withNotesDatabase(_ body: (Database, String) throws -> Void) throws {
    try withTemporaryDirectory { directory in
        let path = directory + "/store.sqlite"
        let db = try Database(path: path)
        defer { db.close() }
        try db.execute(sql: "CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT UNIQUE, body BLOB)")
        try body(db, path)
    }
}

private func noteCount(_ db: Database) throws -> Int64 {
    try db.query(sql: "SELECT count(*) FROM notes")[0].int64(0)
}

private struct Abort: Error {}

/// Swift does not import SQLite's extended-code macros, which are expressions.
private let SQLITE_CONSTRAINT_UNIQUE = SQLITE_CONSTRAINT | 8 << 8

/// The DatabaseError thrown by `body`, or nil (and a test failure) if it threw something else.
private func databaseError(_ body: () throws -> Void) -> DatabaseError? {
    let error = #expect(throws: DatabaseError.self) { try body() }
    return error
}

@Suite struct DatabaseTests {
    @Test func aPathIsAFilesNameEvenWhenSQLiteWouldReadItOtherwise() throws {
        #expect(databaseError { _ = try Database(path: "") }?.message == "the database path is empty")
        #expect(databaseError { _ = try Database(path: ":memory:") }?.message.contains("Database.inMemory()") == true)
        // Not the URI "file:...?mode=memory", which would keep nothing. A
        // relative name (an absolute one begins with "/"), so in the current
        // directory: changing it would move every test running beside this one.
        let name = "file:quire-database-test-\(UUID().uuidString).db?mode=memory"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: name + suffix) } }
        do {
            let db = try Database(path: name)
            try db.execute(sql: "CREATE TABLE notes(id INTEGER PRIMARY KEY)")
            db.close()
        }
        #expect(FileManager.default.fileExists(atPath: name))
        #expect(try Database(path: name).query(sql: "SELECT count(*) FROM sqlite_schema WHERE name = 'notes'")[0].int64(0) == 1)
    }

    @Test func writeCommitsWhenTheClosureReturns() throws {
        try withNotesDatabase { db, path throws in
            let id = try db.write { db in
                try db.execute(sql: "INSERT INTO notes(title) VALUES (?)", arguments: ["groceries"])
                return db.lastInsertedRowID
            }
            #expect(id == 1)
            // Committed to the file: a second connection sees it.
            let other = try Database(path: path)
            defer { other.close() }
            #expect(try noteCount(other) == 1)
        }
    }

    @Test func writeRollsBackWhenTheClosureThrows() throws {
        try withNotesDatabase { db, _ throws in
            #expect(throws: Abort.self) {
                try db.write { db in
                    try db.execute(sql: "INSERT INTO notes(title) VALUES ('a')")
                    throw Abort()
                }
            }
            #expect(try noteCount(db) == 0)
            // The connection is usable again afterwards.
            try db.write { db in try db.execute(sql: "INSERT INTO notes(title) VALUES ('b')") }
            #expect(try noteCount(db) == 1)
        }
    }

    @Test func aFailingStatementRollsBackTheWholeTransaction() throws {
        try withNotesDatabase { db, _ throws in
            let error = databaseError {
                try db.write { db in
                    try db.execute(sql: "INSERT INTO notes(title) VALUES ('same')")
                    try db.execute(sql: "INSERT INTO notes(title) VALUES ('same')")
                }
            }
            #expect(error?.extendedCode == SQLITE_CONSTRAINT_UNIQUE)
            #expect(try noteCount(db) == 0)
        }
    }

    @Test func transactionsDoNotNest() throws {
        let db = try Database.inMemory()
        let error = databaseError {
            try db.write { _ in try db.write { _ in } }
        }
        #expect(error?.extendedCode == SQLITE_MISUSE)
        #expect(error?.description.contains("do not nest") == true)
        // Plain calls on the Database from inside a closure are refused too.
        #expect(throws: DatabaseError.self) { try db.read { _ in try db.query(sql: "SELECT 1") } }
        // And the database still works.
        #expect(try db.query(sql: "SELECT 1")[0].int64(0) == 1)
    }

    @Test func endingTheTransactionInsideTheClosureIsAnError() throws {
        let db = try Database.inMemory()
        let error = databaseError { try db.write { db in try db.execute(sql: "COMMIT") } }
        #expect(error?.extendedCode == SQLITE_MISUSE)
        try db.write { _ in }
    }

    @Test func readRefusesToWrite() throws {
        try withNotesDatabase { db, _ throws in
            let error = databaseError {
                try db.read { db in try db.execute(sql: "INSERT INTO notes(title) VALUES ('x')") }
            }
            #expect(error?.primaryCode == SQLITE_READONLY && error?.fileProblem == .readOnly)
            // Writing is refused only inside the read.
            try db.write { db in try db.execute(sql: "INSERT INTO notes(title) VALUES ('x')") }
            #expect(try db.read { db in try db.query(sql: "SELECT title FROM notes")[0].text(0) } == "x")
        }
    }

    /// A read leaves the connection's prepared statements compiled for the
    /// next (setting `PRAGMA query_only` around each read expired them all).
    @Test func readsKeepTheirStatementsCompiled() throws {
        try withNotesDatabase { db, _ throws in
            let sql = "SELECT count(*) FROM notes WHERE title = ?"
            let recompilations = try (0..<3).map { _ in
                try db.read { db in
                    let statement = try db.statement(sql: sql)
                    _ = try statement.fetchAll(arguments: [.text("x")])
                    return statement.recompilations
                }
            }
            #expect(recompilations == [0, 0, 0])
        }
    }

    @Test func statementsAreCachedBySQL() throws {
        let db = try Database.inMemory()
        try db.write { db in
            try db.execute(sql: "CREATE TABLE t(n INTEGER)")
            let insert = try db.statement(sql: "INSERT INTO t(n) VALUES (?)")
            #expect(try db.statement(sql: "INSERT INTO t(n) VALUES (?)") === insert)
            #expect(try db.statement(sql: "INSERT INTO t(n) VALUES (?) ") !== insert)
            for n in 1...3 { try insert.execute(arguments: [.integer(n)]) }
            // execute(sql:) goes through the same cache.
            try db.execute(sql: "INSERT INTO t(n) VALUES (?)", arguments: [4])
        }
        #expect(try db.query(sql: "SELECT sum(n) FROM t")[0].int64(0) == 10)
    }

    @Test func stepByStepWithBindingByIndex() throws {
        let db = try Database.inMemory()
        try db.write { db in
            try db.executeScript("CREATE TABLE t(n INTEGER); INSERT INTO t VALUES (1), (2), (3);")
            let select = try db.statement(sql: "SELECT n FROM t WHERE n >= ?1 ORDER BY n")
            try select.bind(2, at: 1)
            #expect(try select.step()?.int64(0) == 2)
            #expect(try select.step()?.int64(0) == 3)
            #expect(try select.step() == nil)
            select.reset()
        }
    }

    @Test func valuesRoundTrip() throws {
        let db = try Database.inMemory()
        try db.execute(sql: "CREATE TABLE t(i, r, s, b, n)")
        let text = "nul\u{0}inside, é, 😀"
        let bytes: [UInt8] = [0, 1, 2, 255]
        try db.execute(sql: "INSERT INTO t VALUES (?, ?, ?, ?, ?)", arguments: [.integer(Int64.min), 2.5, .text(text), .blob(bytes), nil])
        try db.execute(sql: "INSERT INTO t VALUES (?, ?, ?, ?, ?)", arguments: [.integer(Int64.max), 7, "", .blob([]), nil])
        let rows = try db.query(sql: "SELECT i, r, s, b, n FROM t ORDER BY rowid")
        #expect(try rows[0].int64(0) == .min)
        #expect(try rows[0].double(1) == 2.5)
        #expect(try rows[0].text(2) == text)
        #expect(try rows[0].blob(3) == bytes)
        #expect(rows[0].isNull(4))
        #expect(try rows[1].int64(0) == .max)
        #expect(try rows[1].double(1) == 7)
        // Empty text and empty blobs stay empty, not NULL.
        #expect(try rows[1].text(2) == "")
        #expect(try rows[1].blob(3) == [])
        #expect(rows[1][4] == .null)
    }

    @Test func aColumnOfAnotherTypeIsAnError() throws {
        let db = try Database.inMemory()
        let row = try db.query(sql: "SELECT 'text', NULL")[0]
        let error = databaseError { _ = try row.int64(0) }
        #expect(error?.extendedCode == SQLITE_MISMATCH)
        #expect(error?.description.contains("column 0 holds TEXT, expected INTEGER") == true)
        #expect(throws: DatabaseError.self) { try row.blob(1) }
    }

    @Test func errorsCarryCodeMessageAndSQL() throws {
        try withNotesDatabase { db, _ throws in
            try db.execute(sql: "INSERT INTO notes(title) VALUES ('a')")
            let insert = "INSERT INTO notes(title) VALUES ('a')"
            let constraint = databaseError { try db.execute(sql: insert) }
            #expect(constraint?.extendedCode == SQLITE_CONSTRAINT_UNIQUE)
            #expect(constraint?.primaryCode == SQLITE_CONSTRAINT)
            #expect(constraint?.message == "UNIQUE constraint failed: notes.title")
            #expect(constraint?.sql == insert)
            #expect(constraint?.description.contains("constraint violation") == true)

            let syntax = databaseError { try db.execute(sql: "SELEKT 1") }
            #expect(syntax?.primaryCode == SQLITE_ERROR)
            #expect(syntax?.message.contains("syntax error") == true)
            #expect(syntax?.debugDescription.contains("SQL: SELEKT 1") == true)

            let arguments = databaseError { try db.execute(sql: "SELECT ?, ?", arguments: [1]) }
            #expect(arguments?.extendedCode == SQLITE_RANGE)
        }
    }

    @Test func oneStatementAtATimeUnlessScript() throws {
        let db = try Database.inMemory()
        let error = databaseError { try db.execute(sql: "CREATE TABLE a(x); CREATE TABLE b(x)") }
        #expect(error?.extendedCode == SQLITE_MISUSE)
        #expect(try db.query(sql: "SELECT count(*) FROM sqlite_schema")[0].int64(0) == 0)
        // A trailing comment is not a second statement.
        try db.execute(sql: "CREATE TABLE a(x); -- the first table")
        try db.write { db in try db.executeScript("CREATE TABLE b(x); CREATE TABLE c(x);") }
        #expect(try db.query(sql: "SELECT count(*) FROM sqlite_schema")[0].int64(0) == 3)
    }

    @Test func fileDatabasesUseWALAndFullSync() throws {
        try withNotesDatabase { db, _ throws in
            #expect(try db.query(sql: "PRAGMA journal_mode")[0].text(0) == "wal")
            #expect(try db.query(sql: "PRAGMA synchronous")[0].int64(0) == 2)  // FULL
            #expect(try db.query(sql: "PRAGMA foreign_keys")[0].int64(0) == 1)
            #expect(try db.query(sql: "PRAGMA busy_timeout")[0].int64(0) == 5_000)  // 5 s
            #expect(try db.query(sql: "PRAGMA journal_size_limit")[0].int64(0) == 4 << 20)  // 4 MiB
            #expect(try db.integrityCheck())
        }
    }

    /// A large transaction grows the `-wal`; once checkpointed, the next
    /// commit cuts it back, though the connection stays open (an app, a
    /// `quire serve`), instead of the file keeping that size for good.
    @Test func theWALShrinksBackAfterALargeTransaction() throws {
        try withNotesDatabase { db, path throws in
            let big = DatabaseValue.blob([UInt8](repeating: 7, count: 1 << 20))
            try db.write { db in
                for _ in 0..<16 { try db.execute(sql: "INSERT INTO notes(body) VALUES (?)", arguments: [big]) }
            }
            let walSize = { try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int ?? 0 }
            #expect(try walSize() > 16 << 20)
            try db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)")
            try db.write { db in try db.execute(sql: "INSERT INTO notes(body) VALUES (?)", arguments: [.blob([1])]) }
            #expect(try walSize() <= Database.walSizeLimit)
        }
    }

    @Test func readOnlyFileRefusesWritesButReads() throws {
        try withNotesDatabase { db, path throws in
            try db.execute(sql: "INSERT INTO notes(title) VALUES ('kept')")
            db.close()
            // chmod 0444 would not stop root, who runs these tests in CI, so
            // open read-only instead.
            let readOnly = try Database(path: path, readOnly: true)
            defer { readOnly.close() }
            let error = databaseError {
                try readOnly.write { db in try db.execute(sql: "INSERT INTO notes(title) VALUES ('lost')") }
            }
            #expect(error?.primaryCode == SQLITE_READONLY)
            #expect(error?.description.contains("read-only") == true)
            // It names its file, for a program with several open to say which failed.
            #expect(error?.file == path)
            #expect(try readOnly.query(sql: "SELECT title FROM notes")[0].text(0) == "kept")
        }
    }

    /// The one-line text an app shows names the operation, the file and
    /// SQLite's message; the statement, which runs over lines and names
    /// nothing a person can act on, is only in `sql` and `debugDescription`.
    @Test func anErrorsTextNamesTheOperationAndFileButNotTheSQL() throws {
        try withNotesDatabase { db, path in
            let insert = """
                INSERT INTO notes(title,
                                  body)
                VALUES (?, ?)
                """
            try db.execute(sql: insert, arguments: [.text("a"), .null])
            let error = databaseError { try db.execute(sql: insert, arguments: [.text("a"), .null]) }
            #expect(error?.description == "constraint violation: UNIQUE constraint failed: notes.title (SQLite code 2067), inserting into notes, in \(path)")
            #expect(error?.localizedDescription == error?.description)
            #expect(error?.sql == insert && error?.debugDescription == error.map { $0.description + "\nSQL: " + insert })
            #expect(databaseError { _ = try db.query(sql: "SELECT title FROM nowhere") }?.operation == "reading nowhere")
            #expect(DatabaseError(extendedCode: SQLITE_ERROR, message: "x", sql: "UPDATE notes SET title = 1").operation == "updating notes")
            #expect(DatabaseError(extendedCode: SQLITE_ERROR, message: "x", sql: "PRAGMA journal_mode = WAL").operation == "setting journal_mode")
            #expect(DatabaseError(extendedCode: SQLITE_ERROR, message: "x", sql: "SELECT count(*) FROM notes").operation == "reading notes")
        }
    }

    @Test func aFileThatIsNotADatabaseIsReported() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.txt"
            try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
            let error = databaseError { _ = try Database(path: path) }
            #expect(error?.primaryCode == SQLITE_NOTADB && error?.fileProblem == .damaged)
            #expect(error?.description.contains("not a SQLite database") == true)
            // Named, as every failure on a file is: an app opening several says which.
            #expect(error?.file == path && error?.description.contains(path) == true)
        }
    }

    @Test func aMissingDirectoryIsReported() throws {
        let error = databaseError { _ = try Database(path: "/nonexistent-quire-dir/store.sqlite") }
        #expect(error?.primaryCode == SQLITE_CANTOPEN)
        #expect(error?.description.contains("/nonexistent-quire-dir/store.sqlite") == true)
        #expect(error?.file == "/nonexistent-quire-dir/store.sqlite")
        #expect(error?.message == "its folder /nonexistent-quire-dir does not exist")
    }

    /// SQLite says "unable to open database file" for each of these; the
    /// error says which it is (a path given as "~/notes.quire" names a
    /// folder "~", which no shell expanded).
    @Test func whatKeepsAFileFromOpeningIsNamed() throws {
        try withTemporaryDirectory { directory in
            #expect(databaseError { _ = try Database(path: directory) }?.message == "it is a folder, not a file")
            #expect(databaseError { _ = try Database(path: directory + "/none.sqlite", readOnly: true) }?.message
                == "there is no such file (a read-only open makes none)")
            #expect(databaseError { _ = try Database(path: "~/quire-database-test.sqlite") }?.message == "its folder ~ does not exist")
            #expect(!FileManager.default.fileExists(atPath: directory + "/none.sqlite"))
        }
    }

    @Test func aClosedDatabaseThrows() throws {
        let db = try Database.inMemory()
        db.close()
        db.close()
        #expect(throws: DatabaseError.self) { try db.query(sql: "SELECT 1") }
    }

    @Test func concurrentWritersLoseNoRows() throws {
        try withNotesDatabase { db, _ throws in
            let threads = 4
            let writesPerThread = 25
            let failures = Failures()
            DispatchQueue.concurrentPerform(iterations: threads) { thread in
                for write in 0..<writesPerThread {
                    do {
                        try db.write { db in
                            // Read-then-write inside one transaction: a lost
                            // update would show as a wrong count below.
                            let count = try db.query(sql: "SELECT count(*) FROM notes")[0].int64(0)
                            try db.execute(
                                sql: "INSERT INTO notes(title, body) VALUES (?, ?)",
                                arguments: [.text("\(thread)-\(write)"), .blob([UInt8(truncatingIfNeeded: count)])])
                        }
                        _ = try noteCount(db)
                    } catch {
                        failures.record(error)
                    }
                }
            }
            #expect(failures.errors.isEmpty, "\(failures.errors)")
            #expect(try noteCount(db) == Int64(threads * writesPerThread))
            // Each transaction saw all earlier ones: the stored counts are 0...n-1.
            let seen = try db.query(sql: "SELECT body FROM notes ORDER BY id").map { try $0.blob(0)[0] }
            #expect(seen == (0..<threads * writesPerThread).map { UInt8(truncatingIfNeeded: $0) })
        }
    }

    /// A write waits for another connection's (another process's) lock for
    /// as long as that one keeps committing. SQLite's own wait tries now and
    /// then, and misses every moment the lock is free between a flat-out
    /// writer's transactions: it failed with SQLITE_BUSY once the busy
    /// timeout had passed, as a writer process of the kill tests did on a
    /// loaded host.
    @Test func aWriteWaitsWhileAnotherConnectionKeepsCommitting() throws {
        try withNotesDatabase { busy, path throws in
            let waiting = try Database(path: path)
            defer { waiting.close() }
            // Without a disk sync at each commit: on a loaded host one
            // sync took longer than the busy timeout, the lock held still
            // for all of it, and the waiter rightly gave up. The rule under
            // test is the wait's, not the disk's.
            for db in [busy, waiting] { try db.execute(sql: "PRAGMA synchronous = OFF") }
            // Back to back, holding the lock 50 ms each, for longer than the busy timeout.
            let transactions = Int(Database.busyTimeout) / 50 * 3 / 2
            let started = DispatchSemaphore(value: 0), done = DispatchGroup()
            let failures = Failures()
            DispatchQueue.global().async(group: done) {
                for index in 0..<transactions {
                    do {
                        try busy.write { db in
                            try db.execute(sql: "INSERT INTO notes(title, body) VALUES (?, x'')", arguments: [.text("busy \(index)")])
                            if index == 0 { started.signal() }
                            usleep(50_000)
                        }
                    } catch {
                        failures.record(error)
                        if index == 0 { started.signal() }
                    }
                }
            }
            started.wait()
            do {
                try waiting.write { db in try db.execute(sql: "INSERT INTO notes(title, body) VALUES ('waiting', x'')") }
            } catch {
                failures.record(error)
            }
            done.wait()
            #expect(failures.errors.isEmpty, "\(failures.errors)")
            #expect(try noteCount(busy) == Int64(transactions + 1))
        }
    }
}

/// Errors collected from several threads.
private final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [any Error] = []
    func record(_ error: any Error) { lock.withLock { collected.append(error) } }
    var errors: [any Error] { lock.withLock { collected } }
}

@Suite struct DatabaseFileTests {
    @Test func readersSeeTheLastCommitWhileAWriteIsOpen() throws {
        try withNotesDatabase { writer, path throws in
            let reader = try Database(path: path)
            defer { reader.close() }
            try writer.write { db in
                try db.execute(sql: "INSERT INTO notes(title) VALUES ('draft')")
                // WAL: another connection reads without waiting, and sees
                // only committed data.
                #expect(try noteCount(reader) == 0)
            }
            #expect(try noteCount(reader) == 1)
        }
    }

    @Test func aDamagedFileFailsTheIntegrityCheck() throws {
        try withNotesDatabase { db, path throws in
            try db.write { db in
                for index in 0..<200 {
                    try db.execute(sql: "INSERT INTO notes(title, body) VALUES (?, ?)",
                                   arguments: [.text("note \(index)"), .blob([UInt8](repeating: 1, count: 100))])
                }
            }
            db.close()  // checkpoints the WAL into the main file
            // Overwrite the third page (of 4096 bytes): part of a b-tree.
            let file = try FileHandle(forUpdating: URL(fileURLWithPath: path))
            try file.seek(toOffset: 2 * 4096)
            try file.write(contentsOf: Data(repeating: 0xA5, count: 4096))
            try file.close()

            let damaged = try Database(path: path)
            defer { damaged.close() }
            do {
                #expect(try damaged.integrityCheck() == false)
            } catch let error as DatabaseError {
                // Damage can also be too bad to check at all.
                #expect(error.primaryCode == SQLITE_CORRUPT && error.fileProblem == .damaged)
            }
        }
    }

    /// chmod does not stop root, so this only runs as another user.
    @Test(.enabled(if: geteuid() != 0)) func aWriteProtectedFileRefusesWritesButReads() throws {
        try withNotesDatabase { db, path throws in
            try db.execute(sql: "INSERT INTO notes(title) VALUES ('kept')")
            db.close()
            try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: path)
            // SQLite opens a write-protected file read-only, without an error.
            let reopened = try Database(path: path)
            defer { reopened.close() }
            let error = databaseError {
                try reopened.write { db in try db.execute(sql: "INSERT INTO notes(title) VALUES ('lost')") }
            }
            #expect(error?.primaryCode == SQLITE_READONLY)
            #expect(try reopened.query(sql: "SELECT title FROM notes")[0].text(0) == "kept")
        }
    }
}
