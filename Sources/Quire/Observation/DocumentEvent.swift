/// What one commit changed in one document: a local edit, a batch of
/// remote changes applied, what another writer of the file committed
/// (`.outside`), or the document removed or restored (`isRemoved`, with no
/// changes). Delivered by `DocumentStore.events(of:)` and
/// `DocumentStore.allEvents()` once the commit is on disk.
///
///     for await event in store.events(of: id) {
///         if event.isRemoved { closeEditor() }
///         if event.changedObjects.contains(body) { refreshBody() }
///     }
public struct DocumentEvent: Sendable, Equatable {
    /// Where the changes came from.
    public enum Origin: Sendable, Equatable {
        /// `DocumentStore.edit`, `remove` or `restore` on this store, or
        /// `discardCopy` dropping the document's copy (no changes, every
        /// object and key it held, the empty version vector).
        case local
        /// `DocumentStore.apply`: changes from another replica.
        case remote
        /// Committed to the file by another process (a `quire sync`, a
        /// `quire note edit`) or another `DocumentStore` on it, and found by
        /// `checkForOutsideCommits()` or the watch of
        /// `watchOutsideCommits(every:)`. One event holds everything found
        /// of the document at once, which may be several commits.
        case outside
    }

    /// The document that changed.
    public var document: DocumentID
    /// Who committed it: this store, a sync through it, or another writer
    /// of the file.
    public var origin: Origin
    /// The id of each applied change, in the order applied. A remote batch
    /// can hold changes that were parked earlier and became ready with it.
    /// An outside event lacks those another process compacted away before
    /// this store looked (`versionVector` still covers them).
    public var changeIDs: [OpID]
    /// The document's version vector after the commit.
    public var versionVector: VersionVector
    /// Every object an operation of the changes acted on (maps, lists,
    /// texts, counters). An object created by the changes appears only once
    /// something is written into it; its parent appears because it was written.
    /// When changes of an outside event could not be read (compacted away,
    /// or damaged), every object the document holds, as none can be ruled out.
    public var changedObjects: Set<ObjectID>
    /// For each map in `changedObjects`, the keys that were written or removed
    /// (in the case above, every key the map holds: a key the unreadable
    /// changes removed is not named, but its map is). A text or list edited
    /// in place names no key: a `String` field the Codable bridge changed
    /// (a note retitled) is its text object, in `changedObjects`:
    ///
    ///     let retitled = try store.read(id) { doc in
    ///         guard case .object(_, let title)? = try doc.get(.root, key: "title") else { return false }
    ///         return event.changedObjects.contains(title) || event.changedKeys[.root]?.contains("title") == true
    ///     }
    public var changedKeys: [ObjectID: Set<String>]
    /// Whether the document is marked removed after the commit. Removing
    /// and restoring it on this store (`DocumentStore.remove`, `restore`)
    /// each make an event of their own, `.local`, with no changes, so that
    /// a view showing the document learns it went; remote changes to a
    /// removed document are still applied, and their events say it is
    /// removed. Another store's (or process's) removal or restore makes an
    /// `.outside` event with no changes when this store looks
    /// (`checkForOutsideCommits()`).
    public var isRemoved: Bool

    public init(document: DocumentID, origin: Origin, changeIDs: [OpID], versionVector: VersionVector,
                changedObjects: Set<ObjectID>, changedKeys: [ObjectID: Set<String>], isRemoved: Bool = false) {
        self.document = document
        self.origin = origin
        self.changeIDs = changeIDs
        self.versionVector = versionVector
        self.changedObjects = changedObjects
        self.changedKeys = changedKeys
        self.isRemoved = isRemoved
    }

    /// The event for `changes`, committed to `document`, with what their
    /// operations touched.
    init(document: DocumentID, origin: Origin, changes: [Change], versionVector: VersionVector, isRemoved: Bool) {
        var objects: Set<ObjectID> = []
        var keys: [ObjectID: Set<String>] = [:]
        for change in changes {
            for operation in change.operations {
                objects.insert(operation.object)
                switch operation {
                case let .put(map, key, _, _), let .remove(map, key, _):
                    keys[map, default: []].insert(key)
                case .insert, .delete, .increment:
                    break
                }
            }
        }
        self.init(document: document, origin: origin, changeIDs: changes.map(\.id), versionVector: versionVector,
                  changedObjects: objects, changedKeys: keys, isRemoved: isRemoved)
    }
}
