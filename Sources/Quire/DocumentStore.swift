@_exported import QuireCore
@_exported import QuireStore
import Foundation
import Synchronization

/// Many documents in one local SQLite file, the source of truth: an edit is
/// acknowledged (the call returns) only once it is committed to disk.
///
/// ```swift
/// let store = try DocumentStore(path: "notes.quire")
/// let id = try store.createDocument()
/// try store.edit(id) { tx in
///     try tx.put(.root, key: "title", .string("Groceries"))
/// }
/// let title = try store.read(id) { doc in try doc.get(.root, key: "title") }
/// ```
///
/// Safe to use from several threads, tasks and actors at once: the store,
/// `store.async`, `Document`, `DocumentEvent`, `DocumentID` and every
/// error it throws are `Sendable`; a `Transaction` is not, and lives only
/// in its `edit` closure. Calls on one document run one at a
/// time; edits of different documents made at the same time share one
/// SQLite commit (group commit), so they share the cost of its disk sync.
/// A closure passed to `read` or `edit` runs while the store is locked; a
/// call on the store that works on documents (`read`, `edit`, `apply`,
/// `create`, `snapshot`...) from inside it throws `StoreError.nestedCall`.
///
/// Errors: a call on a document throws `StoreError` for what the store
/// refuses (`noSuchDocument`, `documentRemoved`, `documentExists`...,
/// each naming the document), `DocumentError` for an edit the document
/// refuses, and any call a `DatabaseError` for what the file refuses:
/// `fileProblem` says which of damaged, read-only, disk full or busy (another
/// process held the file locked past `Database.busyTimeout`, 5 s, without
/// committing; the call saved nothing, and a later try will do), and
/// `isAfterClose` a call made after `close()`. A call that throws saved
/// nothing. Each error's `localizedDescription` is a sentence to show.
///
/// Its calls block the calling thread until done (an edit until its disk
/// sync). From the main actor or a task, make them through `async`, which
/// runs them on the threads kept for store calls:
///
/// ```swift
/// let title = try await store.async.read(id) { doc in try doc.get(.root, key: "title") }
/// ```
///
/// Several processes may open one file (a sync running while a note is
/// edited): a read first checks that the file holds nothing newer for its
/// document than the copy in memory, and reloads it if it does; a commit
/// checks the same in its transaction, and an edit or apply that missed
/// another process's write runs again on the reloaded document. Events for
/// what others commit come from `checkForOutsideCommits()` or
/// `watchOutsideCommits(every:)`.
/// `Specs/storage.md` states the schema, the formats and the durability
/// promise.
public final class DocumentStore: @unchecked Sendable {
    /// The id this store's local edits are made under: the file's
    /// (`ReplicaIdentity`). It changes when a store on the file drops its
    /// copy of a document (`discardCopy`), which would otherwise make its
    /// next changes to it under ids it gave dropped ones; every store on the
    /// file then edits under the new id, another process's from its next
    /// commit (`writeQueuedBatch`).
    public var replicaID: ReplicaID { currentReplica.withLock { $0 } }
    /// `replicaID`, readable from any thread, a `read` closure's too. Set
    /// only with the lock held (`adoptReplica`).
    let currentReplica: Mutex<ReplicaID>
    /// Every id this store has made changes under: `replicaID`, the ids
    /// `discardCopy` retired, and those of the file it was copied from
    /// (`ReplicaIdentity`). Changes under any of them are its own.
    public func ownReplicaIDs() throws -> Set<ReplicaID> {
        try database.read { db in try ReplicaIdentity.all(db) }
    }
    /// A snapshot is written after this many changes to a document.
    public let snapshotInterval: Int
    /// How far beyond the highest Lamport value before it (the document's,
    /// its waiting changes counted, or an earlier change's of its batch:
    /// `LamportLeadCheck`) a remote
    /// change's may lie; `apply` refuses one further ahead. A writer takes
    /// one value past what it has seen, so only a broken or hostile peer's
    /// change jumps far; taken, one near 2^62 would leave the document's
    /// later local edits no value to take (`Specs/crdt.md`).
    public static let maxLamportLead: UInt64 = 1 << 32

    let database: Database
    /// `PATH-lock`, which lets a raced call's last try run alone; nil in
    /// memory or read-only. Correctness never rests on it: a commit checks
    /// inside its SQLite transaction that no other process logged the
    /// document since it was read (`writeQueuedBatch`). The lock only
    /// guarantees progress. Every batch commit takes it shared; a call whose
    /// first tries were raced takes it exclusive for its last try, from
    /// reading the document to its commit, so no other process commits in
    /// between. A lock not granted within `writerLockTimeout` is done
    /// without (a stopped process may hold it).
    let writerLock: LockFile?
    /// How long to wait for `writerLock`: SQLite's busy timeout, in seconds.
    /// Tests that watch a commit wait for another process's lock set it
    /// longer before the store's first call, so that the wait cannot end
    /// while a loaded host keeps them from looking.
    var writerLockTimeout: TimeInterval = Double(Database.busyTimeout) / 1000
    /// The caller's `onWarning`; called through `warn(_:)`.
    let warningHandler: @Sendable (String) -> Void
    /// The streams of `events(of:)` and `allEvents()`.
    let observers = Observers()
    /// The thread of `watchOutsideCommits(every:)`, when one runs.
    let outsideWatch = OutsideCommitWatch()
    /// The threads the calls of `async` run on.
    let callThreads = CallThreads()

    /// Guards every `var` below. Threads wait on it for a busy document
    /// or for their commit to be written.
    let condition = NSCondition()
    /// Loaded documents that match the file, the `cachedDocuments` used
    /// most recently. A document being edited or committed is not here but
    /// in `busy`.
    var cache: DocumentCache
    /// Documents with an edit in progress or a commit not yet written:
    /// other calls on them wait, so nobody sees an unwritten change.
    var busy: Set<DocumentID> = []
    /// Commits waiting for the next SQLite transaction.
    var queue: [QueuedCommit] = []
    /// True while a thread writes a batch of commits (without the lock).
    var isWriting = false
    /// True while a call's last try holds `writerLock` exclusive: batches
    /// then go without taking it shared.
    var holdsWriterLock = false
    var nextTicket = 0
    /// How each written commit ended, by ticket, until its caller takes it.
    var outcomes: [Int: Result<Void, any Error>] = [:]
    /// This store's place in the log, for finding what others commit
    /// (`checkForOutsideCommits`).
    var outsideLogPlace = OutsidePlace(at: 0)
    /// Its place in `removal_marks`, for finding the removals and restores
    /// others make, which log no change.
    var outsideRemovalPlace = OutsidePlace(at: 0)
    /// Its place in `dropped_documents`, for finding the copies others
    /// dropped (`discardCopy`), which log no change either.
    var outsideDropPlace = OutsidePlace(at: 0)
    /// SQLite's `data_version` when others' commits were last looked for:
    /// while it stays the same, no other connection has committed.
    var outsideCheckedAt: Int64?

    /// A document as loaded, with what the store needs to know about it.
    struct LoadedDocument {
        var document: Document
        var isRemoved: Bool
        /// Changes logged since the newest snapshot (or since loading).
        var changesSinceSnapshot: Int
        /// The newest row of the document's log that `document` holds. A row
        /// after it was written by another process (or another store on the
        /// file), and the document must be reloaded before it is used.
        var loggedThrough: Int64 = 0
        /// How many rows of `parked_changes` the file held for the document
        /// when `document` was loaded or last committed. Another process
        /// parking one makes the copy stale: applying what it waits for
        /// must apply and log it too.
        var parkedRows: Int64 = 0
        /// SQLite's `data_version` when the file was last found to hold
        /// nothing newer for the document: while it stays the same, no
        /// other connection has written anything.
        var checkedAt: Int64?
    }

    /// Opens the store file at `path`, creating it if needed, and brings its
    /// schema up to date. A file copied from another store gets a new
    /// replica id here, before anything is written. Like every call, it
    /// blocks the calling thread: it may upgrade the schema or vacuum a file
    /// mostly free (`Specs/storage.md`, "Growth"); from the main actor, open
    /// with `open(path:)`, which runs it off it.
    ///
    /// With `readOnly`, the file is opened with SQLite's read-only flag:
    /// documents can be read, and every write fails with a `DatabaseError`
    /// (`SQLITE_READONLY`). The schema must be current. A file in a
    /// directory this process cannot write (an app's bundle, a read-only
    /// mount) opens so too, read as it is (`Specs/storage.md`).
    ///
    /// - Throws: `StoreError.notAStore` for a SQLite file that holds another
    ///   program's tables (or a sync server's log), which is left as it was;
    ///   `StoreError.unsupportedSchema` for a file a newer program wrote, or
    ///   (read-only) one whose schema is older.
    ///
    /// - Parameter onWarning: receives a message for each damaged snapshot
    ///   skipped, and each parked change left out, while loading; by
    ///   default, standard error. It runs while
    ///   the store is locked: a call on the store from it throws
    ///   `StoreError.nestedCall`, as from a `read` or `edit` closure.
    /// - Parameter snapshotInterval: a snapshot is written after this many
    ///   changes to a document; it must be positive (a precondition: 0
    ///   stops the program).
    /// - Parameter cachedDocuments: how many loaded documents stay in
    ///   memory; past it, those used longest ago are dropped, to be loaded
    ///   again when next used. None stays if it is not positive.
    public init(path: String, readOnly: Bool = false, snapshotInterval: Int = 1000, cachedDocuments: Int = 1000,
                onWarning: @escaping @Sendable (String) -> Void = DocumentStore.printWarning) throws {
        precondition(snapshotInterval > 0, "snapshotInterval must be positive")
        // Looked at without writing: the open below switches the file to WAL,
        // and migrating it would add the store's tables.
        if let kind = Database.peek(atPath: path, StoreSchema.foreignKind) ?? nil { throw StoreError.notAStore(path: path, kind: kind) }
        let database = try Database(path: path, readOnly: readOnly)
        // The file a symbolic link names, whose fingerprint is the same
        // whichever path reaches it (else each path in turn would take the
        // file for a copy, and mint a new replica id).
        let file = Database.file(namedBy: path)
        let version = try Int(database.query(sql: "PRAGMA user_version")[0].int64(0))
        guard version <= StoreSchema.latestVersion else {
            throw StoreError.unsupportedSchema(found: version, expected: StoreSchema.latestVersion)
        }
        if readOnly {
            guard version == StoreSchema.latestVersion, let replica = try database.read(ReplicaIdentity.recorded) else {
                throw StoreError.unsupportedSchema(found: version, expected: StoreSchema.latestVersion)
            }
            currentReplica = Mutex(replica)
        } else {
            try StoreSchema.upgrade(database)
            // Gives back what compactions left free, or an upgrade whose
            // vacuum did not complete (`Specs/storage.md`, "Growth").
            database.vacuumIfMostlyFree()
            let fingerprint = try ReplicaIdentity.fingerprint(ofFile: file)
            // Read first: a file that is no copy, the usual case, then takes
            // no write lock, which another process may hold for long.
            currentReplica = Mutex(try database.read { db in try ReplicaIdentity.recorded(db, for: fingerprint) }
                ?? database.write { db in try ReplicaIdentity.establish(db, fingerprint: fingerprint, now: Self.milliseconds(Date())) })
        }
        self.database = database
        writerLock = readOnly ? nil : LockFile(beside: path)
        self.snapshotInterval = snapshotInterval
        cache = DocumentCache(capacity: cachedDocuments)
        warningHandler = onWarning
        try placeOutsideLookAtPresent()
    }

    /// Closes the store: stops the watch of `watchOutsideCommits(every:)`,
    /// waits for the calls in progress to end (their
    /// commits written), then closes the SQLite file, drops the documents
    /// kept in memory and ends the streams of `events(of:)` and
    /// `allEvents()`. Every later call throws a `DatabaseError` whose
    /// `isAfterClose` is set ("the store at PATH is closed"); closing again
    /// does nothing. Without it, the file
    /// closes when the last reference to the store goes.
    ///
    /// ```swift
    /// try store.close()
    /// try FileManager.default.moveItem(atPath: "notes.quire", toPath: "archive.quire")
    /// ```
    ///
    /// Throws `StoreError.nestedCall` from inside a `read` or `edit`
    /// closure, whose call would never end.
    public func close() throws {
        // Before the lock: the watch's last look may be waiting for it.
        try refuseNestedCall()
        outsideWatch.stop(forever: true)
        try locked {
            while !busy.isEmpty || !queue.isEmpty || isWriting || holdsWriterLock { condition.wait() }
            cache.removeAll()
            database.close()
        }
        observers.finishAll()
    }

    private init(inMemory database: Database, snapshotInterval: Int, cachedDocuments: Int) throws {
        precondition(snapshotInterval > 0, "snapshotInterval must be positive")
        try StoreSchema.upgrade(database)
        currentReplica = Mutex(try database.write { db in
            try ReplicaIdentity.establish(db, fingerprint: "memory", now: Self.milliseconds(Date()))
        })
        self.database = database
        writerLock = nil
        self.snapshotInterval = snapshotInterval
        cache = DocumentCache(capacity: cachedDocuments)
        warningHandler = Self.printWarning
        try placeOutsideLookAtPresent()
    }

    deinit {
        // Without waiting: the watch's thread may be the one releasing the store.
        outsideWatch.end()
    }

    /// A store that lives in memory until it is released; for tests. Its
    /// parameters are `init(path:)`'s (`snapshotInterval` must be positive).
    public static func inMemory(snapshotInterval: Int = 1000, cachedDocuments: Int = 1000) throws -> DocumentStore {
        try DocumentStore(inMemory: Database.inMemory(), snapshotInterval: snapshotInterval, cachedDocuments: cachedDocuments)
    }

    /// Hands `message` to the caller's `onWarning`, marked as a closure of
    /// the caller's: the lock is held, and a call on the store from it
    /// would wait for it for ever. Lock held.
    func warn(_ message: String) {
        runningClosure { warningHandler(message) }
    }

    /// Writes a warning to standard error.
    public static func printWarning(_ message: String) {
        FileHandle.standardError.write(Data("quire: warning: \(message)\n".utf8))
    }

    // MARK: Documents

    /// Creates an empty document with a client-made id.
    ///
    ///     try store.create(id: "groceries")
    public func create(id: DocumentID) throws {
        try locked {
            // An `apply` may be creating it: its row is written with its commit.
            waitUntilIdle(id)
            try database.write { db in
                guard try !Self.isListed(id, db) else {
                    throw StoreError.documentExists(id.rawValue)
                }
                try Self.insertRow(of: id, db)
            }
            cache[id] = LoadedDocument(document: Document(replica: replicaID), isRemoved: false, changesSinceSnapshot: 0)
        }
    }

    /// Lists a new document: its `documents` row, numbered one above the
    /// highest number (the log names a document by its number).
    static func insertRow(of id: DocumentID, _ db: DatabaseConnection) throws {
        try db.execute(
            sql: "INSERT INTO documents(id, created_at, number) VALUES (?, ?, (SELECT coalesce(max(number), 0) + 1 FROM documents))",
            arguments: [.text(id.rawValue), .integer(milliseconds(Date()))])
    }

    /// Creates an empty document with a new UUIDv7 id and returns the id.
    public func createDocument() throws -> DocumentID {
        let id = DocumentID.generate()
        try create(id: id)
        return id
    }

    /// Every document, in id order (creation order for UUIDv7 ids).
    public func documents(includeRemoved: Bool = false) throws -> [DocumentInfo] {
        try database.query(sql: "SELECT id, created_at, removed_at FROM documents ORDER BY id").compactMap { row in
            let info = DocumentInfo(
                id: try DocumentID(stored: row.text(0)),
                createdAt: Self.date(try row.int64(1)),
                removedAt: row.isNull(2) ? nil : Self.date(try row.int64(2)))
            return includeRemoved || !info.isRemoved ? info : nil
        }
    }

    /// The informational wall-clock time of the document's newest change
    /// (local or remote), the one whose last operation has the greatest
    /// Lamport stamp, or nil if its log holds none: stores that hold the
    /// same changes agree on it, even when a replica's clock went back
    /// (`ChangeLog.newestChangeTime`). Read from the log's rows, without
    /// decoding a change.
    ///
    /// - Throws: `StoreError.noSuchDocument` if the store does not list the
    ///   document (an id gone stale is no document without changes).
    public func lastChangeTime(_ id: DocumentID) throws -> Date? {
        try database.read { db in
            guard try Self.isListed(id, db) else { throw StoreError.noSuchDocument(id.rawValue) }
            return try ChangeLog.newestChangeTime(document: id.rawValue, db)
        }.map(Self.date)
    }

    /// Marks a document removed. Its history stays; `restore` brings it back.
    /// Remote changes to it are still applied and kept. The streams
    /// observing it get an event whose `isRemoved` is set (`events(of:)`),
    /// and those of other stores on the file an `outside` one when they
    /// next look (`checkForOutsideCommits()`). Removing it again moves
    /// `DocumentInfo.removedAt` to now, and makes no event.
    ///
    /// - Throws: `StoreError.noSuchDocument` if the store does not list it.
    public func remove(_ id: DocumentID) throws {
        try setRemoved(id, at: Self.milliseconds(Date()))
    }

    /// Clears a document's removed mark, if it has one; the streams
    /// observing it then get an event whose `isRemoved` is clear, here and,
    /// `outside`, on other stores on the file (none for a document not
    /// removed).
    ///
    /// - Throws: `StoreError.noSuchDocument` if the store does not list it.
    public func restore(_ id: DocumentID) throws {
        try setRemoved(id, at: nil)
    }

    private func setRemoved(_ id: DocumentID, at time: Int64?) throws {
        let isRemoved = time != nil
        try locked {
            // Until no call works on the document and no batch is being written: a batch commits
            // before this would, and publishes its events once it has the lock back, so this
            // commit's event must wait to follow them (events come in commit order).
            while busy.contains(id) || isWriting { condition.wait() }
            let (version, marked) = try database.write { db in
                let rows = try db.query(sql: "SELECT removed_at FROM documents WHERE id = ?", arguments: [.text(id.rawValue)])
                guard let row = rows.first else { throw StoreError.noSuchDocument(id.rawValue) }
                let wasRemoved = !row.isNull(0)
                try db.execute(sql: "UPDATE documents SET removed_at = ? WHERE id = ?",
                               arguments: [time.map(DatabaseValue.integer) ?? .null, .text(id.rawValue)])
                // For other stores' outside looks; only a change of the mark, which alone makes an event.
                var marked: (before: Int64, after: Int64)?
                if wasRemoved != isRemoved {
                    let before = try RemovalMarks.highestSeq(db)
                    marked = (before, try RemovalMarks.record(document: id.rawValue, db))
                }
                // Read only for an event (a change of the mark, with observers), as a commit builds one only for observers.
                let forEvent = wasRemoved != isRemoved && !observers.isEmpty
                return (forEvent ? try DocumentVersions.version(document: id.rawValue, db) : nil, marked)
            }
            if let marked { outsideRemovalPlace.noteOwnRows(after: marked.before, through: marked.after) }
            cache[id]?.isRemoved = isRemoved
            // Lock held, as a commit's: the event keeps its place among theirs.
            if let version {
                observers.publish(DocumentEvent(document: id, origin: .local, changeIDs: [], versionVector: version,
                                                changedObjects: [], changedKeys: [:], isRemoved: isRemoved))
            }
        }
    }

    /// Whether the file marks the document removed, inside a transaction.
    static func isRemoved(_ document: String, _ db: DatabaseConnection) throws -> Bool {
        try !db.query(sql: "SELECT 1 FROM documents WHERE id = ? AND removed_at IS NOT NULL", arguments: [.text(document)]).isEmpty
    }

    // MARK: Reading and editing

    /// Runs `body` with the document's current state. A removed document
    /// can still be read.
    ///
    ///     let text = try store.read(id) { doc in try doc.text(body) }
    ///
    /// - Throws: `StoreError.noSuchDocument` if the store does not list it;
    ///   `StoreError.corruptChange` or `unrecoverableDocument` if its copy
    ///   in the file is damaged; what `body` throws.
    public func read<Result>(_ id: DocumentID, _ body: (Document) throws -> Result) throws -> Result {
        try locked {
            let document = try loadedIdle(id).document
            return try runningClosure { try body(document) }
        }
    }

    /// Runs `body` as one local transaction and commits the change it makes
    /// in one SQLite transaction before returning: once `edit` returns, the
    /// edit survives a crash of the process or the machine.
    ///
    /// If `body` throws, or the commit fails (disk full, read-only file),
    /// nothing is saved, the document is as it was, and the error is rethrown.
    /// If another process wrote the document since this store loaded it,
    /// `body` runs again on the document as the file now holds it
    /// (`StoreError.changedElsewhere` if that keeps happening).
    ///
    ///     try store.edit(id) { tx in
    ///         let list = try tx.putObject(.root, key: "items", kind: .list)
    ///         try tx.insert(list, at: 0, .string("milk"))
    ///     }
    ///
    /// - Parameter time: the wall-clock time recorded with the change, for
    ///   people reading the history; never used for ordering. Recorded in
    ///   milliseconds since 1970, as an `Int64`: one beyond is clamped.
    /// - Throws: `StoreError.noSuchDocument` if the store does not list it,
    ///   `StoreError.documentRemoved` if it is removed (`restore` it first),
    ///   `StoreError.changedElsewhere` as above; a `DatabaseError` if the
    ///   commit fails; what `body` throws.
    @discardableResult
    public func edit<Result>(_ id: DocumentID, time: Date = Date(), _ body: (inout Transaction) throws -> Result) throws -> Result {
        try locked { try retryingChangedElsewhere { isRetry in
            waitUntilIdle(id)
            // Refused only as the file has it: another process may have restored it.
            if cache[id]?.isRemoved == true { _ = try freshCachedEntry(id) }
            let entry = try takeIdle(id, fromFile: isRetry)
            guard !entry.isRemoved else {
                release(id, entry)
                throw StoreError.documentRemoved(id.rawValue)
            }
            return try transactAndCommit(id, entry, isNew: false, time: time, body)
        } }
    }

    /// Creates a document with a new UUIDv7 id (or `id`) and the change
    /// `body` makes to it, in one SQLite transaction: if `body` throws or
    /// the commit fails, neither is saved. (`createDocument()` then `edit`
    /// would leave an empty document behind.)
    ///
    ///     let id = try store.createDocument { tx in
    ///         try tx.put(.root, key: "title", .string("Groceries"))
    ///     }
    ///
    /// - Parameters:
    ///   - id: a client-made id; one the store holds is
    ///     `StoreError.documentExists`, and nothing is saved.
    ///   - time: recorded with the change, as for `edit`.
    public func createDocument(id: DocumentID = .generate(), time: Date = Date(), _ body: (inout Transaction) throws -> Void) throws -> DocumentID {
        try create(id, time: time, unlessStoreHolds: nil, body)
        return id
    }

    /// Creates a document as `createDocument(id:time:_:)` does, unless the
    /// store holds a document whose id `isSame` accepts: then nothing is
    /// saved, and that document's id is returned. The store is looked at in
    /// the SQLite transaction that would create the document, so of calls
    /// racing with one `isSame` (threads, or processes on one file), one
    /// creates its document and the others get its id. (`quire note new
    /// --request-id` keeps its key in the ids it makes.)
    ///
    /// - Returns: the id of the document created or found, and whether it was created.
    public func createDocument(id: DocumentID, unlessStoreHolds isSame: @escaping @Sendable (DocumentID) -> Bool, time: Date = Date(),
                               _ body: (inout Transaction) throws -> Void) throws -> (id: DocumentID, isNew: Bool) {
        do {
            try create(id, time: time, unlessStoreHolds: isSame, body)
            return (id, true)
        } catch let found as ExistingDocument {
            return (found.id, false)
        }
    }

    private func create(_ id: DocumentID, time: Date, unlessStoreHolds isSame: (@Sendable (DocumentID) -> Bool)?,
                        _ body: (inout Transaction) throws -> Void) throws {
        // Run again if the store took a new id meanwhile (`writeQueuedBatch`),
        // or another process created the document: it then exists.
        try locked { try retryingChangedElsewhere { _ in
            // An `apply` may be creating it: its row is written with its commit.
            waitUntilIdle(id)
            guard try !database.read({ db in try Self.isListed(id, db) }) else { throw StoreError.documentExists(id.rawValue) }
            busy.insert(id)
            let entry = LoadedDocument(document: Document(replica: replicaID), isRemoved: false, changesSinceSnapshot: 0)
            try transactAndCommit(id, entry, isNew: true, unlessStoreHolds: isSame, time: time, body)
        } }
    }

    /// Runs `body` as one local transaction on a taken document and commits
    /// its change, with the document's row if `isNew` (unless the store
    /// then holds a document `isSame` accepts: `ExistingDocument`). Lock held.
    private func transactAndCommit<Result>(_ id: DocumentID, _ entry: LoadedDocument, isNew: Bool,
                                           unlessStoreHolds isSame: (@Sendable (DocumentID) -> Bool)? = nil, time: Date,
                                           _ body: (inout Transaction) throws -> Result) throws -> Result {
        var entry = entry
        // The document's own replica, which a copy loaded before the store
        // took a new id still edits under (its commit then fails, and runs again).
        let replica = entry.document.replica
        let before = entry.document.versionVector[replica]
        // On a throw, `entry` is dropped: the next access reloads from disk.
        // `transact` undoes a failed body by replaying the history it holds,
        // which after a snapshot load is not all of it and can fail with an
        // error of its own; the caller gets the body's error all the same.
        var bodyError: (any Error)?
        let result: Result
        do {
            result = try runningClosure {
                try entry.document.transact(time: Self.milliseconds(time)) { tx in
                    do { return try body(&tx) } catch { bodyError = error; throw error }
                }
            }
        } catch {
            release(id, nil)
            throw bodyError ?? error
        }
        let change = entry.document.versionVector[replica] != before ? entry.document.lastChange : nil
        guard change != nil || isNew else {
            release(id, entry)
            return result
        }
        let newChanges = change.map { [LogPiece.changes([$0])] } ?? []
        try commit([QueuedCommit(id: id, entry: entry, newChanges: newChanges, isLocal: true, parked: [], isNew: isNew,
                                 unlessStoreHolds: isSame)])
        return result
    }

    /// Applies remote changes, in any order, all or nothing: either every
    /// change is applied (or parked, or ignored as a duplicate) and saved in
    /// one SQLite transaction, or nothing is and the error is rethrown.
    /// (Like `edit`, it applies them again if another process wrote one of
    /// the documents meanwhile.)
    ///
    /// Changes whose dependencies are missing are parked, on disk too, and
    /// applied when those arrive. Returns how many changes were applied.
    ///
    /// The store must list the document (else `StoreError.noSuchDocument`):
    /// one that another store made is `create(id:)`d here first, with the
    /// same id. (`apply(bundles:)` creates those it lacks.) The changes
    /// must be that document's: another document's are refused when their
    /// ids clash (`DocumentError.conflictingChange`), but not otherwise.
    ///
    ///     do { try store.create(id: id) } catch StoreError.documentExists {}
    ///     let changes = try other.changes(id, since: store.read(id) { $0.versionVector })
    ///     try store.apply(id, changes)
    @discardableResult
    public func apply(_ id: DocumentID, _ changes: [Change]) throws -> Int {
        do {
            return try apply([(id, [.changes(changes)])], creatingMissing: false, refusingEach: false, limits: .default).applied.values
                .reduce(0) { $0 + $1.count }
        } catch let refused as RefusedChanges {
            // The caller named the one document: the error as it came says enough.
            throw refused.reason.error
        }
    }

    /// Applies change bundles (`ChangeEncoding`) received from a peer for
    /// several documents, creating the documents this store lacks, all or
    /// nothing in one SQLite transaction: one disk sync for a whole page
    /// of a sync, however many documents it holds. Each document's bundles
    /// apply in order, as `apply(_:_:)` does with their changes.
    ///
    /// A bundle whose changes are all new and one run of one replica, as in
    /// a catch-up, is kept as it came: encoded in the document's history and
    /// as one row of the log. A fresh replica takes such bundles straight
    /// from their columns, never decoding them into changes: a long history
    /// costs about one pass over its bytes.
    ///
    /// A document whose bundles do not decode or whose changes do not apply
    /// throws `RefusedChanges`, naming it, with the `DecodingError` or
    /// `DocumentError` as its `reason`; nothing of the call is saved, the
    /// other documents' bundles neither (`applyEach` saves them).
    ///
    /// - Returns: how many changes were applied.
    @discardableResult
    public func apply(bundles documents: [(id: DocumentID, bundles: [[UInt8]])], limits: DecodingLimits = .default) throws -> Int {
        try apply(documents.map { ($0.id, $0.bundles.map(Received.bundle)) }, creatingMissing: true, refusingEach: false, limits: limits)
            .applied.values.reduce(0) { $0 + $1.count }
    }

    /// Applies change bundles for several documents as `apply(bundles:)`
    /// does, in one SQLite transaction, but each document all or nothing on
    /// its own: one whose changes do not decode (`DecodingError`) or do not
    /// apply (`DocumentError`), or whose copy here cannot be read (damaged:
    /// `Error.isDamage(ofDocument:)`), is left as it was (a missing one is
    /// not created) and returned with the error, and the others are saved.
    /// For a peer's push of many documents, of which one may be refused.
    ///
    /// - Returns: what was applied to each document that took any changes
    ///   (a sync names them: `SyncClient.Report.changedDocuments`), and the
    ///   refused documents in the order given.
    public func applyEach(bundles documents: [(id: DocumentID, bundles: [[UInt8]])], limits: DecodingLimits = .default)
        throws -> (applied: [DocumentID: AppliedChanges], refused: [(id: DocumentID, error: any Error)]) {
        try apply(documents.map { ($0.id, $0.bundles.map(Received.bundle)) }, creatingMissing: true, refusingEach: true, limits: limits)
    }

    /// What `applyEach` applied to one document.
    public struct AppliedChanges: Sendable, Equatable {
        /// How many changes it took.
        public let count: Int
        /// Its version just before them, as the transaction that wrote them
        /// found it (empty for a document the call made): what another
        /// process committed to it before is in this version, not counted
        /// as applied. (`quire sync` diffs from it to show what it brought.)
        public let versionBefore: VersionVector
        /// Its version just after them, in the same transaction: what
        /// another process commits to it after is not in this version.
        /// (`quire sync` diffs to it, so that a later edit is not shown as
        /// brought.)
        public let versionAfter: VersionVector
    }

    /// Remote changes as they reach `apply`: decoded, or a bundle as it came.
    private enum Received {
        case changes([Change])
        case bundle([UInt8])
    }

    /// With `refusingEach`, a document whose changes do not decode or apply,
    /// or whose copy is damaged, is left out and returned with why; without,
    /// it fails the whole call (changes that do not decode or apply as
    /// `RefusedChanges`, naming the document). Returns what each document
    /// that took any changes took.
    private func apply(_ documents: [(id: DocumentID, pieces: [Received])], creatingMissing: Bool, refusingEach: Bool,
                       limits: DecodingLimits) throws -> (applied: [DocumentID: AppliedChanges], refused: [(id: DocumentID, error: any Error)]) {
        // One entry per document: taking a document twice would wait for itself.
        // Found by a dictionary: a page of a sync may hold many thousands.
        var merged: [(id: DocumentID, pieces: [Received])] = []
        var positions: [DocumentID: Int] = [:]
        for document in documents {
            if let index = positions[document.id] { merged[index].pieces += document.pieces } else {
                positions[document.id] = merged.count
                merged.append(document)
            }
        }
        return try locked { try retryingChangedElsewhere { isRetry in
            // All idle before any is taken: holding one while waiting for the
            // next would deadlock with an apply taking them in the other order.
            while merged.contains(where: { busy.contains($0.id) }) { condition.wait() }
            var commits: [QueuedCommit] = []
            var refused: [(id: DocumentID, error: any Error)] = []
            var applied: [DocumentID: AppliedChanges] = [:]
            do {
                for (id, pieces) in merged {
                    let isNew = try creatingMissing && !exists(id)
                    var entry: LoadedDocument
                    do {
                        entry = isNew ? LoadedDocument(document: Document(replica: replicaID), isRemoved: false, changesSinceSnapshot: 0)
                            : try takeIdle(id, fromFile: isRetry)
                    } catch where refusingEach && error.isDamage(ofDocument: id.rawValue) {
                        // Nothing was taken: there is nothing to release.
                        refused.append((id, error))
                        continue
                    }
                    if isNew { busy.insert(id) }
                    // The commit checks that the file holds nothing of the document
                    // this copy lacks (else the call runs again on the file's):
                    // what it holds now is what the file holds as the changes go in.
                    let versionBefore = entry.document.versionVector
                    let (logged, parked): ([LogPiece], [Change])
                    var appliedHere = 0
                    do { (logged, parked) = try applyInMemory(pieces, to: &entry, id, limits: limits, applied: &appliedHere) } catch {
                        // `entry` may be half-applied: drop it, to be reloaded from disk.
                        release(id, nil)
                        // Its history in the log may be what cannot be read (a clash is looked up there).
                        if refusingEach && (RefusedChanges(document: id, error) != nil || error.isDamage(ofDocument: id.rawValue)) {
                            refused.append((id, error))
                            continue
                        }
                        throw RefusedChanges(document: id, error) ?? error
                    }
                    if appliedHere > 0 {
                        applied[id] = AppliedChanges(count: appliedHere, versionBefore: versionBefore, versionAfter: entry.document.versionVector)
                    }
                    commits.append(QueuedCommit(id: id, entry: entry, newChanges: logged, isLocal: false, parked: parked, isNew: isNew))
                }
            } catch {
                // Nothing is written: the documents taken so far are dropped too.
                for commit in commits { release(commit.id, nil) }
                throw error
            }
            try commit(commits)
            return (applied, refused)
        } }
    }

    /// Applies `pieces` to a taken document; returns what to log and the
    /// changes left waiting for their dependencies. Lock held.
    private func applyInMemory(_ pieces: [Received], to entry: inout LoadedDocument, _ id: DocumentID, limits: DecodingLimits,
                               applied: inout Int) throws -> (logged: [LogPiece], parked: [Change]) {
        var logged: [LogPiece] = []
        // The changes of the pieces not taken whole, some of which may wait.
        var decoded: [Change] = []
        // Each change is measured from the highest Lamport value before it, the
        // pieces' earlier changes counted, and the changes earlier batches left
        // waiting: one batch meets the rule as steps do.
        var lamportLead = LamportLeadCheck(highest: entry.document.maxLamportWithPending, lead: Self.maxLamportLead)
        for piece in pieces {
            let before = entry.document.versionVector
            let count: Int, changes: [Change]
            switch piece {
            case .bundle(let bytes):
                // The room a bundle makes in a text is kept for the next (a
                // sync's pages come in a row), given back after the last.
                let (bundleCount, run) = try entry.document.applyEncodedRun(bytes, limits: limits, keepingSpanRoom: true)
                // Taken whole, every change new and in order: nothing waits, and
                // one replica's Lamport values only grow, so its last is the
                // highest: within the lead, all are. Else each is measured.
                if let run, ChangeLog.fitsOneRow(run) {
                    if !lamportLead.admits(lastLamport: run.lastLamport) {
                        try Self.refuseFarAhead(ChangeEncoding.decode(bytes, limits: limits), &lamportLead)
                    }
                    applied += bundleCount
                    logged.append(.run(run, bundle: bytes))
                    continue
                }
                (count, changes) = (bundleCount, try ChangeEncoding.decode(bytes, limits: limits))
            case .changes(let given):
                (count, changes) = (try entry.document.apply(given), given)
            }
            // Checked after the fact: on a throw the document is dropped, unwritten.
            try Self.refuseFarAhead(changes, &lamportLead)
            applied += count
            decoded += changes
            // The document only checks duplicates against the history it holds
            // in memory, which after a snapshot load is not all of it; the log
            // is. A clash found only now drops the document all the same.
            let duplicates = changes.filter { before.contains($0.lastID) }
            if let conflict = try database.read({ db in try ChangeLog.firstConflict(among: duplicates, document: id.rawValue, db) }) {
                throw DocumentError.conflictingChange(conflict.id)
            }
            // Exactly the bundle's changes applied, in its order: log its bytes.
            let after = entry.document.versionVector
            if case .bundle(let bytes) = piece, duplicates.isEmpty, count == changes.count, changes.allSatisfy({ after.contains($0.lastID) }),
               let run = RunBounds(changes), ChangeLog.fitsOneRow(run) {
                logged.append(.run(run, bundle: bytes))
            } else if count > 0 {
                logged.append(.changes(try entry.document.changes(since: before)))
            }
        }
        entry.document.giveBackSpareSpanRoom()
        let after = entry.document.versionVector
        return (logged, decoded.filter { !after.contains($0.lastID) })
    }

    /// Refuses the first of `changes`, in order, whose Lamport values reach
    /// more than `maxLamportLead` beyond the highest before it:
    /// `lamportLead`'s, raised by each change that passes.
    private static func refuseFarAhead(_ changes: [Change], _ lamportLead: inout LamportLeadCheck) throws(DocumentError) {
        guard let change = lamportLead.firstFarAhead(in: changes) else { return }
        throw .invalidChange(change.id, reason: "its Lamport value \(change.lastLamport) lies more than "
            + "\(lamportLead.lead) beyond the highest before it, \(lamportLead.highest)")
    }

    /// Throws the refusal `apply` would make, by the Lamport-lead rule
    /// (`maxLamportLead`), of `changes` given in one batch to `document`
    /// (a new one for a document the store lacks): what a dry run of
    /// applying them must report. Any other refusal only `apply` finds.
    public static func refuseFarAhead(_ changes: [Change], appliedTo document: Document) throws(DocumentError) {
        var lamportLead = LamportLeadCheck(highest: document.maxLamportWithPending, lead: maxLamportLead)
        try refuseFarAhead(changes, &lamportLead)
    }

    /// Whether the store has the document (or a call is creating it). Lock held.
    private func exists(_ id: DocumentID) throws -> Bool {
        if cache[id] != nil || busy.contains(id) { return true }
        return try !database.query(sql: Self.listedQuery, arguments: [.text(id.rawValue)]).isEmpty
    }

    /// A row if the file lists the document (its one argument).
    private static let listedQuery = "SELECT 1 FROM documents WHERE id = ?"

    /// Whether the file lists the document, inside a transaction.
    static func isListed(_ id: DocumentID, _ db: DatabaseConnection) throws -> Bool {
        try !db.query(sql: listedQuery, arguments: [.text(id.rawValue)]).isEmpty
    }

    /// Every document the file lists, removed ones too, inside a transaction.
    static func listedIDs(_ db: DatabaseConnection) throws -> [DocumentID] {
        try db.query(sql: "SELECT id FROM documents").map { row in try DocumentID(stored: row.text(0)) }
    }

    /// A creation that gave way to a document the store held
    /// (`createDocument(id:unlessStoreHolds:time:_:)`).
    struct ExistingDocument: Error {
        let id: DocumentID
    }

    // MARK: History and sync

    /// The logged changes of a document that `version` lacks, in a causal
    /// order; a version naming part of a change lacks all of it. Throws
    /// `StoreError.historyCompacted` if compaction removed some of them
    /// (the peer then needs a snapshot).
    ///
    /// - Parameter limit: at most this many, the first in log order: a
    ///   client that sends a few at a time decodes only those. None if
    ///   not positive.
    public func changes(_ id: DocumentID, since version: VersionVector = VersionVector(), limit: Int = .max) throws -> [Change] {
        // A negative limit would trap in the log (a negative prefix) and mean "no limit" to SQLite.
        let limit = max(limit, 0)
        return try locked {
            let current = try loadedIdle(id).document.versionVector
            let changes = try database.read { db in try ChangeLog.changes(document: id.rawValue, since: version, limit: limit, db) }
            // Each replica's changes must follow on from `version` without a gap.
            // One may start inside it: only a broken or hostile peer states
            // part of a change, and refusing would fail every later sync with it.
            var covered = version
            for change in changes {
                guard change.id.counter <= covered[change.replica] + 1 else { throw StoreError.historyCompacted(id.rawValue) }
                covered[change.replica] = change.lastID.counter
            }
            guard changes.count == limit || covered.includes(current) else { throw StoreError.historyCompacted(id.rawValue) }
            return changes
        }
    }

    /// The local changes `peer` has not acknowledged, per document; with no
    /// peer named (nil), those no peer has acknowledged: that have not left
    /// this store, as far as it knows.
    public func outbox(peer: String?) throws -> [DocumentID: [Change]] {
        let entries = try database.read { db in try ChangeLog.outbox(peer: peer, db) }
        return Dictionary(uniqueKeysWithValues: try entries.map { (try DocumentID(stored: $0.document), $0.changes) })
    }

    /// Records that `peer` holds `version` of a document: the outbox for
    /// that peer no longer offers the changes it covers.
    ///
    /// - Throws: `StoreError.noSuchDocument` if the store does not list the document.
    public func acknowledge(peer: String, id: DocumentID, version: VersionVector) throws {
        try database.write { db in
            guard try Self.isListed(id, db) else { throw StoreError.noSuchDocument(id.rawValue) }
            try PeerAcknowledgements.acknowledge(peer: peer, document: id.rawValue, version: version, db)
        }
    }

    // MARK: Snapshots and compaction

    /// Writes a snapshot of the document now.
    public func snapshot(_ id: DocumentID) throws {
        try locked { try retryingChangedElsewhere { isRetry in
            var entry = try takeIdle(id, fromFile: isRetry)
            try releasing(id, &entry) { try writeSnapshot(id, &$0) }
        } }
    }

    /// Writes a snapshot and deletes what it makes unnecessary: older
    /// snapshots and, unless `keepHistory`, the logged changes it covers.
    ///
    /// Never deleted: the merge state (the snapshot holds every tombstone,
    /// the version vector and the heads), parked changes, and local changes
    /// some peer of the document has not acknowledged (or, when no peer has
    /// acknowledged anything of it yet, every local change).
    ///
    /// Then, when free pages have come to a quarter of the file (and at
    /// least 1 MiB), vacuums it, so that the file shrinks
    /// (`Database.vacuumIfMostlyFree`); a vacuum that fails leaves the file
    /// as it was and does not fail the compaction.
    public func compact(_ id: DocumentID, keepHistory: Bool) throws {
        try compactLeavingFreePages(id, keepHistory: keepHistory)
        // Outside the store's lock: calls that need only the documents in
        // memory go on meanwhile; those that need the file wait for it.
        database.vacuumIfMostlyFree()
    }

    /// `compact(_:keepHistory:)` without its vacuum, for a caller that
    /// compacts many documents and then vacuums once (`quire compact`):
    /// each compaction's vacuum would copy the file again.
    package func compactLeavingFreePages(_ id: DocumentID, keepHistory: Bool) throws {
        try locked { try retryingChangedElsewhere { isRetry in
            var entry = try takeIdle(id, fromFile: isRetry)
            try releasing(id, &entry) { try writeSnapshot(id, &$0, compacting: keepHistory ? .keepHistory : .dropHistory) }
        } }
    }

    /// The file's size and free pages, as committed.
    package func freeSpace() throws -> FreeSpace {
        try refuseNestedCall()
        return try database.freeSpace()
    }

    /// Gives the file's free pages back now, whatever its size
    /// (`Database.vacuum()`): the vacuum a user asks for (`quire compact`),
    /// where the store's own (`Database.vacuumIfMostlyFree`) leaves a file
    /// using over 32 MiB as it is, as it holds the write lock while it
    /// copies. Throws the `DatabaseError` of a vacuum that failed (a full
    /// disk: it needs about twice the used bytes free), which leaves the
    /// file as it was.
    package func vacuum() throws {
        try refuseNestedCall()
        try database.vacuum()
    }

    // MARK: Backup

    /// Writes a backup of the store to a new file at `destination`: every
    /// change committed when it begins, whatever other calls or processes
    /// commit meanwhile, in one SQLite file that opens as a store
    /// (`Database.backup(to:replacing:prepare:)`), unlike a copy of the file
    /// while it is open, which misses what its `-wal` holds. Opened for
    /// writing, wherever it was restored (even copied over this very
    /// file), the backup mints a new replica id: it lacks this store's
    /// later changes, and under this id would make changes again under ids
    /// peers already hold.
    ///
    ///     try store.backup(to: "/Volumes/Backup/notes-2026-12-05.quire")
    public func backup(to destination: String, replacing: Bool = false) throws {
        try refuseNestedCall()
        try database.backup(to: destination, replacing: replacing, prepare: ReplicaIdentity.forgetFile)
    }

    /// Writes a backup of the store file at `path` as it is, as
    /// `backup(to:replacing:)` does, without opening it as a store: a file
    /// an older Quire wrote keeps its schema version in the backup (the
    /// copy kept from before the upgrade), where opening it for writing
    /// would first upgrade it. The file is only read.
    public static func backup(ofStoreAt path: String, to destination: String, replacing: Bool = false) throws {
        let database = try Database(path: path, readOnly: true)
        defer { database.close() }
        try database.backup(to: destination, replacing: replacing, prepare: ReplicaIdentity.forgetFile)
    }

    /// Clamped to what an `Int64` holds: times are informational, and an
    /// edit's `time` may come from bad data (converting it would trap).
    static func milliseconds(_ date: Date) -> Int64 {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        return Int64(exactly: milliseconds) ?? (milliseconds < 0 ? .min : .max)
    }
    static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
}
