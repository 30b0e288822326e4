import Foundation

// Loading documents from the file and writing their snapshots.
extension DocumentStore {
    /// What `writeSnapshot` deletes besides writing: nothing but snapshots
    /// beyond the newest two, or (compacting) all other snapshots (keeping
    /// history, but the oldest since an earlier compaction without it) and
    /// maybe the log rows the new one covers.
    enum Compaction { case none, keepHistory, dropHistory }

    /// Writes a snapshot in its own transaction, which also prunes older
    /// snapshots: two are kept (one to fall back on if the newest is
    /// damaged), or one when compacting. Called with the lock held.
    ///
    /// Throws `StoreError.changedElsewhere`, writing nothing, if the file
    /// holds anything of the document that `entry` lacks (`isCurrent`), as
    /// a commit does: another process logged past it, or compacted away rows
    /// it lacks (no row past it may be left then). The snapshot would be
    /// older than the file, and pruning and compacting would drop the newer
    /// snapshot the other process wrote, and the rows it covers.
    func writeSnapshot(_ id: DocumentID, _ entry: inout LoadedDocument, compacting: Compaction = .none) throws {
        let document = entry.document
        // What the document holds, which another process may have logged past.
        let coversSeq = entry.loggedThrough
        try database.write { db in
            let currency = try db.query(sql: Self.currencyQuery, arguments: [.text(id.rawValue)])
            guard try Self.isCurrent(entry, currency) else {
                throw StoreError.changedElsewhere(id.rawValue)
            }
            let stored = try SnapshotStore.write(document, id: id.rawValue, coversSeq: coversSeq, now: Self.milliseconds(Date()), db)
            if compacting == .none {
                try SnapshotStore.prune(document: id.rawValue, keepingNewest: 2, db)
                return
            }
            // Deleting what the new snapshot replaces: first make sure it
            // really holds the document.
            let reloaded = try SnapshotStore.decode(stored, replica: replicaID)
            guard reloaded.encodeSnapshot(includeHistory: false) == document.encodeSnapshot(includeHistory: false) else {
                throw StoreError.unrecoverableDocument(id.rawValue, reason: "a new snapshot does not reload to the same state")
            }
            // Keeping history keeps what the history commands replay from
            // when an earlier compaction dropped it: the oldest snapshot since.
            let logStartSeq = try currency[0].int64(2)
            try SnapshotStore.prune(document: id.rawValue, keepingNewest: 1,
                                    andOldestCovering: compacting == .keepHistory && logStartSeq > 0 ? logStartSeq : nil, db)
            if compacting == .dropHistory {
                try ChangeLog.deleteCompacted(document: id.rawValue, through: coversSeq, db)
                try db.execute(sql: "UPDATE documents SET log_start_seq = ? WHERE id = ?",
                               arguments: [.integer(coversSeq), .text(id.rawValue)])
            }
        }
        entry.changesSinceSnapshot = 0
    }

    /// Loads a document: the newest valid snapshot, then the logged changes
    /// after it, then the parked changes. A snapshot that fails any check is
    /// reported and skipped in favour of an older one or a full replay.
    func load(_ id: DocumentID) throws -> LoadedDocument {
        try database.read { db in
            // The parked rows counted here, not by `ParkedChanges.rowCount`:
            // one statement fewer, about 4% of loading a small document.
            let rows = try db.query(
                sql: "SELECT removed_at, log_start_seq, \(ParkedChanges.rowCountExpression) FROM documents WHERE id = ?1",
                arguments: [.text(id.rawValue)])
            guard let row = rows.first else { throw StoreError.noSuchDocument(id.rawValue) }
            let logStartSeq = try row.int64(1)
            let snapshots = try SnapshotStore.newestFirst(document: id.rawValue, db).filter { $0.coversSeq >= logStartSeq }
            let (snapshot, coversSeq) = firstValidSnapshot(of: id, among: snapshots) ?? (Document(replica: replicaID), 0)
            guard coversSeq >= logStartSeq else { throw Self.damagedSnapshotSinceCompaction(id) }
            var document = snapshot
            let (tail, lastSeq) = try ChangeLog.changes(document: id.rawValue, after: coversSeq, db)
            do {
                try document.apply(tail)
            } catch let error as DocumentError {
                throw StoreError.unrecoverableDocument(id.rawValue, reason: "its log does not apply: \(error)")
            }
            try Self.requireHoldsRecordedVersion(document, id, db)
            let parked = try ParkedChanges.all(document: id.rawValue, db)
            for damage in parked.damaged { warn("document \(id): \(damage) and was left out") }
            applyParked(parked.changes, to: &document, id)
            return LoadedDocument(document: document, isRemoved: !row.isNull(0), changesSinceSnapshot: tail.count,
                                  loggedThrough: lastSeq ?? coversSeq, parkedRows: try row.int64(2))
        }
    }

    /// Throws if `document`, loaded from its snapshot and log, lacks a
    /// change its `document_versions` row says was logged. SQLite reads a
    /// damaged index without noticing, as if the rows it lost were never
    /// there: the note would read as older, or empty, and an edit would be
    /// written on top of that, with nothing to say so.
    private static func requireHoldsRecordedVersion(_ document: Document, _ id: DocumentID, _ db: DatabaseConnection) throws {
        let recorded = try DocumentVersions.version(document: id.rawValue, db)
        guard let (replica, lacking) = recorded.difference(document.versionVector).min(by: { $0.key < $1.key }) else { return }
        throw StoreError.unrecoverableDocument(
            id.rawValue, reason: "the store recorded changes \(lacking.lowerBound) to \(lacking.upperBound) of replica \(replica) for it, "
                + "which its snapshots and log lack: the file is damaged (rows or an index lost)")
    }

    /// A document whose log was compacted and no snapshot since decodes.
    private static func damagedSnapshotSinceCompaction(_ id: DocumentID) -> StoreError {
        .unrecoverableDocument(id.rawValue, reason: "its only snapshot since compaction is damaged, and the log before it was compacted")
    }

    /// The first of `snapshots` that decodes, and the `seq` it covers; each
    /// one before it is reported as damaged and skipped.
    private func firstValidSnapshot(of id: DocumentID, among snapshots: [SnapshotStore.Stored]) -> (Document, Int64)? {
        for stored in snapshots {
            do {
                return (try SnapshotStore.decode(stored, replica: replicaID), stored.coversSeq)
            } catch {
                warn("document \(id): snapshot \(stored.id) is damaged and was skipped: \(error)")
            }
        }
        return nil
    }

    /// A document's log as compaction without history left it
    /// (`compact(id, keepHistory: false)`): the history commands of `quire`
    /// work from it when `changes(id)` throws `StoreError.historyCompacted`.
    package struct CompactedLog {
        /// The changes still logged from before the compaction point
        /// (`log_start_seq`), in log order: local changes a peer lacks, and
        /// the document's newest change (`storage.md`, "Compaction").
        package let keptBefore: [Change]
        /// The changes logged after the compaction point, in log order.
        package let afterPoint: [Change]
        /// The document at its oldest snapshot since the compaction point
        /// (the compaction's own until two later snapshots replace it); the
        /// empty document if the log was never compacted. It and the
        /// `afterPoint` changes it lacks make the document now.
        package let oldestSnapshot: Document
    }

    /// Reads a document's log as compaction left it.
    ///
    /// - Throws: `StoreError.noSuchDocument` if the store does not list the
    ///   document; `StoreError.unrecoverableDocument` if no snapshot since
    ///   the compaction point decodes.
    package func compactedLog(_ id: DocumentID) throws -> CompactedLog {
        try locked { try database.read { db in
            let rows = try db.query(sql: "SELECT log_start_seq FROM documents WHERE id = ?1", arguments: [.text(id.rawValue)])
            guard let logStartSeq = try rows.first?.int64(0) else { throw StoreError.noSuchDocument(id.rawValue) }
            let keptBefore = try ChangeLog.changes(document: id.rawValue, after: 0, through: logStartSeq, db).changes
            let afterPoint = try ChangeLog.changes(document: id.rawValue, after: logStartSeq, db).changes
            var snapshot = Document(replica: replicaID)
            if logStartSeq > 0 {
                let snapshots = try SnapshotStore.newestFirst(document: id.rawValue, db).filter { $0.coversSeq >= logStartSeq }
                guard let (oldest, _) = firstValidSnapshot(of: id, among: snapshots.reversed()) else {
                    throw Self.damagedSnapshotSinceCompaction(id)
                }
                snapshot = oldest
            }
            return CompactedLog(keptBefore: keptBefore, afterPoint: afterPoint, oldestSnapshot: snapshot)
        } }
    }

    /// Applies the parked changes to a loaded document. They are no part of
    /// its state, so one the document refuses (parked under an older rule,
    /// such as a change of the store's own replica that came early) is left
    /// out with a warning rather than making the document unloadable (a
    /// peer sends a valid one again).
    private func applyParked(_ parked: [Change], to document: inout Document, _ id: DocumentID) {
        do {
            try document.apply(parked)
        } catch {
            // Those before the refused one are applied; an applied one is ignored.
            for change in parked {
                do { try document.apply([change]) } catch {
                    warn("document \(id): parked change \(change.id) was left out: \(error)")
                }
            }
        }
    }
}
