import Foundation
@testable import QuireSync
import Quire
import QuireTestSupport
import Testing

/// The server's checks, over real HTTP on 127.0.0.1.
@Suite struct SyncServerSecurityTests {
    static let tokens = try! AccessTokens(parsing: """
        # a comment line
        writer rw
        other rw
        reader ro
        narrow rw allowed   # only one document
        """)

    /// A started server and its URL.
    func withSyncServer(bodyLimit: Int = 1 << 20, configure: (inout SyncServer.Configuration) -> Void = { _ in },
                        _ body: (SyncServer, URL) async throws -> Void) async throws {
        var configuration = SyncServer.Configuration()
        configure(&configuration)
        let server = try SyncServer(log: ServerLog(path: ":memory:"), tokens: Self.tokens, configuration: configuration)
        let http = HTTPServer(port: 0, limits: .init(maxBodyBytes: bodyLimit), handler: server.handle)
        try http.start()
        defer { http.stop() }
        try await body(server, URL(string: "http://127.0.0.1:\(http.port)")!)
    }

    /// Posts raw bytes; returns the status and body text.
    func post(_ url: URL, _ body: [UInt8], token: String?) async throws -> (Int, String) {
        try await send(.init(method: "POST", url: url.appendingPathComponent("v1/sync"), body: body), token: token)
    }

    /// Sends `request` once; returns the status and body text.
    func send(_ request: HTTPClient.Request, token: String?) async throws -> (Int, String) {
        do {
            let response = try await HTTPClient(bearerToken: token, defaultTimeout: 30, retryPolicy: .never).send(request)
            return (response.status, "")
        } catch .permanent(let status, let message) {
            return (status, message)
        } catch .transient(let status, let message) {
            return (status, message)
        }
    }

    func pushRequest(_ id: DocumentID = "doc", replica: ReplicaID = ReplicaID(1), counter: UInt64 = 1, value: Int64 = 1) -> [UInt8] {
        let change = Change(id: OpID(replica: replica, counter: counter), lamport: counter, parents: counter == 1 ? [] : [OpID(replica: replica, counter: counter - 1)],
                            operations: [.put(object: .root, key: "k", value: .scalar(.int(value)), pred: [])])
        return SyncMessage.request(SyncRequest(cursor: nil, documents: [SyncDocument(id: id, version: VersionVector(), changes: [change])])).encoded()
    }

    @Test func tokensDecideWhoMayDoWhat() async throws {
        try await withSyncServer { server, url in
            #expect(try await post(url, pushRequest(), token: nil).0 == 401)
            #expect(try await post(url, pushRequest(), token: "wrong").0 == 401)
            #expect(try await post(url, pushRequest(), token: "reader").0 == 403)
            #expect(try await post(url, pushRequest("secret"), token: "narrow").0 == 403)
            #expect(server.log.lastSeq == 0)
            #expect(try await post(url, pushRequest("secret"), token: "writer").0 == 200)

            // The narrow token never sees the other document.
            let store = try DocumentStore.inMemory()
            let transport = HTTPSyncTransport(server: url, token: "narrow", retryPolicy: .never)
            let report = try await SyncClient(store: store, peer: url.absoluteString, transport: transport).sync()
            #expect(report.received == 0)
            #expect(try store.documents().isEmpty)
        }
    }

    /// The scheme's name is case-insensitive; another scheme is named as the fault, not the token.
    @Test func theAuthorizationHeaderIsReadAsHTTPSaysAndAWrongOneIsNamed() async throws {
        try await withSyncServer { server, url in
            func post(authorization: String) async throws -> (Int, String) {
                try await send(.init(method: "POST", url: url.appendingPathComponent("v1/sync"),
                                     headers: HTTPHeaders([("Authorization", authorization)]), body: pushRequest()), token: nil)
            }
            let (basic, message) = try await post(authorization: "Basic d3JpdGVyOg==")
            #expect(basic == 401 && message.contains("must be \"Bearer TOKEN\""), "\(basic) \(message)")
            #expect(try await post(authorization: "Bearer nobody") == (401, "unknown token"))
            #expect(try await post(authorization: "bearer writer").0 == 200)
            #expect(server.log.lastSeq == 1)
        }
    }

    @Test func aReplicaIDBelongsToTheTokenThatFirstWroteWithIt() async throws {
        try await withSyncServer { server, url in
            #expect(try await post(url, pushRequest(counter: 1), token: "writer").0 == 200)
            let (status, message) = try await post(url, pushRequest(counter: 2), token: "other")
            #expect(status == 403 && message.contains("another token"))
            // The same change again is nothing; the same id with other content is refused.
            #expect(try await post(url, pushRequest(counter: 1), token: "writer").0 == 200)
            #expect(try await post(url, pushRequest(counter: 1, value: 99), token: "writer").0 == 409)
            // Another token may relay a change the server holds (got from a
            // peer through `--via`): it writes nothing. Not one it does not hold.
            #expect(try await post(url, pushRequest(counter: 1), token: "other").0 == 200)
            #expect(try await post(url, pushRequest(counter: 1, value: 99), token: "other").0 == 409)
            #expect(server.log.lastSeq == 1)
        }
    }

    /// A push whose `Quire-Replica` names another replica relays the
    /// changes of an unbound replica without binding it to its token: the
    /// replica's writer, pushing later with its own token, is not refused.
    /// A bound replica stays protected, and a header that is no replica id
    /// is refused.
    @Test func aPushBindsOnlyTheReplicaItsClientNames() async throws {
        try await withSyncServer { server, url in
            func post(_ body: [UInt8], token: String, replica: String) async throws -> (Int, String) {
                try await send(.init(method: "POST", url: url.appendingPathComponent("v1/sync"),
                                     headers: HTTPHeaders([("Quire-Replica", replica)]), body: body), token: token)
            }
            let writer = ReplicaID(1).description, relay = ReplicaID(2).description
            #expect(try await post(pushRequest(counter: 1), token: "other", replica: relay).0 == 200)
            #expect(try await post(pushRequest(counter: 2), token: "writer", replica: writer).0 == 200)
            let (status, message) = try await post(pushRequest(counter: 3), token: "other", replica: relay)
            #expect(status == 403 && message.contains("another token"))
            let (malformed, reason) = try await post(pushRequest(counter: 3), token: "writer", replica: "laptop")
            #expect(malformed == 400 && reason.contains("Quire-Replica"), "\(malformed) \(reason)")
            #expect(server.log.lastSeq == 2)
        }
    }

    @Test func malformedOversizedAndHostileBodiesStoreNothing() async throws {
        try await withSyncServer(bodyLimit: 64 << 10, configure: { $0.message.maxPayloadBytes = 1 << 20 }) { server, url in
            let (status, message) = try await post(url, Array("hello".utf8), token: "writer")
            #expect(status == 400 && message.contains("malformed"))
            var damaged = pushRequest()
            damaged[damaged.count - 1] ^= 0xFF
            #expect(try await post(url, damaged, token: "writer").0 == 400)
            #expect(try await post(url, Array(repeating: 1, count: 100 << 10), token: "writer").0 == 413)

            // A zstd bomb: a few KiB that would expand to 64 MiB.
            let bomb = try Zstd.compress(Array(repeating: 0, count: 64 << 20), level: 19)
            #expect(bomb.count < 64 << 10)
            let frame = Envelope.seal(magic: Array("QSYN".utf8), version: 1, body: [1, 1] + bomb)
            let (bombStatus, bombMessage) = try await post(url, frame, token: "writer")
            #expect(bombStatus == 413 && bombMessage.contains("expands"))

            // Lamport values far beyond the server's clock.
            let far = Change(id: OpID(replica: ReplicaID(5), counter: 1), lamport: 1 << 40, parents: [],
                             operations: [.put(object: .root, key: "k", value: .scalar(.null), pred: [])])
            let request = SyncMessage.request(SyncRequest(cursor: nil, documents: [SyncDocument(id: "d", version: [:], changes: [far])])).encoded()
            #expect(try await post(url, request, token: "writer").0 == 400)
            #expect(server.log.lastSeq == 0)
        }
    }

    /// A few KiB may expand to `maxPayloadBytes`, and a long-poll keeps
    /// what they expanded to: the requests handled at once hold at most
    /// `maxPayloadBytesInFlight` of payload, and one that would pass it is
    /// refused before it is decompressed, while small ones go on.
    @Test func largePayloadsHandledAtOnceStayWithinTheBudget() async throws {
        let manyReplicas = VersionVector(Dictionary(uniqueKeysWithValues: (1...150_000).map { (ReplicaID(UInt64($0)), UInt64(1)) }))
        try await withSyncServer(bodyLimit: 4 << 20, configure: {
            $0.maxPayloadBytesInFlight = 2 << 20
            $0.message.maxPayloadBytes = 1_500_000
            $0.maxWaitMilliseconds = 3_600_000
        }) { server, url in
            func pull(wait: UInt64) -> [UInt8] {
                SyncMessage.request(SyncRequest(cursor: SyncCursor(logID: server.log.logID, seq: 0), waitMilliseconds: wait,
                                                documents: [SyncDocument(id: "stated", version: manyReplicas)])).encoded()
            }
            let longPoll = pull(wait: 3_600_000)
            let payloadBytes = try #require(SyncMessage.Frame(opening: longPoll).payloadSize)
            #expect(payloadBytes > PayloadBudget.uncountedBytes && longPoll.count < payloadBytes / 2)
            // Nothing to send: it waits, holding its payload, until the server stops (an hour at most: never, for the test).
            let waiting = Task { try await post(url, longPoll, token: "reader") }
            defer { waiting.cancel() }
            while server.payloadBytesInFlight == 0 { try await Task.sleep(for: .milliseconds(10)) }

            let (status, message) = try await post(url, pull(wait: 0), token: "reader")
            #expect(status == 503 && message.contains("busy with other large requests"), "\(status) \(message)")
            // Over the message limit: refused as such, whatever the budget.
            let bomb = Envelope.seal(magic: Array("QSYN".utf8), version: 1, body: [1, 1] + (try Zstd.compress(Array(repeating: 0, count: 2 << 20))))
            #expect(try await post(url, bomb, token: "reader").0 == 413)
            #expect(server.payloadBytesInFlight == payloadBytes)
            // A small push goes on; it also ends the long-poll, which then answers.
            #expect(try await post(url, pushRequest(), token: "writer").0 == 200)
            #expect(server.log.lastSeq == 1)
        }
    }

    /// A request may name any number of documents the server does not
    /// hold, in a pull or in a refused push: none of them stays in memory.
    @Test func documentsTheLogDoesNotHoldAreNotKeptInMemory() async throws {
        let unknown = (0..<500).map { SyncDocument(id: DocumentID(rawValue: "unknown-\($0)")!, version: [:]) }
        let pull = SyncMessage.request(SyncRequest(cursor: nil, documents: unknown)).encoded()
        try await withSyncServer { server, url throws in
            #expect(try await post(url, pushRequest("held"), token: "writer").0 == 200)
            #expect(try await post(url, pull, token: "reader").0 == 200)
            #expect(try await post(url, pushRequest("refused"), token: "reader").0 == 403)
            #expect(try await post(url, pushRequest("refused", replica: ReplicaID(1), counter: 1), token: "other").0 == 403)
            #expect(server.log.cachedVersionCount <= 1)
            #expect(server.log.version("held")[ReplicaID(1)] == 1)
        }
    }

    @Test func aContentEncodingTheServerDoesNotDecodeGets415NamingIt() async throws {
        try await withSyncServer { server, url in
            // Whatever the bytes: the server cannot know what they are once decoded.
            var request = HTTPClient.Request(method: "POST", url: url.appendingPathComponent("v1/sync"), body: pushRequest())
            request.headers["Content-Encoding"] = "gzip"
            let (status, message) = try await send(request, token: "writer")
            #expect(status == 415 && message.contains("Content-Encoding \"gzip\" is not supported"), "\(status) \(message)")
            #expect(server.log.lastSeq == 0)
            var plain = HTTPClient.Request(method: "POST", url: url.appendingPathComponent("v1/sync"), body: pushRequest())
            plain.headers["Content-Encoding"] = "identity"
            #expect(try await send(plain, token: "writer").0 == 200)
        }
    }

    /// Replica 2's first change: well framed, but it inserts into a text no one made.
    static func insertIntoAMissingText(lamport: UInt64, parents: [OpID]) -> Change {
        Change(id: OpID(replica: ReplicaID(2), counter: 1), lamport: lamport, parents: parents,
               operations: [.insert(object: ObjectID(OpID(replica: ReplicaID(1), counter: 7)), origin: nil, content: .text("x"))])
    }

    @Test func aChangeThatBreaksTheRulesIsRefusedAndEveryoneElseStillSyncs() async throws {
        try await withSyncServer { server, url in
            #expect(try await post(url, pushRequest(counter: 1), token: "writer").0 == 200)
            // Causally ready, but it inserts into a text no one made.
            let stray = Self.insertIntoAMissingText(lamport: 2, parents: [OpID(replica: ReplicaID(1), counter: 1)])
            let request = SyncMessage.request(SyncRequest(cursor: nil, documents: [SyncDocument(id: "doc", version: [:], changes: [stray])])).encoded()
            let (status, message) = try await post(url, request, token: "writer")
            #expect(status == 400 && message.contains("change 1@\(ReplicaID(2))") && message.contains("does not exist"), "\(status) \(message)")
            #expect(server.log.lastSeq == 1)

            // A reader gets the good change and nothing else, and syncs to the end.
            let store = try DocumentStore.inMemory()
            let transport = HTTPSyncTransport(server: url, token: "reader", retryPolicy: .never)
            #expect(try await SyncClient(store: store, peer: url.absoluteString, transport: transport).sync().received == 1)
            #expect(try value(store, "doc", "k") == .scalar(.int(1)))
            // The refused push changed nothing the next one builds on.
            #expect(try await post(url, pushRequest(counter: 2, value: 2), token: "writer").0 == 200)
            #expect(server.log.lastSeq == 2)
        }
    }

    @Test func aPeerRefusesAChangeThatBreaksTheRulesAs400() async throws {
        let store = try DocumentStore.inMemory()
        let stray = Self.insertIntoAMissingText(lamport: 1, parents: [])
        let request = SyncRequest(cursor: nil, documents: [SyncDocument(id: "doc", version: [:], changes: [stray])])
        do {
            _ = try await PeerSyncService(store: store).respond(to: request, access: .unrestricted)
            Issue.record("the peer took a change into a text no one made")
        } catch {
            #expect(error.status == 400 && error.message.contains("does not exist"), "\(error)")
        }
        #expect(try store.versionVectors()["doc", default: [:]].isEmpty)
    }

    /// A server that answers every request with the same response.
    struct FixedAnswer: SyncTransport {
        let response: SyncResponse
        func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
            SyncMessage.response(response).encoded()
        }
    }

    @Test func aChangeFromTheServerThatDoesNotApplyIsReportedAsTheServersAndChangesNothing() async throws {
        let store = try DocumentStore.inMemory()
        try store.create(id: "doc")
        try write(store, "doc", "k", 1)
        let stray = Self.insertIntoAMissingText(lamport: 1, parents: [])
        let answer = SyncResponse(cursor: SyncCursor(logID: 1, seq: 1), documents: [SyncDocument(id: "doc", version: [:], changes: [stray])])
        let before = try store.versionVectors()
        let report = try await SyncClient(store: store, peer: "fixed", transport: FixedAnswer(response: answer)).sync()
        #expect(Array(report.notApplied.keys) == ["doc"])
        #expect(report.notApplied["doc"].map { "\($0.reason)".contains("does not exist") } == true, "\(report.notApplied)")
        #expect(try store.versionVectors() == before)
        #expect(try store.syncCursor(peer: "fixed") == nil)
    }

    @Test func tooManyRequestsGet429WithRetryAfter() async throws {
        // A refill so slow that no amount of machine load lets a third request through.
        try await withSyncServer(configure: { $0.requestsPerSecond = 0.001; $0.burst = 2 }) { _, url in
            let empty = SyncMessage.request(SyncRequest(cursor: nil, documents: [])).encoded()
            var statuses: [Int] = []
            for _ in 0..<3 { statuses.append(try await post(url, empty, token: "reader").0) }
            #expect(statuses == [200, 200, 429])
        }
    }

    /// Guessing tokens is limited as using one is: per client address.
    @Test func requestsWithoutAKnownTokenAreRateLimitedTooAndOthersStillSync() async throws {
        try await withSyncServer(configure: { $0.requestsPerSecond = 0.001; $0.burst = 2 }) { _, url in
            let empty = SyncMessage.request(SyncRequest(cursor: nil, documents: [])).encoded()
            var statuses: [Int] = []
            for token in ["guess1", "guess2", "guess3", nil] { statuses.append(try await post(url, empty, token: token).0) }
            #expect(statuses == [401, 401, 429, 429])
            #expect(try await post(url, empty, token: "reader").0 == 200)
        }
    }

    /// A bucket per client address that ever failed to authenticate
    /// would pile up: full buckets, the same as none, are dropped.
    /// A client refused connection after connection makes the same line
    /// each time: the operator is shown it once, then how often it came.
    @Test func aRepeatedLogLineIsShownOnceThenCounted() {
        var lines = RepeatedLines()
        let refused = "refused a connection unanswered: ..."
        #expect(lines.lines(for: refused, at: 0) == [refused])
        for second in 1...500 { #expect(lines.lines(for: refused, at: Double(second) / 100).isEmpty) }
        #expect(lines.lines(for: "closed the connection from 10.0.0.7: ...", at: 6)
                == ["(the line before came 500 more times)", "closed the connection from 10.0.0.7: ..."])
        // The same line a window later is shown again, with the count so far.
        #expect(lines.lines(for: refused, at: 7) == [refused])
        #expect(lines.lines(for: refused, at: 8).isEmpty)
        #expect(lines.lines(for: refused, at: 7 + RepeatedLines.window) == ["(the line before came 1 more time)", refused])
        #expect(lines.flush().isEmpty)
        #expect(lines.lines(for: refused, at: 7 + RepeatedLines.window + 1).isEmpty)
        #expect(lines.flush() == ["(the line before came 1 more time)"])
    }

    @Test func theRateLimiterForgetsFullBuckets() {
        // Refilled at once: every bucket is full again by the next request.
        let limiter = RateLimiter(perSecond: 1e15, burst: 2)
        for address in 0..<5_000 { #expect(limiter.take(for: "address 10.0.\(address / 256).\(address % 256)") == nil) }
        #expect(limiter.bucketCount <= 1025)
        // One that is not full is kept.
        let slow = RateLimiter(perSecond: 0.001, burst: 2)
        for address in 0..<5_000 { _ = slow.take(for: "address \(address)") }
        #expect(slow.bucketCount == 5_000)
    }

    /// A change refused for its own sake (here, its replica id is another
    /// token's) is parked, counted pending, and not offered again until asked.
    @Test func aRefusedPushIsParkedAndShownNeverDropped() async throws {
        try await withSyncServer { _, url in
            let store = try DocumentStore.inMemory()
            func sync(_ token: String) async throws -> SyncClient.Report {
                try await SyncClient(store: store, peer: url.absoluteString,
                                     transport: HTTPSyncTransport(server: url, token: token, retryPolicy: .never)).sync()
            }
            try store.create(id: "first")
            try write(store, "first", "k", 1)
            _ = try await sync("writer")  // the store's replica is now the writer token's
            try store.create(id: "mine")
            try write(store, "mine", "k", 1)
            let report = try await sync("other")
            #expect(report.rejected.count == 1 && report.rejected[0].status == 403 && report.writeRefusal == nil)
            #expect(try store.rejectedChanges(peer: url.absoluteString).count == 1)
            #expect(try store.outbox(peer: url.absoluteString)["mine"]?.count == 1)
            // Not offered again until asked: the next sync is a plain pull.
            #expect(try await sync("other").rejected.isEmpty)
        }
    }

    /// A token that may only read says nothing about the changes: the sync
    /// pulls in the usual few rounds, sends and rejects nothing, and a token
    /// that may write sends them later, without `--retry-rejected`. (It
    /// rejected every change, one document a round.)
    @Test func aReadOnlyTokenPullsAndLeavesTheChangesPendingForAWriter() async throws {
        try await withSyncServer { server, url in
            let peer = url.absoluteString
            func client(_ store: DocumentStore, _ token: String) -> SyncClient {
                SyncClient(store: store, peer: peer, transport: HTTPSyncTransport(server: url, token: token, retryPolicy: .never))
            }
            let other = try DocumentStore.inMemory()
            try other.create(id: "theirs")
            try write(other, "theirs", "k", 1)
            try await client(other, "writer").sync()
            let store = try DocumentStore.inMemory()
            let mine = (0..<40).map { DocumentID(rawValue: "note-\($0)")! }
            for id in mine {
                try store.create(id: id)
                try write(store, id, "k", 1)
            }
            // The first sync (no cursor yet: it pushes once an answer states the server's versions) and a later one.
            for maxRounds in [3, 2] {
                let report = try await client(store, "reader").sync()
                #expect(report.writeRefusal == .readOnlyToken && report.notSent == mine.sorted())
                #expect(report.rejected.isEmpty && report.sent == 0 && report.rounds <= maxRounds, "\(report)")
            }
            #expect(try store.read("theirs") { try $0.get(.root, key: "k") } == .scalar(.int(1)))
            #expect(try store.rejectedChanges(peer: peer).isEmpty)
            #expect(try store.outbox(peer: peer).count == mine.count)
            // Nothing to send: no refusal to report.
            #expect(try await client(other, "reader").sync().writeRefusal == nil)

            let written = try await client(store, "writer").sync()
            #expect(written.sent == mine.count && written.writeRefusal == nil && written.notSent.isEmpty)
            #expect(try store.outbox(peer: peer).isEmpty)
            #expect(server.log.version("note-39")[store.replicaID] == 1)
        }
    }

    /// The server's answer to a token that may not write tells it from a
    /// change refused on its merits: its text, and RFC 6750's `insufficient_scope`.
    @Test func aWriteWithoutPermissionIsToldFromARefusedChange() async throws {
        try await withSyncServer { server, _ in
            func answer(_ body: [UInt8], token: String) async -> HTTPResponse {
                await server.handle(HTTPRequest(method: "POST", path: "/v1/sync",
                                                headers: HTTPHeaders([("Authorization", "Bearer \(token)")]), body: body))
            }
            let readOnly = await answer(pushRequest(), token: "reader")
            #expect(readOnly.status == 403 && String(decoding: readOnly.body, as: UTF8.self) == SyncFailure.readOnlyToken.message)
            #expect(readOnly.headers["WWW-Authenticate"] == "Bearer error=\"insufficient_scope\"")
            #expect(await answer(pushRequest(), token: "writer").status == 200)
            let otherToken = await answer(pushRequest(counter: 2), token: "other")
            let failure = SyncFailure(status: otherToken.status, String(decoding: otherToken.body, as: UTF8.self))
            #expect(failure.status == 403 && failure.refusesPush && !failure.deniesWriting)
            #expect(otherToken.headers["WWW-Authenticate"] == nil)
        }
    }

    /// A token limited to some documents leaves the changes of the others
    /// pending, none rejected, also once a stored cursor has the client push
    /// the documents the server never stated (notes made since the last
    /// sync): the server refuses such a push as outside the token's
    /// documents. A token that may write them later sends them, without
    /// `--retry-rejected`. (They were rejected, one document a round.)
    @Test func notesOutsideALimitedTokensDocumentsStayPendingAfterTheFirstSync() async throws {
        try await withSyncServer { server, url in
            let peer = url.absoluteString
            let store = try DocumentStore.inMemory()
            func sync(_ token: String, at url: URL) async throws -> SyncClient.Report {
                try await SyncClient(store: store, peer: peer,
                                     transport: HTTPSyncTransport(server: url, token: token, retryPolicy: .never)).sync()
            }
            try store.create(id: "allowed")
            try write(store, "allowed", "k", 1)
            _ = try await sync("narrow", at: url)
            #expect(try store.syncCursor(peer: peer).map { $0.seq > 0 } == true)
            let outside = (0..<3).map { DocumentID(rawValue: "private-\($0)")! }
            for id in outside {
                try store.create(id: id)
                try write(store, id, "k", 1)
            }
            try write(store, "allowed", "k", 2)
            for _ in 0..<2 {
                let report = try await sync("narrow", at: url)
                #expect(report.rejected.isEmpty && report.outOfScope == outside && report.rounds <= 2, "\(report)")
            }
            #expect(server.log.version("allowed")[store.replicaID] == 2)
            #expect(try store.rejectedChanges(peer: peer).isEmpty)
            #expect(try store.outbox(peer: peer).keys.sorted() == outside)

            // The same log, and the same token, now allowed every document.
            let widened = try SyncServer(log: server.log, tokens: AccessTokens(parsing: "narrow rw\n"))
            let http = HTTPServer(port: 0, handler: widened.handle)
            try http.start()
            defer { http.stop() }
            let report = try await sync("narrow", at: URL(string: "http://127.0.0.1:\(http.port)")!)
            #expect(report.sent == outside.count && report.outOfScope.isEmpty, "\(report)")
            #expect(try store.outbox(peer: peer).isEmpty)
        }
    }

    /// A relayed change refused because its replica belongs to another
    /// token is no longer refused once its writer has sent it.
    @Test func aRefusedChangeTheServerComesToHoldIsForgotten() async throws {
        try await withSyncServer { _, url in
            let writer = try DocumentStore.inMemory(), relay = try DocumentStore.inMemory()
            @discardableResult
            func sync(_ store: DocumentStore, _ token: String) async throws -> SyncClient.Report {
                try await SyncClient(store: store, peer: url.absoluteString,
                                     transport: HTTPSyncTransport(server: url, token: token, retryPolicy: .never)).sync()
            }
            try writer.create(id: "first")
            try write(writer, "first", "k", 1)
            try await sync(writer, "writer")  // the writer's replica is now the writer token's
            try writer.create(id: "shared")
            try write(writer, "shared", "k", 1)
            try await SyncClient(store: relay, peer: "writer", transport: FaultyTransport.sound(PeerSyncService(store: writer))).sync()
            #expect(try await sync(relay, "other").rejected.map(\.status) == [403])
            try await sync(writer, "writer")
            try await sync(relay, "other")
            #expect(try relay.rejectedChanges(peer: url.absoluteString).isEmpty)
        }
    }

    /// A mistyped token or URL refuses the request, not the changes: none
    /// may be parked as rejected, or the next good sync would skip them.
    @Test func aWrongTokenOrURLRejectsNoChange() async throws {
        try await withSyncServer { _, url in
            let store = try DocumentStore.inMemory()
            try store.create(id: "mine")
            try write(store, "mine", "k", 1)
            try store.create(id: "other")
            try write(store, "other", "k", 2)
            for (server, token) in [(url, "mistyped"), (url.appendingPathComponent("v1/sync"), "writer")] {
                let transport = HTTPSyncTransport(server: server, token: token, retryPolicy: .never)
                await #expect(throws: SyncError.self) {
                    try await SyncClient(store: store, peer: url.absoluteString, transport: transport).sync()
                }
            }
            #expect(try store.rejectedChanges(peer: url.absoluteString).isEmpty)
            let transport = HTTPSyncTransport(server: url, token: "writer", retryPolicy: .never)
            #expect(try await SyncClient(store: store, peer: url.absoluteString, transport: transport).sync().sent == 2)
        }
    }

    @Test func anUnreachableServerLeavesEverythingPending() async throws {
        let store = try DocumentStore.inMemory()
        try store.create(id: "n")
        try write(store, "n", "k", 1)
        let transport = HTTPSyncTransport(server: URL(string: "http://127.0.0.1:1")!, token: nil, timeout: 2, retryPolicy: .never)
        await #expect(throws: SyncError.self) { try await SyncClient(store: store, peer: "p", transport: transport).sync() }
        #expect(try store.outbox(peer: "p")["n"]?.count == 1)
    }

    @Test func theTokensFileReportsItsLineNumbers() {
        #expect(throws: AccessTokens.ParseError(line: 2, reason: "the mode must be rw or ro, not \"rx\"")) {
            try AccessTokens(parsing: "a rw\nb rx\n")
        }
        #expect(throws: AccessTokens.ParseError(line: 3, reason: "this token was already given on an earlier line")) {
            try AccessTokens(parsing: "a rw\n# note\na ro\n")
        }
        #expect(throws: AccessTokens.ParseError(line: 1, reason: "the token needs a mode after it, rw or ro")) {
            try AccessTokens(parsing: "lonely\n")
        }
        #expect(Self.tokens.access(forAuthorization: "Bearer narrow")?.documents == ["allowed"])
    }
}

/// The server applies each change to its document before logging it.
@Suite struct ServerLogDocumentRuleTests {
    let text = ObjectID(OpID(replica: ReplicaID(1), counter: 1))

    /// Replica 1 makes a text at key "t" and types "ab" into it.
    func start() -> [Change] {
        [Change(id: OpID(replica: ReplicaID(1), counter: 1), lamport: 1, parents: [],
                operations: [.put(object: .root, key: "t", value: .object(.text), pred: [])]),
         Change(id: OpID(replica: ReplicaID(1), counter: 2), lamport: 2, parents: [OpID(replica: ReplicaID(1), counter: 1)],
                operations: [.insert(object: text, origin: nil, content: .text("ab"))])]
    }

    /// Replica `replica`'s change `counter` typing "c" after element `origin` of the text.
    func typing(_ replica: UInt64, _ counter: UInt64, after origin: OpID, parents: [OpID]) -> Change {
        Change(id: OpID(replica: ReplicaID(replica), counter: counter), lamport: 10 + counter, parents: parents,
               operations: [.insert(object: text, origin: origin, content: .text("c"))])
    }

    /// A notes store given as the server's log (one path mistaken for the
    /// other) is refused as what it is, not as a log from a newer Quire,
    /// and another program's database gets no log tables: both are left as
    /// they were.
    @Test func aFileThatIsNoLogIsRefusedAndLeftAsItWas() throws {
        try withTemporaryDirectory { directory in
            let storePath = directory + "/notes.quire"
            let store = try DocumentStore(path: storePath)
            let id = try store.createDocument { tx in try tx.put(.root, key: "title", .string("kept")) }
            let kind = "a notes store (a DocumentStore's file), not a sync server's log"
            #expect(throws: ServerLog.OpenError.notAServerLog(path: storePath, kind: kind)) { try ServerLog(path: storePath) }
            #expect(try store.read(id) { try $0.get(.root, key: "title") } == .scalar(.string("kept")))

            let otherPath = directory + "/app.sqlite"
            let other = try Database(path: otherPath)
            try other.execute(sql: "CREATE TABLE contacts(name TEXT)")
            other.close()
            #expect(throws: ServerLog.OpenError.notAServerLog(path: otherPath, kind: "a SQLite database but not a sync server's log")) {
                try ServerLog(path: otherPath)
            }
            let tables = try Database(path: otherPath, readOnly: true).query(sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
            #expect(try tables.map { try $0.text(0) } == ["contacts"])
        }
    }

    /// A log is open in one place at a time; reopened, it rebuilds its
    /// documents from the file to check the next pushes.
    @Test func aReopenedLogRebuildsItsDocumentsToCheckPushes() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/server.db"
            do {
                let first = try ServerLog(path: path)
                _ = try first.push([("doc", start())], by: .unrestricted, limits: .init())
                // What one log keeps in memory assumes no other writes the file.
                #expect(throws: ServerLog.OpenError.inUse(path: path)) { try ServerLog(path: path) }
            }

            let log = try reopenServerLog(path)
            let typed = OpID(replica: ReplicaID(1), counter: 3)
            let good = typing(2, 1, after: typed, parents: [typed])
            #expect(try log.push([("doc", [good])], by: .unrestricted, limits: .init())["doc"]?[ReplicaID(2)] == 1)
            // After an element the text does not hold.
            let bad = typing(3, 1, after: OpID(replica: ReplicaID(1), counter: 9), parents: [typed])
            #expect(throws: SyncFailure.self) { try log.push([("doc", [bad])], by: .unrestricted, limits: .init()) }
            #expect(log.version("doc")[ReplicaID(3)] == 0)
            #expect(log.lastSeq == 2)
        }
    }

    /// A push of more documents than the log keeps in memory answers for
    /// each of them, and the next push to any of them is checked, whether
    /// its document was kept or is rebuilt from the log.
    @Test func aPushOfManyDocumentsLeavesEachCheckedByTheNext() throws {
        let log = try ServerLog(path: ":memory:", cachedDocuments: 4)
        let ids = (0..<500).map { DocumentID(rawValue: "d\($0)")! }
        #expect(try Set(log.push(ids.map { ($0, start()) }, by: .unrestricted, limits: .init()).keys) == Set(ids))
        let typed = OpID(replica: ReplicaID(1), counter: 3)
        for id in [ids[0], ids[250], ids[499]] {
            #expect(try log.push([(id, [typing(2, 1, after: typed, parents: [typed])])], by: .unrestricted, limits: .init())[id]?[ReplicaID(2)] == 1)
            let bad = typing(3, 1, after: OpID(replica: ReplicaID(1), counter: 9), parents: [typed])
            #expect(throws: SyncFailure.self) { try log.push([(id, [bad])], by: .unrestricted, limits: .init()) }
        }
    }

    /// A push is refused whole (413) from one change over
    /// `maxChangesPerRequest`, and taken at the limit.
    @Test func aPushOfOneChangeOverTheLimitIsRefusedWhole() throws {
        let log = try ServerLog(path: ":memory:")
        let limits = ServerLog.Limits(maxChangesPerRequest: 2)
        let typed = OpID(replica: ReplicaID(1), counter: 3)
        #expect(throws: SyncFailure(status: 413, "3 changes in one request, above the limit of 2")) {
            try log.push([("doc", start() + [typing(1, 4, after: typed, parents: [typed])])], by: .unrestricted, limits: limits)
        }
        #expect(log.version("doc").isEmpty)
        #expect(try log.push([("doc", start())], by: .unrestricted, limits: limits)["doc"]?[ReplicaID(1)] == 3)
    }

    /// A change whose counters start at the last one the server holds of its
    /// replica (so overlap it by one) reuses that id: refused (409), not
    /// parked to wait for a counter that never comes.
    @Test func aChangeOverlappingTheHeldCountersByOneIsRefused() throws {
        let log = try ServerLog(path: ":memory:")
        _ = try log.push([("doc", start())], by: .unrestricted, limits: .init())
        let last = OpID(replica: ReplicaID(1), counter: 3)
        let overlapping = Change(id: last, lamport: 13, parents: [last], operations: [.insert(object: text, origin: last, content: .text("cd"))])
        #expect(throws: SyncFailure(status: 409, "change \(last) overlaps changes the server holds: its replica id was used twice")) {
            try log.push([("doc", [overlapping])], by: .unrestricted, limits: .init())
        }
        #expect(log.version("doc") == [ReplicaID(1): 3])
    }

    /// A log reached through a symbolic link is the file it names: its lock
    /// is beside that file, so a second server on the file's own path (or
    /// on another link to it) is refused, as on the same path.
    @Test func aLogOpenedThroughASymbolicLinkLocksTheFileItNames() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/server.db", link = directory + "/link.db"
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
            let held = try ServerLog(path: link)
            #expect(throws: ServerLog.OpenError.inUse(path: path)) { try ServerLog(path: path) }
            withExtendedLifetime(held) {}
            #expect(FileManager.default.fileExists(atPath: path + "-lock"))
            #expect(!FileManager.default.fileExists(atPath: link + "-lock"))
        }
    }

    /// A push counts the changes the server held neither logged nor parked
    /// before (`Quire-New-Changes`): a change pushed again, or parked by an
    /// earlier push, is not new; one parked now is, once.
    @Test func aPushCountsOnlyTheChangesNewToTheServer() throws {
        let log = try ServerLog(path: ":memory:")
        let typed = OpID(replica: ReplicaID(1), counter: 3)
        let waiting = typing(1, 4, after: typed, parents: [typed])
        #expect(try log.pushCountingNew([("doc", [start()[0]])], by: .unrestricted, limits: .init()).newChanges == 1)
        // The first is held; the fourth waits for the third, parked.
        #expect(try log.pushCountingNew([("doc", [start()[0], waiting])], by: .unrestricted, limits: .init()).newChanges == 1)
        #expect(try log.pushCountingNew([("doc", [waiting])], by: .unrestricted, limits: .init()).newChanges == 0)
        // The second is new; the fourth, ready now, is logged and not counted again.
        #expect(try log.pushCountingNew([("doc", start())], by: .unrestricted, limits: .init()).newChanges == 1)
        #expect(log.version("doc")[ReplicaID(1)] == 4)
    }

    @Test func aParkedChangeThatDoesNotApplyIsDroppedWhenReady() throws {
        let log = try ServerLog(path: ":memory:")
        let typed = OpID(replica: ReplicaID(1), counter: 3)
        // Replica 1's third change deletes an element no one inserted; it waits for the second.
        let stray = Change(id: OpID(replica: ReplicaID(1), counter: 4), lamport: 4, parents: [typed],
                           operations: [.delete(object: text, target: IDRun(start: OpID(replica: ReplicaID(5), counter: 1), length: 1))])
        _ = try log.push([("doc", [start()[0], stray])], by: .unrestricted, limits: .init())
        #expect(log.version("doc")[ReplicaID(1)] == 1)
        // The push that makes it ready is taken; it is not.
        #expect(try log.push([("doc", [start()[1]])], by: .unrestricted, limits: .init())["doc"]?[ReplicaID(1)] == 3)
        // Pushed again, it is refused by name; a good change in its place is taken.
        do {
            _ = try log.push([("doc", [stray])], by: .unrestricted, limits: .init())
            Issue.record("a change deleting what the text does not hold was taken")
        } catch {
            #expect(error.status == 400 && error.message.contains("change 4@\(ReplicaID(1))"), "\(error)")
        }
        #expect(try log.push([("doc", [typing(1, 4, after: typed, parents: [typed])])], by: .unrestricted, limits: .init())["doc"]?[ReplicaID(1)] == 4)
        let page = try log.page(after: 0, access: .unrestricted, known: [:], maxBytes: .max)
        var document = Document(replica: ReplicaID(9))
        for bundle in page.documents.flatMap(\.bundles) { try document.applyEncoded(bundle) }
        #expect(try document.text(text) == "abc")
    }
}

/// Concurrent pushes share transactions (group commit); each is still all
/// or nothing on its own.
@Suite struct ServerLogGroupCommitTests {
    @Test func concurrentPushesAreEachAllOrNothing() async throws {
        let log = try ServerLog(path: ":memory:")
        func change(_ replica: UInt64, _ counter: UInt64, _ value: Int64) -> Change {
            Change(id: OpID(replica: ReplicaID(replica), counter: counter), lamport: counter,
                   parents: counter == 1 ? [] : [OpID(replica: ReplicaID(replica), counter: counter - 1)],
                   operations: [.put(object: .root, key: "k", value: .scalar(.int(value)), pred: [])])
        }
        // Replica 1's first change, stored before: a push with other content under its id is refused.
        _ = try log.push([("doc0", [change(1, 1, 0)])], by: .unrestricted, limits: .init())
        let outcomes = await withTaskGroup(of: Int.self) { group in
            for writer in 0..<16 {
                group.addTask {
                    // Writer 0 reuses replica 1's counter 1 with other content (409), and
                    // takes down with it the good change it pushes to another document.
                    let pushes: [(id: DocumentID, changes: [Change])] = writer == 0
                        ? [("other", [change(2, 1, 1)]), ("doc0", [change(1, 1, 99)])]
                        : [(DocumentID(rawValue: "doc\(writer)")!, [change(UInt64(writer) + 10, 1, 1), change(UInt64(writer) + 10, 2, 2)])]
                    do throws(SyncFailure) { _ = try log.push(pushes, by: .unrestricted, limits: .init()); return 0 } catch { return error.status }
                }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(outcomes.sorted() == Array(repeating: 0, count: 15) + [409])
        let other = log.version("other")
        #expect(other.isEmpty)
        // One row per push (each a run of one replica), numbered without gaps.
        #expect(log.lastSeq == 16)
        let page = try log.page(after: 0, access: .unrestricted, known: [:], maxBytes: .max)
        let logged = try page.documents.flatMap(\.bundles).flatMap { try ChangeEncoding.decode($0) }
        #expect(logged.count == 31)
        #expect(page.lastScannedSeq == 16)
    }

    /// A push commits before it updates what the log keeps in memory. A
    /// page must not serve a row committed in between: its cursor would lie
    /// past the end of the log as the next request finds it, and that
    /// request would be answered with `cursor reset`, making the client
    /// forget what the server acknowledged and start over.
    @Test func aPageServesOnlyWhatFinishedPushesWrote() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/server.db"
            let server = SyncServer(log: try ServerLog(path: path), tokens: nil)
            var writer = Document(replica: ReplicaID(1))
            for value in 0..<2 { try writer.transact { tx in try tx.put(.root, key: "k", .int(Int64(value))) } }
            let changes = try writer.allChanges()
            _ = try await server.respond(to: SyncRequest(cursor: nil, documents: [SyncDocument(id: "doc", version: [:], changes: [changes[0]])]),
                                         access: .unrestricted)
            // The second change as a push writes it, committed, before that push updates the log's memory.
            try Database(path: path).execute(
                sql: "INSERT INTO log(seq, document_id, replica, first_counter, last_counter, last_lamport, data) VALUES (2, 'doc', ?, 2, 2, 2, ?)",
                arguments: [.replica(ReplicaID(1)), .blob(ChangeEncoding.encode([changes[1]]))])

            let first = try await server.respond(to: SyncRequest(cursor: nil, documents: []), access: .unrestricted)
            #expect(try first.documents.flatMap(\.bundles).flatMap { try ChangeEncoding.decode($0) } == [changes[0]])
            let next = try await server.respond(to: SyncRequest(cursor: first.cursor, documents: []), access: .unrestricted)
            #expect(!next.cursorReset)
        }
    }
}
