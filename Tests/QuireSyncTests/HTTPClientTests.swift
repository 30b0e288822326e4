import Foundation
import QuireSync
import QuireTestSupport
import Synchronization
import Testing

@Suite("HTTP client")
struct HTTPClientTests {
    /// Answers `failures` requests with `failure`, then 200 "ok".
    static func failing(_ failures: Int, with failure: HTTPResponse, calls: Counter) -> HTTPServer.Handler {
        { _ in calls.next() <= failures ? failure : .text(200, "ok") }
    }

    @Test func retries503ThenSucceeds() async throws {
        let calls = Counter(), sleeps = SleepRecorder()
        try await withServer(handler: Self.failing(2, with: .text(503, "busy"), calls: calls)) { server in
            let client = HTTPClient(defaultTimeout: 30, retryPolicy: sleeps.policy(maxAttempts: 5))
            let response = try await client.send(.init(method: "GET", url: url(server, "/")))
            #expect(response.status == 200)
            #expect(response.body == Array("ok".utf8))
        }
        #expect(calls.count == 3)
        #expect(sleeps.recorded == [0.1, 0.2])  // the top of each full-jitter range
    }

    @Test func honoursRetryAfterCappedAtMaxDelay() async throws {
        let calls = Counter(), sleeps = SleepRecorder()
        try await withServer(handler: { _ in
            switch calls.next() {
            case 1: .text(503, "busy", headers: HTTPHeaders([("Retry-After", "1")]))
            case 2: .text(429, "slow down", headers: HTTPHeaders([("Retry-After", "120")]))
            default: .text(200, "ok")
            }
        }) { server in
            let client = HTTPClient(defaultTimeout: 30, retryPolicy: sleeps.policy(maxAttempts: 5))
            _ = try await client.send(.init(method: "GET", url: url(server, "/")))
        }
        #expect(sleeps.recorded == [1, 2])  // 120 s is cut to maxDelay (2 s)
    }

    @Test func givesUpAfterMaxAttemptsAsTransient() async throws {
        let calls = Counter(), sleeps = SleepRecorder()
        try await withServer(handler: Self.failing(.max, with: .text(503, "down for maintenance"), calls: calls)) { server in
            let client = HTTPClient(defaultTimeout: 30, retryPolicy: sleeps.policy(maxAttempts: 3))
            await #expect(throws: HTTPError.transient(status: 503, message: "down for maintenance")) {
                try await client.send(.init(method: "GET", url: url(server, "/")))
            }
        }
        #expect(calls.count == 3)
        #expect(sleeps.recorded.count == 2)
    }

    @Test(arguments: [400, 401, 403, 404, 409, 413, 501, 505])
    func permanentStatusIsThrownAtOnce(status: Int) async throws {
        let calls = Counter(), sleeps = SleepRecorder()
        try await withServer(handler: Self.failing(.max, with: .text(status, "refused: bad token"), calls: calls)) { server in
            let client = HTTPClient(defaultTimeout: 30, retryPolicy: sleeps.policy(maxAttempts: 5))
            await #expect(throws: HTTPError.permanent(status: status, message: "refused: bad token")) {
                try await client.send(.init(method: "POST", url: url(server, "/"), body: [1, 2, 3]))
            }
        }
        #expect(calls.count == 1)
        #expect(sleeps.recorded.isEmpty)
    }

    /// A web page (a wrong URL, a server that is not a sync server) is
    /// named by its status, size and type, not quoted whole.
    @Test func anAnswerThatIsNotPlainTextIsDescribed() async throws {
        let page = HTTPResponse.bytes(404, Array("<html><body>Not here</body></html>".utf8), contentType: "text/html")
        try await withServer(handler: { _ in page }) { server in
            let client = HTTPClient(defaultTimeout: 30, retryPolicy: SleepRecorder().policy(maxAttempts: 1))
            await #expect(throws: HTTPError.permanent(status: 404, message: "Not Found, with 34 bytes of text/html")) {
                try await client.send(.init(method: "POST", url: url(server, "/"), body: [1]))
            }
        }
    }

    @Test func connectionRefusedIsUnreachableAfterRetries() async throws {
        let sleeps = SleepRecorder()
        try await withRefusingPort { port in
            let address = URL(string: "http://127.0.0.1:\(port)/sync")!
            let client = HTTPClient(defaultTimeout: 30, retryPolicy: sleeps.policy(maxAttempts: 3))
            await #expect {
                try await client.send(.init(method: "GET", url: address))
            } throws: { error in
                guard case .unreachable(let message) = error as? HTTPError else { return false }
                // What an app shows, as `quire` prints it.
                return message.contains("connection refused") && message.contains("GET \(address.absoluteString)")
                    && error.localizedDescription == "\(error)"
            }
        }
        #expect(sleeps.recorded.count == 2)
    }

    @Test func timeoutIsUnreachable() async throws {
        try await withServer(handler: { _ in
            try await Task.sleep(for: .seconds(30))
            return .text(200, "too late")
        }) { server in
            await #expect {
                try await onceClient.send(.init(method: "GET", url: url(server, "/poll"), timeout: 1))
            } throws: { error in
                guard case .unreachable(let message) = error as? HTTPError else { return false }
                return message.contains("no answer within 1.0 s")
            }
        }
    }

    /// Requests cancelled at every moment of their short lives: before
    /// they start, while they wait, while their answer is being read. On
    /// Linux, URLSession's own `data(for:)` could deadlock when cancelled
    /// as its answer arrived (swift-corelibs-foundation issue 5412); a
    /// client that hung so would never finish this loop.
    @Test func cancellingRequestsAtAnyMomentNeverHangs() async throws {
        try await withServer(handler: { _ in .text(200, "ok") }) { server in
            let client = HTTPClient(defaultTimeout: 30, retryPolicy: RetryPolicy(maxAttempts: 1))
            var rng = SystemRandomNumberGenerator()
            for round in 0..<300 {
                let request = Task { try await client.send(.init(method: "GET", url: url(server, "/\(round)"))) }
                try await Task.sleep(for: .microseconds(Int.random(in: 0..<3_000, using: &rng)))
                request.cancel()
                // Answered or cancelled, it ends.
                switch await request.result {
                case .success(let response): #expect(response.status == 200)
                case .failure(let error): #expect(error as? HTTPError == .cancelled, "\(error)")
                }
            }
        }
    }

    @Test func cancellingTheTaskStopsRetrying() async throws {
        let policy = RetryPolicy(maxAttempts: 5, sleep: { _ in try await Task.sleep(for: .seconds(30)) })
        try await withServer(handler: { _ in .text(503, "busy") }) { server in
            let client = HTTPClient(defaultTimeout: 30, retryPolicy: policy)
            let request = Task { try await client.send(.init(method: "GET", url: url(server, "/"))) }
            try await Task.sleep(for: .milliseconds(200))
            request.cancel()
            await #expect(throws: HTTPError.cancelled) { try await request.value }
        }
    }
}

@Suite("Retry policy")
struct RetryPolicyTests {
    @Test func fullJitterRangesDoubleUpToTheCap() {
        let ranges = Mutex<[ClosedRange<Double>]>([])
        let policy = RetryPolicy(baseDelay: 0.5, maxDelay: 5, random: { range in
            ranges.withLock { $0.append(range) }
            return range.lowerBound
        })
        for retry in 0..<6 { _ = policy.delay(beforeRetry: retry) }
        _ = policy.delay(beforeRetry: 5000)  // 2^5000 overflows to infinity, then is capped
        #expect(ranges.withLock { $0 } == [0...0.5, 0...1, 0...2, 0...4, 0...5, 0...5, 0...5])
    }

    @Test func realRandomDelaysStayWithinBounds() {
        let policy = RetryPolicy(baseDelay: 0.25, maxDelay: 3)
        for retry in 0..<12 {
            for _ in 0..<100 {
                let delay = policy.delay(beforeRetry: retry)
                #expect(delay >= 0 && delay <= min(3, 0.25 * Double(1 << retry)))
            }
        }
    }

    @Test func retryAfterReplacesTheJitterButNotTheCap() {
        let policy = RetryPolicy(maxDelay: 10, random: { _ in Issue.record("no jitter expected"); return 0 })
        #expect(policy.delay(beforeRetry: 3, retryAfter: 4) == 4)
        #expect(policy.delay(beforeRetry: 0, retryAfter: 60) == 10)
        #expect(policy.delay(beforeRetry: 0, retryAfter: -1) == 0)
    }

    @Test func atLeastOneAttempt() {
        #expect(RetryPolicy(maxAttempts: 0).maxAttempts == 1)
    }
}
