import CZlib
import Foundation
import Quire
import QuireSync
import QuireTestSupport
import Synchronization
import Testing

/// A server's answer costs the client at most `maxAnswerBytes` of memory,
/// whatever the server sends: it is refused, not retried, with its reason.
@Suite("Hostile answers")
struct HostileAnswerTests {
    static let limit = 1 << 20
    let client = HTTPClient(defaultTimeout: 30, retryPolicy: .never, maxAnswerBytes: limit)

    @Test func aGzipBombIsRefusedUnread() async throws {
        let acceptedEncodings = Mutex<[String?]>([])
        let bomb = gzipped([UInt8](repeating: 0, count: 4 * Self.limit))
        try await withServer(handler: { request in
            acceptedEncodings.withLock { $0.append(request.headers["Accept-Encoding"]) }
            return HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Encoding", "gzip")]), body: bomb)
        }) { server in
            await #expect(throws: HTTPError.answerRefused("the answer is encoded as \"gzip\", which the client did not ask for: refused")) {
                _ = try await client.send(.init(method: "POST", url: url(server, "/"), body: [1]))
            }
        }
        #expect(acceptedEncodings.withLock { $0 } == ["identity"])
    }

    @Test func anAnswerThatNeverEndsIsRefusedAtTheLimit() async throws {
        let server = try RawAnswerServer(head: "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n",
                                         chunk: [UInt8](repeating: 0, count: 64 << 10), repeats: nil)
        defer { server.stop() }
        await #expect(throws: HTTPError.answerRefused("the answer is larger than \(Self.limit) bytes: refused")) {
            _ = try await client.send(.init(method: "POST", url: URL(string: "http://127.0.0.1:\(server.port)/")!, body: [1]))
        }
    }

    @Test func aContentLengthOverTheLimitIsRefusedBeforeTheBody() async throws {
        let server = try RawAnswerServer(head: "HTTP/1.1 200 OK\r\nContent-Length: 10000000000\r\n\r\n",
                                         chunk: [UInt8](repeating: 0, count: 64 << 10), repeats: 1)
        defer { server.stop() }
        let refusal = "the answer is larger than \(Self.limit) bytes (10000000000 declared): refused"
        await #expect(throws: HTTPError.answerRefused(refusal)) {
            _ = try await client.send(.init(method: "POST", url: URL(string: "http://127.0.0.1:\(server.port)/")!, body: [1]))
        }
    }

    /// A refusal stops the transfer too: the hostile server sees the
    /// connection closed, long before the client's timeout would end it
    /// (without the cancel, it sent until then: 40 s and more).
    @Test(arguments: ["Connection: close", "Content-Length: 10000000000"])
    func aRefusedAnswersTransferIsStopped(framing: String) async throws {
        let server = try RawAnswerServer(head: "HTTP/1.1 200 OK\r\n\(framing)\r\n\r\n",
                                         chunk: [UInt8](repeating: 0, count: 64 << 10), repeats: nil)
        defer { server.stop() }
        let patient = HTTPClient(defaultTimeout: 300, retryPolicy: .never, maxAnswerBytes: Self.limit)
        await #expect(throws: HTTPError.self) {
            _ = try await patient.send(.init(method: "POST", url: URL(string: "http://127.0.0.1:\(server.port)/")!, body: [1]))
        }
        for _ in 0..<600 where server.endedConnections == 0 { try await Task.sleep(for: .milliseconds(100)) }
        #expect(server.endedConnections == 1)
    }

    @Test func anAnswerOfExactlyTheLimitIsKept() async throws {
        let body = (0..<Self.limit).map { UInt8(truncatingIfNeeded: $0) }
        try await withServer(handler: { _ in .bytes(200, body, contentType: "application/octet-stream") }) { server in
            let answer = try await client.send(.init(method: "POST", url: url(server, "/"), body: [1]))
            #expect(answer.body == body)
        }
    }

    /// A server stating more new changes than were pushed, or not a count,
    /// breaks the protocol: `sent` would count what never went. The change
    /// stays pending.
    @Test(arguments: ["2", "-1", "many"])
    func aServerMiscountingThePushedChangesIsRefused(stated: String) async throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument { tx in try tx.put(.root, key: "colour", .string("red")) }
        let server = SyncServer(log: try ServerLog(path: ":memory:"), tokens: nil)
        try await withServer(handler: { request in
            var response = await server.handle(request)
            response.headers[HTTPSyncTransport.newChangesHeader] = stated
            return response
        }) { hostile in
            let transport = HTTPSyncTransport(server: url(hostile, ""), token: nil, retryPolicy: .never)
            await #expect {
                _ = try await SyncClient(store: store, peer: "server", transport: transport).sync()
            } throws: { error in
                guard let error = error as? SyncError, case .protocolViolation(let reason) = error.kind else { return false }
                return reason.contains(stated == "2" ? "says 2 of the 0 changes pushed were new" : "not a count of changes")
            }
        }
        #expect(try store.outbox(peer: "server")[id]?.count == 1)
    }

    /// The refusal loses nothing: the change stays pending and goes to a
    /// server that answers as it should.
    @Test func aStoreRefusingAnAnswerStillSyncsWithAGoodServer() async throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument { tx in try tx.put(.root, key: "colour", .string("red")) }
        let bomb = gzipped([UInt8](repeating: 0, count: 4 * Self.limit))
        try await withServer(handler: { _ in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Encoding", "gzip")]), body: bomb)
        }) { hostile in
            let transport = HTTPSyncTransport(server: url(hostile, ""), token: nil, retryPolicy: .never)
            let refusal = SyncError.protocolViolation("the answer is encoded as \"gzip\", which the client did not ask for: refused")
            await #expect(throws: refusal) { _ = try await SyncClient(store: store, peer: "server", transport: transport).sync() }
        }
        #expect(try store.outbox(peer: "server")[id]?.count == 1)

        try await withTemporaryDirectory { directory in
            let server = SyncServer(log: try ServerLog(path: directory + "/server.qlog"), tokens: nil)
            try await withServer(handler: server.handle) { good in
                let transport = HTTPSyncTransport(server: url(good, ""), token: nil, retryPolicy: .never)
                let report = try await SyncClient(store: store, peer: "server", transport: transport).sync()
                #expect(report.sent == 1)
            }
            #expect(try store.outbox(peer: "server").isEmpty)
            #expect(try store.read(id) { try $0.get(.root, key: "colour") } == .scalar(.string("red")))
        }
    }
}

/// `bytes` compressed as gzip, as a server sends it with `Content-Encoding: gzip`.
private func gzipped(_ bytes: [UInt8]) -> [UInt8] {
    var stream = z_stream()
    // `deflateInit2` is a C macro, so call the function it expands to; 16 + MAX_WBITS asks for the gzip wrapper.
    guard deflateInit2_(&stream, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                        Int32(MemoryLayout<z_stream>.size)) == Z_OK else { fatalError("deflateInit2 failed") }
    defer { deflateEnd(&stream) }
    var input = bytes
    var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(bytes.count))))
    let status = input.withUnsafeMutableBufferPointer { input in
        output.withUnsafeMutableBufferPointer { output in
            stream.next_in = input.baseAddress
            stream.avail_in = UInt32(input.count)
            stream.next_out = output.baseAddress
            stream.avail_out = UInt32(output.count)
            return deflate(&stream, Z_FINISH)
        }
    }
    precondition(status == Z_STREAM_END)
    return Array(output.prefix(Int(stream.total_out)))
}
