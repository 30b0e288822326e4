import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A port on 127.0.0.1 that refuses every connection while this lives: a
/// socket bound to it that never listens, so no other server can take it.
/// (A server started and stopped to free a port does not do that: a test
/// running beside it may take the port meanwhile and answer.)
public final class RefusingPort: Sendable {
    public let port: UInt16
    private let socket: Int32

    public init() throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
            }
        }
        guard bound else {
            let failure = POSIXError(.init(rawValue: errno) ?? .EIO)
            close(socket)
            throw failure
        }
        self.socket = socket
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(socket) }
}

/// Runs `body` with the port of a `RefusingPort`, kept until `body` returns.
public func withRefusingPort<T>(_ body: (UInt16) async throws -> T) async throws -> T {
    let refusing = try RefusingPort()
    defer { withExtendedLifetime(refusing) {} }
    return try await body(refusing.port)
}

/// Sends `request` as it is on a new connection to 127.0.0.1:`port` and
/// returns what comes back before the server closes or `timeout` passes:
/// for requests `URLSession` will not send (a forged Content-Length).
/// `source` is the loopback address the connection comes from.
public func rawExchange(port: UInt16, _ request: String, from source: String = "127.0.0.1", timeout: Int = 5) throws -> String {
    String(decoding: try rawExchange(port: port, Array(request.utf8), from: source, timeout: timeout), as: UTF8.self)
}

/// `rawExchange` of bytes, for bodies that are not text. With
/// `endingWrites`, the client then shuts its sending side, as one that
/// sent all it will: a server waiting for more of a request sees it at once.
public func rawExchange(port: UInt16, _ request: [UInt8], from source: String = "127.0.0.1", timeout: Int = 5,
                        endingWrites: Bool = false) throws -> [UInt8] {
    let socket = try rawConnection(port: port, from: source, timeout: timeout)
    defer { close(socket) }
    _ = request.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    if endingWrites { shutdown(socket, Int32(SHUT_WR)) }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while case let count = recv(socket, &buffer, buffer.count, 0), count > 0 { answer += buffer[..<count] }
    return answer
}

/// A socket connected to 127.0.0.1:`port` from the loopback address
/// `source` (any of 127.0.0.0/8 works on Linux, so tests can play several
/// clients); reads on it give up after `timeout` seconds. The caller closes it.
public func rawConnection(port: UInt16, from source: String, timeout: Int = 5) throws -> Int32 {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    var wait = timeval(tv_sec: timeout, tv_usec: 0)
    setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    func connectOrBind(_ host: String, port: UInt16, _ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32) throws {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr(host)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let failure = POSIXError(.init(rawValue: errno) ?? .EIO)
            close(socket)
            throw failure
        }
    }
    try connectOrBind(source, port: 0, bind)
    try connectOrBind("127.0.0.1", port: port, connect)
    return socket
}

/// A server on 127.0.0.1 that reads each request and answers it with
/// `head` (the status line and headers, as sent) and then `chunk`, `repeats`
/// times or, if nil, until the client goes away: for answers no real
/// server sends (a body that never ends, a Content-Length it never fulfils).
public final class RawAnswerServer: Sendable {
    public let port: UInt16
    private let listener: Int32
    private let ended = Atomic<Int>(0)

    /// Connections whose answer ended: all sent, or the client went away.
    public var endedConnections: Int { ended.load(ordering: .sequentiallyConsistent) }

    public init(head: String, chunk: [UInt8], repeats: Int?) throws {
        let listener = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(listener, address, length) == 0 && listen(listener, 16) == 0 && getsockname(listener, address, &length) == 0
            }
        }
        guard bound else {
            close(listener)
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread { [self] in
            while case let connection = accept(listener, nil, nil), connection >= 0 {
                Thread.detachNewThread {
                    Self.answer(connection, head: head, chunk: chunk, repeats: repeats)
                    self.ended.add(1, ordering: .sequentiallyConsistent)
                }
            }
        }
    }

    /// Stops accepting; connections being answered end when their client goes away.
    public func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private static func answer(_ connection: Int32, head: String, chunk: [UInt8], repeats: Int?) {
        defer { close(connection) }
        // The request: its headers, then as many bytes as its Content-Length says.
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        func headerEnd() -> Int? {
            guard request.count >= 4 else { return nil }
            return (0...(request.count - 4)).first { request[$0..<($0 + 4)].elementsEqual("\r\n\r\n".utf8) }.map { $0 + 4 }
        }
        while headerEnd() == nil, case let count = recv(connection, &buffer, buffer.count, 0), count > 0 { request += buffer[..<count] }
        guard let end = headerEnd() else { return }
        let headers = String(decoding: request[..<end], as: UTF8.self).lowercased()
        let declared = headers.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        while request.count - end < declared, case let count = recv(connection, &buffer, buffer.count, 0), count > 0 { request += buffer[..<count] }

        func sendAll(_ bytes: [UInt8]) -> Bool {
            bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
        }
        guard sendAll(Array(head.utf8)) else { return }
        var sent = 0
        while sent != repeats, sendAll(chunk) { sent += 1 }
    }
}
