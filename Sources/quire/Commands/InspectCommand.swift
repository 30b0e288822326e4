import Foundation
import JSONText
import Quire

/// `quire inspect FILE`: decodes a store file, a snapshot frame, a document
/// snapshot or a change bundle, recognised by its first bytes, and reports
/// its sizes and counts, or precisely what is damaged.
enum InspectCommand {
    static let command = Command(
        name: "inspect",
        summary: "Decode a store file, a snapshot or a change bundle: format version, sizes, counts, and any damage.",
        usage: ["FILE [--json]"],
        arguments: [Command.Argument(name: "FILE", help: "A store (SQLite), a snapshot frame (QSNP), a document snapshot (QDOC) or a change bundle (QCHG).")],
        options: [.json],
        examples: ["quire inspect ~/.local/share/quire/notes.quire", "quire inspect change.qchg --json"],
        run: { invocation in
            try invocation.expectArguments(atMost: 1)
            let path = try invocation.argument(0, "FILE")
            let output = invocation.context.output
            try Context.refuseDirectory(path)
            let data = try Context.contents(of: path)
            if data.count > progressThreshold { output.progress("inspecting \(path) (\(data.count / 1_000_000) MB)...") }
            let report = try FileReport(path: path, bytes: [UInt8](data))
            if invocation.flag("--json") {
                output.print(json: report.json)
            } else {
                // Strings as they are (a path may hold quotes or backslashes), numbers and null as JSON writes them.
                output.print(Table(rows: report.fields.map { name, value in
                    if case .string(let text) = value { [name, text] } else { [name, value.compact] }
                }).render())
                for damage in report.damage { output.print(output.styled("damaged: \(damage)", .red)) }
            }
            if !report.damage.isEmpty {
                throw CLIError.failure("\(path) is damaged: \(report.damage.count) problem\(report.damage.count == 1 ? "" : "s") found")
            }
        })

    /// Files larger than this get a progress line on standard error.
    static let progressThreshold = 16 << 20
}

/// What `inspect` found in one file: named fields in a fixed order, and
/// damage found inside an otherwise readable file.
struct FileReport {
    private(set) var fields: [(String, JSONValue)] = []
    private(set) var damage: [String] = []

    var json: JSONValue {
        .object(Dictionary(uniqueKeysWithValues: fields) .merging(["damage": .array(damage.map(JSONValue.string))]) { $1 })
    }

    static let sqliteMagic = Array("SQLite format 3\0".utf8)

    init(path: String, bytes: [UInt8]) throws {
        add("file", .string(path))
        add("bytes", .integer(bytes.count))
        do {
            if bytes.starts(with: Self.sqliteMagic) {
                try inspectStore(path)
            } else if bytes.starts(with: SnapshotFrame.magic) {
                add("kind", .string("snapshot-frame"))
                let (encoding, changeCount) = try SnapshotFrame.open(bytes)
                add("formatVersion", .integer(Int(SnapshotFrame.formatVersion)))
                add("uncompressedBytes", .integer(encoding.count))
                add("compressionRatio", .string(String(format: "%.2f", Double(encoding.count) / Double(max(1, bytes.count)))))
                add("declaredChanges", .integer(changeCount))
                try inspectSnapshot(encoding)
            } else if bytes.starts(with: Array("QDOC".utf8)) {
                add("kind", .string("snapshot"))
                add("formatVersion", .integer(Self.envelopeVersion(bytes)))
                try inspectSnapshot(bytes)
            } else if bytes.starts(with: Array("QCHG".utf8)) {
                add("kind", .string("changes"))
                add("formatVersion", .integer(Self.envelopeVersion(bytes)))
                let changes = try ChangeEncoding.decode(bytes)
                add("changes", .integer(changes.count))
                add("operations", .integer(changes.reduce(0) { $0 + $1.operations.count }))
                add("counters", .integer(changes.reduce(0) { $0 + $1.width }))
                add("replicas", .integer(Set(changes.map(\.replica)).count))
            } else {
                throw CLIError.failure("\(path) is not a Quire file: it starts with none of the known magic numbers (SQLite, QSNP, QDOC, QCHG)")
            }
        } catch let error as SnapshotFrame.Error {
            throw CLIError.failure("\(path) is damaged: \(error)")
        } catch let error as DecodingError {
            throw CLIError.failure("\(path) is damaged: \(error)")
        }
    }

    private mutating func add(_ name: String, _ value: JSONValue) { fields.append((name, value)) }

    /// The format version varint after a 4-byte magic (Specs/encoding.md, "Envelope").
    private static func envelopeVersion(_ bytes: [UInt8]) -> Int {
        var reader = ByteReader(Array(bytes.dropFirst(4)))
        return (try? reader.readVarint()).map(Int.init) ?? -1
    }

    private mutating func inspectSnapshot(_ encoding: [UInt8]) throws {
        let document = try Document(snapshot: encoding, replica: ReplicaID(0))
        add("changes", .integer(document.changeCount))
        add("operations", .integer(document.versionVector.operationCount))
        add("replicas", .integer(document.versionVector.replicas.count))
        add("tombstones", .integer(document.tombstoneCount))
    }

    /// A store file, opened read-only: the schema, the tables' counts, and
    /// every change and snapshot checked.
    private mutating func inspectStore(_ path: String) throws {
        add("kind", .string("store"))
        do {
            let database = try Database(path: path, readOnly: true)
            defer { database.close() }
            // A damaged page can fail the check itself: damage all the same.
            let intact: Bool
            do { intact = try database.integrityCheck() } catch let error as DatabaseError where error.fileProblem == .damaged { intact = false }
            guard intact else { throw CLIError.failure("\(path) is damaged: SQLite's integrity check failed; " + Self.readableNotes(path)) }
            if let kind = try database.read(StoreSchema.foreignKind) { throw CLIError.failure("\(path) is \(kind)") }
            try database.read { db in try inspectTables(db) }
        } catch let error as DatabaseError where error.extendedCode == Database.readOnlyRollback {
            // Not damage: SQLite's own recovery, which inspect, only reading, cannot run.
            throw CLIError.failure("\(path) was left in the middle of a write by a process that stopped; its journal \(path)-journal "
                + "undoes that write, which a read-only open cannot do: any other quire command on the store does it "
                + "(`\(ShellWords.command("quire", "--store", path, "status"))`), then inspect it again\nSQLite's report: \(error)")
        } catch let error as DatabaseError {
            throw CLIError.failure("\(path) is a damaged SQLite store: \(error)" + (error.fileProblem == .damaged ? "; " + Self.readableNotes(path) : ""))
        }
    }

    /// Which notes of a store whose file SQLite finds damaged can still be
    /// read, each loaded as any command would: what the user can save.
    private static func readableNotes(_ path: String) -> String {
        do {
            let store = try DocumentStore(path: path, readOnly: true)
            defer { try? store.close() }
            let ids = try store.documents(includeRemoved: true).map(\.id)
            let unreadable = ids.compactMap { id -> String? in
                do { return try store.read(id) { _ in nil } } catch { return "\(id): \(error)" }
            }
            guard !unreadable.isEmpty else {
                return "every one of its \(ids.count) notes can be read: `\(ShellWords.command("quire", "--store", "NEW", "merge", path))` copies them into a new store NEW"
            }
            return "of its \(ids.count) notes, \(unreadable.count) cannot be read (below); "
                + "`\(ShellWords.command("quire", "--store", "NEW", "merge", path))` copies the others into a new store NEW, and a backup or a peer's store holding those "
                + "notes can give them back:\n" + unreadable.map { "  " + $0 }.joined(separator: "\n")
        } catch {
            // What SQLite said is already in the error this ends.
            return "no note can be read from it; restore it from a backup, or sync a new store with a peer"
        }
    }

    private mutating func inspectTables(_ db: DatabaseConnection) throws {
        func count(_ sql: String) throws -> Int64 { try db.query(sql: sql)[0].int64(0) }
        // What the file would give back, which a user wondering at its size asks.
        add("freeBytes", .integer(try FreeSpace(of: db).freeBytes))
        let schemaVersion = try count("PRAGMA user_version")
        add("schemaVersion", .integer(schemaVersion))
        add("replica", try ReplicaIdentity.recorded(db).map { .string($0.description) } ?? .null)
        add("documents", .integer(try count("SELECT count(*) FROM documents")))
        var operations = 0
        var changeCount = 0
        var replicas = Set<ReplicaID>()
        let changesWithIDs = schemaVersion < StoreSchema.versionNumberingDocuments ? "SELECT seq, document_id, \(ChangeLog.dataBytes) FROM changes"
            : "SELECT c.seq, d.id, \(ChangeLog.dataBytes) FROM changes c JOIN documents d ON d.number = c.document"
        for row in try db.query(sql: changesWithIDs + " ORDER BY seq") {
            do {
                for change in try ChangeEncoding.decode(StoredBundle.bundle(row.blob(2))) {
                    changeCount += 1
                    operations += change.operations.count
                    replicas.insert(change.replica)
                }
            } catch let error as DecodingError {
                damage.append("change \(try row.int64(0)) of document \(try row.text(1)): \(error)")
            }
        }
        add("changes", .integer(changeCount))
        add("operations", .integer(operations))
        add("replicas", .integer(replicas.count))
        var tombstones = 0
        var snapshotBytes = 0
        let snapshots = try db.query(sql: "SELECT id, document_id, \(SnapshotStore.frameBytes) FROM snapshots ORDER BY document_id, id DESC")
        var newestSeen = Set<String>()
        for row in snapshots {
            let frame = try row.blob(2)
            snapshotBytes += frame.count
            do {
                let document = try Document(snapshot: SnapshotFrame.open(frame).encoding, replica: ReplicaID(0))
                // Tombstones as of each document's newest snapshot.
                if newestSeen.insert(try row.text(1)).inserted { tombstones += document.tombstoneCount }
            } catch {
                damage.append("snapshot \(try row.int64(0)) of document \(try row.text(1)): \(error)")
            }
        }
        add("snapshots", .integer(snapshots.count))
        add("snapshotBytes", .integer(snapshotBytes))
        add("snapshotTombstones", .integer(tombstones))
        add("parkedChanges", .integer(try count("SELECT count(*) FROM parked_changes")))
        // A parked change that no longer decodes is left out of every load (with a warning): damage too.
        for row in try db.query(sql: "SELECT DISTINCT document_id FROM parked_changes ORDER BY document_id") {
            let document = try row.text(0)
            damage += try ParkedChanges.all(document: document, db).damaged.map { "\($0) of document \(document)" }
        }
    }
}
