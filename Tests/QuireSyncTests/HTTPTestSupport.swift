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

/// Sends `request` as it is on a new connection to 127.0.0.1:`port` and
/// returns what comes back before the server closes or `timeout` passes:
/// for requests `URLSession` will not send (a forged Content-Length).
func rawExchange(port: UInt16, _ request: String, timeout: Int = 5) throws -> String {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    defer { close(socket) }
    var wait = timeval(tv_sec: timeout, tv_usec: 0)
    setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    _ = Array(request.utf8).withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while case let count = recv(socket, &buffer, buffer.count, 0), count > 0 { answer += buffer[..<count] }
    return String(decoding: answer, as: UTF8.self)
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
