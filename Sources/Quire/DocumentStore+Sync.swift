import Foundation

// What a sync client keeps in the store about each sync server (peer):
// see `SyncState` and Specs/sync.md, "Client state".
extension DocumentStore {
    /// Creates the document unless it exists (removed or not); returns
    /// whether it was created. For changes arriving from a peer for a
    /// document this store has not seen yet.
    @discardableResult
    public func createIfMissing(_ id: DocumentID) throws -> Bool {
        do {
            try create(id: id)
            return true
        } catch StoreError.documentExists {
            return false
        }
    }

    /// The operations this store holds of a document.
    public func versionVector(_ id: DocumentID) throws -> VersionVector {
        try read(id) { $0.versionVector }
    }

    /// The version vector of every document, removed ones too, as the file
    /// holds it: read from the store without loading any document.
    public func versionVectors() throws -> [DocumentID: VersionVector] {
        try database.read { db in
            var versions = Dictionary(uniqueKeysWithValues: try Self.listedIDs(db).map { ($0, VersionVector()) })
            for (stored, version) in try DocumentVersions.all(db) {
                let id = try DocumentID(stored: stored)
                if versions[id] != nil { versions[id] = version }
            }
            return versions
        }
    }

    /// The version of every document `peer` has acknowledged something of.
    public func acknowledgedVersions(peer: String) throws -> [DocumentID: VersionVector] {
        let versions = try database.read { db in try PeerAcknowledgements.versions(peer: peer, db) }
        return Dictionary(uniqueKeysWithValues: try versions.map { (try DocumentID(stored: $0.document), $0.version) })
    }

    /// The version of a document `peer` has acknowledged holding; with no
    /// peer named (nil), the highest counter of each replica any peer has.
    public func acknowledgedVersion(peer: String?, id: DocumentID) throws -> VersionVector {
        try database.read { db in try PeerAcknowledgements.version(peer: peer, document: id.rawValue, db) }
    }

    /// This store's position in `peer`'s log, or nil before the first sync.
    public func syncCursor(peer: String) throws -> SyncCursor? {
        try database.read { db in try SyncState.cursor(peer: peer, db) }
    }

    /// Stores this store's position in `peer`'s log, for the next sync to
    /// go on from. It never goes back within one log: of two syncs with one
    /// server ending in either order, the older cursor is not kept
    /// (`forgetSyncState` forgets it first).
    public func setSyncCursor(_ cursor: SyncCursor, peer: String) throws {
        try database.write { db in try SyncState.setCursor(cursor, peer: peer, now: Self.milliseconds(Date()), db) }
    }

    /// Records what `peer` acknowledged of each document and the new cursor
    /// (nil: the cursor stays) in one transaction: one disk sync for a whole
    /// answer, not one per document. A refused change `peer` now holds (its
    /// writer sent it) is no longer refused.
    ///
    /// - Returns: what was recorded as acknowledged before, in the same
    ///   transaction, for the documents of `earlierOf`: a change it covers
    ///   another sync (another process) has already seen `peer` hold.
    @discardableResult
    public func recordSyncProgress(peer: String, acknowledged: [DocumentID: VersionVector], cursor: SyncCursor?,
                                   earlierOf documents: some Collection<DocumentID> = []) throws -> [DocumentID: VersionVector] {
        try database.write { db in
            var earlier: [DocumentID: VersionVector] = [:]
            for id in documents { earlier[id] = try PeerAcknowledgements.version(peer: peer, document: id.rawValue, db) }
            for (id, version) in acknowledged {
                try PeerAcknowledgements.acknowledge(peer: peer, document: id.rawValue, version: version, db)
            }
            for rejected in try SyncState.rejected(peer: peer, db) {
                guard let id = DocumentID(rawValue: rejected.document),
                      acknowledged[id]?.contains(OpID(replica: rejected.id.replica, counter: rejected.lastCounter)) == true else { continue }
                try SyncState.forgetRejected(rejected, peer: peer, db)
            }
            if let cursor { try SyncState.setCursor(cursor, peer: peer, now: Self.milliseconds(Date()), db) }
            return earlier
        }
    }

    /// Forgets what `peer` was known to hold (cursor and acknowledgements,
    /// and the documents refused): the next sync works it out again from
    /// version vectors. Unsent changes stay in the log and become pending again.
    public func forgetSyncState(peer: String) throws {
        try database.write { db in try SyncState.forget(peer: peer, db) }
    }

    /// Drops this store's copy of a document, so that the next sync with
    /// `peer` brings the peer's copy whole: every change, parked change,
    /// snapshot, acknowledgement (of any peer) and refusal of it goes, and
    /// so do `peer`'s cursor and acknowledgements (`forgetSyncState`), as a
    /// cursor stands for the rows before it, the document's among them. For
    /// the same reason every other peer's cursor goes back to the start of
    /// its log (`SyncState.rewindCursors`): the copy that comes may lack
    /// changes another peer sent before its cursor. One transaction: the
    /// document is never gone while a cursor still passes its rows. For a
    /// copy this store refuses the peer's changes to (`RefusedChanges`):
    /// what this copy holds that the peer's lacks is lost, unless `keepCopy`
    /// keeps it (`quire sync --take-theirs` keeps it as a new note). Another
    /// store on the file that has the document loaded reads it again from
    /// the file.
    ///
    /// Observers of the document get one `.local` event with no changes and
    /// the empty version vector, naming every object and key the dropped
    /// copy held, as all of it may change; the peer's copy makes `.remote`
    /// events when a sync applies it, and the kept copy a `.local` one.
    /// (Another store on the file gets no event of the drop: nothing in the
    /// file records it.)
    ///
    /// The document that keeps the copy is recorded with the one dropped
    /// (`replacedCopies`): the sync that brings the peer's copy, which may
    /// come after the one meant to failed, names it as replaced, not new.
    ///
    /// `keepCopy`, if given, makes a new document from the one dropped, as
    /// the file holds it (removed, from the same time, if that one is); the
    /// new document is written in the same
    /// transaction, and only if no other process (or other store on the
    /// file) wrote the dropped one meanwhile: else `keepCopy` runs again on
    /// it as written, so no edit ends up in neither copy (as `edit`, up to
    /// `StoreError.changedElsewhere`).
    ///
    /// The same transaction gives the store a new replica id
    /// (`ReplicaIdentity.renew`), which every store on the file edits under
    /// from then on (`replicaID`): the changes dropped may have been this
    /// store's own, which a peer may hold, and under the old id the next
    /// edits of the document would take their ids again, with other content.
    ///
    /// - Returns: the new document's id, if `keepCopy` was given.
    /// - Throws: `StoreError.noSuchDocument` if the store does not list it;
    ///   what `keepCopy` throws (then nothing is changed).
    @discardableResult
    public func discardCopy(of id: DocumentID, resyncingWith peer: String,
                            keepingCopy keepCopy: ((_ dropped: Document, _ copy: inout Transaction) throws -> Void)? = nil) throws -> DocumentID? {
        try locked { try retryingChangedElsewhere { _ in
            // As a removal: no call works on it, and no batch holds a commit of it.
            while busy.contains(id) || isWriting { condition.wait() }
            // The document as the file holds it, loaded for the copy and for the event that tells its
            // observers all of it changed; the transaction checks that the file still holds that. Without
            // a copy to keep, one that does not load (damaged) is dropped all the same.
            var dropped: LoadedDocument?
            if keepCopy != nil {
                dropped = try load(id)
            } else if !observers.isEmpty {
                dropped = try? load(id)
            }
            var kept: QueuedCommit?
            if let keepCopy, let dropped {
                var copy = Document(replica: replicaID)
                try runningClosure { try copy.transact(time: Self.milliseconds(Date())) { tx in try keepCopy(dropped.document, &tx) } }
                kept = QueuedCommit(id: .generate(), entry: LoadedDocument(document: copy, isRemoved: dropped.isRemoved, changesSinceSnapshot: 0),
                                    newChanges: copy.lastChange.map { [.changes([$0])] } ?? [], isLocal: true, parked: [], isNew: true)
            }
            // The file's id, when another store on it took a new one since this store last wrote: the copy is made again under it.
            var fileReplica: ReplicaID?
            let written = Result { try database.write { db in
                guard try Self.isListed(id, db) else { throw StoreError.noSuchDocument(id.rawValue) }
                if let dropped {
                    let rows = try db.query(sql: Self.localCommitCurrencyQuery, arguments: [.text(id.rawValue)])
                    guard try Self.isCurrent(dropped, rows) else { throw StoreError.changedElsewhere(id.rawValue) }
                    let recorded = try rows[0].replica(Self.fileReplicaColumn)
                    fileReplica = recorded
                    if recorded != replicaID { throw StoreError.changedElsewhere(id.rawValue) }
                }
                let before = try ChangeLog.highestSeq(db)
                try kept?.save(db)
                // A removed document's copy is kept removed, from the same time: as it was, out of the list until restored.
                if let copy = kept, copy.entry.isRemoved {
                    try db.execute(sql: "UPDATE documents SET removed_at = (SELECT removed_at FROM documents WHERE id = ?) WHERE id = ?",
                                   arguments: [.text(id.rawValue), .text(copy.id.rawValue)])
                }
                let logged = (before: before, after: try ChangeLog.highestSeq(db))
                let document = [DatabaseValue.text(id.rawValue)]
                for table in ["changes", "removal_marks"] {
                    try db.execute(sql: "DELETE FROM \(table) WHERE document = (SELECT number FROM documents WHERE id = ?)", arguments: document)
                }
                for table in ["parked_changes", "snapshots", "peer_acknowledgements", "rejected_changes", "refused_documents", "document_versions",
                              "documents"] {
                    let column = table == "documents" ? "id" : "document_id"
                    try db.execute(sql: "DELETE FROM \(table) WHERE \(column) = ?", arguments: document)
                }
                try SyncState.forget(peer: peer, db)
                // Every other peer's cursor stands for rows of the document too, which the copy that comes may lack.
                try SyncState.rewindCursors(db)
                if let kept { try ReplacedDocuments.record(id.rawValue, keptAs: kept.id.rawValue, db) }
                return (copy: kept, logged: logged, renewed: try ReplicaIdentity.renew(db, now: Self.milliseconds(Date())))
            } }
            if let fileReplica { adoptReplica(fileReplica) }
            let done = try written.get()
            outsideLogPlace.noteOwnRows(after: done.logged.before, through: done.logged.after)
            adoptReplica(done.renewed)
            publishDropped(id, dropped)
            if let copy = done.copy { publish(copy) }
            return done.copy?.id
        } }
    }

    /// The documents whose copy `discardCopy` dropped, keeping it as
    /// another document, each with that one: those the store lacks still,
    /// and those some apply has brought back since (until the next
    /// `discardCopy` forgets them). A document made again with no version
    /// before is one of these, not new to the person who had it.
    public func replacedCopies() throws -> [DocumentID: DocumentID] {
        try database.read { db in
            Dictionary(try ReplacedDocuments.all(db).map { (try DocumentID(stored: $0.document), try DocumentID(stored: $0.keptAs)) },
                       uniquingKeysWith: { first, _ in first })
        }
    }

    /// The documents the last complete sync with `peer` left out because
    /// this store refuses `peer`'s changes to them (`SyncClient.Report.notApplied`).
    public func refusedDocuments(peer: String) throws -> Set<DocumentID> {
        try database.read { db in Set(try SyncState.refusedDocuments(peer: peer, db).map(DocumentID.init(stored:))) }
    }

    /// Makes `ids` the documents `refusedDocuments(peer:)` gives.
    public func setRefusedDocuments(_ ids: Set<DocumentID>, peer: String) throws {
        try database.write { db in try SyncState.setRefusedDocuments(ids.map(\.rawValue), peer: peer, db) }
    }

    /// Every peer this store keeps sync state of (a cursor, an
    /// acknowledgement or a refusal), by name.
    public func syncPeers() throws -> [String] {
        try database.read { db in try SyncState.peers(db) }
    }

    /// Moves the sync state of `old` to `new`, another name of the same
    /// peer, merging it with what `new` has: nothing known is lost.
    public func mergeSyncState(of old: String, into new: String) throws {
        try database.write { db in try SyncState.mergePeer(old, into: new, db) }
    }

    /// Records that `peer` refused `changes` for good: they stay in the log,
    /// are shown by `rejectedChanges`, and are not offered to `peer` again
    /// until `clearRejectedChanges`.
    public func rejectChanges(_ changes: [Change], of id: DocumentID, peer: String, status: Int, reason: String) throws {
        try database.write { db in
            guard try Self.isListed(id, db) else {
                throw StoreError.noSuchDocument(id.rawValue)
            }
            try SyncState.reject(changes, document: id.rawValue, peer: peer, status: status, reason: reason,
                                 now: Self.milliseconds(Date()), db)
        }
    }

    /// The changes `peer` refused for good; with no peer named (nil), those
    /// every peer refused.
    public func rejectedChanges(peer: String?) throws -> [RejectedChange] {
        try database.read { db in try SyncState.rejected(peer: peer, db) }
    }

    /// Forgets every refusal by `peer` (`rejectedChanges`), so that the next
    /// sync offers those changes again (`quire sync --retry-rejected`).
    public func clearRejectedChanges(peer: String) throws {
        try database.write { db in try SyncState.clearRejected(peer: peer, db) }
    }
}
