import Foundation
import Quire

/// The sync server: checks who asks, stores what they push in its
/// `ServerLog`, and answers with a page of what they lack.
///
///     let server = try SyncServer(log: ServerLog(path: "server.db"), tokens: tokens)
///     let http = HTTPServer(port: 8080, handler: server.handle)
///     try http.start()
///
/// `Specs/sync.md` lists the endpoint, the checks and the status codes.
public final class SyncServer: SyncService {
    /// The server's limits; the defaults suit `quire serve`.
    public struct Configuration: Sendable {
        /// What the log accepts of one request and one document.
        public var log = ServerLog.Limits()
        /// What a request message may hold.
        public var message = SyncMessage.Limits()
        /// The bundle bytes of one response page, about.
        public var maxPageBytes = 4 << 20
        /// The documents one response page carries changes of: the client
        /// holds each in memory until it has applied the page (one
        /// transaction), about 9 KB for a small note.
        public var maxPageDocuments = 10_000
        /// The payload bytes (as the messages declare them once
        /// decompressed) that the requests handled at once may hold between
        /// them, each up to `message.maxPayloadBytes`: without it a client
        /// holding a few connections, each sending a few KiB that expand to
        /// 64 MiB and a long-poll to keep them, makes the server hold
        /// gigabytes. A request that would pass it is answered 503 with
        /// `Retry-After` (unless it is the only one); payloads of
        /// `PayloadBudget.uncountedBytes` or less are not counted, so that
        /// ordinary syncs go on meanwhile.
        public var maxPayloadBytesInFlight = 128 << 20
        /// The longest long-poll wait granted.
        public var maxWaitMilliseconds: UInt64 = 30_000
        /// Requests per second per token, on average, and in a burst.
        public var requestsPerSecond = 50.0
        public var burst = 100.0

        public init() {}
    }

    /// Where the server keeps what replicas pushed.
    public let log: ServerLog
    /// nil: no authentication, every request may do everything.
    public let tokens: AccessTokens?
    public let configuration: Configuration
    private let rateLimiter: RateLimiter
    private let payloadBudget: PayloadBudget
    /// The counted payload bytes of the requests being handled now.
    var payloadBytesInFlight: Int { payloadBudget.bytesTaken }

    /// A server keeping what replicas push in `log`, and letting in the
    /// holders of `tokens` (nil: anyone may sync).
    public init(log: ServerLog, tokens: AccessTokens?, configuration: Configuration = Configuration()) {
        self.log = log
        self.tokens = tokens
        self.configuration = configuration
        rateLimiter = RateLimiter(perSecond: configuration.requestsPerSecond, burst: configuration.burst)
        payloadBudget = PayloadBudget(limit: configuration.maxPayloadBytesInFlight)
    }

    // MARK: HTTP

    /// The HTTP endpoint: `POST /v1/sync` with a sync request as the body.
    @Sendable public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        var response = await answer(http: request)
        // Every answer, a refusal too, states what this build reads, so that
        // a client pushes in a version it reads without a refused round
        // (since review214). A header: clients before it ignore it.
        response.headers[HTTPSyncTransport.bundleVersionsHeader] = HTTPSyncTransport.bundleVersionsStatement
        return response
    }

    /// `handle`'s answer, before the statement of the versions it reads.
    private func answer(http request: HTTPRequest) async -> HTTPResponse {
        guard request.path == "/v1/sync" else { return .text(404, "no such endpoint; sync is POST /v1/sync") }
        guard request.method == "POST" else {
            return .text(405, "use POST", headers: HTTPHeaders([("Allow", "POST")]))
        }
        do throws(SyncFailure) {
            var access = try authenticate(request.headers["Authorization"], from: request.clientAddress)
            if let replica = request.headers["Quire-Replica"] {
                guard let id = ReplicaID(hex: replica) else {
                    throw SyncFailure(status: 400, "the Quire-Replica header must be a replica id, 16 hexadecimal digits, "
                        + "not \"\(replica.prefix(100))\"")
                }
                access.replica = id
            }
            // The body would be taken as it came, and fail as a message with a wrong magic number.
            if let encoding = request.headers["Content-Encoding"], encoding.lowercased() != "identity" {
                throw SyncFailure(status: 415, "Content-Encoding \"\(encoding.prefix(100))\" is not supported: "
                    + "send the sync message as it is (it compresses its own payload)")
            }
            let frame: SyncMessage.Frame
            do { frame = try SyncMessage.Frame(opening: request.body) } catch { throw SyncFailure(decoding: error) }
            // Taken before decompressing. A payload over the message limit
            // takes nothing: `decode` refuses it (413) before allocating.
            let declared = frame.payloadSize ?? 0
            let payloadBytes = declared <= configuration.message.maxPayloadBytes ? declared : 0
            guard payloadBudget.take(payloadBytes) else {
                throw SyncFailure(status: 503, "the server is busy with other large requests; try again", retryAfterSeconds: 1)
            }
            defer { payloadBudget.give(payloadBytes) }
            let message: SyncMessage
            do { message = try SyncMessage.decode(frame, limits: configuration.message) } catch {
                throw SyncFailure(decoding: error)
            }
            guard case .request(var syncRequest) = message else { throw SyncFailure(status: 400, "expected a sync request") }
            if let stated = request.headers[HTTPSyncTransport.bundleVersionsHeader] {
                guard let versions = SyncRequest.bundleVersions(stated: stated) else {
                    throw SyncFailure(status: 400, SyncRequest.refusal(ofBundleVersions: stated, in: "the \(HTTPSyncTransport.bundleVersionsHeader) header"))
                }
                syncRequest.readsBundleVersions = versions
            }
            let (response, newChanges) = try await answer(syncRequest, access: access)
            // A header, not a field of the message: clients before it refuse
            // bytes after a response, and ignore a header they do not know.
            return .bytes(200, SyncMessage.response(response).encoded(), contentType: "application/x-quire-sync",
                          headers: HTTPHeaders([(HTTPSyncTransport.newChangesHeader, String(newChanges))]))
        } catch {
            var headers = HTTPHeaders()
            if let seconds = error.retryAfterSeconds { headers["Retry-After"] = String(seconds) }
            if error.status == 401 { headers["WWW-Authenticate"] = "Bearer" }
            // RFC 6750's word for a token that lacks the right: a client can
            // tell it from a 403 refusing a change (its replica id is another token's).
            if error.deniesWriting { headers["WWW-Authenticate"] = "Bearer error=\"insufficient_scope\"" }
            return .text(error.status, error.message, headers: headers)
        }
    }

    /// The access of the request's bearer token, after the rate limit.
    /// A request without a known token counts against its client's
    /// address, so that guessing tokens is no faster than using one.
    private func authenticate(_ authorization: String?, from address: String?) throws(SyncFailure) -> Access {
        guard let tokens else {
            try takeRequest(for: Access.unrestricted.token)
            return .unrestricted
        }
        guard let access = tokens.access(forAuthorization: authorization) else {
            // A token holds no whitespace, so this key is never a token's.
            try takeRequest(for: "address \(address ?? "unknown")")
            let (reason, logged) = switch authorization {
            case nil: ("a bearer token is required", "it gave no token")
            case let header? where AccessTokens.bearerToken(header) == nil:
                ("the Authorization header must be \"Bearer TOKEN\"", "its Authorization header is not \"Bearer TOKEN\"")
            default: ("unknown token", "its token is not in the tokens file")
            }
            // So that the operator sees a device with a stale token; never
            // the token, nor part of it. A device retrying repeats the line,
            // which `OperatorLog` counts rather than shows.
            OperatorLog.shared.write("refused a sync from \(address ?? "an unknown address"): \(logged)")
            throw SyncFailure(status: 401, reason)
        }
        try takeRequest(for: access.token)
        return access
    }

    private func takeRequest(for key: String) throws(SyncFailure) {
        if let wait = rateLimiter.take(for: key) {
            throw SyncFailure(status: 429, "too many requests; try again in \(wait) s", retryAfterSeconds: wait)
        }
    }

    // MARK: Sync

    public func respond(to request: SyncRequest, access: Access) async throws(SyncFailure) -> SyncResponse {
        try await answer(request, access: access).response
    }

    /// The answer to `request`, and how many of its pushed changes the
    /// server did not hold before (`ServerLog.PushOutcome.newChanges`).
    func answer(_ request: SyncRequest, access: Access) async throws(SyncFailure) -> (response: SyncResponse, newChanges: Int) {
        var limits = DecodingLimits()
        limits.maxChanges = configuration.log.maxChangesPerRequest + 1
        var pushes: [(id: DocumentID, changes: [Change])] = []
        for document in request.documents where !document.bundles.isEmpty {
            let changes: [Change]
            do throws(SyncFailure) { changes = try document.decodedChanges(limits: limits) } catch {
                // Decoding stopped at the limit: more changes than it takes are a request too large (413), not malformed (400).
                if let refusal = configuration.log.refusal(ofChanges: Self.declaredChanges(request)) { throw refusal }
                throw error
            }
            limits.maxChanges = max(0, limits.maxChanges - changes.count)
            pushes.append((document.id, changes))
        }
        let newChanges = try log.pushCountingNew(pushes, by: access, limits: configuration.log).newChanges

        // A cursor into another log, or past this one's end, cannot be
        // trusted: start from the beginning and go by the version vectors.
        var from: UInt64 = 0
        var cursorReset = false
        if let cursor = request.cursor {
            if cursor.logID == log.logID && cursor.seq <= log.lastSeq { from = cursor.seq } else { cursorReset = true }
        }
        var known: [DocumentID: VersionVector] = [:]
        for document in request.documents { known[document.id] = document.version }

        // The answer names every document of the request too, and the client refuses a message of more than the limit.
        let maxDocuments = min(configuration.maxPageDocuments, configuration.message.maxDocuments - request.documents.count)
        let readPage = { (seq: UInt64) throws(SyncFailure) in
            try self.log.failing {
                try self.log.page(after: seq, access: access, known: known, in: request.range, maxBytes: self.configuration.maxPageBytes,
                                  maxDocuments: maxDocuments, bundleVersion: request.answerBundleVersion)
            }
        }
        var page = try readPage(from)
        let wait = min(request.waitMilliseconds, configuration.maxWaitMilliseconds)
        if wait > 0, pushes.isEmpty, page.documents.isEmpty {
            let scanned = page.lastScannedSeq
            if await waitForChanges(after: scanned, milliseconds: wait) { page = try readPage(scanned) }
        }

        var documents: [SyncDocument] = []
        var answered = Set<DocumentID>()
        for (id, bundles) in page.documents {
            // It covers the page: a page holds only what finished pushes wrote.
            documents.append(SyncDocument(id: id, version: log.version(id), bundles: bundles))
            answered.insert(id)
        }
        for document in request.documents where access.mayRead(document.id) && !answered.contains(document.id) {
            documents.append(SyncDocument(id: document.id, version: log.version(document.id)))
        }
        return (SyncResponse(cursor: SyncCursor(logID: log.logID, seq: page.lastScannedSeq), more: page.more,
                             cursorReset: cursorReset, documents: documents), newChanges)
    }

    /// The changes the bundles of `request` say they hold (one that does
    /// not say, none), at most `Int.max / 2`: a hostile header may claim any number.
    private static func declaredChanges(_ request: SyncRequest) -> Int {
        request.documents.flatMap(\.bundles).reduce(0) { total, bundle in
            min(Int.max / 2, total + min(Int.max / 2, (try? ChangeEncoding.changeCount(of: bundle, limits: .unlimited)) ?? 0))
        }
    }

    /// Waits until the log grows past `seq` or the time is up; true if it grew.
    /// It looks at the in-memory `lastSeq` every 20 ms: cheap, and a
    /// cancelled wait (the server stopping) ends at once with the sleep.
    private func waitForChanges(after seq: UInt64, milliseconds: UInt64) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(milliseconds))
        while ContinuousClock.now < deadline {
            if log.lastSeq > seq { return true }
            guard (try? await Task.sleep(for: .milliseconds(20))) != nil else { return false }
        }
        return log.lastSeq > seq
    }
}
