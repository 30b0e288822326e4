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
        try database.read { db in try Self.listedVersions(db) }
    }

    /// `versionVectors()` and the file's replica id, read in one
    /// transaction: the id under which the store has made every change of
    /// its own that the versions hold. It is not always `replicaID`: a
    /// store that has not written since another store on the file (another
    /// process) dropped a document's copy still holds the retired id
    /// (`discardCopy`, `writeQueuedBatch`), and the versions then lack the
    /// changes it made under that id to the dropped document.
    public func versionVectorsAndFileReplica() throws -> (versions: [DocumentID: VersionVector], fileReplica: ReplicaID) {
        try database.read { db in (try Self.listedVersions(db), try fileReplica(db)) }
    }

    /// The file's replica id, under which every store on the file makes its
    /// changes from its next write (not always `replicaID`:
    /// `versionVectorsAndFileReplica()`), and every id stores on the file
    /// have written under (`local_replicas`, the copied file's among them),
    /// read in one transaction. An id in a later read that an earlier one
    /// lacks was the file's in between: minted for it (a drop of a copy,
    /// `discardCopy`, in another process), never used elsewhere.
    public func fileReplicas() throws -> (current: ReplicaID, all: Set<ReplicaID>) {
        try database.read { db in (try fileReplica(db), try ReplicaIdentity.all(db)) }
    }

    private func fileReplica(_ db: DatabaseConnection) throws -> ReplicaID {
        try ReplicaIdentity.recorded(db) ?? replicaID
    }

    private static func listedVersions(_ db: DatabaseConnection) throws -> [DocumentID: VersionVector] {
        var versions = Dictionary(uniqueKeysWithValues: try listedIDs(db).map { ($0, VersionVector()) })
        for (stored, version) in try DocumentVersions.all(db) {
            let id = try DocumentID(stored: stored)
            if versions[id] != nil { versions[id] = version }
        }
        return versions
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

    /// `syncCursor(peer:)` and `cursorRewinds()`, read in one transaction:
    /// a sync that pulls from that cursor gives the count to
    /// `recordSyncProgress`, which then stores the cursor its pages reach
    /// only if no rewind came after the read. One that came before had
    /// already moved the cursor read back, and the pages went on from there.
    public func syncCursorAndRewinds(peer: String) throws -> (cursor: SyncCursor?, rewinds: Int64) {
        try database.read { db in (try SyncState.cursor(peer: peer, db), try DroppedDocuments.highestSeq(db)) }
    }

    /// Stores this store's position in `peer`'s log, for the next sync to
    /// go on from. It never goes back within one log: of two syncs with one
    /// server ending in either order, the older cursor is not kept
    /// (`forgetSyncState` forgets it first).
    public func setSyncCursor(_ cursor: SyncCursor, peer: String) throws {
        try database.write { db in try SyncState.setCursor(cursor, peer: peer, now: Self.milliseconds(Date()), db) }
    }

    /// How many documents stores on this file have dropped (`discardCopies`),
    /// which moves each time they move the sync cursors back (once for the
    /// documents one call drops). A sync reads it with the stored cursor it
    /// pulls from (`syncCursorAndRewinds(peer:)`) and gives it to
    /// `recordSyncProgress`, which then stores no cursor once another
    /// rewind has come in between.
    public func cursorRewinds() throws -> Int64 {
        try database.read { db in try DroppedDocuments.highestSeq(db) }
    }

    /// Records what `peer` acknowledged of each document and the new cursor
    /// (nil: the cursor stays) in one transaction: one disk sync for a whole
    /// answer, not one per document. A refused change `peer` now holds (its
    /// writer sent it) is no longer refused.
    ///
    /// The cursor is stored only if the file's `cursorRewinds()` is still
    /// `rewindsAtRead` (nil: whatever it is), the count read with the stored
    /// cursor the pages reaching `cursor` went on from
    /// (`syncCursorAndRewinds(peer:)`): pages pulled from a cursor read
    /// before a `discardCopy` (another process's `quire sync
    /// --take-theirs`) may have passed rows of the dropped document, and
    /// their cursor, stored, would undo the rewind (or the forgetting, for
    /// the peer the copy is taken from): those rows would never come back.
    /// The acknowledgements are stored all the same: they say what the
    /// peer holds.
    ///
    /// - Returns: `earlier`, what was recorded as acknowledged before, in
    ///   the same transaction, for the documents of `earlierOf`: a change
    ///   it covers another sync (another process) has already seen `peer`
    ///   hold; and whether the cursor given was stored (false without one,
    ///   or after a rewind: the sync then goes on from it in memory).
    @discardableResult
    public func recordSyncProgress(peer: String, acknowledged: [DocumentID: VersionVector], cursor: SyncCursor?,
                                   unlessRewoundSince rewindsAtRead: Int64? = nil, earlierOf documents: some Collection<DocumentID> = [])
        throws -> (earlier: [DocumentID: VersionVector], cursorStored: Bool) {
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
            // Stored past a rewind made since the cursor its pages went on from was read, the cursor would undo it.
            let rewoundMeanwhile = try rewindsAtRead.map { try DroppedDocuments.highestSeq(db) != $0 } ?? false
            guard let cursor, !rewoundMeanwhile else { return (earlier, false) }
            try SyncState.setCursor(cursor, peer: peer, now: Self.milliseconds(Date()), db)
            return (earlier, true)
        }
    }

    /// Forgets what `peer` was known to hold (cursor and acknowledgements,
    /// and the documents refused): the next sync works it out again from
    /// version vectors. Unsent changes stay in the log and become pending again.
    public func forgetSyncState(peer: String) throws {
        try database.write { db in try SyncState.forget(peer: peer, db) }
    }

    /// Drops this store's copy of each document of `ids`, so that the next
    /// sync with `peer` brings the peer's copy whole: every change, parked
    /// change, snapshot, acknowledgement (of any peer) and refusal of them
    /// goes, and so do `peer`'s cursor and acknowledgements
    /// (`forgetSyncState`), as a cursor stands for the rows before it, the
    /// documents' among them. For the same reason every other peer's cursor
    /// goes back to the start of its log (`SyncState.rewindCursors`): the
    /// copy that comes may lack changes another peer sent before its cursor.
    /// One transaction for the whole list: no document is gone while a
    /// cursor still passes its rows, the cursors go back once and the
    /// replica id (below) is renewed once however many documents are
    /// dropped, and a failure for any document drops none (`quire sync
    /// --take-theirs` given for several notes: one drop, then one sync). For
    /// a copy this store refuses the peer's changes to (`RefusedChanges`):
    /// what this copy holds that the peer's lacks is lost, unless
    /// `keepCopies` keeps it (`quire sync --take-theirs` keeps it as a new
    /// note). Another store on the file that has a document loaded reads it
    /// again from the file. An empty list drops nothing and changes nothing.
    ///
    /// Observers of each document get one `.local` event with no changes
    /// and the empty version vector, naming every object and key the dropped
    /// copy held, as all of it may change, followed by the kept copy's
    /// `.local` event, document by document in the order of `ids`; the
    /// peer's copy makes `.remote` events when a sync applies it. Another
    /// store on the file (another process) finds the drops when it next
    /// looks (`checkForOutsideCommits()`): the file records each
    /// (`DroppedDocuments`), and that store's `.outside` event names what
    /// its own loaded copy held.
    ///
    /// A sync with any peer that runs meanwhile (in another process),
    /// pulling from a cursor it read before, does not store the cursor its
    /// pages reach (`recordSyncProgress`), which would undo the rewind.
    ///
    /// The document that keeps each copy is recorded with the one dropped
    /// (`replacedCopies`): the sync that brings the peer's copy, which may
    /// come after the one meant to failed, names it as replaced, not new.
    ///
    /// `keepCopies`, if given, makes a new document from each one dropped
    /// (given its id), as the file holds it (removed, from the same time, if
    /// that one is); the new documents are written in the same transaction,
    /// and only if no other process (or other store on the file) wrote the
    /// dropped ones meanwhile: else `keepCopies` runs again on each as
    /// written, so no edit ends up in neither copy (as `edit`, up to
    /// `StoreError.changedElsewhere`).
    ///
    /// The same transaction gives the store a new replica id
    /// (`ReplicaIdentity.renew`), which every store on the file edits under
    /// from then on (`replicaID`): the changes dropped may have been this
    /// store's own, which a peer may hold, and under the old id the next
    /// edits of a document would take their ids again, with other content.
    ///
    /// - Parameter ids: distinct documents (a precondition).
    /// - Returns: the new documents' ids, in the order of `ids`, if
    ///   `keepCopies` was given; else none.
    /// - Throws: `StoreError.noSuchDocument` if the store does not list one
    ///   of them; with `keepCopies`, what loading one of them (damaged) or
    ///   `keepCopies` throws. Nothing is changed then.
    @discardableResult
    public func discardCopies(of ids: [DocumentID], resyncingWith peer: String,
                              keepingCopies keepCopies: ((_ id: DocumentID, _ dropped: Document, _ copy: inout Transaction) throws -> Void)? = nil)
        throws -> [DocumentID] {
        precondition(Set(ids).count == ids.count, "discardCopies(of:) was given a document twice")
        guard !ids.isEmpty else { return [] }
        return try locked { try retryingChangedElsewhere { _ in
            // As a removal: no call works on them, and no batch holds a commit of one.
            while ids.contains(where: busy.contains) || isWriting { condition.wait() }
            // Each document as the file holds it, loaded for its copy and for the event that tells its
            // observers all of it changed; the transaction checks that the file still holds that. Without
            // copies to keep, one that does not load (damaged) is dropped all the same.
            var dropped: [DocumentID: LoadedDocument] = [:]
            for id in ids {
                if keepCopies != nil {
                    dropped[id] = try load(id)
                } else if !observers.isEmpty {
                    dropped[id] = try? load(id)
                }
            }
            // The copy kept of each document, by the document's id.
            var kept: [DocumentID: QueuedCommit] = [:]
            if let keepCopies {
                for id in ids {
                    let source = dropped[id]!
                    var copy = Document(replica: replicaID)
                    try runningClosure { try copy.transact(time: Self.milliseconds(Date())) { tx in try keepCopies(id, source.document, &tx) } }
                    kept[id] = QueuedCommit(id: .generate(), entry: LoadedDocument(document: copy, isRemoved: source.isRemoved, changesSinceSnapshot: 0),
                                            newChanges: copy.lastChange.map { [.changes([$0])] } ?? [], isLocal: true, parked: [], isNew: true)
                }
            }
            // The file's id, when another store on it took a new one since this store last wrote: the copies are made again under it.
            var fileReplica: ReplicaID?
            let written = Result { try database.write { db in
                for id in ids {
                    guard try Self.isListed(id, db) else { throw StoreError.noSuchDocument(id.rawValue) }
                    guard let loaded = dropped[id] else { continue }
                    let rows = try db.query(sql: Self.localCommitCurrencyQuery, arguments: [.text(id.rawValue)])
                    guard try Self.isCurrent(loaded, rows) else { throw StoreError.changedElsewhere(id.rawValue) }
                    let recorded = try rows[0].replica(Self.fileReplicaColumn)
                    fileReplica = recorded
                    if recorded != replicaID { throw StoreError.changedElsewhere(id.rawValue) }
                }
                let before = try ChangeLog.highestSeq(db)
                for id in ids {
                    guard var copy = kept[id] else { continue }
                    try copy.save(db)
                    kept[id] = copy
                    // A removed document's copy is kept removed, from the same time: as it was, out of the list until restored.
                    if copy.entry.isRemoved {
                        try db.execute(sql: "UPDATE documents SET removed_at = (SELECT removed_at FROM documents WHERE id = ?) WHERE id = ?",
                                       arguments: [.text(id.rawValue), .text(copy.id.rawValue)])
                    }
                }
                let logged = (before: before, after: try ChangeLog.highestSeq(db))
                let dropsBefore = try DroppedDocuments.highestSeq(db)
                var lastDrop = dropsBefore
                for id in ids {
                    let document = [DatabaseValue.text(id.rawValue)]
                    for table in ["changes", "removal_marks"] {
                        try db.execute(sql: "DELETE FROM \(table) WHERE document = (SELECT number FROM documents WHERE id = ?)", arguments: document)
                    }
                    for table in ["parked_changes", "snapshots", "peer_acknowledgements", "rejected_changes", "refused_documents", "document_versions",
                                  "documents"] {
                        let column = table == "documents" ? "id" : "document_id"
                        try db.execute(sql: "DELETE FROM \(table) WHERE \(column) = ?", arguments: document)
                    }
                    if let copy = kept[id] {
                        try ReplacedDocuments.record(id.rawValue, keptAs: copy.id.rawValue, db)
                    }
                    // For other stores' outside looks, and for syncs running meanwhile, which must not store a cursor past the rewind.
                    lastDrop = try DroppedDocuments.record(id.rawValue, db)
                }
                try SyncState.forget(peer: peer, db)
                // Every other peer's cursor stands for rows of the documents too, which the copies that come may lack.
                try SyncState.rewindCursors(db)
                return (logged: logged, dropRows: (before: dropsBefore, after: lastDrop),
                        renewed: try ReplicaIdentity.renew(db, now: Self.milliseconds(Date())))
            } }
            if let fileReplica { adoptReplica(fileReplica) }
            let done = try written.get()
            outsideLogPlace.noteOwnRows(after: done.logged.before, through: done.logged.after)
            outsideDropPlace.noteOwnRows(after: done.dropRows.before, through: done.dropRows.after)
            adoptReplica(done.renewed)
            for id in ids {
                publishDropped(id, dropped[id])
                if let copy = kept[id] { publish(copy) }
            }
            return ids.compactMap { kept[$0]?.id }
        } }
    }

    /// `discardCopies(of:resyncingWith:keepingCopies:)` for one document:
    /// returns the id of the document keeping its copy, if `keepCopy` was given.
    @discardableResult
    public func discardCopy(of id: DocumentID, resyncingWith peer: String,
                            keepingCopy keepCopy: ((_ dropped: Document, _ copy: inout Transaction) throws -> Void)? = nil) throws -> DocumentID? {
        try discardCopies(of: [id], resyncingWith: peer, keepingCopies: keepCopy.map { keep in { _, dropped, copy in try keep(dropped, &copy) } }).first
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
