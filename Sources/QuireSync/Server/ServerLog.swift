import Foundation
import Quire
import Synchronization

/// The sync server's store: every change it accepted, once, numbered by
/// `seq` in commit order without gaps; the changes waiting for their
/// dependencies; and which token owns each replica id.
///
/// A row holds a run of changes (`ChangeLog.runs`): a push of a client's
/// own edits is one row, which a catch-up sends on as the bundle it was.
/// A large row, or parked change, is stored as a zstd frame of its bundle
/// (`StoredBundle`), as a client's store keeps its own.
///
/// Causality is checked with version vectors (a change is logged once its
/// replica's previous change and its parents are logged). Before it is
/// logged, a change is applied to its document, rebuilt from the log
/// (`ServerDocuments`): one that breaks the rules of `Specs/crdt.md` is
/// refused, as every client would refuse it.
///
///     let log = try ServerLog(path: "server.db")
///     let versions = try log.push([("groceries", changes)], by: access, limits: .init())
///     let page = try log.page(after: 0, access: access, known: [:], maxBytes: 1 << 20)
public final class ServerLog: Sendable {
    /// The server store's tables (`Specs/sync.md`, "Server store").
    static let migrator: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        migrator.register(version: 1) { db in
            try db.executeScript("""
                CREATE TABLE server(
                    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                    log_id INTEGER NOT NULL
                );
                CREATE TABLE log(
                    seq INTEGER PRIMARY KEY,
                    document_id TEXT NOT NULL,
                    replica INTEGER NOT NULL,
                    first_counter INTEGER NOT NULL,
                    last_counter INTEGER NOT NULL,
                    last_lamport INTEGER NOT NULL,
                    data BLOB NOT NULL,
                    UNIQUE (document_id, replica, first_counter)
                );
                CREATE INDEX log_replica ON log(document_id, replica, last_counter);
                CREATE TABLE parked(
                    document_id TEXT NOT NULL,
                    replica INTEGER NOT NULL,
                    first_counter INTEGER NOT NULL,
                    data BLOB NOT NULL,
                    PRIMARY KEY (document_id, replica, first_counter)
                ) WITHOUT ROWID;
                CREATE TABLE replica_owners(
                    replica INTEGER PRIMARY KEY,
                    token TEXT NOT NULL
                );
                """)
        }
        // Version 2: a `log` or `parked` row may hold a zstd frame of its
        // bundle (`StoredBundle`). Nothing is rewritten: the number makes
        // an older server refuse the file rather than send frames as bundles.
        migrator.register(version: 2) { _ in }
        return migrator
    }()

    /// Bounds on what one push may do.
    public struct Limits: Sendable {
        /// Changes in one request; more get 413.
        public var maxChangesPerRequest: Int
        /// Changes of one document waiting for their dependencies; more get 413.
        public var maxParkedPerDocument: Int
        /// How far a change's Lamport value may lie beyond the highest
        /// before it, the server's (its parked changes counted) or an earlier change's of the push
        /// (`LamportLeadCheck`); further gets 400. Someone's clock pushed near the top
        /// of 64 bits would make every later write lose or overflow.
        public var maxLamportLead: UInt64

        public init(maxChangesPerRequest: Int = 100_000, maxParkedPerDocument: Int = 10_000, maxLamportLead: UInt64 = DocumentStore.maxLamportLead) {
            self.maxChangesPerRequest = maxChangesPerRequest
            self.maxParkedPerDocument = maxParkedPerDocument
            self.maxLamportLead = maxLamportLead
        }

        /// The refusal of a request of `total` changes, over `maxChangesPerRequest`; nil within it.
        func refusal(ofChanges total: Int) -> SyncFailure? {
            total > maxChangesPerRequest ? SyncFailure(status: 413, "\(total) changes in one request, above the limit of \(maxChangesPerRequest)") : nil
        }
    }

    /// A random number made with the store: it tells a cursor into this
    /// log from one into a log that was replaced.
    public let logID: UInt64
    /// The file, for the operator's messages about its damage.
    private let path: String
    private let database: Database
    /// What the tables say, kept in memory; changed only after a commit.
    private let state: Mutex<State>
    /// Pushes waiting for the next transaction (group commit).
    private let queue = PushQueue()
    /// The documents the last pushes wrote, for checking the next ones.
    /// Used only by the writing thread, under `queue`'s turn.
    private let documents: Mutex<ServerDocuments>

    private struct State {
        var lastSeq: UInt64
        /// The highest Lamport value of the logged changes and the parked
        /// ones, which a push's changes are measured from (`LamportLeadCheck`).
        var maxLamport: UInt64
        /// Of every document the log holds, read when it opens: a request
        /// may name any number of documents, and looking each up in the
        /// file let a client keep the server busy with ids it does not hold.
        var versions: [DocumentID: VersionVector]
    }

    /// `PATH-lock`, held exclusive while the log is open: `state` and
    /// `documents` assume no other process writes the file.
    private let ownership: LockFile?

    /// Why a server store cannot be opened.
    public enum OpenError: Error, Equatable, DescribedError {
        /// Another process (a second `quire serve`) has it open.
        case inUse(path: String)
        /// A SQLite file holding other tables than a log's: a notes store
        /// (`DocumentStore`'s) or another program's database, left as it was.
        case notAServerLog(path: String, kind: String)

        public var description: String {
            switch self {
            case .inUse(let path): "\(path) is in use by another server process (it holds \(path)-lock)"
            case let .notAServerLog(path, kind): "\(path) is \(kind); the server keeps a log of its own: give the path of another file"
            }
        }
    }

    /// What the database is when it holds tables but no log, for an error
    /// naming the file: migrating it would add the log's tables to it, and
    /// a notes store's schema version would pass for a newer log's. Nil for
    /// a log, or an empty file.
    static func foreignKind(_ db: DatabaseConnection) throws -> String? {
        let tables = try Set(db.query(sql: "SELECT name FROM sqlite_master WHERE type = 'table'").map { try $0.text(0) })
        guard !tables.isEmpty, !tables.isSuperset(of: ["server", "log", "parked"]) else { return nil }
        return try StoreSchema.holdsStore(db) ? "a notes store (a DocumentStore's file), not a sync server's log"
            : "a SQLite database but not a sync server's log"
    }

    /// Opens (or creates) the server store at `path`; ":memory:" for tests.
    ///
    /// - Parameter cachedDocuments: how many documents stay in memory
    ///   between pushes for checking them; one not held is rebuilt from the
    ///   log when a push writes it.
    ///
    /// - Throws: `OpenError.notAServerLog` for a SQLite file holding other
    ///   tables (a notes store, another program's database), which is left
    ///   as it was; `OpenError.inUse` when another process has it open.
    public init(path: String, cachedDocuments: Int = 32) throws {
        // Looked at without writing, as a store's open looks (`DocumentStore.init`).
        if path != ":memory:", let kind = Database.peek(atPath: path, Self.foreignKind) ?? nil {
            throw OpenError.notAServerLog(path: path, kind: kind)
        }
        self.path = path
        documents = Mutex(ServerDocuments(capacity: cachedDocuments))
        database = path == ":memory:" ? try Database.inMemory() : try Database(path: path)
        // Taken once the file exists, so that a symbolic link to a new file
        // finds it, and the lock is the file's whatever path reaches it. A
        // directory it cannot write a lock file in still serves.
        ownership = path == ":memory:" ? nil : LockFile(beside: path)
        if let ownership, !ownership.lock(exclusive: true, within: 0) { throw OpenError.inUse(path: path) }
        try Self.migrator.migrate(database)
        logID = try database.write { db in
            if let row = try db.query(sql: "SELECT log_id FROM server").first { return try row.unsigned(0) }
            let id = UInt64.random(in: 1...UInt64.max)
            try db.execute(sql: "INSERT INTO server(singleton, log_id) VALUES (1, ?)", arguments: [.unsigned(id)])
            return id
        }
        state = Mutex(try Self.readState(database, path: path))
    }

    /// The log's newest `seq`, highest Lamport value (its parked changes
    /// counted) and versions. Around a damaged page (SQLite's
    /// `SQLITE_CORRUPT`), from the rows `rowKeys` still lists, the operator
    /// told: a row listed whose own page is damaged counts in its document's
    /// version, so that a client lacking it is refused that document (422)
    /// rather than sent nothing of it as if the server held none; its
    /// Lamport value, unread, is left out.
    private static func readState(_ database: Database, path: String) throws -> State {
        var state: State
        do {
            let row = try database.query(sql: "SELECT coalesce(max(seq), 0), coalesce(max(last_lamport), 0) FROM log")[0]
            var versions: [DocumentID: VersionVector] = [:]
            for held in try database.query(sql: "SELECT document_id, replica, max(last_counter) FROM log GROUP BY document_id, replica") {
                versions[try documentID(held.text(0)), default: VersionVector()][try held.replica(1)] = try held.unsigned(2)
            }
            state = State(lastSeq: try row.unsigned(0), maxLamport: try row.unsigned(1), versions: versions)
        } catch where error.isDamagedPage {
            OperatorLog.shared.write("the server store \(path) is damaged: \(error); it serves what it can still read: \(recovery(path))")
            state = State(lastSeq: 0, maxLamport: 0, versions: [:])
            for key in try rowKeys(database, after: 0, through: UInt64(Int64.max), limit: -1) {
                let seq = try key.unsigned(0)
                state.lastSeq = max(state.lastSeq, seq)
                let id = try documentID(key.text(2)), replica = try key.replica(3)
                state.versions[id, default: VersionVector()][replica] = max(state.versions[id]?[replica] ?? 0, try key.unsigned(5))
                do {
                    let lamport = try database.query(sql: "SELECT last_lamport FROM log WHERE seq = ?", arguments: [.unsigned(seq)])
                    state.maxLamport = max(state.maxLamport, try lamport.first?.unsigned(0) ?? 0)
                } catch where error.isDamagedPage {}
            }
        }
        state.maxLamport = max(state.maxLamport, try maxParkedLamport(database, path: path))
        return state
    }

    /// The highest Lamport value of the parked changes: a change left
    /// waiting counts for the pushes after it as within its own push, after
    /// a restart too. A parked row that does not decode is left out (a push
    /// to its document is refused as damaged). So are all of them when a
    /// page of `parked` is damaged, the operator told: the log is served
    /// as it can be read, and a push to a document whose parked rows that page held is
    /// refused naming it (422), as for a damaged page of the log.
    private static func maxParkedLamport(_ database: Database, path: String) throws -> UInt64 {
        do {
            var highest: UInt64 = 0
            for row in try database.query(sql: "SELECT data FROM parked") {
                guard let changes = try? ChangeEncoding.decode(StoredBundle.bundle(row.blob(0))) else { continue }
                highest = changes.reduce(highest) { max($0, $1.lastLamport) }
            }
            return highest
        } catch where error.isDamagedPage {
            OperatorLog.shared.write("the server store \(path) is damaged: its changes waiting for their dependencies (table parked) "
                + "cannot all be read: \(error); their Lamport values are left out, and the rest served: \(recovery(path))")
            return 0
        }
    }

    /// What the operator of a damaged server store can do.
    static func recovery(_ path: String) -> String {
        "the documents whose rows cannot be read are refused to clients (422, naming each), the others served; to recover them, "
            + "stop the server, keep \(path) aside and start the server on a new file: each client's next sync pushes what it holds again"
    }

    /// The id of a log row's `document_id`.
    private static func documentID(_ text: String) throws -> DocumentID {
        guard let id = DocumentID(rawValue: text) else { throw StoreError.unrecoverableDocument(text, reason: "invalid id in the server log") }
        return id
    }

    /// The columns `page` reads of each `log` row (`seq` and `data` first, as `readLogRow` takes them).
    private static let pageColumns = "seq, data, document_id, replica, first_counter, last_counter"

    /// The `log` rows after `seq` through `end`, in order, at most `limit`
    /// (-1: all), as `pageColumns` without `data` and `first_counter` (NULL):
    /// read from the index `log_replica` alone, so that a damaged page of
    /// the table does not hide them, or from the table when the index is
    /// the damaged one. Each query in a transaction of its own: SQLite
    /// fails the commit of one in which it met the damage.
    private static func rowKeys(_ db: Database, after seq: UInt64, through end: UInt64, limit: Int) throws -> [Row] {
        let range = "WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?"
        let arguments: [DatabaseValue] = [.unsigned(seq), .unsigned(end), .integer(limit)]
        let columns = "seq, NULL, document_id, replica, NULL, last_counter FROM log"
        do { return try db.query(sql: "SELECT \(columns) INDEXED BY log_replica \(range)", arguments: arguments) } catch where error.isDamagedPage {
            return try db.query(sql: "SELECT \(columns) NOT INDEXED \(range)", arguments: arguments)
        }
    }

    /// The `seq` of the newest change, 0 for an empty log.
    public var lastSeq: UInt64 { state.withLock { $0.lastSeq } }

    /// The operations the server holds of a document (from memory: see `State.versions`).
    public func version(_ id: DocumentID) -> VersionVector {
        state.withLock { $0.versions[id] } ?? VersionVector()
    }

    /// How many documents' versions are held in memory.
    var cachedVersionCount: Int { state.withLock { $0.versions.count } }

    // MARK: Pushing

    /// Stores the changes of every document: each one is logged with the
    /// next `seq` once its dependencies are logged, parked until then,
    /// ignored if already logged. Either all of them are taken or, on any
    /// refusal, none. Returns once they are committed.
    ///
    /// Pushes that arrive while one is being written wait and are then
    /// written together in one transaction, each in its own savepoint: they
    /// share one disk sync, and a refused one is rolled back alone.
    ///
    /// Refusals: 403 when `access` may not write at all
    /// (`SyncFailure.readOnlyToken`), may not write a document, or a replica
    /// id belongs to another token; 409 when a change has the id of a stored
    /// change but other content; 400 for a Lamport value too far ahead or a
    /// change that does not apply to its document; 413 past `limits`.
    ///
    /// A parked change that does not apply once ready is dropped from the
    /// parked changes, without refusing the push that made it ready: the
    /// client that wrote it is refused when it pushes it again.
    ///
    /// - Returns: each pushed document's version after the push.
    public func push(_ pushes: [(id: DocumentID, changes: [Change])], by access: Access, limits: Limits) throws(SyncFailure) -> [DocumentID: VersionVector] {
        try pushCountingNew(pushes, by: access, limits: limits).versions
    }

    /// `push(_:by:limits:)`, also saying how many of the pushed changes the
    /// server did not hold before (the `Quire-New-Changes` answer header).
    public func pushCountingNew(_ pushes: [(id: DocumentID, changes: [Change])], by access: Access, limits: Limits) throws(SyncFailure) -> PushOutcome {
        let total = pushes.reduce(0) { $0 + $1.changes.count }
        guard total > 0 else { return PushOutcome(versions: [:], newChanges: 0) }
        if let refusal = limits.refusal(ofChanges: total) { throw refusal }
        for push in pushes where !access.mayWrite(push.id) {
            throw access.canWrite ? .outsideTokensDocuments(push.id) : .readOnlyToken
        }
        let request = PushRequest(pushes: pushes, access: access, limits: limits)
        let condition = queue.condition
        condition.lock()
        defer { condition.unlock() }
        queue.nextTicket += 1
        let ticket = queue.nextTicket
        queue.waiting.append((ticket, request))
        while true {
            if let outcome = queue.outcomes.removeValue(forKey: ticket) { return try outcome.get() }
            if queue.isWriting { condition.wait(); continue }
            // No one is writing: this thread writes every waiting push.
            queue.isWriting = true
            let group = queue.waiting
            queue.waiting = []
            condition.unlock()
            let outcomes = write(group.map(\.request))
            condition.lock()
            for (entry, outcome) in zip(group, outcomes) { queue.outcomes[entry.ticket] = outcome }
            queue.isWriting = false
            condition.broadcast()
        }
    }

    /// What a push stored.
    public struct PushOutcome: Sendable {
        /// Each pushed document's version after the push.
        public var versions: [DocumentID: VersionVector]
        /// The pushed changes the server held neither in its log nor parked
        /// before: what the push brought it (a change relayed to it by
        /// another store first is not counted; `Specs/sync.md`, "Endpoint").
        public var newChanges: Int
    }

    /// Writes pushes in one transaction, each in a savepoint; returns how
    /// each ended. Only one thread writes at a time, so each group numbers
    /// its changes from the `lastSeq` the one before it left.
    private func write(_ requests: [PushRequest]) -> [Result<PushOutcome, SyncFailure>] {
        let start = state.withLock { ($0.lastSeq, $0.maxLamport) }
        var versions: [DocumentID: VersionVector] = [:]
        var outcomes: [Result<PushOutcome, SyncFailure>] = []
        do throws(SyncFailure) {
            for request in requests {
                for push in request.pushes where versions[push.id] == nil { versions[push.id] = version(push.id) }
            }
            // What the pushes stored so far leave: where the next one starts.
            // The documents are taken out of the cache, so that applying
            // changes copies nothing; one that a refused push or a failed
            // transaction may have changed is not put back, and is rebuilt
            // from the log when next written.
            var written = (lastSeq: start.0, maxLamport: start.1, versions: versions,
                           documents: documents.withLock { $0.take(versions.keys) })
            try failing {
                try database.write { db in
                    for request in requests {
                        let pushed = Set(request.pushes.map(\.id))
                        var batch = PushBatch(lastSeq: written.lastSeq, versions: written.versions, documents: written.documents,
                                              lamportLead: LamportLeadCheck(highest: written.maxLamport, lead: request.limits.maxLamportLead),
                                              access: request.access, limits: request.limits)
                        written.documents = [:]  // the batch's copy is the only one: applying changes copies nothing
                        try db.execute(sql: "SAVEPOINT push")
                        do {
                            for push in request.pushes {
                                // A damaged page costs the documents whose rows (or index entries) it holds.
                                do { try batch.store(push.changes, of: push.id, db) } catch where error.isDamagedPage {
                                    throw damagedPage(push.id, "a page of its rows or of their index", error)
                                }
                            }
                            try db.execute(sql: "RELEASE push")
                            written = (batch.lastSeq, batch.lamportLead.highest, batch.versions, batch.documents)
                            outcomes.append(.success(PushOutcome(versions: batch.versions.filter { pushed.contains($0.key) },
                                                                 newChanges: batch.newChanges)))
                        } catch let refusal as SyncFailure {
                            try db.execute(sql: "ROLLBACK TO push")
                            try db.execute(sql: "RELEASE push")
                            written.documents = batch.documents.filter { !pushed.contains($0.key) }
                            outcomes.append(.failure(refusal))
                        }
                    }
                }
            }
            state.withLock { state in
                state.lastSeq = written.lastSeq
                state.maxLamport = written.maxLamport
                state.versions.merge(written.versions.filter { !$0.value.isEmpty }) { $1 }
            }
            documents.withLock { $0.restore(written.documents) }
            return outcomes
        } catch {
            // The transaction failed: nothing of any push was stored. A push
            // refused before it stays refused (its savepoint was rolled back
            // anyway): after a damaged page's refusal SQLite fails the commit
            // too, and the client must hear which document to leave out.
            return requests.indices.map { index in
                if index < outcomes.count, case .failure = outcomes[index] { return outcomes[index] }
                return .failure(error)
            }
        }
    }

    /// One push waiting to be written.
    private struct PushRequest {
        let pushes: [(id: DocumentID, changes: [Change])]
        let access: Access
        let limits: Limits
    }

    /// The pushes waiting for the next transaction and how the written ones
    /// ended, guarded by `condition`.
    private final class PushQueue: @unchecked Sendable {
        let condition = NSCondition()
        var waiting: [(ticket: Int, request: PushRequest)] = []
        var outcomes: [Int: Result<PushOutcome, SyncFailure>] = [:]
        var isWriting = false
        var nextTicket = 0
    }

    /// The work of one push, inside its transaction.
    private struct PushBatch {
        var lastSeq: UInt64
        var versions: [DocumentID: VersionVector]
        /// The pushed documents, with the changes accepted so far applied.
        var documents: [DocumentID: Document]
        /// Each new change is measured from the highest Lamport value before
        /// it: the server's (its parked changes counted), then raised by each
        /// change this push logs or parks, as a store measures a batch. Its
        /// `highest` is what the next push starts from.
        var lamportLead: LamportLeadCheck
        let access: Access
        let limits: Limits
        /// Replica owners already checked in this batch.
        var owned: Set<ReplicaID> = []
        /// The pushed changes logged or parked that were neither before.
        var newChanges = 0

        mutating func store(_ changes: [Change], of id: DocumentID, _ db: DatabaseConnection) throws {
            var parkedAny = false
            // Accepted by this push, not written yet: written at the end, as runs.
            var accepted: [Change] = []
            for change in changes {
                let held = versions[id, default: VersionVector()][change.replica]
                if change.lastID.counter <= held {
                    // It may repeat a change of this very push: write those first.
                    try log(accepted, of: id, db)
                    accepted = []
                    // Not its owner's check: a held change writes nothing, so
                    // a client relaying what it got from a peer may repeat it.
                    try checkDuplicate(change, of: id, db)
                    continue
                }
                try checkOwner(of: change.replica, db)
                guard lamportLead.admits(lastLamport: change.lastLamport) else {
                    throw SyncFailure(status: 400, "change \(change.id) has Lamport value \(change.lastLamport), "
                        + "more than \(limits.maxLamportLead) beyond the highest before it, \(lamportLead.highest)")
                }
                if change.id.counter <= held {
                    throw SyncFailure(status: 409, "change \(change.id) overlaps changes the server holds: its replica id was used twice")
                } else if isReady(change, id) {
                    try accept(change, of: id, db)
                    accepted.append(change)
                    newChanges += 1
                } else {
                    // A row comes back only when the change was not parked already.
                    let inserted = try db.query(
                        sql: "INSERT OR IGNORE INTO parked(document_id, replica, first_counter, data) VALUES (?, ?, ?, ?) RETURNING 1",
                        arguments: [.text(id.rawValue), .replica(change.replica), .unsigned(change.id.counter),
                                    .blob(StoredBundle.stored(ChangeEncoding.encode([change])))])
                    newChanges += inserted.count
                    parkedAny = true
                }
            }
            accepted += try unparkReady(of: id, db, checkLimit: parkedAny)
            try log(accepted, of: id, db)
        }

        private func isReady(_ change: Change, _ id: DocumentID) -> Bool {
            let version = versions[id, default: VersionVector()]
            return change.id.counter == version[change.replica] + 1 && change.parents.allSatisfy(version.contains)
        }

        /// Applies a ready change to its document and counts it as held;
        /// `log` writes it. Throws a refusal (400 for a broken rule), with
        /// nothing counted, if it does not apply.
        private mutating func accept(_ change: Change, of id: DocumentID, _ db: DatabaseConnection) throws {
            var document = try documents.removeValue(forKey: id) ?? ServerDocuments.load(id, db)
            defer { documents[id] = document }
            do {
                guard try document.apply(change) == 1 else {
                    throw SyncFailure(status: 500, "the server's copy of document \(id) did not take change \(change.id), which its log found ready")
                }
            } catch let error as DocumentError {
                throw SyncFailure(refusing: error, in: id)
            }
            versions[id, default: VersionVector()][change.replica] = change.lastID.counter
            // A change unparked now was admitted when parked, in this process or
            // before a restart, when the log's open may not have read it (a damaged page).
            lamportLead.count(lastLamport: change.lastLamport)
        }

        /// Writes accepted changes, in order, a row (and a `seq`) per run:
        /// a client's push of its own edits is so one row, sent on to the
        /// others as the bundle it was.
        private mutating func log(_ changes: [Change], of id: DocumentID, _ db: DatabaseConnection) throws {
            for run in ChangeLog.runs(of: changes) {
                lastSeq += 1
                try db.execute(
                    sql: """
                        INSERT INTO log(seq, document_id, replica, first_counter, last_counter, last_lamport, data)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [.unsigned(lastSeq), .text(id.rawValue), .replica(run.first!.replica), .unsigned(run.first!.id.counter),
                                .unsigned(run.last!.lastID.counter), .unsigned(run.last!.lastLamport),
                                .blob(StoredBundle.stored(ChangeEncoding.encode(run)))])
            }
        }

        /// Accepts the parked changes that have become ready, in turn, and
        /// returns them. One that does not apply is dropped: the changes
        /// parked behind it stay parked.
        private mutating func unparkReady(of id: DocumentID, _ db: DatabaseConnection, checkLimit: Bool) throws -> [Change] {
            let rows = try db.query(sql: "SELECT replica, first_counter, data FROM parked WHERE document_id = ?", arguments: [.text(id.rawValue)])
            guard !rows.isEmpty else { return [] }
            var waiting = try rows.map { row in
                do {
                    return try ChangeEncoding.decode(StoredBundle.bundle(row.blob(2)))[0]
                } catch let error as DecodingError {
                    throw ServerLog.damaged(id, "its parked change \(try row.unsigned(1))@\(try row.replica(0)) does not decode", error)
                }
            }
            var unparked: [Change] = []
            while let index = waiting.firstIndex(where: { isReady($0, id) }) {
                let change = waiting.remove(at: index)
                do {
                    try accept(change, of: id, db)
                    unparked.append(change)
                } catch let refusal as SyncFailure where refusal.status == 400 {}
                try unpark(change, of: id, db)
            }
            // One whose id a logged change took (a client that used its replica
            // id twice) is never ready: dropped, or it would count against the
            // limit for good, as the document's own copy drops it.
            let held = versions[id, default: VersionVector()]
            let taken = waiting.partition { $0.id.counter <= held[$0.replica] }
            for change in waiting[taken...] { try unpark(change, of: id, db) }
            waiting.removeSubrange(taken...)
            guard !checkLimit || waiting.count <= limits.maxParkedPerDocument else {
                throw SyncFailure(status: 413, "\(waiting.count) changes of document \(id) would wait for missing dependencies, "
                    + "above the limit of \(limits.maxParkedPerDocument): send the changes they depend on first")
            }
            return unparked
        }

        private func unpark(_ change: Change, of id: DocumentID, _ db: DatabaseConnection) throws {
            try db.execute(sql: "DELETE FROM parked WHERE document_id = ? AND replica = ? AND first_counter = ?",
                           arguments: [.text(id.rawValue), .replica(change.replica), .unsigned(change.id.counter)])
        }

        private mutating func checkOwner(of replica: ReplicaID, _ db: DatabaseConnection) throws {
            guard !owned.contains(replica) else { return }
            let rows = try db.query(sql: "SELECT token FROM replica_owners WHERE replica = ?", arguments: [.replica(replica)])
            if let owner = rows.first {
                guard try owner.text(0) == access.token else {
                    throw SyncFailure(status: 403, "replica \(replica) belongs to another token")
                }
            } else if access.replica == nil || access.replica == replica {
                try db.execute(sql: "INSERT INTO replica_owners(replica, token) VALUES (?, ?)",
                               arguments: [.replica(replica), .text(access.token)])
            }
            owned.insert(replica)
        }

        /// A change the server already holds must be that same change.
        private func checkDuplicate(_ change: Change, of id: DocumentID, _ db: DatabaseConnection) throws {
            let rows = try db.query(
                sql: "SELECT seq, data FROM log WHERE document_id = ? AND replica = ? AND first_counter <= ? AND last_counter >= ?",
                arguments: [.text(id.rawValue), .replica(change.replica), .unsigned(change.id.counter), .unsigned(change.id.counter)])
            let stored = try rows.first.flatMap { row in
                try ServerLog.readLogRow(row, of: id) { try ChangeEncoding.decode($0) }.first { $0.id == change.id }
            }
            guard stored == change else {
                throw SyncFailure(status: 409, "change \(change.id) has the id of a change the server holds but other content: "
                    + "its replica id was used twice")
            }
        }
    }

    /// The refusal of a request that needs document `id`, of which a `log`
    /// or `parked` row (`damagedRow`, as the operator finds it) does not
    /// decode (`error`): the client leaves it out and syncs the others. The
    /// operator is told on standard error (a line that repeats, every
    /// client's sync, is counted: `OperatorLog`).
    static func damaged(_ id: DocumentID, _ damagedRow: String, _ error: any Error) -> SyncFailure {
        OperatorLog.shared.write("document \(id) is damaged in the server's log and was left out of a client's sync, "
            + "nothing of it sent or taken: \(damagedRow): \(error)")
        return .documentDamaged(id.rawValue)
    }

    /// What `read` makes of the bundle a `log` row holds (`row` selects its
    /// `seq` and `data` first, as `ChangeLog.readBundle` reads them); a row
    /// that does not decompress or decode refuses the request as its
    /// document's damage (`damaged`).
    static func readLogRow<T>(_ row: Row, of id: DocumentID, _ read: ([UInt8]) throws -> T) throws -> T {
        do {
            return try ChangeLog.readBundle(ofRow: row, document: id.rawValue, read)
        } catch let error as StoreError {
            throw damaged(id, "its row \(try row.unsigned(0)) does not decode", error)
        }
    }

    /// `damaged` for a document's row that SQLite cannot read: a damaged page of the file.
    private func damagedPage(_ id: DocumentID, _ what: String, _ error: any Error) -> SyncFailure {
        Self.damaged(id, "\(what) cannot be read from \(path) (\(Self.recovery(path)))", error)
    }

    /// Runs `body`, turning any error that is not a `SyncFailure` into a
    /// 500 (a broken disk is the server's fault, not the client's); a
    /// damaged file (a page every request needs: the schema) is also told
    /// to the operator, with what to do.
    func failing<T>(_ body: () throws -> T) throws(SyncFailure) -> T {
        do { return try body() } catch let failure as SyncFailure { throw failure } catch {
            if error.isDamagedPage { OperatorLog.shared.write("the server store \(path) is damaged: \(error); \(Self.recovery(path))") }
            throw SyncFailure(status: 500, "the server store failed: \(error)")
        }
    }

    // MARK: Pulling

    /// One page of the log after `seq`: the changes of documents in `range`
    /// that `access` may read and `known` (the client's versions) lacks, in
    /// `seq` order, grouped by document, at most about `maxBytes` of
    /// bundles and `maxDocuments` documents (it holds one at least). The
    /// bundles are those pushed, as they came, but for those of a version
    /// above `bundleVersion` (a client that reads no newer) and the rest of
    /// a run whose start the client holds: their changes are written again
    /// in `bundleVersion`.
    public func page(after seq: UInt64, access: Access, known: [DocumentID: VersionVector], in range: DocumentRange = .all,
                     maxBytes: Int, maxDocuments: Int = .max, bundleVersion: UInt64 = ChangeEncoding.version) throws -> LogPage {
        // Only the rows of finished pushes: a push commits, then updates
        // `state`. A row in between would make the page's cursor lie past
        // `lastSeq` (the next request would be answered `cursor reset`) and
        // its document's changes lie beyond `version(_:)`.
        let end = lastSeq
        var page = LogPage(lastScannedSeq: seq)
        var index: [DocumentID: Int] = [:]
        var bytes = 0
        let batchSize = 5_000
        while true {
            // Past a damaged page, each row is listed by `rowKeys` and read
            // alone if sent: only the documents whose rows cannot be read are refused.
            var pageIsDamaged = false
            let rows: [Row]
            do {
                rows = try database.query(sql: "SELECT \(Self.pageColumns) FROM log WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                                          arguments: [.unsigned(page.lastScannedSeq), .unsigned(end), .integer(batchSize)])
            } catch where error.isDamagedPage {
                pageIsDamaged = true
                rows = try Self.rowKeys(database, after: page.lastScannedSeq, through: end, limit: batchSize)
            }
            for listed in rows {
                let rowSeq = try listed.unsigned(0)
                let id = try Self.documentID(listed.text(2))
                let seen = known[id, default: VersionVector()][try listed.replica(3)]
                if access.mayRead(id), range.contains(id), try listed.unsigned(5) > seen {
                    let row = pageIsDamaged ? try readRow(rowSeq, of: id) : listed
                    // A row the disk damaged would fail the client's whole page, sync
                    // after sync: the request is refused naming its document instead.
                    // The bundle, not a frame of it: the wire's bytes are those of an uncompressed row.
                    let data = try Self.readLogRow(row, of: id) { bundle in
                        if try row.unsigned(4) <= seen {
                            // The client holds the start of the run: send only the rest.
                            return ChangeEncoding.encode(try ChangeEncoding.decode(bundle).filter { $0.lastID.counter > seen },
                                                         version: bundleVersion)
                        }
                        try ChangeEncoding.checkFrame(of: bundle)
                        return try ChangeEncoding.readable(bundle, upTo: bundleVersion)
                    }
                    if bytes > 0 && (bytes + data.count > maxBytes || index[id] == nil && page.documents.count >= maxDocuments) {
                        page.more = true
                        return page
                    }
                    bytes += data.count
                    if let position = index[id] { page.documents[position].bundles.append(data) } else {
                        index[id] = page.documents.count
                        page.documents.append((id, [data]))
                    }
                }
                page.lastScannedSeq = rowSeq
            }
            if rows.count < batchSize { return page }
        }
    }

    /// The `log` row `seq` (of document `id`), as `pageColumns`; one that
    /// SQLite cannot read refuses the request as its document's damage.
    private func readRow(_ seq: UInt64, of id: DocumentID) throws -> Row {
        do {
            return try database.query(sql: "SELECT \(Self.pageColumns) FROM log WHERE seq = ?", arguments: [.unsigned(seq)])[0]
        } catch where error.isDamagedPage {
            throw damagedPage(id, "its row \(seq)", error)
        }
    }
}

/// What `ServerLog.page` found.
public struct LogPage: Sendable {
    /// Every change up to here was sent or is known to the client.
    public var lastScannedSeq: UInt64
    public var documents: [(id: DocumentID, bundles: [[UInt8]])] = []
    /// True when the page stopped at its size limit before the log's end.
    public var more = false
}
