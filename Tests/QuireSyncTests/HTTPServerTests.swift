import Synchronization
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import QuireSync
import QuireTestSupport
import Testing

@Suite("HTTP server")
struct HTTPServerTests {
    /// Echoes the request: method, path and query in headers, body as is.
    static let echo: HTTPServer.Handler = { request in
        var headers = HTTPHeaders()
        headers["X-Method"] = request.method
        headers["X-Path"] = request.path
        headers["X-Query"] = request.query.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        headers["X-Authorization"] = request.headers["authorization"] ?? "none"
        headers["X-Client"] = request.clientAddress ?? "unknown"
        return .bytes(200, request.body, contentType: "application/octet-stream", headers: headers)
    }

    @Test func getWithQueryAndHeaders() async throws {
        try await withServer(handler: Self.echo) { server in
            let client = HTTPClient(bearerToken: "s3cret", defaultTimeout: 30, retryPolicy: .never)
            let response = try await client.send(.init(method: "GET", url: url(server, "/docs/42?since=7&flag&name=a%20b")))
            #expect(response.status == 200)
            #expect(response.headers["x-method"] == "GET")
            #expect(response.headers["X-Path"] == "/docs/42")
            #expect(response.headers["X-Query"] == "flag=&name=a b&since=7")
            #expect(response.headers["X-Authorization"] == "Bearer s3cret")
            #expect(response.headers["X-Client"] == "127.0.0.1")
            #expect(response.body.isEmpty)
        }
    }

    @Test(arguments: [0, 1, 256, 1 << 20])
    func postRoundTripsBinaryBodies(size: Int) async throws {
        let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        try await withServer(handler: Self.echo) { server in
            let response = try await onceClient.send(.init(method: "POST", url: url(server, "/up"), body: body))
            #expect(response.status == 200)
            #expect(response.headers["X-Method"] == "POST")
            #expect(response.headers["Content-Type"] == "application/octet-stream")
            #expect(response.body == body)
        }
    }

    @Test func oversizedBodyGets413AndServerKeepsServing() async throws {
        let limits = HTTPServer.Limits(maxBodyBytes: 1000)
        try await withServer(limits: limits, handler: Self.echo) { server in
            let exact = [UInt8](repeating: 1, count: 1000)
            let accepted = try await onceClient.send(.init(method: "POST", url: url(server, "/"), body: exact))
            #expect(accepted.body == exact)
            await #expect(throws: HTTPError.permanent(status: 413, message: "request body larger than 1000 bytes")) {
                try await onceClient.send(.init(method: "POST", url: url(server, "/"), body: [UInt8](repeating: 1, count: 1001)))
            }
            let after = try await onceClient.send(.init(method: "GET", url: url(server, "/after")))
            #expect(after.status == 200)
        }
    }

    @Test func declaredBodyFarOverTheLimitGets413() async throws {
        try await withServer(limits: HTTPServer.Limits(maxBodyBytes: 1000), handler: Self.echo) { server in
            // The server answers before reading the body and closes; the
            // client must still see the 413, not a broken connection.
            await #expect(throws: HTTPError.permanent(status: 413, message: "request body larger than 1000 bytes")) {
                try await onceClient.send(.init(method: "POST", url: url(server, "/"), body: [UInt8](repeating: 2, count: 4 << 20)))
            }
        }
    }

    /// A declared length past Int.max (libmicrohttpd reads it as UInt64) is
    /// as absurd as any other: answered at once, not waited on.
    @Test(arguments: ["9223372036854775808", "18446744073709551615"])
    func declaredBodyPastIntMaxGets413AtOnce(length: String) async throws {
        try await withServer(limits: HTTPServer.Limits(maxBodyBytes: 1000), handler: Self.echo) { server in
            let answer = try rawExchange(port: server.port, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \(length)\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 413"))
            #expect(answer.hasSuffix("request body larger than 1000 bytes"))
        }
    }

    /// A chunked upload has no Content-Length, so the limit is found while
    /// receiving: the excess is dropped and the 413 sent at the end.
    @Test func chunkedBodiesAreReceivedAndLimited() async throws {
        try await withServer(limits: HTTPServer.Limits(maxBodyBytes: 100_000), handler: { request in
            .text(200, "\(request.headers["Transfer-Encoding"] ?? "-") \(request.body.count)")
        }) { server in
            func postStream(_ count: Int) async throws -> (status: Int?, text: String) {
                var request = URLRequest(url: url(server, "/"), timeoutInterval: 5)
                request.httpMethod = "POST"
                request.httpBodyStream = InputStream(data: Data(repeating: 3, count: count))
                let (body, response) = try await URLSession.shared.data(for: request)
                return ((response as? HTTPURLResponse)?.statusCode, String(decoding: body, as: UTF8.self))
            }
            let within = try await postStream(100_000)
            #expect(within.status == 200)
            #expect(within.text == "chunked 100000")
            let over = try await postStream(300_000)
            #expect(over.status == 413)
            #expect(over.text == "request body larger than 100000 bytes")
        }
    }

    /// Headers must fit libmicrohttpd's per-connection memory (32 KiB).
    @Test func oversizedHeadersGet431() async throws {
        try await withServer(handler: Self.echo) { server in
            var headers = HTTPHeaders()
            headers["X-Padding"] = String(repeating: "a", count: 64 * 1024)
            await #expect {
                try await onceClient.send(.init(method: "GET", url: url(server, "/"), headers: headers))
            } throws: { error in
                guard case .permanent(let status, _) = error as? HTTPError else { return false }
                return status == 431
            }
        }
    }

    @Test func throwingHandlerGives500AndServerKeepsServing() async throws {
        struct Boom: Error {}
        try await withServer(handler: { request in
            if request.path == "/boom" { throw Boom() }
            return .text(200, "fine")
        }) { server in
            // A 500 is transient; with a single attempt it is reported at once.
            await #expect(throws: HTTPError.transient(status: 500, message: "internal server error")) {
                try await onceClient.send(.init(method: "GET", url: url(server, "/boom")))
            }
            let after = try await onceClient.send(.init(method: "GET", url: url(server, "/ok")))
            #expect(after.body == Array("fine".utf8))
        }
    }

    @Test func aHeaderMHDRefusesGives500NotTheHandlersStatus() async throws {
        try await withServer(handler: { _ in
            .text(200, "fine", headers: HTTPHeaders([("X-Broken", "one\r\nX-Injected: two")]))
        }) { server in
            await #expect(throws: HTTPError.transient(status: 500, message: "internal server error: the handler produced an invalid header")) {
                try await onceClient.send(.init(method: "GET", url: url(server, "/")))
            }
        }
    }

    @Test func answersTwentyConcurrentRequests() async throws {
        try await withServer(handler: { request in
            try await Task.sleep(for: .milliseconds(50))
            return .text(200, request.path)
        }) { server in
            let bodies = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        let response = try await onceClient.send(.init(method: "GET", url: url(server, "/\(index)")))
                        return String(decoding: response.body, as: UTF8.self)
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(bodies == Set((0..<20).map { "/\($0)" }))
        }
    }

    /// A client holding connections open by sending its headers a byte at a
    /// time gets only its share; other clients are still served.
    @Test func oneAddressCannotTakeEveryConnection() async throws {
        let limits = HTTPServer.Limits(maxConnections: 8, maxConnectionsPerAddress: 2)
        try await withServer(limits: limits, handler: Self.echo) { server in
            let stalled = try (0..<2).map { _ in try rawConnection(port: server.port, from: "127.0.0.2") }
            defer { stalled.forEach { close($0) } }
            for socket in stalled {
                _ = Array("GET / HTTP/1.1\r\nHo".utf8).withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
            }
            let request = "GET /x HTTP/1.1\r\nHost: quire\r\nConnection: close\r\n\r\n"
            #expect(try rawExchange(port: server.port, request, from: "127.0.0.2") == "")
            #expect(try rawExchange(port: server.port, request, from: "127.0.0.3").hasPrefix("HTTP/1.1 200"))
        }
    }

    /// Two lengths told two ways would let a proxy in front and the server
    /// disagree on where the request ends (request smuggling):
    /// libmicrohttpd takes the first Content-Length, or chunked over any
    /// Content-Length. Such a request is refused before its handler runs.
    /// (Two values in one field, `3, 10`, libmicrohttpd refuses itself.)
    @Test(arguments: [
        ("Content-Length: 3\r\nContent-Length: 10", "different Content-Length values (10, 3)"),
        ("Content-Length: 3\r\nTransfer-Encoding: chunked", "both Transfer-Encoding and Content-Length"),
        ("Transfer-Encoding: gzip, chunked", "Transfer-Encoding \"gzip, chunked\" is not supported"),
    ])
    func aRequestWhoseBodyLengthIsAmbiguousGets400(headers: String, reason: String) async throws {
        let handled = Counter()
        try await withServer(handler: { request in
            _ = handled.next()
            return try await Self.echo(request)
        }) { server in
            let answer = try rawExchange(port: server.port, "POST / HTTP/1.1\r\nHost: x\r\n\(headers)\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 400"))
            #expect(answer.contains(reason))
            // A repeated but equal length says one thing, and is served.
            let equal = try rawExchange(port: server.port, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
            #expect(equal.hasPrefix("HTTP/1.1 200"))
            #expect(equal.hasSuffix("\r\n\r\nabc"))
            #expect(handled.count == 1)
        }
    }

    /// libmicrohttpd's timeout counts only idle time: a client sending a
    /// header byte every 100 ms would hold its connection for ever. The
    /// request deadline closes it, and the address's connection is free again.
    @Test func aClientTricklingItsRequestIsClosedAtTheDeadline() async throws {
        let limits = HTTPServer.Limits(maxConnections: 8, maxConnectionsPerAddress: 1, requestDeadlineSeconds: 1)
        try await withServer(limits: limits, handler: Self.echo) { server in
            let socket = try rawConnection(port: server.port, from: "127.0.0.2")
            defer { close(socket) }
            func send(_ text: String) -> Bool {
                Array(text.utf8).withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } > 0
            }
            func isClosed() -> Bool {
                var byte: UInt8 = 0
                return recv(socket, &byte, 1, Int32(MSG_DONTWAIT)) == 0
            }
            var closed = !send("GET /slow HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            // 30 s of trickling: far past the deadline however loaded the machine.
            for _ in 0..<300 where !closed {
                try await Task.sleep(for: .milliseconds(100))
                closed = isClosed() || !send("a")
            }
            #expect(closed)
            let request = "GET /x HTTP/1.1\r\nHost: quire\r\nConnection: close\r\n\r\n"
            #expect(try rawExchange(port: server.port, request, from: "127.0.0.2").hasPrefix("HTTP/1.1 200"))
        }
    }

    /// The deadline frees a connection only at its end, and a client
    /// reopening at once from several addresses would keep every
    /// connection. When all are taken, a newcomer makes the one that has
    /// waited longest for its request be closed; one whose handler runs is
    /// never taken.
    @Test func aNewcomerTakesTheConnectionThatWaitedLongestForItsRequest() async throws {
        try await withPollWaiting(maxConnections: 3) { server, finishPoll in
            var stalled: [Int32] = []
            defer { stalled.forEach { close($0) } }
            for source in ["127.0.0.2", "127.0.0.3"] {
                let socket = try rawConnection(port: server.port, from: source)
                _ = Array("GET / HTTP/1.1\r\nHo".utf8).withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
                stalled.append(socket)
                // One at a time, so that the first has waited longest.
                try await Task.sleep(for: .milliseconds(200))
            }
            let request = "GET /x HTTP/1.1\r\nHost: quire\r\nConnection: close\r\n\r\n"
            #expect(try rawExchange(port: server.port, request, from: "127.0.0.4").hasPrefix("HTTP/1.1 200"))
            var byte: UInt8 = 0
            #expect(recv(stalled[0], &byte, 1, 0) == 0)
            try await finishPoll()
        }
    }

    /// Runs `body` with a server (`maxConnections`, no per-address limit, a
    /// 600 s request deadline) where a `/poll` request is under way, its
    /// handler waiting until `finishPoll`, which checks the poll's answer.
    /// Other paths are answered at once with the path.
    private func withPollWaiting(
        maxConnections: Int, _ body: (HTTPServer, _ finishPoll: () async throws -> Void) async throws -> Void
    ) async throws {
        let handling = Counter()
        let released = Mutex(false)
        let limits = HTTPServer.Limits(maxConnections: maxConnections, maxConnectionsPerAddress: 0, requestDeadlineSeconds: 600)
        try await withServer(limits: limits, handler: { request in
            if request.path == "/poll" {
                _ = handling.next()
                while !released.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(20)) }
            }
            return .text(200, request.path)
        }) { server in
            let poll = Task { try await onceClient.send(.init(method: "GET", url: url(server, "/poll"))) }
            while handling.count == 0 { try await Task.sleep(for: .milliseconds(10)) }
            try await body(server) { () async throws in
                released.withLock { $0 = true }
                #expect(try await poll.value.body == Array("/poll".utf8))
            }
        }
    }

    /// The deadline is for the client's request: a handler's wait (a
    /// long-poll) past it does not cut the connection.
    @Test func aHandlerWaitingPastTheRequestDeadlineStillAnswers() async throws {
        let limits = HTTPServer.Limits(requestDeadlineSeconds: 1)
        try await withServer(limits: limits, handler: { _ in
            try await Task.sleep(for: .seconds(3))
            return .text(200, "waited")
        }) { server in
            let response = try await onceClient.send(.init(method: "GET", url: url(server, "/poll")))
            #expect(response.body == Array("waited".utf8))
        }
    }

    /// When every connection is taken by a running handler (long-polls),
    /// a newcomer is told to try again (503, `Retry-After`), which the
    /// client retries, rather than cut off as if the server were down;
    /// past `HTTPServer.busyConnections` such newcomers at once, one is
    /// closed unanswered, so that they cannot hold more than that.
    @Test func aNewcomerToAFullServerIsToldToTryAgain() async throws {
        try await withPollWaiting(maxConnections: 1) { server, finishPoll in
            // A body is read (and dropped) before the answer, so that the client sees it.
            let busy = try rawExchange(port: server.port, "POST /x HTTP/1.1\r\nHost: quire\r\nContent-Length: 3\r\n\r\nabc")
            #expect(busy.hasPrefix("HTTP/1.1 503"))
            #expect(busy.contains("Retry-After: 1\r\n"))
            #expect(busy.hasSuffix("the server is busy: all 1 connections are in use; try again"))

            let waits = Mutex<[TimeInterval]>([])
            let retrying = HTTPClient(defaultTimeout: 30, retryPolicy: RetryPolicy(
                maxAttempts: 2, random: { $0.upperBound }, sleep: { seconds in waits.withLock { $0.append(seconds) } }))
            await #expect {
                try await retrying.send(.init(method: "GET", url: url(server, "/x")))
            } throws: { error in
                guard case .transient(503, let message) = error as? HTTPError else { return false }
                return message.contains("the server is busy")
            }
            #expect(waits.withLock { $0 } == [1])

            // Newcomers that send nothing hold the places for busy answers; the next one is refused.
            let silent = try (0..<HTTPServer.busyConnections).map { _ in try rawConnection(port: server.port, from: "127.0.0.2") }
            defer { silent.forEach { close($0) } }
            let request = "GET /x HTTP/1.1\r\nHost: quire\r\nConnection: close\r\n\r\n"
            #expect(try rawExchange(port: server.port, request, from: "127.0.0.3") == "")

            try await finishPoll()
            #expect(try rawExchange(port: server.port, request).hasPrefix("HTTP/1.1 200"))
        }
    }

    /// Each byte a client reads resets libmicrohttpd's idle timeout, so one
    /// that stops reading (or reads a byte now and then) would hold its
    /// connection, and its answer's memory, for ever. The deadline covers
    /// taking the answer too: the connection is closed, and the address's
    /// one connection free again.
    @Test func aClientThatStopsReadingItsAnswerIsClosedAtTheDeadline() async throws {
        let answer = [UInt8](repeating: 7, count: 16 << 20)
        // A rate so high that the answer has the deadline's 1 s and no more.
        let limits = HTTPServer.Limits(
            maxConnections: 8, maxConnectionsPerAddress: 1, connectionTimeoutSeconds: 600,
            requestDeadlineSeconds: 1, minimumAnswerBytesPerSecond: 1 << 30)
        try await withServer(limits: limits, handler: { request in
            request.path == "/large" ? .bytes(200, answer, contentType: "application/octet-stream") : .text(200, request.path)
        }) { server in
            let reader = try rawConnection(port: server.port, from: "127.0.0.2")
            defer { close(reader) }
            // A small window, so that the server has to wait for the client.
            var window: Int32 = 4096
            setsockopt(reader, SOL_SOCKET, SO_RCVBUF, &window, socklen_t(MemoryLayout<Int32>.size))
            _ = Array("GET /large HTTP/1.1\r\nHost: quire\r\n\r\n".utf8).withUnsafeBytes { send(reader, $0.baseAddress, $0.count, 0) }

            // Until the stalled connection is closed, its address may open no other.
            let request = "GET /x HTTP/1.1\r\nHost: quire\r\nConnection: close\r\n\r\n"
            var served = false
            for _ in 0..<300 where !served {  // 30 s: far past the deadline however loaded the machine
                try await Task.sleep(for: .milliseconds(100))
                served = try rawExchange(port: server.port, request, from: "127.0.0.2").hasPrefix("HTTP/1.1 200")
            }
            // (Not read to its end: what the kernel still holds trickles through a window this small.)
            #expect(served)
        }
    }

    /// A large answer on a slow but steady link has a second more per
    /// `minimumAnswerBytesPerSecond` of it, past the deadline: this one,
    /// read over ten seconds or more, is not cut at the deadline's three
    /// (by then, the reader has taken under 4 MiB and the sockets' buffers
    /// hold about as much again: less than the 12 MiB). Three, not one: the
    /// request must arrive within the deadline of the connection opening,
    /// and on a loaded machine a second can go by between the two. The
    /// reader has a thread of its own: on the tests' shared pool, other
    /// tests' blocking calls held it back past the idle timeout (4.4 MB in
    /// 110 s), which this test, about the deadline, also sets far off.
    @Test func aLargeAnswerTakenSlowlyButSteadilyArrivesWhole() async throws {
        let answer = [UInt8](repeating: 7, count: 12 << 20)
        let limits = HTTPServer.Limits(connectionTimeoutSeconds: 600, requestDeadlineSeconds: 3)
        try await withServer(limits: limits, handler: { _ in .bytes(200, answer, contentType: "application/octet-stream") }) { server in
            let reader = try rawConnection(port: server.port, from: "127.0.0.2")
            defer { close(reader) }
            // Twice loopback's segment at least, or the window opens by too little to be told.
            var window: Int32 = 128 << 10
            setsockopt(reader, SOL_SOCKET, SO_RCVBUF, &window, socklen_t(MemoryLayout<Int32>.size))
            _ = Array("GET / HTTP/1.1\r\nHost: quire\r\nConnection: close\r\n\r\n".utf8).withUnsafeBytes { send(reader, $0.baseAddress, $0.count, 0) }
            let received: [UInt8] = await withCheckedContinuation { done in
                Thread.detachNewThread {
                    var received: [UInt8] = []
                    var buffer = [UInt8](repeating: 0, count: 128 << 10)
                    while case let count = recv(reader, &buffer, buffer.count, 0), count > 0 {
                        received += buffer[..<count]
                        usleep(100_000)  // 128 KiB a tenth of a second at most
                    }
                    done.resume(returning: received)
                }
            }
            // The headers, then the whole body (compared here: a failed #expect would print 12 MiB).
            let arrivedWhole = received.count > answer.count && received.suffix(answer.count).elementsEqual(answer)
            #expect(arrivedWhole, "\(received.count) bytes arrived")
        }
    }

    /// A handler waiting (as a long-poll does) must not hold up other
    /// connections: the slow handler waits until the fast request has been
    /// answered, which can only happen if the server serves both at once.
    /// (Ordering, not timing: a loaded machine cannot make it fail.)
    @Test func slowHandlerDoesNotBlockOtherConnections() async throws {
        let fastAnswered = Mutex(false)
        try await withServer(handler: { request in
            if request.path == "/slow" {
                for _ in 0..<600 where !fastAnswered.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(50)) }
                return .text(200, fastAnswered.withLock { $0 } ? "released" : "gave up waiting")
            }
            return .text(200, request.path)
        }) { server in
            let slow = Task { try await onceClient.send(.init(method: "GET", url: url(server, "/slow"), timeout: 60)) }
            let fast = try await onceClient.send(.init(method: "GET", url: url(server, "/fast"), timeout: 60))
            #expect(fast.body == Array("/fast".utf8))
            fastAnswered.withLock { $0 = true }
            let slowResponse = try await slow.value
            #expect(slowResponse.body == Array("released".utf8))
        }
    }

    @Test func stoppedServerRefusesConnections() async throws {
        let server = HTTPServer(port: 0, handler: Self.echo)
        try server.start()
        let address = url(server, "/")
        let before = try await onceClient.send(.init(method: "GET", url: address))
        #expect(before.status == 200)
        server.stop()
        #expect(server.port == 0)
        await #expect {
            try await onceClient.send(.init(method: "GET", url: address))
        } throws: { error in
            guard case .unreachable(let message) = error as? HTTPError else { return false }
            return message.contains("connection refused")
        }
        server.stop()  // a second stop is harmless
    }

    /// A waiting long-poll must not hold up `stop()` for its whole wait.
    @Test func stopCancelsWaitingHandlers() async throws {
        let entered = Counter()
        let server = HTTPServer(port: 0, handler: { _ in
            _ = entered.next()
            try await Task.sleep(for: .seconds(30))
            return .text(200, "too late")
        })
        try server.start()
        let poll = Task { try await onceClient.send(.init(method: "GET", url: url(server, "/poll"), timeout: 20)) }
        while entered.count == 0 { try await Task.sleep(for: .milliseconds(10)) }
        let start = ContinuousClock.now
        server.stop()
        #expect(ContinuousClock.now - start < .seconds(10))
        // The 503 may or may not get out before the connection closes.
        await #expect {
            try await poll.value
        } throws: { error in
            switch error as? HTTPError {
            case .transient(503, "server is stopping"), .unreachable: true
            default: false
            }
        }
    }

    /// `stop()` while requests arrive, are read, wait in their handler or
    /// are answered: each ends with its answer, a 503 or no answer (its
    /// connection closed or refused), `stop()` returns, and the server
    /// starts again.
    @Test func stopRacingRequestsEndsEveryRequest() async throws {
        let entered = Counter()
        let server = HTTPServer(port: 0, handler: { request in
            _ = entered.next()
            if request.path == "/wait" { try await Task.sleep(for: .seconds(60)) }
            return .text(200, "answered")
        })
        for _ in 0..<5 {
            try server.start()
            let addresses = (0..<12).map { url(server, $0.isMultiple(of: 2) ? "/wait" : "/now") }
            let handled = entered.count
            let requests = addresses.map { address in
                Task { try await onceClient.send(.init(method: "POST", url: address, body: [UInt8](repeating: 1, count: 100_000))) }
            }
            while entered.count == handled { try await Task.sleep(for: .milliseconds(1)) }
            server.stop()
            for request in requests {
                switch await request.result {
                case .success(let response): #expect(response.status == 200)
                case .failure(HTTPError.transient(503, "server is stopping")), .failure(HTTPError.unreachable): break
                case .failure(let error): Issue.record("unexpected \(error)")
                }
            }
        }
    }

    @Test func portInUseGivesAClearError() async throws {
        try await withServer(handler: Self.echo) { first in
            let second = HTTPServer(port: first.port, handler: Self.echo)
            #expect {
                try second.start()
            } throws: { error in
                guard case .cannotListen(_, let port, let reason) = error as? HTTPServerError else { return false }
                return port == first.port && "\(error)".contains("in use") && !reason.isEmpty
            }
        }
    }

    @Test func rejectsANonNumericHost() {
        #expect(throws: HTTPServerError.invalidAddress("localhost")) {
            try HTTPServer(host: "localhost", port: 0, handler: Self.echo).start()
        }
    }
}
