import Foundation

// How DocumentStore keeps the in-memory documents and the file together,
// and how concurrent edits share one SQLite commit.
//
// A call takes the document it works on out of `cache` and marks it busy;
// other calls on that document wait. An edit or apply then queues its
// changes as a `QueuedCommit` and waits until they are written. Whichever
// waiting thread finds no batch being written becomes the writer: it takes
// the whole queue, writes it in one SQLite transaction without holding the
// lock (so more commits can queue meanwhile), and then finishes every
// commit of the batch. Edits of different documents made at the same time
// so share one disk sync. If the transaction fails, every commit of the
// batch fails and its document is dropped from the cache, to be reloaded
// from the file: memory never runs ahead of the disk.

extension DocumentStore {
    /// Changes of one document made in memory, waiting to be written.
    struct QueuedCommit {
        let id: DocumentID
        /// The document with the changes applied.
        var entry: LoadedDocument
        /// The changes to log, in the order applied.
        let newChanges: [LogPiece]
        let isLocal: Bool
        /// Remote changes that wait for their dependencies.
        let parked: [Change]
        /// The document is not in the file yet: its row is written first.
        var isNew = false
        /// A new document is not written if the file then holds one this
        /// accepts (`createDocument(id:unlessStoreHolds:time:_:)`).
        var unlessStoreHolds: (@Sendable (DocumentID) -> Bool)?
        /// The call that queued it: one outcome for all its commits, which
        /// are written together or not at all.
        var ticket = 0

        /// Writes the commit's rows; runs inside the batch's transaction.
        /// Records in `entry` what of the file it now holds: the `seq` of
        /// its last change row, and its parked rows.
        mutating func save(_ db: DatabaseConnection) throws {
            if isNew {
                try DocumentStore.insertRow(of: id, db)
            }
            // Received changes under one of the store's own ids were made on a
            // copy of a document read from it: they are local, for the outbox to offer.
            let ownReplicas = isLocal ? [] : try ReplicaIdentity.all(db)
            func isOwn(_ replica: ReplicaID) -> Bool { isLocal || ownReplicas.contains(replica) }
            for piece in newChanges {
                switch piece {
                case .changes(let changes):
                    // In the order applied, a stretch of the same locality at a time.
                    var start = changes.startIndex
                    while start < changes.endIndex {
                        let local = isOwn(changes[start].replica)
                        let end = changes[start...].firstIndex { isOwn($0.replica) != local } ?? changes.endIndex
                        try ChangeLog.append(Array(changes[start..<end]), document: id.rawValue, isLocal: local, db)
                        start = end
                    }
                case .run(let run, let bundle):
                    try ChangeLog.append(run: run, encodedAs: bundle, document: id.rawValue, isLocal: isOwn(run.replica), db)
                }
                entry.loggedThrough = db.lastInsertedRowID
            }
            try DocumentVersions.raise(document: id.rawValue, replicas: Set(newChanges.flatMap(\.replicas)),
                                       to: entry.document.versionVector, db)
            if !isLocal {
                try ParkedChanges.removeCovered(by: entry.document.versionVector, document: id.rawValue, db)
                try ParkedChanges.park(parked, document: id.rawValue, db)
                entry.parkedRows = try ParkedChanges.rowCount(document: id.rawValue, db)
            }
        }
    }

    /// Changes to log together, in the order applied.
    enum LogPiece {
        /// Encoded when written, a row per run (`ChangeLog.runs`).
        case changes([Change])
        /// One run that arrived encoded as `bundle`: one row, the bytes as they came.
        case run(RunBounds, bundle: [UInt8])

        var count: Int {
            switch self {
            case .changes(let changes): changes.count
            case .run(let run, _): run.count
            }
        }

        /// The replicas whose changes it holds.
        var replicas: [ReplicaID] {
            switch self {
            case .changes(let changes): changes.map(\.replica)
            case .run(let run, _): [run.replica]
            }
        }

        /// The changes, decoded: only an observed store needs them.
        var changes: [Change] {
            switch self {
            case .changes(let changes): changes
            // It decoded within the caller's limits when it was applied.
            case .run(_, let bundle):
                (try? ChangeEncoding.decode(bundle, limits: .unlimited)) ?? []
            }
        }
    }

    /// Queues commits of busy documents and returns once they are written,
    /// all in one transaction (or throws the error that kept them from being
    /// written). Lock held.
    func commit(_ commits: [QueuedCommit]) throws {
        guard !commits.isEmpty else { return }
        nextTicket += 1
        let ticket = nextTicket
        for var commit in commits {
            commit.ticket = ticket
            queue.append(commit)
        }
        while true {
            if let outcome = outcomes.removeValue(forKey: ticket) { return try outcome.get() }
            if isWriting { condition.wait() } else { writeQueuedBatch() }
        }
    }

    /// Writes every queued commit in one SQLite transaction. Lock held on
    /// entry and exit, released while writing.
    ///
    /// A commit made on a document that another process has logged changes
    /// to since it was loaded, or created since the call found it missing,
    /// is not written, nor is any other commit of its call (an apply of
    /// several documents is all or nothing): they fail with
    /// `StoreError.changedElsewhere`, and their documents are dropped, to be
    /// reloaded. (The log would take it, but a snapshot of the document in
    /// memory would then claim to hold the other process's changes.) So
    /// does a local commit made under another id than the file's: a store
    /// on the file took a new one (`discardCopy`), which this store adopts
    /// (`adoptReplica`), so that nothing is written under the retired id.
    func writeQueuedBatch() {
        isWriting = true
        var batch = queue
        queue = []
        // Read with the lock held: a last try ending meanwhile clears it.
        let lastTryHoldsWriterLock = holdsWriterLock
        condition.unlock()
        // By ticket, the first document of the call that another process wrote.
        var stale: [Int: DocumentID] = [:]
        // By ticket, the document found that a creation unless the store holds one like it gives way to.
        var found: [Int: DocumentID] = [:]
        // Shared, unless this store's own last try holds it exclusive (taking it shared would give that up).
        let sharesWriterLock = !lastTryHoldsWriterLock && writerLock?.lock(exclusive: false, within: writerLockTimeout) == true
        defer { if sharesWriterLock { writerLock?.unlock() } }
        // The log's highest seq before and after the batch's rows: those up to
        // `before` that this store has not seen are others'.
        var logged: (before: Int64, after: Int64)?
        // The file's replica id, read for a batch with local commits.
        var fileReplica: ReplicaID?
        let outcome = Result {
            try database.write { db in
                let before = try ChangeLog.highestSeq(db)
                for commit in batch where stale[commit.ticket] == nil {
                    // A local commit's query reads the file's id too: no statement of its own.
                    let rows = try db.query(sql: commit.isLocal ? Self.localCommitCurrencyQuery : Self.currencyQuery,
                                            arguments: [.text(commit.id.rawValue)])
                    // A new document is stale once another process has created it.
                    if try commit.isNew ? !rows.isEmpty : !Self.isCurrent(commit.entry, rows) { stale[commit.ticket] = commit.id }
                    guard commit.isLocal else { continue }
                    // A new document has no row to read it with.
                    if let row = rows.first, !commit.isNew { fileReplica = try row.replica(Self.fileReplicaColumn) }
                    if fileReplica == nil { fileReplica = try ReplicaIdentity.recorded(db) }
                    if let fileReplica, commit.entry.document.replica != fileReplica { stale[commit.ticket] = commit.id }
                }
                // Looked for among the file's documents and those this batch creates before it.
                var created: [DocumentID] = []
                for commit in batch where stale[commit.ticket] == nil && commit.isNew {
                    if let isSame = commit.unlessStoreHolds,
                       let same = try created.first(where: isSame) ?? Self.listedIDs(db).first(where: isSame) {
                        found[commit.ticket] = same
                    } else {
                        created.append(commit.id)
                    }
                }
                for index in batch.indices where stale[batch[index].ticket] == nil && found[batch[index].ticket] == nil {
                    try batch[index].save(db)
                }
                logged = (before, try ChangeLog.highestSeq(db))
            }
        }
        condition.lock()
        isWriting = false
        if let fileReplica { adoptReplica(fileReplica) }
        if case .success = outcome, let logged { outsideLogPlace.noteOwnRows(after: logged.before, through: logged.after) }
        for commit in batch {
            let result = stale[commit.ticket].map { .failure(StoreError.changedElsewhere($0.rawValue)) }
                ?? found[commit.ticket].map { .failure(ExistingDocument(id: $0)) } ?? outcome
            if case .success = result { didCommit(commit) } else { release(commit.id, nil) }
            outcomes[commit.ticket] = result
        }
        condition.broadcast()
    }

    /// Runs `attempt`, and again (`commitAttempts` times in all) while it
    /// fails with `StoreError.changedElsewhere`, each time after the first
    /// with `isRetry`: a retry loads its documents from the file
    /// (`takeIdle(_:fromFile:)`), so that it works on what the other process
    /// wrote. (A copy in the cache may be one another thread loaded while
    /// this call waited, before the other process's last write.) The last
    /// attempt holds `writerLock` exclusive, so that two processes writing
    /// one document flat out cannot keep racing each other. Lock held.
    func retryingChangedElsewhere<T>(_ attempt: (_ isRetry: Bool) throws -> T) throws -> T {
        for number in 1..<Self.commitAttempts {
            do { return try attempt(number > 1) } catch StoreError.changedElsewhere(_) {}
        }
        // A batch of another thread holds the lock shared until it is written;
        // another thread's last try holds it exclusive until it ends, and run
        // beside it, this one would go on without it once that one let it go.
        while isWriting || holdsWriterLock { condition.wait() }
        guard let writerLock, writerLock.lock(exclusive: true, within: writerLockTimeout) else { return try attempt(true) }
        holdsWriterLock = true
        defer {
            holdsWriterLock = false
            writerLock.unlock()
            condition.broadcast()
        }
        return try attempt(true)
    }

    static let commitAttempts = 3

    /// Makes `replica`, the file's id, the one local edits are made under,
    /// if it is not already: the documents in memory, made under the
    /// retired one, are dropped, to be loaded again under it. Lock held.
    func adoptReplica(_ replica: ReplicaID) {
        guard replica != replicaID else { return }
        currentReplica.withLock { $0 = replica }
        cache.removeAll()
    }

    /// The one place every committed change, local or remote, passes once it
    /// is on disk: observation of changes belongs here. Puts the document
    /// back in the cache and writes a snapshot when one is due. Lock held.
    private func didCommit(_ commit: QueuedCommit) {
        var entry = commit.entry
        entry.changesSinceSnapshot += commit.newChanges.reduce(0) { $0 + $1.count }
        if entry.changesSinceSnapshot >= snapshotInterval {
            // The changes are already safe in the log; a snapshot that cannot
            // be written now (say, the disk is full, or another process just
            // wrote the document) is tried again later.
            do { try writeSnapshot(commit.id, &entry) }
            catch StoreError.changedElsewhere(_) {}
            catch { warn("document \(commit.id): could not write a snapshot: \(error)") }
        }
        release(commit.id, entry)
        publish(commit)
    }

    // MARK: Locking

    /// Runs `body` with the lock held. Throws `StoreError.nestedCall` when
    /// called from inside a `read` or `edit` closure of this store.
    func locked<T>(_ body: () throws -> T) throws -> T {
        try refuseNestedCall()
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }

    /// Throws `StoreError.nestedCall` when called from inside a `read` or
    /// `edit` closure of this store, whose call holds the lock.
    func refuseNestedCall() throws {
        guard Thread.current.threadDictionary[closureMarker] == nil else { throw StoreError.nestedCall }
    }

    /// Runs a caller's closure, marked so that a call back into this store
    /// from it is recognised (waiting for the lock it holds would deadlock).
    func runningClosure<T>(_ body: () throws -> T) rethrows -> T {
        Thread.current.threadDictionary[closureMarker] = true
        defer { Thread.current.threadDictionary.removeObject(forKey: closureMarker) }
        return try body()
    }

    /// Built without interpolating the identifier, which goes through
    /// reflection: this runs on every call.
    private var closureMarker: String { "quire.DocumentStore." + String(UInt(bitPattern: ObjectIdentifier(self)), radix: 16) }

    /// Waits until no call is working on the document. Lock held.
    func waitUntilIdle(_ id: DocumentID) {
        while busy.contains(id) { condition.wait() }
    }

    /// The document, loaded if needed, once no call is working on it. Lock held.
    func loadedIdle(_ id: DocumentID) throws -> LoadedDocument {
        waitUntilIdle(id)
        if let entry = try freshCachedEntry(id) {
            cache.touch(id)
            return entry
        }
        let entry = try load(id)
        cache[id] = entry
        return entry
    }

    /// The document, taken out of the cache (so that editing it does not
    /// copy its buffers), or loaded if it is not there or `fromFile`, and
    /// marked busy. The caller ends with `release`. Lock held.
    func takeIdle(_ id: DocumentID, fromFile: Bool = false) throws -> LoadedDocument {
        waitUntilIdle(id)
        let cached = cache.removeValue(forKey: id)
        let entry = try fromFile ? load(id) : cached ?? load(id)
        busy.insert(id)
        return entry
    }

    /// The cached copy of a document, for reading, if the file holds
    /// nothing newer for it; else nil, and the copy is dropped. Another
    /// process (or another store on the same file) may have written since
    /// it was loaded. Lock held.
    ///
    /// `PRAGMA data_version` tells whether any other connection committed
    /// since the last look. While a batch is being written the connection is
    /// busy until the commit's disk sync, and waiting for it here, lock held,
    /// would keep other calls from queueing theirs: the copy is read as it is.
    /// (Edits do not look, but for a copy that says removed: a commit checks
    /// in its transaction, and an edit that missed another process's write
    /// runs again.)
    func freshCachedEntry(_ id: DocumentID) throws -> LoadedDocument? {
        guard var entry = cache[id] else { return nil }
        if isWriting { return entry }
        let dataVersion = try database.query(sql: "PRAGMA data_version")[0].int64(0)
        if entry.checkedAt == dataVersion { return entry }
        guard try Self.isCurrent(entry, database.query(sql: Self.currencyQuery, arguments: [.text(id.rawValue)])) else {
            cache[id] = nil
            return nil
        }
        entry.checkedAt = dataVersion
        cache[id] = entry
        return entry
    }

    /// A document's removal, newest log row, `log_start_seq` and number of
    /// parked rows, for `isCurrent`: one statement (a transaction around
    /// several cost several times more).
    static let currencyQuery = "SELECT \(currencyColumns) FROM documents WHERE id = ?1"

    /// `currencyQuery` with the file's replica id after its columns (at
    /// `fileReplicaColumn`), which a local commit must be made under: for a
    /// batch, one statement fewer than reading it apart.
    static let localCommitCurrencyQuery =
        "SELECT \(currencyColumns), (SELECT replica_id FROM replica WHERE singleton = 1) FROM documents WHERE id = ?1"

    static let fileReplicaColumn = 4

    private static let currencyColumns = """
        removed_at IS NOT NULL, (SELECT max(seq) FROM changes WHERE document = documents.number), log_start_seq,
               \(ParkedChanges.rowCountExpression)
        """

    /// Whether the file holds nothing of a document that `entry` lacks, by
    /// what `currencyQuery` read: the same removal, neither a log row nor a
    /// compaction after `entry.loggedThrough` (a compaction may have
    /// deleted the rows the copy lacks, which its snapshot now holds), and
    /// the same parked rows (another process may have parked a change that
    /// waits for one this copy is about to apply).
    static func isCurrent(_ entry: LoadedDocument, _ rows: [Row]) throws -> Bool {
        guard let row = rows.first else { return false }
        let lastSeq = row.isNull(1) ? 0 : try row.int64(1)
        return try row.int64(0) == (entry.isRemoved ? 1 : 0) && max(lastSeq, try row.int64(2)) <= entry.loggedThrough
            && row.int64(3) == entry.parkedRows
    }

    /// Runs `body` on a taken document and releases it: back in the cache,
    /// or dropped if `body` throws (another process may have written it,
    /// and the next call must reload it). Lock held.
    func releasing(_ id: DocumentID, _ entry: inout LoadedDocument, _ body: (inout LoadedDocument) throws -> Void) throws {
        do { try body(&entry) } catch {
            release(id, nil)
            throw error
        }
        release(id, entry)
    }

    /// Ends a call's work on a document: puts `entry` back in the cache, or
    /// with `nil` drops it so that the next call reloads it from the file,
    /// and wakes the calls waiting for it. Lock held.
    func release(_ id: DocumentID, _ entry: LoadedDocument?) {
        cache[id] = entry
        busy.remove(id)
        condition.broadcast()
    }
}
