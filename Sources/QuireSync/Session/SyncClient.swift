import Foundation
import Quire

/// Brings a store and a sync server (or peer) up to date with each other:
/// sends the changes the server lacks, applies the ones the store lacks,
/// and records how far it got, so that an interrupted sync loses nothing
/// and repeats nothing that matters (`Specs/sync.md`, "Sessions").
///
///     let transport = HTTPSyncTransport(server: url, token: token)
///     let client = SyncClient(store: store, peer: url.absoluteString, transport: transport)
///     let report = try await client.sync()
///     print("sent \(report.sent), received \(report.received)")
///
/// Each round is one request and its answer. The first round pushes what
/// the server has not acknowledged and pulls from the cursor; with nothing
/// concurrent that is the whole sync. A second round is needed when the
/// server's answer shows it lacks more than the acknowledgements said,
/// when an answer was a page with more to come, or when a peer (no server)
/// sent changes: it learns that the store holds them from a request.
public struct SyncClient: Sendable {
    /// The store synced: its changes are pushed, the server's applied to
    /// it, and the cursor and acknowledgements kept in it under `peer`.
    /// The sync calls it on its thread for store calls (`store.async`),
    /// never on the caller's.
    public let store: DocumentStore
    /// The name the store keeps this server's cursor and acknowledgements
    /// under: its URL, or the command for a stdio peer.
    public let peer: String
    /// How requests reach the server and answers come back:
    /// `HTTPSyncTransport` for a server over HTTP, `StdioSyncTransport`
    /// for a peer store run by a command, or an app's own.
    public let transport: any SyncTransport
    /// Bounds on one request's push; the rest goes in the next rounds.
    public var maxPushChanges = 10_000
    /// The most bytes of changes one request pushes, counted as each
    /// change encodes on its own (a bundle of one), before the message is
    /// compressed; 4 MiB by default. A change larger than this still goes,
    /// alone, so that no change is held back for good.
    public var maxPushBytes = 4 << 20
    /// The most documents one request states (below the server's
    /// `SyncMessage.Limits.maxDocuments`, as its answer adds the documents
    /// it sends); a store with more states them a range of ids at a time.
    public var maxStatedDocuments = 50_000
    /// A sync that needs more rounds than this stops with an error.
    public var maxRounds = 10_000
    /// The bounds an answer must keep to be decoded: 64 MiB after
    /// decompression and 100,000 documents by default. An answer past them
    /// fails the sync (`SyncError.protocolViolation`) before any of it is
    /// applied. Raise them only for a server known to send larger pages:
    ///
    ///     var client = SyncClient(store: store, peer: peer, transport: transport)
    ///     client.messageLimits.maxPayloadBytes = 256 << 20
    public var messageLimits = SyncMessage.Limits()
    /// Receives a line about each round, for a progress display.
    public var progress: @Sendable (String) -> Void = { _ in }

    /// A client syncing `store` through `transport`, with the default
    /// bounds; nothing is sent before `sync()`. `peer` names the server
    /// in the store (its URL, or a stdio peer's command): a client made
    /// again with the same name takes up where the last sync left off;
    /// under another name, the store knows nothing of the server yet.
    public init(store: DocumentStore, peer: String, transport: any SyncTransport) {
        self.store = store
        self.peer = peer
        self.transport = transport
    }

    /// What one sync did.
    public struct Report: Sendable, Equatable {
        /// Requests sent, each with its answer: 1 for a sync with nothing
        /// concurrent (`maxRounds` at most).
        public var rounds = 0
        /// Local or relayed changes the server now holds that it lacked.
        public var sent = 0
        /// Changes applied to the store.
        public var received = 0
        /// Bytes of the requests sent, encoded and compressed as they go
        /// (`SyncMessage.encoded()`); what the transport adds (HTTP
        /// headers) and resends after a failed try are not counted.
        public var bytesSent = 0
        /// Bytes of the answers received, compressed as they came, counted
        /// as `bytesSent` is.
        public var bytesReceived = 0
        /// Changes the server refused for good during this sync.
        public var rejected: [RejectedChange] = []
        /// Documents this store cannot read (a damaged change), with why:
        /// left out of the sync, which went on with the others. What the
        /// server sent for them meanwhile is not applied.
        public var damaged: [DocumentID: String] = [:]
        /// Documents with changes the server lacks that it did not answer
        /// for, or refused as outside this token's documents: the token may
        /// not read them (nor write them), so they were left out, and their
        /// changes stay pending.
        public var outOfScope: [DocumentID] = []
        /// The server's refusal of any write by this token (it may only
        /// read: `SyncFailure.readOnlyToken`), when it had changes to send:
        /// the sync pulled without pushing, rejected none, and the documents
        /// in `notSent` keep their changes pending for a token that may write.
        public var writeRefusal: SyncFailure?
        /// With `writeRefusal`, the documents holding changes the server lacks.
        public var notSent: [DocumentID] = []
        /// Documents the server no longer holds changes of that this store
        /// lacks (a store compacted without history), with its refusal
        /// (`SyncFailure.historyCompacted`): left out of the sync, which went
        /// on with the others; their local changes stay pending, and no sync
        /// with this server can bring what they lack.
        public var historyCompacted: [DocumentID: SyncFailure] = [:]
        /// Documents the server cannot read in its own store (damaged there),
        /// with its refusal (`SyncFailure.documentDamaged`): left out of the
        /// sync, which went on with the others; nothing of them was sent
        /// either way, and their local changes stay pending.
        public var damagedOnPeer: [DocumentID: SyncFailure] = [:]
        /// Documents whose changes from the server this store refused, with
        /// why: a change under an id this store holds with other content (one
        /// of the two copies was forged or damaged on its way), one that
        /// breaks the rules of `Specs/crdt.md` or lies too far ahead in
        /// Lamport value, or a bundle that does not decode. Left out of the
        /// sync, which went on with the others: nothing the server sent for
        /// them is applied, nothing more of them is pushed, and this store's
        /// copy stays as it was. The stored cursor stays behind their
        /// changes, so that every later sync meets them again until this
        /// store's copy is dealt with, rather than leave it behind in silence.
        public var notApplied: [DocumentID: RefusedChanges] = [:]
        /// The documents this sync applied changes to, each with how many
        /// and its version in the store before the first of them and after
        /// the last: `quire diff ID --from` the one `--to` the other shows
        /// what the sync brought.
        public var changedDocuments: [DocumentID: ChangedDocument] = [:]
    }

    /// A document a sync applied changes to (`Report.changedDocuments`).
    public struct ChangedDocument: Sendable, Equatable {
        /// Its version in the store just before the sync applied the first
        /// of them, read in the transaction that applied them
        /// (`DocumentStore.AppliedChanges`), so that an edit another process
        /// committed before is not taken for one the sync brought; empty for
        /// a document the store lacked, which the sync made (or whose copy
        /// `DocumentStore.discardCopy` dropped).
        public var versionBefore: VersionVector
        /// Its version in the store just after the sync applied the last of
        /// them, read in the same transaction, so that an edit committed
        /// after it (by this process or another) is not taken for one the
        /// sync brought.
        public var versionAfter: VersionVector
        /// How many changes the sync applied to it.
        public var received: Int
        /// Whether something else was committed to it between two pages
        /// that changed it (another process's edit): the two versions then
        /// hold that too, and a diff between them shows it as brought.
        public var isInterleaved = false
    }

    /// Syncs until neither side lacks anything the other may give it.
    ///
    /// - Parameter waitSeconds: when the first round sends nothing and
    ///   the server has nothing new, ask again and let the server wait
    ///   that long for news (long-poll) before ending.
    /// - Throws: `SyncError`. Whatever was applied or acknowledged before
    ///   the error stays; every local change not acknowledged stays pending.
    ///   (`syncKeepingReport` says what was applied.)
    @discardableResult
    public func sync(waitSeconds: Double = 0) async throws(SyncError) -> Report {
        let (report, error) = await syncKeepingReport(waitSeconds: waitSeconds)
        if let error { throw error }
        return report
    }

    /// Syncs as `sync(waitSeconds:)` does, and returns what the sync did
    /// even when it fails, with the error: the pages applied before it
    /// stay applied, and the report names them (`received`,
    /// `changedDocuments`), so that a person can be shown what did arrive.
    /// The report of a failed sync says how far it got, not why it stopped:
    /// the members filled in only when a sync completes (`outOfScope`,
    /// `notSent`, `writeRefusal`, `historyCompacted`, `damagedOnPeer`) are
    /// empty.
    public func syncKeepingReport(waitSeconds: Double = 0) async -> (report: Report, error: SyncError?) {
        var session = Session()
        do throws(SyncError) {
            try await syncRounds(waitSeconds: waitSeconds, &session)
            return (session.report, nil)
        } catch {
            // Whoever made it (a transport of the app's own, this client),
            // the error names the side this sync went to.
            return (session.report, error.about(transport.otherSide))
        }
    }

    /// The rounds of a sync, until it completes (`session.report` then
    /// says what it did) or fails (it says what was done before).
    private func syncRounds(waitSeconds: Double, _ session: inout Session) async throws(SyncError) {
        (session.serverVersions, session.refusedBefore) = try await storeWork { [peer] store in
            (try store.acknowledgedVersions(peer: peer), try store.refusedDocuments(peer: peer))
        }
        // What the last answer through this transport stated: a first request pushing at once (a cursor past seq 0) follows it.
        session.follow(statement: transport.readsBundleVersions)
        var waitingRound = 0
        for round in 1...maxRounds {
            session.report.rounds = round
            let wait = round == waitingRound ? waitSeconds : 0
            let request = try await storeWork(&session) { session in try makeRequest(&session, waitMilliseconds: UInt64(wait * 1000)) }
            // An answer that changed nothing leaves the request as it was: the
            // same answer would come back, round after round.
            guard request != session.lastRequest else {
                let pushed = session.pushed.map { "\($0.value.count) of document \($0.key)" }.sorted()
                throw .protocolViolation("it neither took nor refused the changes pushed (\(pushed.joined(separator: ", "))) "
                    + "and sent nothing new: another round would only repeat the last")
            }
            session.lastRequest = request
            let bytes = SyncMessage.request(request).encoded()
            session.report.bytesSent += bytes.count
            let answer: SyncMessage
            let newChanges: Int?
            do throws(SyncError) {
                let answerBytes = try await transport.exchangeCountingNew(bytes, longPollSeconds: wait)
                session.report.bytesReceived += answerBytes.bytes.count
                newChanges = answerBytes.newChanges
                session.follow(statement: transport.readsBundleVersions)
                do { answer = try SyncMessage.decode(answerBytes.bytes, limits: messageLimits) } catch {
                    throw SyncError.protocolViolation("\(error)")
                }
            } catch {
                guard case .refused(let failure) = error.kind else { throw error }
                try await storeWork(&session) { session in try handleRefusal(failure, &session) }
                continue
            }
            switch answer {
            case .failure(let failure) where failure.isTransient:
                throw .unreachable(failure.description)
            case .failure(let failure):
                try await storeWork(&session) { session in try handleRefusal(failure, &session) }
            case .request:
                throw .protocolViolation("it answered with a request")
            case .bundleVersions:
                throw .protocolViolation("it answered a request with a statement of the change bundle versions it reads")
            case .response(let response):
                let done = try await storeWork(&session) { session in try apply(response, newChanges: newChanges, &session) }
                // Totals, said to be: `round 2: sent 1, received 9` read as 9 more.
                progress("round \(round), so far: sent \(session.report.sent), received \(session.report.received)"
                    + (response.more ? ", more to come" : ""))
                // The long-poll is a round of its own after a first round that
                // found nothing, not that first round: over HTTP it then goes on
                // the connection the first round opened. FoundationNetworking on
                // Linux keeps watching a socket it connected for writability,
                // so a request that waits on a new connection spins a core for
                // the whole wait (3.3 s of CPU in a 5 s wait, measured).
                if done && round == 1 && waitSeconds > 0 && session.pushed.isEmpty && session.report.received == 0 {
                    waitingRound = 2
                } else if done {
                    // The others synced; the changes no request could carry stay pending, and the sync fails saying so.
                    if let tooLarge = session.tooLarge.min(by: { $0.key < $1.key }) {
                        let others = session.tooLarge.count - 1
                        throw .refused(SyncFailure(status: tooLarge.value.status, tooLarge.value.message
                            + (others > 0 ? " (and a change of each of \(others) other document(s) too)" : "")
                            + "; the changes stay pending, and the other documents synced"))
                    }
                    return
                }
            }
        }
        throw .protocolViolation("the sync did not end after \(maxRounds) rounds")
    }

    /// The file's replica id and every id it has held (`DocumentStore.fileReplicas()`).
    private typealias FileReplicas = (current: ReplicaID, all: Set<ReplicaID>)

    /// What a sync knows between rounds.
    private struct Session {
        var report = Report()
        /// The store's `cursorRewinds()`, read with the stored cursor that
        /// the pages whose cursor is stored next went on from: once a
        /// `discardCopy` (another process's) has moved the cursors back
        /// since, this sync stores none (`DocumentStore.recordSyncProgress`),
        /// its pages having maybe passed rows of the dropped document. A
        /// drop before that read had already moved back the cursor read.
        var cursorRewindsAtRead: Int64 = 0
        /// Set once a cursor was not stored for such a rewind.
        var rewoundMeanwhile = false
        /// The file's replica ids as the current request was made
        /// (`DocumentStore.fileReplicas()`; set by every request before its
        /// answer comes): an answer at seq 0 under the id then, or under one
        /// minted since, comes from a store serving this very file.
        var fileReplicasAtRequest: FileReplicas = (ReplicaID(0), [])
        /// What the server is known to hold: the stored acknowledgements,
        /// then its answers in this sync.
        var serverVersions: [DocumentID: VersionVector] = [:]
        /// The changes the current request pushes.
        var pushed: [DocumentID: [Change]] = [:]
        /// The `QCHG` version pushes are written in: `ChangeEncoding.version`
        /// until the other side states that it does not read it (`follow`)
        /// or refuses a push for it (a Quire before review177): then
        /// `olderReadersVersion`, which every Quire reads. It only goes
        /// down, so that a statement cannot undo what a refusal showed.
        var pushBundleVersion = ChangeEncoding.version

        /// Pushes from now on in the newest version this build writes of
        /// those the other side stated it reads (nil: it stated none). A
        /// statement listing neither says nothing this build can act on
        /// (hostile, or of a far newer build): it is taken as none, so that
        /// pushes go as to a side stating nothing (5, then 3 once refused).
        mutating func follow(statement: Set<UInt64>?) {
            guard let statement, statement.contains(ChangeEncoding.version) || statement.contains(ChangeEncoding.olderReadersVersion) else {
                return
            }
            pushBundleVersion = min(pushBundleVersion, ChangeEncoding.writtenVersion(forReaderOf: statement))
        }

        /// The changes pushed in this sync that no answer has shown the
        /// server holding yet, by the id of their last operation: each is
        /// counted in `sent` when one does, once, though pushed again (a
        /// peer stores the documents of a refused push but the refused one).
        var unconfirmed: [DocumentID: Set<OpID>] = [:]
        /// The documents an answer of this sync has stated the version of.
        var answered: Set<DocumentID> = []
        /// After a refused push of several documents, push one document a
        /// request, so that the next refusal names the guilty one.
        var oneDocumentPerPush = false
        /// After a request refused as too large, the most changes one pushes.
        var pushChangeLimit: Int?
        /// After a request refused as too large, the most documents one states.
        var statedDocumentLimit: Int?
        /// Documents with a change too large for a request on its own, with
        /// that refusal: left out of the rest of the sync, their changes pending.
        var tooLarge: [DocumentID: SyncFailure] = [:]
        /// Documents the server did not answer for: this token may not read them.
        var unanswered: Set<DocumentID> = []
        /// Set once the server refused any write by this token: nothing more is pushed.
        var writeRefusal: SyncFailure?
        /// Set once the server refused a push to a document outside the ones
        /// this token is limited to: from then on, only documents the server
        /// has stated (acknowledged, or answered in this sync) are pushed.
        var tokenIsLimited = false
        /// Documents the server refused to answer for, with its refusal:
        /// compacted past what this store lacks, or damaged in its store.
        /// The rest of the sync states ranges that step over them.
        var leftOut: [DocumentID: SyncFailure] = [:]
        /// Some document is left out as damaged on the server: the stored
        /// cursor then stays behind its rows.
        var leftOutAsDamaged: Bool { leftOut.values.contains { $0.damagedDocument != nil } }
        /// The documents the last sync with this server left out as refused
        /// (`DocumentStore.refusedDocuments`): the stored cursor stayed behind their rows.
        var refusedBefore: Set<DocumentID> = []
        /// Whether a request with a cursor past seq 0 states document `id`
        /// even at the version the server is known to hold: while the stored
        /// cursor stays behind the rows of a document left out (damaged on the
        /// server, or its changes refused here, by this sync or the last one),
        /// it is behind the other documents' rows pulled since too, and a
        /// request pulling from it (until a finished pass sets `pulledCursor`)
        /// states them so that the server leaves out what the store holds. A
        /// document refused by the last sync is not stated so: its rows must
        /// come again, for the store to see whether it still refuses them.
        func statesAnyway(_ id: DocumentID) -> Bool {
            pulledCursor == nil && !refusedBefore.contains(id) && (cursorStaysBehind || !refusedBefore.isEmpty)
        }
        /// Set once a pass has pulled every row after the stored cursor (a
        /// last page, or the last range's): the rows of the documents in
        /// `refusedBefore` among them.
        var pulledPastStoredCursor = false
        /// Whether a request leaves document `id` unstated, whatever it holds:
        /// refused by the last sync, its rows after the stored cursor (from
        /// the start of the log, for one at seq 0: a peer's, or one
        /// `discardCopy` rewound) must come so that the store sees whether
        /// it still refuses them. Stated
        /// at this store's version, which holds the clashing change's id, the
        /// server would leave them out, and take the local changes pushed
        /// onto its own copy: the refusal would end in silence, the copies
        /// apart for good.
        func awaitsRefusedRows(_ id: DocumentID) -> Bool {
            !pulledPastStoredCursor && refusedBefore.contains(id) && report.notApplied[id] == nil
        }
        /// The stored cursor stays where it was: past the rows of a document
        /// left out as damaged on the server, or of one whose changes this
        /// store refused, those rows would never come again; past a rewind
        /// made since the stored cursor its pages went on from was read
        /// (`rewoundMeanwhile`), the rows of the dropped document.
        var cursorStaysBehind: Bool { leftOutAsDamaged || !report.notApplied.isEmpty || rewoundMeanwhile }
        /// Whether this store left the document out of the sync: damaged
        /// here, or its changes from the server refused.
        func isLeftOutHere(_ id: DocumentID) -> Bool { report.damaged[id] != nil || report.notApplied[id] != nil }
        /// Documents this sync applied changes to that no request has stated
        /// since: a peer learns that the store holds them only from a request
        /// stating them (in ranges, the next one whose range holds them).
        var receivedUnstated: Set<DocumentID> = []
        /// Where the pages of the last finished pass got, when the stored
        /// cursor stays behind them (a document left out as damaged): later
        /// passes of this sync pull from here, not from the stored cursor
        /// again, which would bring every other document's rows since it once more.
        var pulledCursor: SyncCursor?
        var lastCursor: SyncCursor?
        var lastRequest: SyncRequest?
        /// Set while the documents are stated a range at a time.
        var pass: RangedPass?
    }

    /// Stating the documents a range at a time, each range pulled from the
    /// stored cursor (or `Session.pulledCursor`). That cursor moves only once every range is pulled,
    /// and to where the first one ended: the others ended later, and a
    /// range's rows past its end are not yet pulled. A document left out
    /// (`Session.leftOut`) lies between two ranges, in neither.
    private struct RangedPass {
        /// The range stated now; nil until its first request sets it.
        var range: DocumentRange?
        /// Where the range before this one ended.
        var after: DocumentID?
        /// How far this range's pages have got; nil: the stored cursor.
        var cursor: SyncCursor?
        /// Where the first range ended.
        var firstEnd: SyncCursor?
        /// Every range is pulled.
        var isDone = false
    }

    /// The next request, following `Specs/sync.md`, "Sessions": the
    /// documents to state, the range of them this request states, and the
    /// changes of each that it pushes, within one request's bounds.
    private func makeRequest(_ session: inout Session, waitMilliseconds: UInt64) throws -> SyncRequest {
        session.pushed = [:]
        let blocked = try blockedCounters()
        // Read before the versions stated: a drop after the cursor is read
        // then shows in the count (and the cursor is not stored), not only
        // in versions lacking the dropped document, whose rows that cursor
        // passed.
        let (storedCursor, rewinds) = try store.syncCursorAndRewinds(peer: peer)
        // Before the request goes: a store serving this file answers under the file's id as it finds it then or later.
        session.fileReplicasAtRequest = try store.fileReplicas()
        // Read from the store's `document_versions`: no document is loaded to state it.
        let versions = try store.versionVectors()
        // A cursor past 0 stands for every row up to it: a document at the
        // version the server is known to hold need not be named, as the
        // server sends it the rows after the cursor, which it lacks. A peer's
        // cursor is always at 0 (it goes by the named versions alone). An
        // empty version says nothing.
        let coversRows = (storedCursor?.seq ?? 0) > 0
        let stated = documentsToState(versions, coversRows: coversRows, session)
        let range = rangeToState(of: stated, &session)
        // This request starts the pages whose cursor is stored next when it
        // pulls from the stored cursor, unless in a later range of a pass,
        // which stores the first range's end.
        if session.pass?.cursor == nil && session.pulledCursor == nil && session.pass?.firstEnd == nil {
            session.cursorRewindsAtRead = rewinds
        }
        var budget = PushBudget(changes: min(maxPushChanges, session.pushChangeLimit ?? .max), bytes: maxPushBytes)
        var documents: [SyncDocument] = []
        for id in stated where range.contains(id) {
            session.receivedUnstated.remove(id)
            let mine = versions[id] ?? VersionVector()
            let push = try changesToPush(of: id, mine: mine, coversRows: coversRows, blocked: blocked[id], &budget, &session)
            if !push.isEmpty {
                session.pushed[id] = push
                session.unconfirmed[id, default: []].formUnion(push.map(\.lastID))
            }
            documents.append(SyncDocument(id: id, version: mine, changes: push, bundleVersion: session.pushBundleVersion))
        }
        return SyncRequest(cursor: session.pass?.cursor ?? session.pulledCursor ?? storedCursor, waitMilliseconds: waitMilliseconds,
                           documents: documents, range: range)
    }

    /// What one request may still push: changes, and bytes of them encoded.
    private struct PushBudget {
        var changes: Int
        var bytes: Int
    }

    /// The documents a request states (all of them, or those of its range), sorted by id.
    private func documentsToState(_ versions: [DocumentID: VersionVector], coversRows: Bool, _ session: Session) -> [DocumentID] {
        versions.filter { id, mine in
            !mine.isEmpty && !session.awaitsRefusedRows(id)
                && (!coversRows || session.statesAnyway(id) || mine != session.serverVersions[id])
        }.keys.sorted()
    }

    /// The range of `stated` this request states: all of them, unless they
    /// are more than a request takes or a document is left out, when the
    /// sync goes through them in ranges (`RangedPass`).
    private func rangeToState(of stated: [DocumentID], _ session: inout Session) -> DocumentRange {
        let perRequest = max(1, min(maxStatedDocuments, session.statedDocumentLimit ?? .max))
        if session.pass == nil && (stated.count > perRequest || !session.leftOut.isEmpty) { session.pass = RangedPass() }
        guard var pass = session.pass else { return .all }
        // A range that ended just below a document left out is followed by one from after it.
        while let skipped = session.leftOut.keys.first(where: { $0.justBelow == pass.after }) { pass.after = skipped }
        let rest = stated.drop { id in pass.after.map { id <= $0 } ?? false }
        let nextLeftOut = session.leftOut.keys.filter { id in pass.after.map { $0 < id } ?? true }.min()
        let end = [rest.count > perRequest ? rest.dropFirst(perRequest - 1).first : nil, nextLeftOut?.justBelow].compactMap { $0 }.min()
        // A range may shrink while its pages come, as the documents they
        // bring are stated too (its rows past the new end come again with
        // the next range), never grow: the rows its pages passed would be
        // missed for the documents it gained.
        let through = pass.range.map { range in [range.through, end].compactMap { $0 }.min() } ?? end
        let range = DocumentRange(after: pass.after, through: through)
        pass.range = range
        session.pass = pass
        return range
    }

    /// The changes of document `id` (at version `mine` here) that the
    /// request pushes, taken from `budget`: none when it may not push them
    /// yet, or the document cannot be read (then left out of the sync).
    private func changesToPush(of id: DocumentID, mine: VersionVector, coversRows: Bool, blocked: [ReplicaID: UInt64]?,
                               _ budget: inout PushBudget, _ session: inout Session) throws -> [Change] {
        let theirs = session.serverVersions[id] ?? VersionVector()
        guard mayPush(id, coversRows: coversRows, session), budget.changes > 0, !theirs.includes(pushable(mine, blocked)) else {
            return []
        }
        // Blocked changes are skipped, so with any the count is not known ahead.
        let limit = blocked == nil ? budget.changes : .max
        let changes: [Change]
        do { changes = try store.changes(id, since: theirs, limit: limit) } catch let error as StoreError where error.damagedDocument != nil {
            damage(id, error, &session)
            return []
        }
        var push: [Change] = []
        for change in changes where !isBlocked(change, blocked) {
            let size = ChangeEncoding.encode([change]).count
            guard budget.changes > 0, size <= budget.bytes || push.isEmpty && session.pushed.isEmpty else { break }
            push.append(change)
            budget.changes -= 1
            budget.bytes -= size
        }
        return push
    }

    /// Whether this request may push changes of document `id` at all.
    private func mayPush(_ id: DocumentID, coversRows: Bool, _ session: Session) -> Bool {
        // What a server holds of a document is known from its
        // acknowledgement when its cursor covers rows: its log is the one
        // they came from. A peer's (a cursor at seq 0), or any without a
        // cursor (no sync yet, or its log was replaced), may hold more
        // than it acknowledged, got from another store (a sync the other
        // way, under another name): sending that would carry it again and
        // count it, so a document is pushed once an answer of this sync
        // has stated what the peer holds of it. So is every document the
        // server has never stated once it refused one as outside this
        // token's documents: one the token may not read is then left out
        // of the answer (`outOfScope`), not refused again, one a round.
        let stated = session.answered.contains(id) || coversRows && (session.serverVersions[id] != nil || !session.tokenIsLimited)
        return stated && !(session.oneDocumentPerPush && !session.pushed.isEmpty)
            && !session.unanswered.contains(id) && !session.isLeftOutHere(id) && session.tooLarge[id] == nil
            && session.writeRefusal == nil
    }

    /// Applies an answer; returns whether the sync is complete.
    /// `newChanges`: how many of the pushed changes the server says were
    /// new to it (`SyncAnswer.newChanges`), nil when it does not say.
    ///
    /// The steps of `Specs/sync.md`, "Sessions": check the answer's cursor,
    /// apply its page, take the versions it states, then record them and the
    /// cursor together, and count what the server took.
    private func apply(_ response: SyncResponse, newChanges: Int?, _ session: inout Session) throws -> Bool {
        let pushedCount = session.pushed.values.reduce(0) { $0 + $1.count }
        if let newChanges, newChanges > pushedCount {
            throw SyncError.protocolViolation("it says \(newChanges) of the \(pushedCount) changes pushed were new to it")
        }
        try refuseAnswerFromThisStore(response, fileReplicasAtRequest: session.fileReplicasAtRequest)
        let cursorReset = try takeCursorReset(response, &session)
        try applyPage(response, &session)
        // Every document the store holds, now that the page is applied, and the id its own changes are made under.
        let (versions, fileReplica) = try store.versionVectorsAndFileReplica()
        let stated = try takeStatedVersions(response, versions: versions, ownReplica: fileReplica, cursorReset: cursorReset, &session)
        let cursor = storedCursorAfter(response, cursorReset: cursorReset, &session)
        try recordProgress(acknowledged: stated.acknowledged, held: stated.held, cursor: cursor, newChanges: newChanges, &session)
        if response.more {
            guard response.cursor != session.lastCursor || !response.documents.allSatisfy(\.bundles.isEmpty) else {
                throw SyncError.protocolViolation("it says more is to come but sends nothing new")
            }
            session.lastCursor = response.cursor
            return false
        }
        session.lastCursor = response.cursor
        if session.pass != nil { return false }
        return try isComplete(response, versions: versions, &session)
    }

    /// Ends the sync when the answer came from this very store, before
    /// anything of it is applied or recorded. `fileReplicasAtRequest`: the
    /// file's replica ids as the request answered was made.
    private func refuseAnswerFromThisStore(_ response: SyncResponse,
                                           fileReplicasAtRequest atRequest: FileReplicas) throws {
        // A peer's cursor names its store: this one means the command served
        // this very file (a path mistyped), and a sync would call every local
        // change held elsewhere. A store serving the file answers under the
        // file's id as it reads it for the answer (`PeerSyncService`), which
        // this store does not hold when it has not written since another
        // store on the file took a new one (`discardCopy`, another process's
        // `--take-theirs`), nor the file when another took one after that
        // read: the id the file held as the request was made, or one minted
        // since. Only a store answers at seq 0 (it has no log): a server's
        // pages past it cost no read.
        let logID = ReplicaID(response.cursor.logID)
        guard try logID == store.replicaID || response.cursor.seq == 0 && wasFileReplica(logID, since: atRequest) else { return }
        // The served side has already recorded them as a client's
        // (`clientsPeer`): forgotten, real clients' next requests state them again.
        try store.forgetSyncState(peer: PeerSyncService.clientsPeer)
        throw SyncError.unreachable("it answered from this store itself (replica \(logID)), not another: "
            + "nothing was synced; run `quire serve --stdio` on the other store")
    }

    /// Whether `id` was the file's replica id at some time since
    /// `atRequest` was read (`DocumentStore.fileReplicas()`): the id then,
    /// or one minted for the file since.
    private func wasFileReplica(_ id: ReplicaID, since atRequest: FileReplicas) throws -> Bool {
        guard id != atRequest.current else { return true }
        return try store.fileReplicas().all.contains(id) && !atRequest.all.contains(id)
    }

    /// Whether the answer comes from another log than the one this store
    /// synced with; if so, forgets what the old one was known to hold.
    private func takeCursorReset(_ response: SyncResponse, _ session: inout Session) throws -> Bool {
        // A peer sets no reset flag, but its cursor names its store (its
        // replica id): another one than the request's cursor names is another
        // store behind the same command (replaced, or copied: a new replica id).
        let cursorReset = response.cursorReset || session.lastRequest?.cursor.map { $0.logID != response.cursor.logID } == true
        if cursorReset {
            // The server is not the one the acknowledgements were from:
            // forget them, so that every change it lacks is pending again.
            progress("\(transport.otherSide)'s log is not the one this store synced with: resyncing by version vectors")
            try store.forgetSyncState(peer: peer)
            session.serverVersions = [:]
            session.refusedBefore = []
            session.pulledCursor = nil
        }
        return cursorReset
    }

    /// Applies the changes the answer brings, counting them in `received`.
    private func applyPage(_ response: SyncResponse, _ session: inout Session) throws {
        // Every document's changes in one transaction: one disk sync a page.
        // A document this store cannot read, or whose changes it refuses, is
        // left out and the others applied (`applyEach`): one bad note must
        // not keep the others from syncing, sync after sync.
        let incoming = response.documents.filter { !$0.bundles.isEmpty && !session.isLeftOutHere($0.id) }.map { ($0.id, $0.bundles) }
        let (applied, refusals) = try store.applyEach(bundles: incoming)
        for (id, error) in refusals {
            if let refused = RefusedChanges(document: id, error) {
                // Not the store's fault: its copy is whole, and the next sync meets the same change.
                session.report.notApplied[id] = refused
                progress("\(transport.otherSide) sent changes to document \(id) that this store refuses "
                    + "(\(refused.reason)): its copy here is left as it is, and the document left out of the sync")
            } else {
                damage(id, error, &session)
            }
        }
        for (id, changes) in applied {
            session.report.received += changes.count
            // The first page to change a document gives its version before the sync, the last its version after.
            var changed = session.report.changedDocuments[id]
                ?? ChangedDocument(versionBefore: changes.versionBefore, versionAfter: changes.versionBefore, received: 0)
            // Not where the page before left it: something else was committed to it in between.
            if changed.versionAfter != changes.versionBefore { changed.isInterleaved = true }
            changed.versionAfter = changes.versionAfter
            changed.received += changes.count
            session.report.changedDocuments[id] = changed
        }
        if !applied.isEmpty { session.receivedUnstated.formUnion(incoming.map(\.0).filter { !session.isLeftOutHere($0) }) }
    }

    /// Takes the versions the answer states as what the server holds;
    /// returns the ones to record as acknowledged (of documents this store
    /// holds), and the pushed changes they show held for the first time.
    /// `ownReplica`: the file's replica id, read with `versions`.
    private func takeStatedVersions(_ response: SyncResponse, versions: [DocumentID: VersionVector], ownReplica: ReplicaID,
                                    cursorReset: Bool, _ session: inout Session) throws
        -> (acknowledged: [DocumentID: VersionVector], held: [DocumentID: Set<OpID>]) {
        var answered = Set<DocumentID>()
        var acknowledged: [DocumentID: VersionVector] = [:]
        var held: [DocumentID: Set<OpID>] = [:]
        for document in response.documents {
            // Answered all the same: the token may read it.
            answered.insert(document.id)
            // A document whose changes this store refused: which copy is right it
            // cannot tell, so what the answer states of it is neither checked nor
            // taken (its stored acknowledgement and cursor bring the refusal back).
            guard session.report.notApplied[document.id] == nil else { continue }
            // Only this store makes changes under its replica id: recorded, a
            // claim of more would keep the ones it names from ever being sent.
            // The file's id, not `store.replicaID`: a store on the file that
            // dropped a document's copy retired the old one, and a server may
            // hold more of that document's changes under it than the store
            // now does, until a page brings them (a later one, or the next
            // sync's when the drop came after the request was made).
            let claimed = document.version[ownReplica], made = versions[document.id]?[ownReplica] ?? 0
            guard claimed <= made else {
                throw SyncError.protocolViolation("it claims to hold the changes of this store (replica \(ownReplica)) "
                    + "to document \(document.id) up to counter \(claimed), but this store has made them only up to \(made)")
            }
            if versions[document.id] != nil { acknowledged[document.id] = document.version }
            session.serverVersions[document.id] = document.version
            if let pushed = session.unconfirmed[document.id] {
                held[document.id] = pushed.filter { document.version.contains($0) }
                session.unconfirmed[document.id] = pushed.subtracting(held[document.id] ?? [])
            }
        }
        session.answered.formUnion(answered)
        // The last page of an answer from the start of the log (no cursor, or
        // a reset) has sent every row of its range the stated versions lack:
        // a document of the range it leaves out, the server lacks.
        if let request = session.lastRequest, !response.more, cursorReset || (request.cursor?.seq ?? 0) == 0 {
            session.answered.formUnion(versions.keys.filter { request.range.contains($0) })
        }
        // A document the request names and the answer leaves out, this token may not read.
        for document in session.lastRequest?.documents ?? [] where !answered.contains(document.id) {
            session.unanswered.insert(document.id)
        }
        return (acknowledged, held)
    }

    /// What the stored cursor becomes after this answer (nil: it stays):
    /// the answer's, but in a pass only once every range is pulled.
    private func storedCursorAfter(_ response: SyncResponse, cursorReset: Bool, _ session: inout Session) -> SyncCursor? {
        guard var pass = session.pass else {
            if !response.more { session.pulledPastStoredCursor = true }
            guard session.cursorStaysBehind else { return response.cursor }
            session.pulledCursor = response.cursor
            return nil
        }
        var cursor: SyncCursor?
        if cursorReset {
            // The ranges pulled so far came from another log: start again.
            pass = RangedPass()
        } else if response.more {
            pass.cursor = response.cursor
        } else if let through = pass.range?.through {
            pass = RangedPass(after: through, firstEnd: pass.firstEnd ?? response.cursor)
        } else {
            pass.isDone = true
            session.pulledPastStoredCursor = true
            // A cursor stands for every row before it: past the rows of a
            // document left out as damaged, they would never come once the
            // server's store is repaired, nor a document's whose changes this
            // store refused once its copy is dealt with (the next sync pulls the
            // others' again; this one goes on from here). A compacted one's cannot come.
            cursor = pass.firstEnd ?? response.cursor
            if session.cursorStaysBehind {
                session.pulledCursor = cursor
                cursor = nil
            }
        }
        session.pass = pass.isDone ? nil : pass
        return cursor
    }

    /// Records the acknowledgements and the cursor in one transaction, and
    /// counts in `sent` the pushed changes the server now holds.
    private func recordProgress(acknowledged: [DocumentID: VersionVector], held: [DocumentID: Set<OpID>], cursor: SyncCursor?,
                                newChanges: Int?, _ session: inout Session) throws {
        // A server that says how many pushed changes were new to it is
        // exact: a change relayed to it first, or pushed by another sync of
        // this store at the same time, is not counted. Otherwise a change
        // another sync of this store (run at the same time, pushing it too)
        // saw the server hold first is that sync's to count in `sent`.
        let (earlier, cursorStored) = try store.recordSyncProgress(
            peer: peer, acknowledged: acknowledged, cursor: cursor, unlessRewoundSince: session.cursorRewindsAtRead,
            earlierOf: held.filter { newChanges == nil && !$0.value.isEmpty }.keys)
        if let cursor, !cursorStored {
            // A store on the file dropped a copy since the cursor these pages went on from was read (`quire sync
            // --take-theirs`), moving the cursors back: the stored one stays there, and this sync goes on from where
            // its pages got.
            session.rewoundMeanwhile = true
            session.pulledCursor = cursor
            progress("a note's copy was dropped in this store during the sync (`quire sync --take-theirs`): "
                + "the next sync with \(transport.otherSide) starts from the beginning of its log")
        }
        if let newChanges {
            session.report.sent += newChanges
        } else {
            for (id, changes) in held {
                session.report.sent += changes.count { earlier[id]?.contains($0) != true }
            }
        }
    }

    /// After the last page of a pass (or of the only range): whether the
    /// sync is complete, the server holding everything it may take from
    /// us. If so, fills in the report's documents left out or not sent.
    private func isComplete(_ response: SyncResponse, versions: [DocumentID: VersionVector], _ session: inout Session) throws -> Bool {
        let blocked = try blockedCounters()
        var outOfScope: [DocumentID] = [], notSent: [DocumentID] = []
        for (id, mine) in versions where !session.isLeftOutHere(id) && session.tooLarge[id] == nil && session.leftOut[id] == nil {
            if !(session.serverVersions[id] ?? VersionVector()).includes(pushable(mine, blocked[id])) {
                if session.unanswered.contains(id) {
                    outOfScope.append(id)
                } else if session.writeRefusal != nil {
                    notSent.append(id)
                } else {
                    return false
                }
            }
        }
        session.report.outOfScope = outOfScope.sorted()
        session.report.notSent = notSent.sorted()
        session.report.writeRefusal = session.writeRefusal
        session.report.historyCompacted = session.leftOut.filter { $0.value.compactedDocument != nil }
        session.report.damagedOnPeer = session.leftOut.filter { $0.value.damagedDocument != nil }
        // A peer (no server: its cursor is at seq 0) knows what this store
        // holds only from the versions a request states: one more round
        // states the changes it sent as held, so that it stops counting
        // them as pending (`quire status` there).
        let isComplete = session.receivedUnstated.isEmpty || response.cursor.seq > 0
        // Kept for the next sync, whose cursor stays behind their rows (`Session.statesAnyway`);
        // written only when they change, as every write costs a disk sync.
        let refused = Set(session.report.notApplied.keys)
        if isComplete && refused != session.refusedBefore { try store.setRefusedDocuments(refused, peer: peer) }
        return isComplete
    }

    /// Leaves a document this store cannot read out of the rest of the sync.
    private func damage(_ id: DocumentID, _ error: any Error, _ session: inout Session) {
        session.report.damaged[id] = "\(error)"
        progress("document \(id) cannot be read and is left out of the sync: \(error)")
    }

    /// A refused request: a refused push parks its changes as rejected (one
    /// document at a time, so that only the guilty ones are), but one refused
    /// for its bundles' format version goes again in one the other side
    /// reads; a request too large for the other side is split; a token that
    /// may not write pulls without pushing, its changes pending; a document
    /// outside the token's documents is left out, its changes pending; a
    /// document the other side compacted past what this store lacks, or
    /// damaged in its store, is left out, the others synced in ranges around
    /// it; anything else (no push, or a refusal that is not about it) ends
    /// the sync. Both transports'
    /// refusals come here: an HTTP status, a peer's failure message.
    private func handleRefusal(_ failure: SyncFailure, _ session: inout Session) throws {
        if failure.isTooLarge && (!session.pushed.isEmpty || statedDocuments(session) > 1) {
            splitRequest(refusedAs: failure, &session)
            return
        }
        if failure.deniesWriting && !session.pushed.isEmpty {
            // A verdict on the token, not the changes: rejecting them would hold
            // them back from a token that may write, one document a round.
            keepPushedPending(&session)
            session.writeRefusal = failure
            progress("\(transport.otherSide) refused this token any write (\(failure.message)): pulling without pushing")
            return
        }
        if let outside = session.pushed.keys.first(where: { failure == .outsideTokensDocuments($0) }) {
            // A verdict on the token too: the changes stay pending for one that may write the document.
            keepPushedPending(&session)
            session.unanswered.insert(outside)
            session.tokenIsLimited = true
            progress("\(transport.otherSide) refused to take document \(outside) from this token (\(failure.message)): "
                + "pushing only the documents it answers for")
            return
        }
        // Only a document the request stated a range holding, and once: any
        // other 410 or 422 (an older peer's words, a broken peer) ends the sync as before.
        if let refused = failure.compactedDocument ?? failure.damagedDocument, session.leftOut[refused] == nil,
           session.lastRequest?.range.contains(refused) == true {
            // The push may have been stored before the answer failed: its
            // changes stay unconfirmed, to be counted once an answer shows them.
            session.pushed = [:]
            session.leftOut[refused] = failure
            let what = failure.isHistoryCompacted ? "no longer holds changes of document \(refused) that this store lacks"
                : "cannot read document \(refused) in its own store"
            progress("\(transport.otherSide) \(what) (\(failure.message)): syncing the other documents without it")
            return
        }
        // A Quire before version 5 refuses a push of it as an unknown format
        // (a peer before review202 may or may not read it: it states nothing):
        // the same changes go again in the version every Quire reads.
        let version = session.pushBundleVersion
        if version != ChangeEncoding.olderReadersVersion, session.pushed.keys.contains(where: { failure.refusesBundleVersion(version, of: $0) }) {
            session.pushBundleVersion = ChangeEncoding.olderReadersVersion
            progress("\(transport.otherSide) does not read change bundles of format version \(version) (\(failure.message)): "
                + "pushing them in version \(ChangeEncoding.olderReadersVersion), which every version of Quire reads")
            return
        }
        guard !session.pushed.isEmpty, failure.refusesPush else { throw SyncError.refused(failure) }
        if session.pushed.count > 1 {
            session.oneDocumentPerPush = true
            return
        }
        for (id, changes) in session.pushed {
            session.unconfirmed[id]?.subtract(changes.map(\.lastID))
            try store.rejectChanges(changes, of: id, peer: peer, status: failure.status, reason: failure.message)
            progress("\(transport.otherSide) refused \(changes.count) change(s) of document \(id): \(failure.status) \(failure.message)")
        }
        session.report.rejected += try store.rejectedChanges(peer: peer).filter { rejected in
            DocumentID(rawValue: rejected.document).map { session.pushed[$0] != nil } ?? false
        }
        session.pushed = [:]
    }

    /// The refused request's pushed changes, neither taken nor rejected:
    /// they stay pending, and are not counted as sent.
    private func keepPushedPending(_ session: inout Session) {
        for (id, changes) in session.pushed { session.unconfirmed[id]?.subtract(changes.map(\.lastID)) }
        session.pushed = [:]
    }

    /// The documents the last request stated.
    private func statedDocuments(_ session: Session) -> Int {
        session.lastRequest?.documents.count ?? 0
    }

    /// A request too large for the other side says nothing of its changes,
    /// nor which of its limits it passed (bytes, changes or documents): the
    /// next ones push half as many changes and state half as many documents
    /// (a range at a time), each down to one. A document whose one change,
    /// stated alone, is still too large is left out of the rest of the
    /// sync, its changes pending, and the sync fails with that refusal at
    /// its end.
    private func splitRequest(refusedAs failure: SyncFailure, _ session: inout Session) {
        let count = session.pushed.values.reduce(0) { $0 + $1.count }
        let stated = statedDocuments(session)
        if count > 1 || stated > 1 {
            if count > 1 { session.pushChangeLimit = count / 2 }
            if stated > 1 { session.statedDocumentLimit = stated / 2 }
            progress("\(transport.otherSide) refused a request pushing \(count) changes of \(stated) documents as too large "
                + "(\(failure.message)): pushing \(max(1, count / 2)) changes and stating \(max(1, stated / 2)) documents a request")
        } else if let (id, changes) = session.pushed.first {
            session.unconfirmed[id]?.subtract(changes.map(\.lastID))
            session.tooLarge[id] = SyncFailure(status: failure.status, "a request pushing change \(changes[0].id) of document \(id) alone "
                + "was too large for it (\(failure.message))")
            progress("\(transport.otherSide) refused a request pushing change \(changes[0].id) of document \(id) alone as too large "
                + "(\(failure.message)): the document is left out of this sync, its changes pending")
        }
        session.pushed = [:]
    }

    /// Per document, per replica, the first counter refused: that change and
    /// every later one of the replica wait (the server would only park them).
    private func blockedCounters() throws -> [DocumentID: [ReplicaID: UInt64]] {
        var blocked: [DocumentID: [ReplicaID: UInt64]] = [:]
        for rejected in try store.rejectedChanges(peer: peer) {
            guard let id = DocumentID(rawValue: rejected.document) else { continue }
            blocked[id, default: [:]][rejected.id.replica] = min(blocked[id]?[rejected.id.replica] ?? .max, rejected.id.counter)
        }
        return blocked
    }

    private func isBlocked(_ change: Change, _ blocked: [ReplicaID: UInt64]?) -> Bool {
        change.id.counter >= blocked?[change.replica] ?? .max
    }

    /// The part of `version` that may be pushed: without the blocked changes.
    private func pushable(_ version: VersionVector, _ blocked: [ReplicaID: UInt64]?) -> VersionVector {
        var result = version
        for (replica, first) in blocked ?? [:] { result[replica] = min(result[replica], first - 1) }
        return result
    }

    /// Runs `body` on a thread kept for store calls (`store.async`), off
    /// Swift's cooperative pool, which its disk syncs and waits for another
    /// process's lock would hold up. A store error is `SyncError.store`; a
    /// task cancelled before `body` starts ends the sync with
    /// `SyncError.cancelled`, as a cancelled request does, and `body` never runs.
    private func storeWork<T: Sendable>(_ body: @escaping @Sendable (DocumentStore) throws -> T) async throws(SyncError) -> T {
        do { return try await store.async.perform(body) } catch {
            throw Self.syncError(error)
        }
    }

    /// What a failed store call is to the sync: a `SyncError` as it is, a
    /// cancellation as `SyncError.cancelled`, anything else as `.store`.
    private static func syncError(_ error: any Error) -> SyncError {
        switch error {
        case let error as SyncError: error
        case is CancellationError: .cancelled()
        default: .store("\(error)")
        }
    }

    /// `storeWork` for work that updates the session: it works on a copy,
    /// which becomes the session when it returns or throws. (One that
    /// throws ends the sync, but a page it applied before stays in the
    /// report: `syncKeepingReport`.)
    private func storeWork<T: Sendable>(_ session: inout Session,
                                        _ body: @escaping @Sendable (inout Session) throws -> T) async throws(SyncError) -> T {
        let (result, updated) = try await storeWork { [session] _ in
            var session = session
            do { return (Result<T, SyncError>.success(try body(&session)), session) } catch {
                return (.failure(Self.syncError(error)), session)
            }
        }
        session = updated
        return try result.get()
    }
}
