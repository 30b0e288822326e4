import Quire

/// Answers sync requests from a replica's own store, for peer-to-peer sync
/// without a server (`quire serve --stdio`).
///
/// A store has no server log, so there is no cursor to serve: every answer
/// goes by the version vectors the client states (its cursor is the
/// file's replica id and seq 0, and is never trusted). The client states
/// every document it has, so what it lacks is exactly, per document of
/// this store, the changes beyond its version.
///
///     let peer = PeerSyncService(store: try DocumentStore(path: "notes.quire"))
///     let answer = try await peer.respond(to: request, access: .unrestricted)
public struct PeerSyncService: SyncService {
    /// The store that answers: it takes what clients push.
    public let store: DocumentStore
    /// The bundle bytes of one response page, about.
    public var maxPageBytes = 4 << 20
    /// The documents one answer carries changes of, as the server's
    /// `maxPageDocuments`: the client holds each in memory until it has
    /// applied the page.
    public var maxPageDocuments = 10_000
    /// The most documents an answer names: the client refuses a message
    /// of more.
    public var maxDocuments = SyncMessage.Limits().maxDocuments
    /// The pushed documents applied in one transaction (one disk sync),
    /// all held in memory until it commits; a push of more takes several.
    public var documentsPerTransaction = 10_000
    /// Told of each document left out of an answer as damaged here, with
    /// why, for the store's owner (`quire serve --stdio` writes it on
    /// standard error, which the client shows): the client hears only
    /// which document (`SyncFailure.documentDamaged`).
    public var onDamagedDocument: @Sendable (_ line: String) -> Void = { _ in }

    /// The peer name under which the store keeps what its clients state
    /// holding (`DocumentStore.acknowledge`): the protocol does not name a
    /// client, so all of them share it, which says which changes some
    /// client holds (`quire status` counts the local others as pending), as a
    /// name per client would: those counts take the highest acknowledgement.
    /// A request naming its client would be refused by peers before it
    /// (bytes after the message), and would not make compacting a served
    /// store safe (Specs/storage.md, "Compaction").
    public static let clientsPeer = "clients"

    public init(store: DocumentStore) {
        self.store = store
    }

    public func respond(to request: SyncRequest, access: Access) async throws(SyncFailure) -> SyncResponse {
        do {
            let pushed = request.documents.filter { !$0.bundles.isEmpty }
            if let forbidden = pushed.first(where: { !access.mayWrite($0.id) }) {
                throw SyncFailure(status: 403, "this peer may not write \(forbidden.id)")
            }
            // Many documents a transaction, each all or nothing: a refused one
            // leaves nothing, not even an empty document, and the others are
            // stored all the same. The first refused is the answer.
            var refusal: SyncFailure?
            let perTransaction = max(1, documentsPerTransaction)
            for start in stride(from: 0, to: pushed.count, by: perTransaction) {
                let part = pushed[start..<min(start + perTransaction, pushed.count)]
                for (id, error) in try store.applyEach(bundles: part.map { ($0.id, $0.bundles) }).refused where refusal == nil {
                    refusal = switch error {
                    case let error as DecodingError: SyncFailure(undecodable: error, in: id)
                    case let error as DocumentError: SyncFailure(refusing: error, in: id)
                    case let error where error.isDamage(ofDocument: id.rawValue): damaged(id, error)
                    default: SyncFailure(status: 500, "the peer's store failed: \(error)")
                    }
                }
            }
            if let refusal { throw refusal }
            var known: [DocumentID: VersionVector] = [:]
            for document in request.documents { known[document.id] = document.version }
            // Under the file's replica id, read with the versions answered: a
            // store that has not written since another store on the file took
            // a new one (`discardCopy`) still holds the retired id, under which
            // its clients would take it for the store they knew before the drop.
            let (versions, fileReplica) = try store.versionVectorsAndFileReplica()
            var response = SyncResponse(cursor: SyncCursor(logID: fileReplica.rawValue, seq: 0), documents: [])
            var bytes = 0
            // The documents the page may still carry changes of; the answer names those of the request too.
            var pageDocuments = min(maxPageDocuments, maxDocuments - request.documents.count)
            recordHeld(request, versions: versions)
            for info in try store.documents(includeRemoved: true) where access.mayRead(info.id) && request.range.contains(info.id) {
                let theirs = known[info.id] ?? VersionVector()
                let mine = versions[info.id] ?? VersionVector()
                var document = SyncDocument(id: info.id, version: mine)
                // Past the limit the page ends, holding the changes of one document at least.
                if !theirs.includes(mine) && !response.more {
                    if pageDocuments <= 0 && bytes > 0 { response.more = true } else { pageDocuments -= 1 }
                }
                if !theirs.includes(mine) && !response.more {
                    var changes: [Change]
                    do { changes = try store.changes(info.id, since: theirs) } catch where error.isDamage(ofDocument: info.id.rawValue) {
                        throw damaged(info.id, error)
                    }
                    // Keep whole causal prefixes: cut the list, never reorder it.
                    // The first document is cut too (a page past the frame and
                    // message limits is refused), but a page holds a change at least.
                    var size = 0
                    if let cut = changes.indices.first(where: { index in
                        size += ChangeEncoding.encode([changes[index]], version: request.answerBundleVersion).count
                        return bytes + size > maxPageBytes && (bytes > 0 || index > 0)
                    }) {
                        changes = Array(changes[..<cut])
                        response.more = true
                    }
                    bytes += size
                    document = SyncDocument(id: info.id, version: mine, changes: changes, bundleVersion: request.answerBundleVersion)
                }
                if known[info.id] != nil || !document.bundles.isEmpty { response.documents.append(document) }
            }
            // Those it lacks too, at no version: a client that synced with
            // another store behind the same command then sends them again.
            for document in request.documents where versions[document.id] == nil && access.mayRead(document.id) {
                response.documents.append(SyncDocument(id: document.id, version: VersionVector()))
            }
            return response
        } catch let failure as SyncFailure {
            throw failure
        } catch StoreError.historyCompacted(let document) {
            // The whole answer, not that document left out: a client takes a
            // document left out as one its token may not read, and would call
            // a sync that left it behind a success (Specs/sync.md, "Peer to
            // peer"). So is a damaged one's (`damaged`).
            throw .historyCompacted(document: document)
        } catch {
            throw SyncFailure(status: 500, "the peer's store failed: \(error)")
        }
    }

    /// The refusal of a request that needs document `id`, which this store
    /// cannot read (`error`): the client leaves it out and syncs the others.
    private func damaged(_ id: DocumentID, _ error: any Error) -> SyncFailure {
        onDamagedDocument("document \(id) is damaged in this store and was left out of a client's sync, nothing of it sent or taken: "
            + "\(error); `quire inspect` on this store says what is damaged")
        return .documentDamaged(id.rawValue)
    }

    /// Records, under `clientsPeer`, what the request states the client
    /// holds of this store's documents, no more than the store holds (the
    /// client cannot hold a change not made yet), for the documents where
    /// that covers a change not recorded yet, of any replica: `quire log`
    /// here says a change is acknowledged when some client holds it, the
    /// changes of other replicas it relays too. Most requests state
    /// nothing new and write nothing; a push does (its writer holds what it
    /// pushed), one more transaction after the push's. Not recording it (a
    /// store this process may not write) only leaves `quire status` and
    /// `log` here behind: the answer goes out all the same.
    private func recordHeld(_ request: SyncRequest, versions: [DocumentID: VersionVector]) {
        let recorded = (try? store.acknowledgedVersions(peer: Self.clientsPeer)) ?? [:]
        var held: [DocumentID: VersionVector] = [:]
        for document in request.documents {
            guard let mine = versions[document.id] else { continue }
            var both = VersionVector()
            for replica in document.version.replicas { both[replica] = min(document.version[replica], mine[replica]) }
            if !(recorded[document.id] ?? VersionVector()).includes(both) { held[document.id] = both }
        }
        if !held.isEmpty { _ = try? store.recordSyncProgress(peer: Self.clientsPeer, acknowledged: held, cursor: nil) }
    }
}
