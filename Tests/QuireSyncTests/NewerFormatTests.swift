import Foundation
import Quire
import QuireCore
import QuireSync
import QuireTestSupport
import Synchronization
import Testing

/// What this build does with change bundles of a format newer than it
/// reads, as a newer Quire writes them (`Specs/sync.md`, "Mixed
/// versions"): version 6, sealed by hand around bundles this build wrote.
@Suite struct NewerFormatTests {
    /// Changes relayed by the server in a newer format: the document is
    /// left out, named with the version, its copy here as it was, the other
    /// documents synced; once the bundles come in a format this store reads
    /// (after an upgrade), the next sync takes what was refused.
    @Test func aNewerBundleFromTheServerLeavesItsDocumentOutAndLosesNothing() async throws {
        let server = try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil)
        let writer = try DocumentStore.inMemory(), reader = try DocumentStore.inMemory()
        /// Sets key "k" of both documents at `writer` to `value`, then syncs `stores` in turn.
        func writeBoth(_ value: Int64, thenSyncing stores: [DocumentStore]) async throws {
            for id: DocumentID in ["newer", "other"] { try write(writer, id, "k", value) }
            for store in stores { try await SyncClient(store: store, peer: "s", transport: FaultyTransport.sound(server)).sync() }
        }
        for id: DocumentID in ["newer", "other"] { try writer.create(id: id) }
        try await writeBoth(1, thenSyncing: [writer, reader])
        try await writeBoth(2, thenSyncing: [writer])

        let lines = Mutex<[String]>([])
        var older = SyncClient(store: reader, peer: "s", transport: NewerFormatTransport(server, document: "newer", inAnswers: true))
        older.progress = { line in lines.withLock { $0.append(line) } }
        let report = try await older.sync()
        #expect(report.notApplied["newer"]?.reason == .undecodable(.unsupportedVersion(6)))
        let said = lines.withLock { $0 }
        #expect(said.contains { $0.hasPrefix("the server sent changes to document newer that this store refuses "
            + "(format version 6 is not supported by this version of Quire)") }, "\(said)")
        #expect(try value(reader, "newer", "k") == .scalar(.int(1)))
        #expect(try value(reader, "other", "k") == .scalar(.int(2)))

        let upgraded = try await SyncClient(store: reader, peer: "s", transport: FaultyTransport.sound(server)).sync()
        #expect(upgraded.notApplied.isEmpty)
        #expect(try value(reader, "newer", "k") == .scalar(.int(2)))
    }

    /// A push refused for a format version the client did not write (6,
    /// sealed on the way: a broken push, not an older server's refusal of
    /// version 5): the client keeps the changes as rejected, named with
    /// the refusal, to offer again (`quire sync --retry-rejected`).
    @Test func aNewerBundlePushedToTheServerIsRefusedAndKeptForARetry() async throws {
        let server = try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil)
        let newer = try DocumentStore.inMemory()
        try newer.create(id: "n")
        try write(newer, "n", "k", 1)
        let report = try await SyncClient(store: newer, peer: "s", transport: NewerFormatTransport(server, document: "n", inAnswers: false)).sync()
        #expect(report.rejected.count == 1)
        #expect(report.rejected.first?.status == 400)
        #expect(report.rejected.first?.reason == "the changes of document n do not decode: format version 6 is not supported by this version of Quire")
        #expect(server.log.version("n").isEmpty)
        #expect(try value(newer, "n", "k") == .scalar(.int(1)))

        try newer.clearRejectedChanges(peer: "s")
        let retried = try await SyncClient(store: newer, peer: "s", transport: FaultyTransport.sound(server)).sync()
        #expect(retried.sent == 1 && retried.rejected.isEmpty)
        #expect(server.log.version("n") == (try newer.versionVector("n")))
    }

    /// A newer client and a server before review177, over HTTP: the server
    /// refuses a push of version 5 as of a format it does not know, and the
    /// client pushes the same changes again in version 3, which it reads,
    /// rejecting nothing; a sync learns it anew, one refused round each, as
    /// the server states nothing of what it reads. A server that reads 5
    /// gets 5.
    @Test(arguments: [PlayedQuire.Build.beforeReview177, .thisOne])
    func aNewerClientPushesToAnOlderServerInAVersionItReads(_ build: PlayedQuire.Build) async throws {
        let server = try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil)
        let played = PlayedQuire(build)
        let http = Self.servingOverHTTP(server, as: played, stating: nil)
        try http.start()
        defer { http.stop() }
        let store = try storeHolding(["n"], "k", 1)
        let client = SyncClient(store: store, peer: "s", transport: HTTPSyncTransport(server: URL(string: "http://127.0.0.1:\(http.port)")!, token: nil))
        // A first sync (it pushes once the server has stated the note), then one from a cursor past seq 0 (it pushes at once).
        for written in [1, 2] as [Int64] {
            if written > 1 { try write(store, "n", "k", written) }
            let report = try await client.sync()
            #expect(report.rejected.isEmpty && report.sent == 1, "\(report)")
            #expect(server.log.version("n") == (try store.versionVector("n")))
        }
        #expect(try store.rejectedChanges(peer: "s").isEmpty)
        #expect(played.pushedVersions == (build == .thisOne ? [5, 5] : [5, 3, 5, 3]))
    }

    /// A server stating that it reads versions 1 and 3 alone (what this
    /// build's server, stating 1, 3 and 5, is to a later client writing a
    /// version 6) is pushed version 3 from the first push, none refused: a
    /// first sync pushes once an answer has stated the note, and states it
    /// in its header; a later sync through the same transport, from a cursor
    /// past seq 0, pushes in its first request, as the last answer stated.
    /// A new transport (a new `quire sync` process) has had no answer when
    /// its first request pushes: that push goes in version 5 and is refused,
    /// as by a server stating nothing, then in 3.
    @Test func aServerStatingTheVersionsItReadsIsPushedOneOfThemWithoutARefusal() async throws {
        let server = try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil)
        // It refuses version 5 as a server before review177 does: a push of it would show.
        let played = PlayedQuire(.beforeReview177)
        let http = Self.servingOverHTTP(server, as: played, stating: "1, 3")
        try http.start()
        defer { http.stop() }
        let url = URL(string: "http://127.0.0.1:\(http.port)")!
        let store = try storeHolding(["n"], "k", 1)
        let transport = HTTPSyncTransport(server: url, token: nil)
        for written in [1, 2] as [Int64] {
            if written > 1 { try write(store, "n", "k", written) }
            let report = try await SyncClient(store: store, peer: "s", transport: transport).sync()
            #expect(report.rejected.isEmpty && report.sent == 1, "\(report)")
            #expect(server.log.version("n") == (try store.versionVector("n")))
        }
        #expect(played.pushedVersions == [3, 3])

        try write(store, "n", "k", 3)
        let anew = try await SyncClient(store: store, peer: "s", transport: HTTPSyncTransport(server: url, token: nil)).sync()
        #expect(anew.rejected.isEmpty && anew.sent == 1, "\(anew)")
        #expect(played.pushedVersions == [3, 3, 5, 3])
        #expect(server.log.version("n") == (try store.versionVector("n")))
        #expect(try store.rejectedChanges(peer: "s").isEmpty)
    }

    /// A server stating what is no list of versions (words, a number past
    /// 64 bits, over 256 bytes, empty) or a list of none that this build
    /// writes is taken as stating nothing: a push goes in version 5 and,
    /// once refused, in 3, as to a server before review214; nothing is
    /// rejected or lost.
    @Test(arguments: ["3,five", "18446744073709551616", String(repeating: "3,", count: 200) + "3", "", ",", "7,9", "1"])
    func aServerStatingNoVersionThisBuildCanUseIsPushedAsOneStatingNothing(_ statement: String) async throws {
        let server = try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil)
        let played = PlayedQuire(.beforeReview177)
        let http = Self.servingOverHTTP(server, as: played, stating: statement)
        try http.start()
        defer { http.stop() }
        let store = try storeHolding(["n"], "k", 1)
        let report = try await SyncClient(store: store, peer: "s", transport: HTTPSyncTransport(server: url(http, ""), token: nil)).sync()
        #expect(report.rejected.isEmpty && report.sent == 1, "\(report)")
        #expect(played.pushedVersions == [5, 3])
        #expect(server.log.version("n") == (try store.versionVector("n")))
        #expect(try store.rejectedChanges(peer: "s").isEmpty)
    }

    /// This build's server states the versions it reads on every answer,
    /// a sync's and a refusal's alike, in the header a client states its
    /// own in.
    @Test func everyAnswerOfTheServerStatesTheVersionsItReads() async throws {
        let server = try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil)
        let http = HTTPServer(port: 0, handler: server.handle)
        try http.start()
        defer { http.stop() }
        let pull = SyncMessage.request(SyncRequest(cursor: nil, documents: [])).encoded()
        let answer = try await onceClient.send(.init(method: "POST", url: url(http, "/v1/sync"), body: pull))
        #expect(answer.headers[HTTPSyncTransport.bundleVersionsHeader] == "1,3,5")
        for (path, body) in [("/v1/sync", [0x51, 0x53]), ("/v1/sync", pull), ("/elsewhere", pull)] as [(String, [UInt8])] {
            let headers = HTTPHeaders(path == "/v1/sync" && body == pull ? [(HTTPSyncTransport.bundleVersionsHeader, "3,five")] : [])
            let refusal = await server.handle(HTTPRequest(method: "POST", path: path, headers: headers, body: body))
            #expect(refusal.status >= 400 && refusal.headers[HTTPSyncTransport.bundleVersionsHeader] == "1,3,5", "\(refusal.status) \(path)")
        }
    }

    /// An HTTP server answering as `server` does, and as `played`'s build
    /// where that differs. A played build before this one ignores the
    /// client's `Quire-Bundle-Versions` header (a server before review190
    /// answers in version 3) and states `readVersions` in its answers'
    /// (nil: nothing, as a server before review214); this build's states
    /// its own.
    static func servingOverHTTP(_ server: SyncServer, as played: PlayedQuire, stating readVersions: String?) -> HTTPServer {
        HTTPServer(port: 0) { request in
            if case .failure(let refusal)? = played.answer(to: request.body) {
                return .text(refusal.status, refusal.message, headers: HTTPHeaders(readVersions.map { [(HTTPSyncTransport.bundleVersionsHeader, $0)] } ?? []))
            }
            guard played.build != .thisOne else { return await server.handle(request) }
            var request = request
            request.headers[HTTPSyncTransport.bundleVersionsHeader] = nil
            var response = await server.handle(request)
            response.headers[HTTPSyncTransport.bundleVersionsHeader] = readVersions
            return response
        }
    }

    /// A newer client and a peer of each build, over stdio (a real
    /// `StdioSyncTransport`, two syncs in one session): a peer before
    /// review177 refuses the statement of versions and a push of version 5,
    /// which then goes again in version 3, nothing rejected; one before
    /// review202 refuses the statement but reads 5, and gets 5, as this
    /// build's does; one stating that it reads 1 and 3 alone (what this
    /// build's statement is to a later one writing a version 6) is pushed
    /// version 3 from the first push.
    @Test(arguments: [PlayedQuire.Build.beforeReview177, .beforeReview202, .statingVersions1And3, .thisOne])
    func aPipeClientPushesInAVersionThePeerReads(_ build: PlayedQuire.Build) async throws {
        try await withTemporaryDirectory { directory in
            let store = try storeHolding(["n"], "k", 1), peer = try DocumentStore.inMemory()
            let played = PlayedQuire(build)
            let (command, served) = try Self.servingThroughNamedPipes(PeerSyncService(store: peer), as: played, in: directory)
            let transport = try StdioSyncTransport(command: command, timeout: 120)
            for written in [1, 2] as [Int64] {
                if written > 1 { try write(store, "n", "k", written) }
                let report = try await SyncClient(store: store, peer: "via", transport: transport).sync()
                #expect(report.rejected.isEmpty && report.sent == 1, "\(build) \(report)")
                #expect(try value(peer, "n", "k") == .scalar(.int(written)), "\(build)")
            }
            transport.close()
            _ = await finishing(within: 60) { try? await served.value }
            #expect(try store.rejectedChanges(peer: "via").isEmpty)
            #expect(try peer.versionVector("n") == store.versionVector("n"))
            let expected: [UInt64] = switch build {
            case .beforeReview177: [5, 3, 5, 3]
            case .statingVersions1And3: [3, 3]
            case .beforeReview202, .thisOne: [5, 5]
            }
            #expect(played.pushedVersions == expected, "\(build)")
        }
    }

    /// Serves `service`, with `played` answering what its build answers
    /// otherwise, to the command returned: it passes its standard input to
    /// one named pipe made in `directory` and the other to its standard
    /// output, so that a `StdioSyncTransport` running it syncs as with
    /// `quire serve --stdio` of that build. The task ends with that input.
    static func servingThroughNamedPipes(_ service: PeerSyncService, as played: PlayedQuire,
                                         in directory: String) throws -> (command: String, served: Task<Void, any Error>) {
        let requests = directory + "/requests", answers = directory + "/answers"
        for path in [requests, answers] where mkfifo(path, 0o600) != 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        // On a thread of its own, as a process of its own would be: it waits
        // in opens and reads, and a client's exchange holds a thread that runs
        // tasks until the answer comes (with several at once, all of them).
        let served = Task(executorPreference: SerialQueueExecutor()) {
            // Each open waits for the command to open the other end.
            guard let input = FileHandle(forReadingAtPath: requests), let output = FileHandle(forWritingAtPath: answers) else {
                throw POSIXError(.EIO)
            }
            defer { try? output.close(); try? input.close() }
            var readsBundleVersions = Set<UInt64>()
            while let frame = try StdioFraming.read(from: input) {
                let answer: [UInt8]
                if let own = played.answer(to: frame) { answer = own.encoded() } else {
                    answer = await service.respond(toMessage: frame, access: .unrestricted, readsBundleVersions: &readsBundleVersions)
                }
                try StdioFraming.write(answer, to: output)
            }
        }
        return ("cat '\(answers)' & exec cat >'\(requests)'", served)
    }

    /// The server answers in the newest version the client reads: a
    /// request that says nothing (an older client, which reads versions 1
    /// and 3) gets version 3, the stored version 5 rows and the rest of a
    /// run alike written again, decoding to the same changes; one that
    /// states this build's versions gets version 5.
    @Test func theServerAnswersInTheNewestVersionTheClientReads() async throws {
        let server = try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil)
        let changes = try Self.twoWritersTakingTurns()
        let pushed = SyncDocument(id: "n", version: VersionVector(), changes: changes)
        #expect(pushed.bundles.map(Self.version) == [5])
        _ = try await server.respond(to: SyncRequest(cursor: nil, documents: [pushed]), access: .unrestricted)
        let sent = try ChangeEncoding.decode(pushed.bundles[0])
        var first = VersionVector()
        first[ReplicaID(1)] = 1
        for (reads, version) in [([], 3), (Set(ChangeEncoding.readVersions), 5), ([1, 3], 3)] as [(Set<UInt64>, UInt64)] {
            for holding in [VersionVector(), first] {
                let request = SyncRequest(cursor: nil, documents: [SyncDocument(id: "n", version: holding)], readsBundleVersions: reads)
                let bundles = try await server.respond(to: request, access: .unrestricted).documents.flatMap(\.bundles)
                #expect(bundles.count > 1 && bundles.allSatisfy { Self.version($0) == version }, "\(reads) \(holding)")
                let answered = try bundles.flatMap { try ChangeEncoding.decode($0) }
                #expect(answered == sent.filter { !holding.contains($0.lastID) }, "\(reads) \(holding)")
            }
        }
    }

    /// Over HTTP, `HTTPSyncTransport` states the versions this build reads
    /// in the `Quire-Bundle-Versions` header and gets version 5; a client
    /// before it, which sends no such header, gets version 3; a header that
    /// lists no versions is refused, naming it.
    @Test func theBundleVersionsHeaderChoosesTheAnswersVersion() async throws {
        let server = try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil)
        let http = HTTPServer(port: 0, handler: server.handle)
        try http.start()
        defer { http.stop() }
        let url = URL(string: "http://127.0.0.1:\(http.port)")!
        let pull = SyncMessage.request(SyncRequest(cursor: nil, documents: [])).encoded()
        let push = SyncMessage.request(SyncRequest(cursor: nil, documents: [
            SyncDocument(id: "n", version: VersionVector(), changes: try Self.twoWritersTakingTurns()),
        ])).encoded()
        let transport = HTTPSyncTransport(server: url, token: nil)
        _ = try await transport.exchange(push, longPollSeconds: 0)

        func versions(of answer: [UInt8]) throws -> [UInt64] {
            guard case .response(let response) = try SyncMessage.decode(answer) else { return [] }
            return response.documents.flatMap(\.bundles).map(Self.version)
        }
        let newer = try versions(of: try await transport.exchange(pull, longPollSeconds: 0))
        #expect(!newer.isEmpty && newer.allSatisfy { $0 == 5 }, "\(newer)")
        let client = HTTPClient(bearerToken: nil, defaultTimeout: 30, retryPolicy: .never)
        let endpoint = url.appendingPathComponent("v1/sync")
        let older = try versions(of: try await client.send(.init(method: "POST", url: endpoint, body: pull)).body)
        #expect(!older.isEmpty && older.allSatisfy { $0 == 3 }, "\(older)")
        do {
            _ = try await client.send(.init(method: "POST", url: endpoint,
                                            headers: HTTPHeaders([(HTTPSyncTransport.bundleVersionsHeader, "3,five")]), body: pull))
            Issue.record("a header listing no versions was taken")
        } catch {
            guard case .permanent(let status, let message) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(status == 400 && message.contains("Quire-Bundle-Versions") && message.contains("3,five"), "\(status) \(message)")
        }
    }

    /// Over stdio, which has no header, a client states the versions it
    /// reads in a message of its own, which the peer answers with its own,
    /// and the session's requests after it are answered in version 5. A
    /// pull as a client before review202 writes it (no statement) gets
    /// version 3; a statement that lists no versions, is too long, or has
    /// bytes after it is refused (400) naming what is wrong, and changes
    /// nothing: the session goes on, a push after it is stored and still
    /// answered in version 3.
    @Test func aPipeClientsStatementOfTheVersionsItReadsChoosesTheAnswersVersion() async throws {
        let peer = try DocumentStore.inMemory()
        let written = SyncDocument(id: "n", version: VersionVector(), changes: try Self.twoWritersTakingTurns())
        #expect(try peer.applyEach(bundles: [("n", written.bundles)]).refused.isEmpty)
        let sent = try ChangeEncoding.decode(written.bundles[0])
        #expect(sent.count > 1)
        let magic = Array("QSYN".utf8)
        // A pull as a client before review202 writes it: the cursor (no log, seq 0), no wait, no document, no range.
        var pullPayload = ByteWriter()
        pullPayload.writeUInt64(0)
        for _ in 0..<3 { pullPayload.writeVarint(0) }
        let olderPull = Envelope.seal(magic: magic, version: 1, body: [1, 0] + pullPayload.bytes)
        /// A statement (message kind 4) of `text`, and `trailing` bytes after it.
        func statement(_ text: String, trailing: [UInt8] = []) -> [UInt8] {
            var payload = ByteWriter()
            payload.writeString(text)
            return Envelope.seal(magic: magic, version: 1, body: [4, 0] + payload.bytes + trailing)
        }
        let writer = try storeHolding(["p"], "k", 1)
        let push = SyncMessage.request(SyncRequest(cursor: nil, documents: [
            SyncDocument(id: "p", version: VersionVector(), changes: try writer.changes("p")),
        ])).encoded()
        let tooLong = String(repeating: "5,", count: 128) + "5"
        let answers = try await Self.answers(to: [
            olderPull, statement("3,five"), statement(tooLong), statement("1,3,5", trailing: [0]), push,
            SyncMessage.bundleVersions(Set(ChangeEncoding.readVersions)).encoded(), olderPull,
        ], servedBy: PeerSyncService(store: peer))
        #expect(answers.count == 7)
        guard answers.count == 7 else { return }

        /// The format versions of the bundles of a response, each checked to carry `sent`.
        func versions(_ answer: SyncMessage) throws -> Set<UInt64> {
            guard case .response(let response) = answer else { Issue.record("not a response: \(answer)"); return [] }
            let bundles = response.documents.filter { $0.id == "n" }.flatMap(\.bundles)
            #expect(Set(try bundles.flatMap { try ChangeEncoding.decode($0) }) == Set(sent))
            return Set(response.documents.flatMap(\.bundles).map(Self.version))
        }
        #expect(try versions(answers[0]) == [3])
        let refusals: [(Int, String)] = [
            (1, #"the bundle versions must list change bundle format versions, whole numbers separated by commas (256 bytes at most), not "3,five""#),
            (2, #"(256 bytes at most), not "\#(tooLong.prefix(100))""#), (3, "1 bytes follow the message"),
        ]
        for (index, text) in refusals {
            guard case .failure(let failure) = answers[index] else { Issue.record("\(index): \(answers[index])"); continue }
            #expect(failure.status == 400 && failure.message.hasPrefix("malformed sync message: invalid data: ") && failure.message.hasSuffix(text),
                    "\(index): \(failure)")
        }
        #expect(try versions(answers[4]) == [3])
        #expect(try peer.versionVector("p") == writer.versionVector("p"))
        #expect(answers[5] == .bundleVersions(Set(ChangeEncoding.readVersions)))
        #expect(try versions(answers[6]) == [5])
    }

    /// The answers `StdioFraming.serve` gives `frames` in one session
    /// through pipes, each frame sent once the one before is answered.
    static func answers(to frames: [[UInt8]], servedBy service: some SyncService) async throws -> [SyncMessage] {
        let requests = Pipe(), answers = Pipe()
        // The client's side on a thread of its own: serving blocks one of the tasks' threads, which may be all there are.
        let client = Task { try await onThread { () throws -> [SyncMessage] in
            defer { try? requests.fileHandleForWriting.close() }
            return try frames.map { frame in
                try StdioFraming.write(frame, to: requests.fileHandleForWriting)
                return try SyncMessage.decode(StdioFraming.read(from: answers.fileHandleForReading) ?? [])
            }
        } }
        try await StdioFraming.serve(service, input: requests.fileHandleForReading, output: answers.fileHandleForWriting)
        return try await client.value
    }

    /// A bundle's format version, the byte after its magic.
    static func version(_ bundle: [UInt8]) -> UInt64 { UInt64(bundle[4]) }

    /// Two writers typing into one text at once, taking turns: each turn
    /// after the first is a merge of the writer's own last change and the
    /// other's, the parent version 5 implies.
    static func twoWritersTakingTurns() throws -> [Change] {
        var first = Document(replica: ReplicaID(1)), second = Document(replica: ReplicaID(2))
        let text = try first.transact { tx in try tx.putObject(.root, key: "t", kind: .text) }
        try second.apply(try first.allChanges())
        for turn in 0..<6 {
            try first.transact { tx in try tx.insertText(text, at: 0, "a\(turn)") }
            try second.transact { tx in try tx.insertText(text, at: 0, "b\(turn)") }
            try second.apply(try first.changes(since: second.versionVector))
            try first.apply(try second.changes(since: first.versionVector))
        }
        return try first.allChanges()
    }
}

/// Passes a client's requests to `service` and its answers back, with the
/// change bundles of `document` sealed as format version 6 on the way: in
/// the answers (a newer server relaying a newer writer's changes) or in
/// the requests (a newer client pushing).
final class NewerFormatTransport: SyncTransport {
    let service: any SyncService
    let document: DocumentID
    let inAnswers: Bool

    init(_ service: any SyncService, document: DocumentID, inAnswers: Bool) {
        self.service = service
        self.document = document
        self.inAnswers = inAnswers
    }

    func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
        let answer = await service.respond(toMessage: inAnswers ? request : resealed(request), access: .unrestricted)
        return inAnswers ? resealed(answer) : answer
    }

    private func resealed(_ message: [UInt8]) -> [UInt8] {
        switch try? SyncMessage.decode(message) {
        case .request(var request)?:
            request.documents = request.documents.map(resealed)
            return SyncMessage.request(request).encoded()
        case .response(var response)?:
            response.documents = response.documents.map(resealed)
            return SyncMessage.response(response).encoded()
        default:
            return message
        }
    }

    private func resealed(_ document: SyncDocument) -> SyncDocument {
        guard document.id == self.document else { return document }
        var resealed = document
        resealed.bundles = document.bundles.map(Self.asVersion6)
        return resealed
    }

    /// A bundle this build wrote, sealed again as format version 6.
    static func asVersion6(_ bundle: [UInt8]) -> [UInt8] {
        let magic = Array("QCHG".utf8)
        guard let opened = try? Envelope.open(bundle, magic: magic, name: "a change bundle", versions: 1...5) else {
            preconditionFailure("not a change bundle this build wrote")
        }
        return Envelope.seal(magic: magic, version: 6, body: Array(opened.body.remainingBytes))
    }
}

/// A server or peer of another build, played over this build's service:
/// what it answers itself (a refusal this build would not make, a
/// statement of other versions), and the format version of each bundle
/// pushed to it.
final class PlayedQuire: Sendable {
    enum Build: Sendable {
        /// Reads `QCHG` versions 1 and 3 alone: refuses a pushed bundle of 5
        /// as of any unknown version, and a statement of versions (stdio's
        /// message kind 4) as a message of a kind it does not know.
        case beforeReview177
        /// Reads 5 as well; refuses a statement alike.
        case beforeReview202
        /// Answers a statement saying that it reads versions 1 and 3 alone.
        case statingVersions1And3
        /// This build as it is.
        case thisOne
    }

    let build: Build
    private let pushed = Mutex<[UInt64]>([])
    /// The format versions of the bundles pushed to it, in order, those it refused too.
    var pushedVersions: [UInt64] { pushed.withLock { $0 } }

    init(_ build: Build) {
        self.build = build
    }

    /// Its own answer to `message`, in the words of its build; nil where
    /// it answers as this build does.
    func answer(to message: [UInt8]) -> SyncMessage? {
        switch try? SyncMessage.decode(message) {
        case .bundleVersions?:
            switch build {
            case .beforeReview177, .beforeReview202: return .failure(SyncFailure(status: 400, "malformed sync message: invalid data: unknown message kind"))
            case .statingVersions1And3: return .bundleVersions([1, 3])
            case .thisOne: return nil
            }
        case .request(let request)?:
            for document in request.documents {
                for bundle in document.bundles {
                    let version = NewerFormatTests.version(bundle)
                    pushed.withLock { $0.append(version) }
                    if build == .beforeReview177 && version > 3 {
                        return .failure(SyncFailure(status: 400, "the changes of document \(document.id) do not decode: "
                            + "format version \(version) is not supported by this version of Quire"))
                    }
                }
            }
            return nil
        default:
            return nil
        }
    }
}

/// Runs the jobs of the tasks that prefer it on a serial dispatch queue,
/// which dispatch gives a thread of its own, not on the few that run tasks:
/// for a task that blocks in reads.
final class SerialQueueExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "SerialQueueExecutor")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job), executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
