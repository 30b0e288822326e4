// Observing a store: streams of `DocumentEvent`s, one per commit that
// applied changes, delivered after the commit (another writer's, once
// found: DocumentStore+OutsideCommits.swift). See Specs/storage.md,
// "Observation".
extension DocumentStore {
    /// The changes committed to one document from now on, local and remote,
    /// one event per commit, in commit order. Ending the iteration (or
    /// cancelling the task that iterates) unregisters the observer.
    ///
    /// The stream holds the commits made after this call, not after the
    /// iteration starts: make it before the task that iterates it, or a
    /// commit made before the task runs is missed.
    ///
    ///     let events = store.events(of: id)
    ///     Task {
    ///         for await event in events {
    ///             print(event.origin, event.changedKeys[.root] ?? [])
    ///         }
    ///     }
    ///     try store.edit(id) { tx in try tx.put(.root, key: "done", .bool(true)) }
    ///     // prints "local ["done"]"
    ///
    /// Removing or restoring the document makes an event with no changes
    /// whose `isRemoved` says which (one whose mark does not change, none):
    ///
    ///     for await event in store.events(of: shown) {
    ///         if event.isRemoved { closeEditor(); break }
    ///         refresh(event.changedObjects)
    ///     }
    ///
    /// Otherwise only changes that were applied make an event: a remote change parked
    /// for a missing dependency makes one when it is finally applied; a
    /// duplicate makes none. What another process, or another
    /// `DocumentStore` on the same file, commits makes an `.outside` event
    /// once this store looks for it: `checkForOutsideCommits()`, or
    /// `watchOutsideCommits(every:)` to look on a timer while a stream is open.
    ///
    ///     store.watchOutsideCommits()
    ///     for await event in store.events(of: id) where event.origin == .outside {
    ///         refreshNote()  // `quire sync` brought changes
    ///     }
    ///
    /// The stream buffers without bound, so a slow
    /// consumer loses nothing; it ends when the store is closed or released
    /// (at once, if asked for after `close()`).
    public func events(of id: DocumentID) -> AsyncStream<DocumentEvent> {
        defer { outsideWatch.observersChanged() }
        return observers.stream(of: id)
    }

    /// The changes committed to every document from now on; as `events(of:)`.
    ///
    ///     for await event in store.allEvents() { reloadList(event.document) }
    public func allEvents() -> AsyncStream<DocumentEvent> {
        defer { outsideWatch.observersChanged() }
        return observers.stream(of: nil)
    }

    /// Tells the observers of a document whose copy `discardCopy` dropped
    /// (`dropped`, as loaded; nil if it was not, or did not load) that all
    /// of it may have changed: it holds nothing now, and a sync brings the
    /// peer's copy. Lock held.
    func publishDropped(_ id: DocumentID, _ dropped: LoadedDocument?) {
        guard !observers.isEmpty else { return }
        // A copy that did not load names its root at least.
        let (objects, keys) = dropped.map { Self.everything(in: $0.document) } ?? ([.root], [:])
        observers.publish(DocumentEvent(document: id, origin: .local, changeIDs: [], versionVector: VersionVector(),
                                        changedObjects: objects, changedKeys: keys))
    }

    /// Tells the observers about a commit that is on disk. Lock held, so
    /// events go out in commit order.
    func publish(_ commit: QueuedCommit) {
        guard !commit.newChanges.isEmpty, !observers.isEmpty else { return }
        observers.publish(DocumentEvent(
            document: commit.id, origin: commit.isLocal ? .local : .remote,
            changes: commit.newChanges.flatMap(\.changes), versionVector: commit.entry.document.versionVector,
            isRemoved: commit.entry.isRemoved))
    }
}
