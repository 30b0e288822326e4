import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Sends `request` as it is on a new connection to 127.0.0.1:`port` and
/// returns what comes back before the server closes or `timeout` passes:
/// for requests `URLSession` will not send (a forged Content-Length).
/// `source` is the loopback address the connection comes from.
public func rawExchange(port: UInt16, _ request: String, from source: String = "127.0.0.1", timeout: Int = 5) throws -> String {
    let socket = try rawConnection(port: port, from: source, timeout: timeout)
    defer { close(socket) }
    _ = Array(request.utf8).withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while case let count = recv(socket, &buffer, buffer.count, 0), count > 0 { answer += buffer[..<count] }
    return String(decoding: answer, as: UTF8.self)
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
