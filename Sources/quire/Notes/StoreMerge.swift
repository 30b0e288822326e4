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
        /// The other store's changes this one lacks, in a causal order.
        let incoming: [Change]
        /// How many of this store's changes the other lacks.
        let outgoing: Int
        /// Keys where merging makes a conflict that is not here now.
        let newConflicts: [String]
    }

    let documents: [DocumentPlan]

    init(into store: DocumentStore, from other: DocumentStore) throws {
        let mine = Set(try store.documents(includeRemoved: true).map(\.id))
        let theirs = try other.documents(includeRemoved: true).map(\.id)
        var plans: [DocumentPlan] = []
        for id in Set(theirs).union(mine).sorted() {
            let isMine = mine.contains(id), isTheirs = theirs.contains(id)
            let myVersion = isMine ? try store.read(id) { $0.versionVector } : VersionVector()
            let theirVersion = isTheirs ? try other.read(id) { $0.versionVector } : VersionVector()
            let incoming = isTheirs ? try other.changes(id, since: myVersion) : []
            let outgoing = isMine ? try store.changes(id, since: theirVersion).count : 0
            guard !incoming.isEmpty || outgoing > 0 else { continue }
            // The merge made in memory only, to see its result and conflicts.
            let current = isMine ? try store.read(id) { $0 } : Document(replica: store.replicaID)
            var merged = current
            try merged.apply(incoming)
            let before = Set(try Conflict.all(in: current).map(\.key))
            plans.append(DocumentPlan(
                id: id, title: try Note(id: id, document: merged).title, isNew: !isMine, incoming: incoming, outgoing: outgoing,
                newConflicts: try Conflict.all(in: merged).map(\.key).filter { !before.contains($0) }))
        }
        documents = plans
    }

    /// Writes the incoming changes, creating the documents this store
    /// lacks, all in one commit: a merge that fails saves nothing. Without
    /// decoding limits, as the other store's changes were read.
    func apply(to store: DocumentStore) throws {
        try store.apply(bundles: documents.filter { !$0.incoming.isEmpty }.map { ($0.id, [ChangeEncoding.encode($0.incoming)]) },
                        limits: .unlimited)
    }

    var incomingCount: Int { documents.reduce(0) { $0 + $1.incoming.count } }
    var outgoingCount: Int { documents.reduce(0) { $0 + $1.outgoing } }
}
