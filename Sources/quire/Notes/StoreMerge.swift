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
        /// Only in the other store: merging creates it here. After `apply`,
        /// whether its write made it (another process may have since the plan).
        fileprivate(set) var isNew: Bool
        /// This store's version of the note before the merge (empty for a
        /// new one): `quire diff ID --from` it `--to` `versionAfter` shows
        /// what the merge brought. Planned as read; `apply` sets it as the
        /// transaction that wrote the changes found it, so that an edit
        /// another process committed meanwhile is not shown as brought.
        fileprivate(set) var versionBefore: VersionVector
        /// This store's version of the note once merged: planned as the
        /// merge in memory makes it; `apply` sets it as the transaction that
        /// wrote the changes left it, so that an edit made after is not
        /// shown as brought.
        fileprivate(set) var versionAfter: VersionVector
        /// For a note whose copy here `sync --take-theirs` dropped (a sync
        /// that failed before the other side's copy came), which the merge
        /// brings back: the note keeping the dropped copy. Set by `apply`;
        /// such a note is not new (`isNew` false): the person had it.
        fileprivate(set) var replacedCopyKeptAs: DocumentID? = nil
        /// Removed once merged (`note list` leaves it out then).
        let isRemoved: Bool
        /// The other store's changes this one lacks, in a causal order.
        let incoming: [Change]
        /// How many changes the merge brings into the note: all of
        /// `incoming` as planned; after `apply`, those its write applied
        /// (another process may have applied some since the plan).
        fileprivate(set) var incomingCount: Int
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

    /// A note one of the stores cannot read (a damaged change or snapshot,
    /// or a damaged page of the file): it is left out of the merge, so that
    /// nothing damaged is merged, and the other notes merge without it.
    struct DamagedDocument: Error {
        let id: DocumentID
        /// Damaged in this store, else in the other.
        let isMine: Bool
        /// What is damaged, as the store's error says it.
        let reason: String
        /// Its title in the store where it is whole, if either is.
        var title: String? = nil
    }

    /// A note whose incoming changes this store refuses: it is left as it
    /// was here, and the others merged. Planning finds those the store's
    /// Lamport-lead rule refuses (`DocumentStore.refuseFarAhead`), so a dry
    /// run reports them too; `apply` finds any other refusal.
    struct RefusedDocument {
        let id: DocumentID
        /// Its title as merging would have made it.
        let title: String
        /// Why, as the store's error says it.
        let reason: String
    }

    /// The notes to merge; `apply` moves those this store refuses when
    /// writing to `refused`.
    private(set) var documents: [DocumentPlan]
    let compacted: [CompactedDocument]
    let damaged: [DamagedDocument]
    private(set) var refused: [RefusedDocument] = []

    init(into store: DocumentStore, from other: DocumentStore) throws {
        let mine = Set(try store.documents(includeRemoved: true).map(\.id))
        let theirs = try other.documents(includeRemoved: true).map(\.id)
        var plans: [DocumentPlan] = [], compacted: [CompactedDocument] = [], damaged: [DamagedDocument] = [], refused: [RefusedDocument] = []
        for id in Set(theirs).union(mine).sorted() {
            let isMine = mine.contains(id), isTheirs = theirs.contains(id)
            // Each store's reads of the note, a damaged note told from other failures.
            func here<T>(_ read: (DocumentStore) throws -> T) throws -> T { try Self.reading(id, isMine: true) { try read(store) } }
            func there<T>(_ read: (DocumentStore) throws -> T) throws -> T { try Self.reading(id, isMine: false) { try read(other) } }
            do {
                let myVersion = isMine ? try here { try $0.read(id) { $0.versionVector } } : VersionVector()
                let theirVersion = isTheirs ? try there { try $0.read(id) { $0.versionVector } } : VersionVector()
                let incoming: [Change]
                do { incoming = isTheirs ? try there { try $0.changes(id, since: myVersion) } : [] } catch StoreError.historyCompacted {
                    let shown = try isMine ? here { try $0.read(id) { $0 } } : there { try $0.read(id) { $0 } }
                    compacted.append(CompactedDocument(id: id, title: try Note(id: id, document: shown).title))
                    continue
                }
                let outgoing: Int?
                do { outgoing = isMine ? try here { try $0.changes(id, since: theirVersion).count } : 0 } catch StoreError.historyCompacted {
                    outgoing = nil
                }
                // Unknown outgoing changes (nil) are some.
                guard !incoming.isEmpty || outgoing != 0 else { continue }
                // The merge made in memory only, to see its result and conflicts.
                let current = isMine ? try here { try $0.read(id) { $0 } } : Document(replica: store.replicaID)
                var merged = current
                try merged.apply(incoming)
                let title = try Note(id: id, document: merged).title
                // The merge in memory took the changes; the store may not: ask
                // its own rule, on the changes in the order `apply` gives them,
                // before the conflict passes, which a refused note does not need.
                do { try DocumentStore.refuseFarAhead(incoming, appliedTo: current) } catch {
                    refused.append(RefusedDocument(id: id, title: title, reason: "\(error)"))
                    continue
                }
                let isRemoved = try Note.isRemoved(merged)
                // A removal that hides edits it did not see is a conflict only
                // with the note's history: read for a note removed once merged.
                let myLog = isRemoved ? try here { try Self.loggedChanges(of: id, in: $0, isMine: isMine) } : nil
                let before = Set(try Conflict.all(in: current, history: myLog.map { DocumentHistory(id, changes: $0, replica: store.replicaID) }).map(\.key))
                let after = try Conflict.all(in: merged, history: myLog.map { DocumentHistory(id, changes: $0 + incoming, replica: store.replicaID) })
                plans.append(DocumentPlan(
                    id: id, title: title, isNew: !isMine, versionBefore: myVersion, versionAfter: merged.versionVector, isRemoved: isRemoved,
                    incoming: incoming, incomingCount: incoming.count, outgoing: outgoing,
                    newConflicts: after.map(\.key).filter { !before.contains($0) }))
            } catch var damage as DamagedDocument {
                let whole = damage.isMine ? (isTheirs ? other : nil) : (isMine ? store : nil)
                damage.title = try? whole?.read(id) { try Note(id: id, document: $0).title }
                damaged.append(damage)
            }
        }
        documents = plans
        self.compacted = compacted
        self.damaged = damaged
        self.refused = refused
    }

    /// Runs `read` on one store's copy of note `id`, turning the failures
    /// that say the note (or the file's page holding it) is damaged into a
    /// `DamagedDocument`.
    private static func reading<T>(_ id: DocumentID, isMine: Bool, _ read: () throws -> T) throws -> T {
        do {
            return try read()
        } catch where error.isDamage(ofDocument: id.rawValue) {
            throw DamagedDocument(id: id, isMine: isMine, reason: "\(error)")
        }
    }

    /// This store's log of a note, empty for one it lacks; nil when it
    /// compacted the log, which then cannot say what a removal did not see.
    private static func loggedChanges(of id: DocumentID, in store: DocumentStore, isMine: Bool) throws -> [Change]? {
        guard isMine else { return [] }
        do { return try store.changes(id) } catch StoreError.historyCompacted { return nil }
    }

    /// Writes the incoming changes, creating the documents this store
    /// lacks, in one commit: a merge that fails saves nothing. A note whose
    /// changes this store refuses is left as it was (`applyEach`), moved
    /// from `documents` to `refused`, and the others are saved. Without
    /// decoding limits, as the other store's changes were read. Each
    /// document then tells what the write did, not what the plan meant it
    /// to: changes another process applied since the plan are not counted,
    /// and a note it brought everything to, whose changes the other store
    /// holds too, is no longer listed. A note it makes whose copy a
    /// `--take-theirs` sync dropped is not new, but replaced.
    mutating func apply(to store: DocumentStore) throws {
        let (applied, refusals) = try store.applyEach(
            bundles: documents.filter { !$0.incoming.isEmpty }.map { ($0.id, [ChangeEncoding.encode($0.incoming)]) }, limits: .unlimited)
        let reasons = Dictionary(refusals.map { ($0.id, "\($0.error)") }, uniquingKeysWith: { first, _ in first })
        refused += documents.compactMap { plan in reasons[plan.id].map { RefusedDocument(id: plan.id, title: plan.title, reason: $0) } }
        documents.removeAll { reasons[$0.id] != nil }
        for index in documents.indices where !documents[index].incoming.isEmpty {
            let id = documents[index].id
            if let written = applied[id] {
                documents[index].versionBefore = written.versionBefore
                documents[index].versionAfter = written.versionAfter
            } else {
                // Nothing of it was new to the write: the note did not change.
                let current = try store.read(id) { $0.versionVector }
                (documents[index].versionBefore, documents[index].versionAfter) = (current, current)
            }
            documents[index].incomingCount = applied[id]?.count ?? 0
            documents[index].isNew = documents[index].isNew && applied[id]?.versionBefore.isEmpty == true
        }
        documents.removeAll { $0.incomingCount == 0 && $0.outgoing == 0 }
        let replaced = try documents.contains(where: \.isNew) ? store.replacedCopies() : [:]
        for index in documents.indices where documents[index].isNew {
            documents[index].replacedCopyKeptAs = replaced[documents[index].id]
            documents[index].isNew = documents[index].replacedCopyKeptAs == nil
        }
    }

    var incomingCount: Int { documents.reduce(0) { $0 + $1.incomingCount } }
    /// Nil when some document's outgoing changes cannot be counted.
    var outgoingCount: Int? {
        documents.reduce(0) { total, plan in total.flatMap { total in plan.outgoing.map { total + $0 } } }
    }
}
