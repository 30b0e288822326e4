import QuireCore

/// What can go wrong in a Quire store above the SQLite layer. SQLite's own
/// failures (disk full, read-only file...) stay `DatabaseError`s.
public enum StoreError: Error, Hashable, Sendable, DescribedError {
    /// No document with this id is in the store.
    case noSuchDocument(String)
    /// `create` with an id that is already taken.
    case documentExists(String)
    /// A local edit of a removed document; `restore` it first.
    case documentRemoved(String)
    /// A stored change failed its checksum or does not decode.
    case corruptChange(document: String, seq: Int64, reason: String)
    /// The changes after the newest usable snapshot are not all in the log
    /// any more (they were compacted away), so the document cannot be rebuilt.
    case unrecoverableDocument(String, reason: String)
    /// A file whose schema a newer program wrote, or a read-only open of
    /// one whose schema is older (opening it for writing migrates it).
    case unsupportedSchema(found: Int, expected: Int)
    /// A file that holds another program's tables (`StoreSchema.foreignKind`),
    /// left as it was.
    case notAStore(path: String, kind: String)
    /// A call on a `DocumentStore` from inside one of its own `read` or
    /// `edit` closures; use the document or transaction the closure got.
    case nestedCall
    /// The peer asked for changes that compaction removed; it needs a snapshot.
    case historyCompacted(String)
    /// Another process (or another store on the same file) kept writing the
    /// document while a call (an edit, apply, snapshot or compaction) was
    /// retried; nothing of the call was saved.
    case changedElsewhere(String)
    /// `backup(to:)` found a file at the destination, and was not told to
    /// replace it.
    case backupDestinationExists(String)
    /// `backup(to:)` cannot write the destination: it is the store itself,
    /// a folder, or a store another program may have open.
    case backupRefused(path: String, reason: String)

    /// The document a damaged store cannot read, for errors that say so:
    /// the store's other documents are not affected.
    public var damagedDocument: String? {
        switch self {
        case .corruptChange(let document, _, _), .unrecoverableDocument(let document, _): document
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .noSuchDocument(let id): "no document \(id) in this store"
        case .documentExists(let id): "a document \(id) already exists"
        case .documentRemoved(let id): "document \(id) is removed; restore it to edit it"
        case let .corruptChange(document, seq, reason): "change \(seq) of document \(document) is corrupt: \(reason)"
        case let .unrecoverableDocument(id, reason): "document \(id) cannot be loaded: \(reason)"
        case let .unsupportedSchema(found, expected) where found > expected:
            "the store's schema version is \(found), newer than this program's \(expected): "
                + "it was written by a newer version of Quire, which is needed to open it"
        case let .unsupportedSchema(found, expected):
            "the store's schema version is \(found), older than this program's \(expected), and a read-only open cannot upgrade it: "
                + "open it once for writing, which does"
        case let .notAStore(path, kind): "\(path) is \(kind); give the path of a store file"
        case .nestedCall: "the document store was called from inside its own read or edit closure"
        case .historyCompacted(let id): "the history of document \(id) asked for was compacted away"
        case .changedElsewhere(let id): "document \(id) kept changing in another process meanwhile, and nothing of this call was saved; try again"
        case .backupDestinationExists(let path): "cannot back up to \(path): a file is there already; give a new path, or replace it explicitly"
        case let .backupRefused(path, reason): "cannot back up to \(path): \(reason)"
        }
    }
}

extension Error {
    /// Whether this failure, thrown while reading document `id`, says the
    /// store's copy of it is damaged: a change or snapshot of it that fails
    /// its checks (`StoreError.damagedDocument`), or a damaged page of the
    /// file (SQLite's `SQLITE_CORRUPT`) met while reading it.
    public func isDamage(ofDocument id: String) -> Bool {
        (self as? StoreError)?.damagedDocument == id || isDamagedPage
    }

    /// Whether SQLite found a page of the file damaged (`SQLITE_CORRUPT`).
    public var isDamagedPage: Bool { (self as? DatabaseError)?.fileProblem == .damaged }
}
