import Foundation
import Quire
import QuireTestSupport
import Testing

/// `quire inspect` on each kind of file, and on damaged ones.
@Suite struct InspectCommandTests {
    /// A small document: a text typed, then partly deleted (4 tombstones).
    static func sampleDocument() throws -> Document {
        var document = Document(replica: ReplicaID(0x1111))
        let body = try document.transact { tx in
            let body = try tx.putObject(.root, key: "body", kind: .text)
            try tx.insertText(body, at: 0, "Buy milk")
            return body
        }
        try document.transact { tx in try tx.deleteText(body, at: 0, count: 4) }
        return document
    }

    func inspect(_ quire: QuireRunner, _ name: String, _ bytes: [UInt8]) throws -> QuireRunner.Result {
        let path = quire.directory + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return try quire.run(["inspect", path, "--json"])
    }

    /// A file a killed `quire init` left with a hot journal was reported
    /// as "a damaged SQLite store: the database is read-only": it is not
    /// damaged, and the first command that opens it for writing recovers it.
    @Test func aFileLeftMidWriteIsNotCalledDamaged() throws {
        try withRunner { quire in
            try quire.writeWhatAKilledInitLeaves(withHotJournal: true)
            let result = try quire.run(["inspect", quire.store])
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("error: \(quire.store) was left in the middle of a write by a process that stopped; "
                + "its journal \(quire.store)-journal undoes that write, which a read-only open cannot do: any other quire command "
                + "on the store does it (`quire --store \(quire.store) status`), then inspect it again\nSQLite's report: "), "\(result.stderr)")
            #expect(!result.stderr.contains("damaged"))
        }
    }

    @Test func eachKindOfFile() throws {
        try withRunner { quire in
            let document = try Self.sampleDocument()
            let changes = try inspect(quire, "changes.qchg", document.encodeChanges())
            let bundle = try #require(try changes.json() as? [String: Any])
            #expect(bundle["kind"] as? String == "changes")
            #expect(bundle["changes"] as? Int == 2)
            #expect(bundle["operations"] as? Int == 3)
            #expect(bundle["replicas"] as? Int == 1)
            // A pipe is read too.
            let piped = try quire.run(["inspect", "/dev/stdin", "--json"], input: Data(document.encodeChanges()))
            #expect((try piped.json() as? [String: Any])?["changes"] as? Int == 2)

            let snapshot = try #require(try inspect(quire, "doc.qdoc", document.encodeSnapshot()).json() as? [String: Any])
            #expect(snapshot["kind"] as? String == "snapshot")
            #expect(snapshot["tombstones"] as? Int == 4)
            #expect(snapshot["changes"] as? Int == 2)

            let frame = try SnapshotFrame.seal(document.encodeSnapshot(includeHistory: false), changeCount: 2)
            let framed = try #require(try inspect(quire, "doc.qsnp", frame).json() as? [String: Any])
            #expect(framed["kind"] as? String == "snapshot-frame")
            #expect(framed["declaredChanges"] as? Int == 2)
            #expect(framed["tombstones"] as? Int == 4)

            try quire.ok(["init"])
            try quire.ok(["note", "new", "--title", "One", "--body", "two"])
            // A long note's row is compressed (`StoredBundle`), and read as such.
            try quire.ok(["note", "new", "--title", "Long", "--body", String(repeating: "a line of a long note. ", count: 40)])
            let store = try #require(try quire.run(["inspect", quire.store, "--json"]).json() as? [String: Any])
            #expect(store["kind"] as? String == "store")
            #expect(store["schemaVersion"] as? Int == StoreSchema.latestVersion)
            #expect(store["documents"] as? Int == 2)
            #expect(store["changes"] as? Int == 2)
            #expect(store["freeBytes"] as? Int != nil)
            #expect(store["damage"] as? [String] == [])
        }
    }

    /// The file keeps the pages deleted rows leave; inspect says how much.
    @Test func aStoreShowsItsFreeBytes() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let database = try Database(path: quire.store)
            try database.execute(sql: "CREATE TABLE scratch(body BLOB)")
            try database.execute(sql: "INSERT INTO scratch VALUES (zeroblob(100000))")
            try database.execute(sql: "DROP TABLE scratch")
            let free = try database.freeSpace().freeBytes
            database.close()
            #expect(free >= 100_000)
            let store = try #require(try quire.run(["inspect", quire.store, "--json"]).json() as? [String: Any])
            #expect(store["freeBytes"] as? Int == Int(free))
            #expect(try quire.ok(["inspect", quire.store]).contains("\nfreeBytes           \(free)\n"))
        }
    }

    @Test func textShowsTheFileNameAsItIs() throws {
        try withRunner { quire in
            let path = quire.directory + "/my \"notes\" \\ 2.quire"
            try quire.ok(["init"], store: path)
            let lines = try quire.ok(["inspect", path]).split(separator: "\n")
            #expect(lines.first == "file                \(path)")
            #expect(lines.dropFirst(2).first == "kind                store")
        }
    }

    /// A change row and a snapshot damaged by hand in `sqlite3`, where
    /// `x || y` leaves TEXT: each is a damage entry; the rest is reported.
    @Test func rowsDamagedIntoTextAreReportedAsDamage() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "One"]).trimmingCharacters(in: .newlines)
            try DocumentStore(path: quire.store).snapshot(try #require(DocumentID(rawValue: id)))
            let database = try Database(path: quire.store)
            try database.write { db in
                try db.execute(sql: "UPDATE changes SET data = CAST(x'00' || data AS TEXT)")
                try db.execute(sql: "UPDATE snapshots SET frame = CAST(x'00' || frame AS TEXT)")
            }
            database.close()

            let result = try quire.run(["inspect", quire.store, "--json"])
            #expect(result.status == 1)
            let report = try #require(try result.json() as? [String: Any])
            #expect(report["documents"] as? Int == 1 && report["snapshots"] as? Int == 1)
            let damage = try #require(report["damage"] as? [String])
            #expect(damage.count == 2)
            #expect(damage.first?.hasPrefix("change 1 of document \(id): ") == true)
            #expect(damage.last?.hasPrefix("snapshot 1 of document \(id): ") == true)
        }
    }

    /// `inspect` only reads, so a store from before version 5, whose log
    /// rows name their document by id, is read as it is.
    @Test func aVersion4StoreIsInspectedWithoutUpgrading() throws {
        try withRunner { quire in
            let database = try Database(path: quire.store)
            try StoreSchema.migrator(upTo: 4).migrate(database)
            try database.write { db in
                try db.execute(sql: "INSERT INTO documents(id, created_at) VALUES ('old', 0)")
                try db.execute(sql: """
                    INSERT INTO changes(document_id, replica, first_counter, last_counter, first_lamport, last_lamport,
                                        parents, time, is_local, data)
                    VALUES ('old', 1, 1, 1, 1, 1, '', 0, 1, x'00')
                    """)
            }
            database.close()

            let report = try #require(try quire.run(["inspect", quire.store, "--json"]).json() as? [String: Any])
            #expect(report["schemaVersion"] as? Int == 4)
            #expect((report["damage"] as? [String])?.first?.hasPrefix("change 1 of document old: ") == true)
        }
    }

    /// A parked change (one waiting for another) whose row no longer decodes.
    @Test func aDamagedParkedChangeIsReportedAsDamage() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let store = try DocumentStore(path: quire.store)
            let id = try store.createDocument()
            var ahead = Document(replica: ReplicaID(0xA))
            try ahead.transact { tx in try tx.put(.root, key: "a", .int(2)) }
            try ahead.transact { tx in try tx.put(.root, key: "b", .int(3)) }
            try store.apply(id, [try #require(try ahead.allChanges().last)])
            try store.close()
            let database = try Database(path: quire.store)
            try database.execute(sql: "UPDATE parked_changes SET data = X'00'")
            database.close()

            let result = try quire.run(["inspect", quire.store, "--json"])
            #expect(result.status == 1)
            let report = try #require(try result.json() as? [String: Any])
            #expect(report["parkedChanges"] as? Int == 1)
            let damage = try #require(report["damage"] as? [String])
            #expect(damage.count == 1)
            #expect(damage.first?.hasPrefix("parked change 2@\(ReplicaID(0xA)) is damaged (") == true)
            #expect(damage.first?.hasSuffix(") of document \(id)") == true)
        }
    }

    @Test func damagedFilesAreReportedPrecisely() throws {
        try withRunner { quire in
            let bundle = try Self.sampleDocument().encodeChanges()
            let truncated = try inspect(quire, "cut.qchg", Array(bundle.dropLast(3)))
            #expect(truncated.status == 1)
            #expect(truncated.stderr.hasPrefix("error: \(quire.directory)/cut.qchg is damaged: "))

            var flipped = try SnapshotFrame.seal(Self.sampleDocument().encodeSnapshot(), changeCount: 2)
            flipped[flipped.count - 2] ^= 0xFF
            let frame = try inspect(quire, "bad.qsnp", flipped)
            #expect(frame.status == 1)
            #expect(frame.stderr == "error: \(quire.directory)/bad.qsnp is damaged: invalid snapshot frame: checksum mismatch\n")

            let otherPath = quire.directory + "/other.sqlite"
            let other = try Database(path: otherPath)
            try other.write { db in try db.execute(sql: "CREATE TABLE bookmarks(url TEXT)") }
            other.close()
            let notStore = try quire.run(["inspect", otherPath])
            #expect(notStore.status == 1)
            #expect(notStore.stderr == "error: \(otherPath) is a SQLite database but not a Quire store\n")

            let unknown = try inspect(quire, "notes.txt", Array("hello".utf8))
            #expect(unknown.status == 1)
            #expect(unknown.stderr.contains("is not a Quire file"))
        }
    }

    /// A page of the log zeroed (a disk's damage): `inspect` names the notes
    /// that cannot be read and says how to save the others, which `merge`
    /// then copies out.
    @Test func aDamagedPageNamesTheNotesThatCannotBeRead() throws {
        try withRunner { quire in
            try quire.storeWithADamagedPage()

            let report = try quire.run(["inspect", quire.store])
            #expect(report.status == 1)
            let lines = report.stderr.split(separator: "\n")
            let unreadable = lines.dropFirst().filter { $0.hasPrefix("  ") }.count
            #expect(lines.first?.hasPrefix("error: \(quire.store) is damaged: SQLite's integrity check failed; of its 20 notes, \(unreadable) "
                + "cannot be read (below); `quire --store NEW merge \(quire.store)` copies the others into a new store NEW") == true, "\(report.stderr)")
            #expect(unreadable > 0 && unreadable < 20)

            let saved = quire.directory + "/saved.quire"
            try quire.ok(["init"], store: saved)
            #expect(try quire.run(["merge", quire.store], store: saved).status == 1)
            #expect((try quire.run(["note", "list", "--json"], store: saved).json() as? [Any])?.count == 20 - unreadable)
        }
    }
}
