import Foundation
#if canImport(Glibc)
import Glibc
#endif
import QuireSync
import Synchronization

/// Runs `body` against a started server on 127.0.0.1 and a free port, then stops it.
@discardableResult
func withServer<T>(
    limits: HTTPServer.Limits = HTTPServer.Limits(),
    handler: @escaping HTTPServer.Handler,
    _ body: (HTTPServer) async throws -> T
) async throws -> T {
    let server = HTTPServer(port: 0, limits: limits, handler: handler)
    try server.start()
    defer { server.stop() }
    return try await body(server)
}

func url(_ server: HTTPServer, _ pathAndQuery: String) -> URL {
    URL(string: "http://127.0.0.1:\(server.port)\(pathAndQuery)")!
}

/// A client that tries once and waits 5 s at most, so a broken server fails fast.
/// Generous timeouts: tests check answers, not speed, and a loaded machine may be slow.
let onceClient = HTTPClient(defaultTimeout: 30, retryPolicy: .never)

/// Counts calls from any thread.
final class Counter: Sendable {
    private let value = Mutex(0)
    /// Adds one and returns the new count.
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
    var count: Int { value.withLock { $0 } }
}

/// Records the waits a `RetryPolicy` asks for instead of sleeping.
final class SleepRecorder: Sendable {
    private let delays = Mutex<[TimeInterval]>([])
    var recorded: [TimeInterval] { delays.withLock { $0 } }

    /// A policy that sleeps for no time, records every wait, and always picks
    /// the top of the jitter range so waits are predictable.
    func policy(maxAttempts: Int) -> RetryPolicy {
        RetryPolicy(maxAttempts: maxAttempts, baseDelay: 0.1, maxDelay: 2,
                    random: { $0.upperBound }, sleep: { seconds in self.delays.withLock { $0.append(seconds) } })
    }
}
