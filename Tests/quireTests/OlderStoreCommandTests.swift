import Foundation
import Quire
import Testing

/// Commands that only read a store meeting one an older Quire wrote (schema
/// 4), which only an open for writing upgrades.
@Suite struct OlderStoreCommandTests {
    /// A schema 4 store at `path` holding its replica and one document, `old`.
    static func makeVersion4Store(_ path: String) throws {
        let database = try Database(path: path)
        defer { database.close() }
        try StoreSchema.migrator(upTo: 4).migrate(database)
        try database.write { db in
            _ = try ReplicaIdentity.establish(db, fingerprint: ReplicaIdentity.fingerprint(ofFile: path), now: 0)
            try db.execute(sql: "INSERT INTO documents(id, created_at) VALUES ('old', 0)")
        }
    }

    static func schemaVersion(_ path: String) throws -> Int64 {
        let database = try Database(path: path, readOnly: true)
        defer { database.close() }
        return try database.query(sql: "PRAGMA user_version")[0].int64(0)
    }

    /// `merge` only reads the other store, so it cannot upgrade it: the
    /// error says so and what to run, not "open it for writing".
    @Test func mergeFromAnOlderStoreSaysHowToUpgradeIt() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let old = quire.directory + "/old.quire"
            try Self.makeVersion4Store(old)
            let result = try quire.run(["merge", old])
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("error: cannot read the store \(old): an older version of Quire wrote it (store schema 4; this one reads \(StoreSchema.latestVersion))"))
            #expect(result.stderr.contains("(`quire --store \(old) status`)"))
            #expect(try Self.schemaVersion(old) == 4)
        }
    }

    /// The backup a user makes before upgrading keeps the older schema, and
    /// the store is not upgraded by it either.
    @Test func backupOfAnOlderStoreCopiesItNotUpgraded() throws {
        try withRunner { quire in
            try Self.makeVersion4Store(quire.store)
            let backup = quire.directory + "/before-upgrade.quire"
            #expect(try quire.ok(["backup", backup]).contains("not upgraded"))
            #expect(try Self.schemaVersion(quire.store) == 4)
            #expect(try Self.schemaVersion(backup) == 4)
            let database = try Database(path: backup, readOnly: true)
            defer { database.close() }
            #expect(try database.query(sql: "SELECT id FROM documents").map { try $0.text(0) } == ["old"])
            // Opened for writing, it takes a new replica id, as every backup does.
            #expect(try database.query(sql: "SELECT file_fingerprint FROM replica").map { try $0.text(0) } == [""])
        }
    }
}
