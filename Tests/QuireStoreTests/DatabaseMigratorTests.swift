import CSQLite
import QuireStore
import QuireTestSupport
import Testing

/// A migrator whose migration `n` creates table `t<n>` and logs `n`.
private func migrator(upTo latest: Int) -> DatabaseMigrator {
    var migrator = DatabaseMigrator()
    for version in 1...latest {
        migrator.register(version: version) { db in
            if version == 1 { try db.execute(sql: "CREATE TABLE log(version INTEGER)") }
            try db.execute(sql: "CREATE TABLE t\(version)(x)")
            try db.execute(sql: "INSERT INTO log VALUES (?)", arguments: [.integer(version)])
        }
    }
    return migrator
}

private func userVersion(_ db: Database) throws -> Int64 {
    try db.query(sql: "PRAGMA user_version")[0].int64(0)
}

@Suite struct DatabaseMigratorTests {
    @Test func migrationsRunInOrderOnceEach() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.sqlite"
            do {
                let db = try Database(path: path)
                defer { db.close() }
                #expect(try migrator(upTo: 2).migrate(db) == [1, 2])
                #expect(try userVersion(db) == 2)
            }
            // Reopened by a newer program: only the new migration runs.
            let db = try Database(path: path)
            defer { db.close() }
            #expect(try migrator(upTo: 3).migrate(db) == [3])
            #expect(try migrator(upTo: 3).migrate(db) == [])
            #expect(try userVersion(db) == 3)
            let log = try db.query(sql: "SELECT version FROM log ORDER BY rowid").map { try $0.int64(0) }
            #expect(log == [1, 2, 3])
        }
    }

    @Test func aNewerSchemaIsRefused() throws {
        let db = try Database.inMemory()
        try migrator(upTo: 3).migrate(db)
        let error = #expect(throws: DatabaseError.self) { try migrator(upTo: 2).migrate(db) }
        #expect(error?.description.contains("schema version 3 is newer than this program's (2)") == true)
        #expect(try userVersion(db) == 3)
    }

    @Test func aFailingMigrationLeavesThePreviousVersion() throws {
        let db = try Database.inMemory()
        var failing = migrator(upTo: 1)
        failing.register(version: 2) { db in
            try db.execute(sql: "CREATE TABLE t2(x)")
            try db.execute(sql: "INSERT INTO missing VALUES (1)")
        }
        #expect(throws: DatabaseError.self) { try failing.migrate(db) }
        #expect(try userVersion(db) == 1)
        #expect(try db.query(sql: "SELECT name FROM sqlite_schema WHERE name = 't2'").isEmpty)
        // A fixed program migrates from where the failed one stopped.
        #expect(try migrator(upTo: 2).migrate(db) == [2])
    }
}
