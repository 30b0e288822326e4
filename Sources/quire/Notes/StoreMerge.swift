import Quire

/// Merging another store file into this one (`quire merge`): per document,
/// the changes each side lacks and the conflicts merging would make.
/// Planning reads both stores and writes nothing; `apply` writes only to
/// this store.
struct StoreMerge {
    struct DocumentPlan {
        let id: DocumentID
        /// The note's title once merged.
        let title: String
        /// Only in the other store: merging creates it here.
        let isNew: Bool
        /// Removed once merged (`note list` leaves it out then).
        let isRemoved: Bool
        /// The other store's changes this one lacks, in a causal order.
        let incoming: [Change]
        /// How many of this store's changes the other lacks; nil when this
        /// store compacted some of them away: it cannot count them, and
        /// merging it into the other cannot bring them.
        let outgoing: Int?
        /// Keys where merging makes a conflict that is not here now;
        /// `removed` too when a removal merged in (or kept) hides edits it
        /// had not seen, as `conflicts` lists it.
        let newConflicts: [String]
    }

    /// A note the other store holds changes of that this one lacks, but
    /// whose history it compacted away (`StoreError.historyCompacted`): it
    /// cannot give them, so the note is not merged, and stays as it is here.
    struct CompactedDocument {
        let id: DocumentID
        /// Its title here, or in the other store for a note only there.
        let title: String
    }

    let documents: [DocumentPlan]
    let compacted: [CompactedDocument]

    init(into store: DocumentStore, from other: DocumentStore) throws {
        let mine = Set(try store.documents(includeRemoved: true).map(\.id))
        let theirs = try other.documents(includeRemoved: true).map(\.id)
        var plans: [DocumentPlan] = [], compacted: [CompactedDocument] = []
        for id in Set(theirs).union(mine).sorted() {
            let isMine = mine.contains(id), isTheirs = theirs.contains(id)
            let myVersion = isMine ? try store.read(id) { $0.versionVector } : VersionVector()
            let theirVersion = isTheirs ? try other.read(id) { $0.versionVector } : VersionVector()
            let incoming: [Change]
            do { incoming = isTheirs ? try other.changes(id, since: myVersion) : [] } catch StoreError.historyCompacted {
                let shown = try (isMine ? store : other).read(id) { $0 }
                compacted.append(CompactedDocument(id: id, title: try Note(id: id, document: shown).title))
                continue
            }
            let outgoing: Int?
            do { outgoing = isMine ? try store.changes(id, since: theirVersion).count : 0 } catch StoreError.historyCompacted {
                outgoing = nil
            }
            // Unknown outgoing changes (nil) are some.
            guard !incoming.isEmpty || outgoing != 0 else { continue }
            // The merge made in memory only, to see its result and conflicts.
            let current = isMine ? try store.read(id) { $0 } : Document(replica: store.replicaID)
            var merged = current
            try merged.apply(incoming)
            let isRemoved = try Note.isRemoved(merged)
            // A removal that hides edits it did not see is a conflict only
            // with the note's history: read for a note removed once merged.
            let myLog = isRemoved ? try Self.loggedChanges(of: id, in: store, isMine: isMine) : nil
            let before = Set(try Conflict.all(in: current, history: myLog.map { DocumentHistory(id, changes: $0, replica: store.replicaID) }).map(\.key))
            let after = try Conflict.all(in: merged, history: myLog.map { DocumentHistory(id, changes: $0 + incoming, replica: store.replicaID) })
            plans.append(DocumentPlan(
                id: id, title: try Note(id: id, document: merged).title, isNew: !isMine, isRemoved: isRemoved,
                incoming: incoming, outgoing: outgoing,
                newConflicts: after.map(\.key).filter { !before.contains($0) }))
        }
        documents = plans
        self.compacted = compacted
    }

    /// This store's log of a note, empty for one it lacks; nil when it
    /// compacted the log, which then cannot say what a removal did not see.
    private static func loggedChanges(of id: DocumentID, in store: DocumentStore, isMine: Bool) throws -> [Change]? {
        guard isMine else { return [] }
        do { return try store.changes(id) } catch StoreError.historyCompacted { return nil }
    }

    /// Writes the incoming changes, creating the documents this store
    /// lacks, all in one commit: a merge that fails saves nothing. Without
    /// decoding limits, as the other store's changes were read.
    func apply(to store: DocumentStore) throws {
        try store.apply(bundles: documents.filter { !$0.incoming.isEmpty }.map { ($0.id, [ChangeEncoding.encode($0.incoming)]) },
                        limits: .unlimited)
    }

    var incomingCount: Int { documents.reduce(0) { $0 + $1.incoming.count } }
    /// Nil when some document's outgoing changes cannot be counted.
    var outgoingCount: Int? {
        documents.reduce(0) { total, plan in total.flatMap { total in plan.outgoing.map { total + $0 } } }
    }
}
