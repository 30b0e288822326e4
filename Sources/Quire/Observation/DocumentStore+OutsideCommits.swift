import Foundation

// Events for what others commit to the store's file: another process (a
// `quire sync` from cron, `quire note edit`) or another `DocumentStore` on
// it. See Specs/storage.md, "Observation".
//
// The log's `seq` says what is new: the store keeps its place in it
// (`outsideLogPlace`), and every row after that place is another writer's,
// but for the rows of this store's own batches, which move the place past
// them (`OutsidePlace.noteOwnRows`). A removal or restore logs no change:
// it replaces its document's row of `removal_marks` under a new `seq`,
// where the store keeps a place the same way (`outsideRemovalPlace`).
// `PRAGMA data_version` says cheaply whether anyone else committed at all.
extension DocumentStore {
    /// Looks for commits that others made to the file since the last look
    /// (or since the store was opened): another process, such as `quire
    /// sync` or `quire note edit`, or another `DocumentStore` on the same
    /// file. Sends one `.outside` event per document they changed, removed
    /// or restored to the streams of `events(of:)` and `allEvents()`, and
    /// returns those events. A removal or restore alone makes one with no
    /// changes, whose `isRemoved` says which.
    /// A cached copy of such a document is brought up to date first, so
    /// that a read made on the event shows the new state.
    ///
    /// When nobody else committed, it costs one SQLite pragma and returns
    /// no event. `watchOutsideCommits(every:)` calls it on a timer.
    ///
    ///     // A notes app, when it comes to the foreground:
    ///     for event in try store.checkForOutsideCommits() where event.document == shownNote {
    ///         reloadShownNote()
    ///     }
    ///
    /// Each outside commit is in exactly one event, and this store's own
    /// commits are never in one. An event can come after events of
    /// this store's commits that the file holds after it.
    @discardableResult
    public func checkForOutsideCommits() throws -> [DocumentEvent] {
        try locked {
            // A batch being written is in the file but not yet noted as this store's own.
            while isWriting { condition.wait() }
            let events = try findOutsideCommits()
            for event in events { observers.publish(event) }
            return events
        }
    }

    /// Starts a background thread that calls `checkForOutsideCommits()`
    /// every `interval` seconds while someone observes the store (a stream
    /// of `events(of:)` or `allEvents()` is open), so that the streams get
    /// `.outside` events without an explicit call. With no stream open, the
    /// thread waits and looks at nothing. It stops on
    /// `stopWatchingOutsideCommits()`, `close()`, or when the store is
    /// released. Calling it again changes the interval, which must be a
    /// positive number of seconds (a precondition, as for an array index:
    /// 0 or `.nan` stops the program). A look that fails
    /// (say, the file stays locked past the busy timeout) goes to the
    /// store's `onWarning` handler, once until a look succeeds again.
    ///
    ///     let store = try DocumentStore(path: "notes.quire")
    ///     store.watchOutsideCommits(every: 0.5)
    ///     for await event in store.events(of: shownNote) where event.origin == .outside {
    ///         reloadShownNote()  // `quire sync` brought changes
    ///     }
    public func watchOutsideCommits(every interval: TimeInterval = 0.25) {
        precondition(interval > 0, "the interval must be positive")
        outsideWatch.start(every: interval, observers: observers) { [weak self] in
            guard let self else { return false }
            lookForOutsideCommits()
            return true
        }
    }

    /// Stops the thread of `watchOutsideCommits(every:)`, if one runs, and
    /// returns once it has stopped. Throws `StoreError.nestedCall` from
    /// inside a `read` or `edit` closure, whose lock the thread's look may
    /// be waiting for.
    public func stopWatchingOutsideCommits() throws {
        try refuseNestedCall()
        outsideWatch.stop()
    }

    /// One look of the watch: a failure goes to the warning handler, unless
    /// it is the same as the previous look's.
    private func lookForOutsideCommits() {
        do {
            try checkForOutsideCommits()
            _ = outsideWatch.isNewFailure(nil)
        } catch {
            let message = "could not look for other processes' commits: \(error)"
            if outsideWatch.isNewFailure(message) { try? locked { warn(message) } }
        }
    }

    /// Starts the looks for others' commits at what the file holds now.
    func placeOutsideLookAtPresent() throws {
        try database.read { db in
            outsideLogPlace = OutsidePlace(at: try ChangeLog.highestSeq(db))
            outsideRemovalPlace = OutsidePlace(at: try RemovalMarks.highestSeq(db))
        }
    }

    /// What others committed to one document, as read from the log.
    private struct OutsideCommit {
        let document: String
        var changes: [Change] = []
        /// Some of its changes could not be read: another process compacted
        /// them away, or their row is damaged.
        var isPartial = false
        var version = VersionVector()
        var isRemoved = false
    }

    /// The events of what others committed since the last look, with
    /// stale cached copies reloaded. Lock held, no batch being written.
    private func findOutsideCommits() throws -> [DocumentEvent] {
        // Read before the log: a commit in between is then found twice over
        // (the second time, nothing new), never missed.
        let dataVersion = try database.query(sql: "PRAGMA data_version")[0].int64(0)
        guard dataVersion != outsideCheckedAt else { return [] }
        let (highest, highestMark, commits, damage) = try database.read { db in
            let highest = try ChangeLog.highestSeq(db)
            let ranges = outsideLogPlace.unexaminedRows(upTo: highest)
            var commits: [OutsideCommit] = []
            var positions: [String: Int] = [:]
            func commit(_ document: String) -> Int {
                if let index = positions[document] { return index }
                positions[document] = commits.count
                commits.append(OutsideCommit(document: document))
                return commits.count - 1
            }
            var damage: [String] = []
            var rowCount = 0
            for range in ranges {
                for row in try ChangeLog.rows(in: range, db) {
                    rowCount += 1
                    let index = commit(row.document)
                    switch row.changes {
                    case .success(let changes): commits[index].changes += changes
                    case .failure(let error):
                        commits[index].isPartial = true
                        damage.append("a change another process logged: \(error)")
                    }
                }
            }
            // Fewer rows than seqs: another process compacted some away. Its
            // compaction set `log_start_seq` to a row of the document at or
            // after the one deleted.
            if let first = ranges.first, rowCount < ranges.reduce(0, { $0 + $1.count }) {
                for row in try db.query(sql: "SELECT id FROM documents WHERE log_start_seq >= ?", arguments: [.integer(first.lowerBound)]) {
                    commits[commit(try row.text(0))].isPartial = true
                }
            }
            // Removed or restored: the event, with no change unless the log had some, reads the mark below.
            let highestMark = try RemovalMarks.highestSeq(db)
            for range in outsideRemovalPlace.unexaminedRows(upTo: highestMark) {
                for document in try RemovalMarks.documents(markedIn: range, db) { _ = commit(document) }
            }
            for index in commits.indices {
                commits[index].version = try DocumentVersions.version(document: commits[index].document, db)
                commits[index].isRemoved = try DocumentStore.isRemoved(commits[index].document, db)
            }
            return (highest, highestMark, commits, damage)
        }
        outsideLogPlace.examined(through: highest)
        outsideRemovalPlace.examined(through: highestMark)
        outsideCheckedAt = dataVersion
        for message in damage { warn(message) }
        return try commits.map { commit in
            let id = try DocumentID(stored: commit.document)
            var event = DocumentEvent(document: id, origin: .outside, changes: commit.changes, versionVector: commit.version,
                                      isRemoved: commit.isRemoved)
            // A copy in use is brought up to date now; a partial event needs the document.
            guard commit.isPartial || cache[id] != nil else { return event }
            do {
                let document = try loadedIdle(id).document
                if commit.isPartial { (event.changedObjects, event.changedKeys) = Self.everything(in: document) }
            } catch {
                warn("document \(id) changed in another process, and does not load: \(error)")
            }
            return event
        }
    }

    /// Every object reachable from the root and every key of each map: what
    /// changes that could not be read may have touched (or what a dropped
    /// copy held, `publishDropped`).
    static func everything(in document: Document) -> (objects: Set<ObjectID>, keys: [ObjectID: Set<String>]) {
        var objects: Set<ObjectID> = [.root], keys: [ObjectID: Set<String>] = [:]
        var unvisited: [(ObjectKind, ObjectID)] = [(.map, .root)]
        while let (kind, object) = unvisited.popLast() {
            let values: [Value]
            switch kind {
            case .map:
                let mapKeys = (try? document.keys(object)) ?? []
                keys[object] = Set(mapKeys)
                values = mapKeys.compactMap { try? document.get(object, key: $0) }
            case .list:
                values = (try? document.list(object)) ?? []
            case .text, .counter:
                values = []
            }
            for case let .object(kind, child) in values where objects.insert(child).inserted {
                unvisited.append((kind, child))
            }
        }
        return (objects, keys)
    }
}

/// A store's place in one of the file's AUTOINCREMENT sequences that
/// other writers share (the log's `seq`, the removal marks'): every row up
/// to it is this store's own or has been looked at, but for the ranges
/// others wrote just before one of this store's writes.
struct OutsidePlace {
    private var position: Int64
    /// Rows below `position` not looked at yet.
    private var unexamined: [ClosedRange<Int64>] = []

    init(at position: Int64) {
        self.position = position
    }

    /// Records that this store wrote the rows after `before` through
    /// `after`, in one transaction: rows up to `before` past the place are
    /// others', to look at later.
    mutating func noteOwnRows(after before: Int64, through after: Int64) {
        if before > position { unexamined.append(position + 1 ... before) }
        position = after
    }

    /// The rows others wrote that no look has examined, when `highest` is
    /// the highest `seq` given so far.
    func unexaminedRows(upTo highest: Int64) -> [ClosedRange<Int64>] {
        unexamined + (highest > position ? [position + 1 ... highest] : [])
    }

    /// A look examined every row through `highest`.
    mutating func examined(through highest: Int64) {
        position = highest
        unexamined = []
    }
}

/// The thread of `DocumentStore.watchOutsideCommits(every:)`. It holds the
/// store weakly (through the look it is given), so a store released stops
/// it, and it sleeps on a condition, never spins: until a stream of the
/// store is open, then `interval` between looks.
final class OutsideCommitWatch: @unchecked Sendable {
    // @unchecked: every `var` is guarded by `condition`.
    private let condition = NSCondition()
    /// Bumped by each `start` and `stop`: a thread whose generation is past
    /// ends.
    private var generation = 0
    private var interval: TimeInterval = 0
    /// Threads still running, so that `stop` can wait for them.
    private var running = 0
    /// The last look's failure, not reported again until a look succeeds.
    private var lastFailure: String?
    /// The store is closed: no thread starts any more.
    private var isClosed = false

    /// Starts a thread (ending any running one) that calls `look` every
    /// `interval` while `observers` has any, until `look` returns false
    /// (the store is gone). Does nothing once `stop(forever:)` ran.
    func start(every interval: TimeInterval, observers: Observers, look: @escaping @Sendable () -> Bool) {
        condition.lock()
        defer { condition.unlock() }
        guard !isClosed else { return }
        generation += 1
        self.interval = interval
        running += 1
        let generation = generation
        condition.broadcast()
        let thread = Thread { [self] in run(generation, observers, look) }
        thread.name = "quire.outside-commits"
        thread.start()
    }

    /// Ends the thread, if one runs, and returns once it has ended (its
    /// look in progress finished), unless called from that thread (by the
    /// store's warning handler), which ends when it returns; with `forever`
    /// (the store is closed), `start` does nothing after it.
    func stop(forever: Bool = false) {
        condition.lock()
        defer { condition.unlock() }
        generation += 1
        isClosed = isClosed || forever
        condition.broadcast()
        while running > 0 && Thread.current.threadDictionary[threadMarker] == nil { condition.wait() }
    }

    /// Whether a thread runs; for tests.
    var isRunning: Bool { condition.withLock { running > 0 } }

    /// Marks the thread, so that `stop` from it does not wait for itself.
    private var threadMarker: String { "quire.OutsideCommitWatch." + String(UInt(bitPattern: ObjectIdentifier(self)), radix: 16) }

    /// Ends the thread without waiting for it: for the store's `deinit`,
    /// which may run on that very thread.
    func end() {
        condition.lock()
        defer { condition.unlock() }
        generation += 1
        isClosed = true
        condition.broadcast()
    }

    /// Wakes the thread, which sleeps while nobody observes.
    func observersChanged() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Whether a look's `failure` (nil: it succeeded) differs from the last
    /// one's, which it then becomes.
    func isNewFailure(_ failure: String?) -> Bool {
        condition.lock()
        defer {
            lastFailure = failure
            condition.unlock()
        }
        return failure != lastFailure
    }

    private func run(_ generation: Int, _ observers: Observers, _ look: @Sendable () -> Bool) {
        Thread.current.threadDictionary[threadMarker] = true
        condition.lock()
        defer {
            running -= 1
            condition.broadcast()
            condition.unlock()
        }
        while generation == self.generation {
            if observers.isEmpty {
                condition.wait()
                continue
            }
            _ = condition.wait(until: Date(timeIntervalSinceNow: interval))
            guard generation == self.generation, !observers.isEmpty else { continue }
            condition.unlock()
            let goOn = look()
            condition.lock()
            if !goOn { return }
        }
    }
}
