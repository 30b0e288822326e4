import Foundation

extension DocumentStore {
    /// This store's calls as `async` functions, for the main actor and for
    /// tasks: each runs the store's own synchronous call on a thread kept for
    /// store calls, off Swift's cooperative pool, so that its waits (a commit's
    /// disk sync, another process's lock) block neither the main actor nor
    /// the pool.
    ///
    /// ```swift
    /// @MainActor func save(_ note: Note, of id: DocumentID) async throws {
    ///     try await store.async.edit(id) { tx in try tx.write(note, into: .root) }
    /// }
    /// ```
    public var async: AsyncDocumentStore { AsyncDocumentStore(store: self) }

    /// `init(path:readOnly:snapshotInterval:cachedDocuments:onWarning:)` run
    /// on a thread kept for store calls, for the main actor: opening may
    /// upgrade the file's schema, or vacuum a file mostly free (up to 32 MiB
    /// copied, about 0.3 s for 5.6 MB), and waits for another process's lock.
    /// Cancellation is as for the calls of `async`.
    ///
    /// ```swift
    /// @MainActor func launch() async throws {
    ///     let store = try await DocumentStore.open(path: "notes.quire")
    /// }
    /// ```
    public static func open(path: String, readOnly: Bool = false, snapshotInterval: Int = 1000, cachedDocuments: Int = 1000,
                            onWarning: @escaping @Sendable (String) -> Void = DocumentStore.printWarning) async throws -> DocumentStore {
        try await CallThreads().run {
            try DocumentStore(path: path, readOnly: readOnly, snapshotInterval: snapshotInterval,
                              cachedDocuments: cachedDocuments, onWarning: onWarning)
        }
    }
}

/// A `DocumentStore`'s calls as `async` functions: `store.async`.
///
/// ```swift
/// let store = try DocumentStore(path: "notes.quire")
/// let id = try await store.async.createDocument { tx in
///     try tx.write(Note(title: "Milk", tags: [], due: nil), into: .root)
/// }
/// let note = try await store.async.read(id) { doc in try doc.read(Note.self, from: .root) }
/// ```
///
/// Each call is the synchronous call of the same name, run on a thread kept
/// for store calls (at most 16 of a store's at once; more wait their turn), with the
/// same result, the same errors and the same rules (`Specs/storage.md`,
/// "Async calls"):
///
/// - **Cancellation.** A call whose task is cancelled before it has started
///   throws `CancellationError` and does nothing. Once started it runs to
///   its end, and its result or error is returned though the task was
///   cancelled meanwhile: an edit that has begun to commit is saved whole
///   or not at all, never in part, and the caller learns which.
/// - **Order.** A call returns once it is done (an edit once committed),
///   so the calls one task awaits in turn happen in that order. Calls in
///   flight at once from several tasks happen in no set order, as calls
///   from several threads do; edits of different documents among them
///   share one commit.
/// - **Closures** run on a thread kept for store calls, not on the caller's actor:
///   they must be `@Sendable` and capture only `Sendable` values (a struct
///   of `Sendable` fields, a `Document`), and what they return must be
///   `Sendable`. A call on the store from inside one throws
///   `StoreError.nestedCall`, as in the synchronous API.
public struct AsyncDocumentStore: Sendable {
    /// The store whose calls these are.
    public let store: DocumentStore

    /// Runs `work` on a thread kept for store calls and returns what it
    /// returns: the way every call here runs, and a way to make several
    /// synchronous calls that belong together off the caller's thread in
    /// one go. Each call in `work` is its own transaction, as it would be
    /// anywhere: `work` is not atomic. Cancellation is as for any call here:
    /// `work` never starts (its task was cancelled first) or runs to its end.
    ///
    /// ```swift
    /// let (versions, unsent) = try await store.async.perform { store in
    ///     (try store.versionVectors(), try store.outbox(peer: "server"))
    /// }
    /// ```
    public func perform<T: Sendable>(_ work: @escaping @Sendable (DocumentStore) throws -> T) async throws -> T {
        try await store.callThreads.run { [store] in try work(store) }
    }

    // MARK: Reading and editing

    /// `DocumentStore.read(_:_:)`: runs `body` with the document's current
    /// state and returns what it returns.
    ///
    /// ```swift
    /// let note = try await store.async.read(id) { doc in try doc.read(Note.self, from: .root) }
    /// // With the reading to save a form's edits against (`edit`):
    /// let (form, seen) = try await store.async.read(id) { doc in (try doc.read(Note.self, from: .root), doc) }
    /// ```
    public func read<Result: Sendable>(_ id: DocumentID, _ body: @escaping @Sendable (Document) throws -> Result) async throws -> Result {
        try await perform { store in try store.read(id, body) }
    }

    /// `DocumentStore.edit(_:time:_:)`: runs `body` as one local transaction
    /// and returns once its change is committed to disk.
    ///
    /// ```swift
    /// var (form, seen) = try await store.async.read(id) { doc in (try doc.read(Note.self, from: .root), doc) }
    /// form.title = "Oat milk"                           // the person edits it
    /// seen = try await store.async.edit(id) { [form, seen] tx in
    ///     try tx.write(form, into: .root, editedFrom: seen)
    ///     return tx.document                            // the next save's reading
    /// }
    /// ```
    ///
    /// - Parameter time: recorded with the change, as for the synchronous
    ///   `edit`; by default, when the call is made.
    @discardableResult
    public func edit<Result: Sendable>(_ id: DocumentID, time: Date = Date(),
                                       _ body: @escaping @Sendable (inout Transaction) throws -> Result) async throws -> Result {
        try await perform { store in try store.edit(id, time: time, body) }
    }

    // MARK: Documents

    /// `DocumentStore.createDocument(id:time:_:)`: a new document and its first
    /// change, in one commit.
    ///
    /// ```swift
    /// let id = try await store.async.createDocument { tx in
    ///     try tx.write(Note(title: "", tags: [], due: nil), into: .root)
    /// }
    /// ```
    public func createDocument(id: DocumentID = .generate(), time: Date = Date(),
                               _ body: @escaping @Sendable (inout Transaction) throws -> Void) async throws -> DocumentID {
        try await perform { store in try store.createDocument(id: id, time: time, body) }
    }

    /// `DocumentStore.createDocument()`: an empty document with a new UUIDv7 id.
    public func createDocument() async throws -> DocumentID {
        try await perform { store in try store.createDocument() }
    }

    /// `DocumentStore.create(id:)`: an empty document with a client-made id.
    ///
    /// ```swift
    /// try await store.async.create(id: "groceries")
    /// ```
    public func create(id: DocumentID) async throws {
        try await perform { store in try store.create(id: id) }
    }

    /// `DocumentStore.documents(includeRemoved:)`: every document, in id order.
    ///
    /// ```swift
    /// let shown = try await store.async.documents().map(\.id)
    /// ```
    public func documents(includeRemoved: Bool = false) async throws -> [DocumentInfo] {
        try await perform { store in try store.documents(includeRemoved: includeRemoved) }
    }

    /// `DocumentStore.lastChangeTime(_:)`: the time of the document's newest change.
    public func lastChangeTime(_ id: DocumentID) async throws -> Date? {
        try await perform { store in try store.lastChangeTime(id) }
    }

    /// `DocumentStore.remove(_:)`: marks a document removed.
    public func remove(_ id: DocumentID) async throws {
        try await perform { store in try store.remove(id) }
    }

    /// `DocumentStore.restore(_:)`: clears a document's removed mark.
    public func restore(_ id: DocumentID) async throws {
        try await perform { store in try store.restore(id) }
    }

    /// `DocumentStore.checkForOutsideCommits()`: looks for what other
    /// processes committed, sends their events and returns them.
    ///
    /// ```swift
    /// // The app came to the front:
    /// let changed = try await store.async.checkForOutsideCommits().map(\.document)
    /// ```
    @discardableResult
    public func checkForOutsideCommits() async throws -> [DocumentEvent] {
        try await perform { store in try store.checkForOutsideCommits() }
    }

    /// `DocumentStore.close()`: waits for the calls in progress, then closes the file.
    public func close() async throws {
        try await perform { store in try store.close() }
    }

    // MARK: History and sync

    /// `DocumentStore.versionVector(_:)`: the operations the store holds of a document.
    public func versionVector(_ id: DocumentID) async throws -> VersionVector {
        try await perform { store in try store.versionVector(id) }
    }

    /// `DocumentStore.changes(_:since:limit:)`: the logged changes `version` lacks.
    public func changes(_ id: DocumentID, since version: VersionVector = VersionVector(), limit: Int = .max) async throws -> [Change] {
        try await perform { store in try store.changes(id, since: version, limit: limit) }
    }

    /// `DocumentStore.apply(_:_:)`: applies remote changes, all or nothing,
    /// in one commit; returns how many were applied.
    @discardableResult
    public func apply(_ id: DocumentID, _ changes: [Change]) async throws -> Int {
        try await perform { store in try store.apply(id, changes) }
    }

    /// `DocumentStore.outbox(peer:)`: the local changes `peer` has not
    /// acknowledged; with no peer named (nil), those no peer has.
    public func outbox(peer: String?) async throws -> [DocumentID: [Change]] {
        try await perform { store in try store.outbox(peer: peer) }
    }

    /// `DocumentStore.acknowledge(peer:id:version:)`: records that `peer`
    /// holds `version` of a document.
    public func acknowledge(peer: String, id: DocumentID, version: VersionVector) async throws {
        try await perform { store in try store.acknowledge(peer: peer, id: id, version: version) }
    }

    // MARK: Snapshots and compaction

    /// `DocumentStore.snapshot(_:)`: writes a snapshot of the document now.
    public func snapshot(_ id: DocumentID) async throws {
        try await perform { store in try store.snapshot(id) }
    }

    /// `DocumentStore.compact(_:keepHistory:)`: writes a snapshot and
    /// deletes what it makes unnecessary.
    public func compact(_ id: DocumentID, keepHistory: Bool) async throws {
        try await perform { store in try store.compact(id, keepHistory: keepHistory) }
    }

    /// `DocumentStore.backup(to:replacing:)`: writes a copy of the store,
    /// which takes as long as writing the whole file.
    ///
    /// ```swift
    /// try await store.async.backup(to: "/Volumes/Backup/notes-2026-12-05.quire")
    /// ```
    public func backup(to destination: String, replacing: Bool = false) async throws {
        try await perform { store in try store.backup(to: destination, replacing: replacing) }
    }
}
