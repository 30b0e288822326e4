import Dispatch
import Foundation
import Synchronization

/// Keeps each connection's deadline and its share of the server, and
/// closes the connections past either:
/// - a client must send a whole request (headers and body) within
///   `seconds` of when the connection opened or its previous answer went
///   out, and take the answer within `seconds` plus one second per
///   `minimumAnswerBytesPerSecond` of it;
/// - when more than `maxConnections` are open, a newcomer closes the
///   connection that has waited longest for its request; if none is
///   waiting (every handler runs), the newcomer is one of at most
///   `busySlots` that are answered 503 (`isBusy`), and past those it is
///   closed unanswered;
/// - one client address may hold `maxConnectionsPerAddress` connections
///   (`admits`, before libmicrohttpd takes a connection).
///
/// libmicrohttpd's own timeout counts only idle time, so a client sending
/// a header byte every few seconds, or reading its answer a byte at a
/// time, would hold its connection (its thread, and its answer's memory)
/// for ever. A handler's wait (a long-poll) does not count. The deadline
/// alone frees a connection only after `seconds`, and a client that opens
/// a new one at once (from a few addresses, past the per-address limit)
/// would still take every connection; making room lets the others in all
/// the same. `seconds` 0 means no deadline, and then no room is made.
///
/// A connection is cut with `shutdown(2)` from a timer: MHD's thread for it
/// then reads the end of the stream and closes it as any other. The socket
/// is shut only while MHD still holds it open (`closed` is told before MHD
/// closes it, and takes the same lock), so a reused descriptor is never hit.
final class RequestDeadlines: @unchecked Sendable {
    // @unchecked: `timer`, the one member not Sendable, is a dispatch
    // source, which may be cancelled from any thread.
    private struct Connection {
        let socket: Int32
        /// The client's address, for the log.
        let client: String
        var stage: Stage = .awaitingRequest
        /// Nil while the request's handler runs, with no deadline, or once it is being closed.
        var deadline: ContinuousClock.Instant?
        /// Taken when the server was full: its request is answered 503.
        var isBusy = false
        /// Shut already; MHD will tell `closed` shortly.
        var isClosing = false

        var isAwaitingRequest: Bool {
            if case .awaitingRequest = stage { true } else { false }
        }
    }

    private enum Stage {
        case awaitingRequest, handling
        case sendingAnswer(bytes: Int)
    }

    let seconds: Int
    let maxConnections: Int
    let busySlots: Int
    /// 0 for no limit.
    let maxConnectionsPerAddress: Int
    let minimumAnswerBytesPerSecond: Int
    /// Keyed by MHD's connection pointer, which stays the same while the connection is open.
    private let connections = Mutex<[UInt: Connection]>([:])
    private let timer: DispatchSourceTimer

    /// Starts the timer; `stop()` ends it.
    init(seconds: Int, maxConnections: Int, busySlots: Int, maxConnectionsPerAddress: Int, minimumAnswerBytesPerSecond: Int) {
        self.seconds = seconds
        self.maxConnections = maxConnections
        self.busySlots = busySlots
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.minimumAnswerBytesPerSecond = max(1, minimumAnswerBytesPerSecond)
        timer = DispatchSource.makeTimerSource(queue: .global())
        if seconds > 0 {
            // A second's slack on a deadline of seconds is of no consequence.
            timer.schedule(deadline: .now() + 1, repeating: 1, leeway: .milliseconds(200))
            timer.setEventHandler { [weak self] in self?.closeOverdue() }
        }
        timer.activate()
    }

    func stop() { timer.cancel() }

    /// A new connection: if that makes more than `maxConnections` served,
    /// the one waiting longest for its request is closed; if none is
    /// waiting (every handler runs), the newcomer is answered 503, or
    /// closed when `busySlots` are answering already.
    func opened(_ connection: OpaquePointer, socket: Int32, client: String) {
        guard socket >= 0 else { return }
        let logged = connections.withLock { connections -> String? in
            let newcomer = key(connection)
            connections[newcomer] = Connection(socket: socket, client: client, deadline: deadline(after: seconds))
            let open = connections.values.filter { !$0.isClosing }
            guard open.count(where: { !$0.isBusy }) > maxConnections else { return nil }
            let longestWaiting = connections
                .filter { $0.key != newcomer && !$0.value.isBusy && $0.value.isAwaitingRequest && $0.value.deadline != nil }
                .min { $0.value.deadline! < $1.value.deadline! }
            if let (key, waiting) = longestWaiting {
                close(key, in: &connections)
                return "closed the connection from \(waiting.client), which had waited longest for its request, to serve one from \(client): all \(maxConnections) connections were taken"
            }
            if open.count(where: \.isBusy) < busySlots {
                connections[newcomer]?.isBusy = true
                return "answering 503 to \(client): all \(maxConnections) connections are busy with requests"
            }
            close(newcomer, in: &connections)
            return "refused a connection from \(client): all \(maxConnections) connections are busy with requests, and \(busySlots) more are being told so"
        }
        if let logged { logLine(logged) }
    }

    /// Whether a connection from `client` may open: false, and logged
    /// naming it, when it holds `maxConnectionsPerAddress` already. Here
    /// rather than libmicrohttpd's per-address limit, whose refusal is
    /// logged without the address. Its accept policy asks this before it
    /// takes the next connection, and after it told `opened` of the one
    /// before, on the one thread that accepts: a burst cannot slip past.
    func admits(_ client: String) -> Bool {
        guard maxConnectionsPerAddress > 0 else { return true }
        let held = connections.withLock { $0.values.count { $0.client == client } }
        guard held >= maxConnectionsPerAddress else { return true }
        // The same words for every refusal of one address, so that a flood of them is counted (`OperatorLog`).
        logLine("refused a connection from \(client) unanswered: it holds \(maxConnectionsPerAddress) connection\(maxConnectionsPerAddress == 1 ? "" : "s"), as many as one address may")
        return false
    }

    /// Whether the connection's request is to be answered 503: it came when the server was full.
    func isBusy(_ connection: OpaquePointer) -> Bool {
        connections.withLock { $0[key(connection)]?.isBusy ?? false }
    }

    /// The request is complete; its handler may wait as long as it needs.
    func requestReceived(_ connection: OpaquePointer) {
        connections.withLock { connections in
            guard connections[key(connection)]?.isClosing == false else { return }
            connections[key(connection)]?.stage = .handling
            connections[key(connection)]?.deadline = nil
        }
    }

    /// An answer of `bytes` bytes is on its way: the client has `seconds`,
    /// plus a second per `minimumAnswerBytesPerSecond` of it, to take it.
    func answerQueued(_ connection: OpaquePointer, bytes: Int) {
        connections.withLock { connections in
            guard connections[key(connection)]?.isClosing == false else { return }
            connections[key(connection)]?.stage = .sendingAnswer(bytes: bytes)
            connections[key(connection)]?.deadline = deadline(after: secondsToTake(answerOf: bytes))
        }
    }

    /// The answer went out (or the request ended otherwise): the next
    /// request on this connection has `seconds` from now.
    func answered(_ connection: OpaquePointer) {
        connections.withLock { connections in
            guard connections[key(connection)]?.isClosing == false else { return }
            connections[key(connection)]?.stage = .awaitingRequest
            connections[key(connection)]?.deadline = deadline(after: seconds)
        }
    }

    func closed(_ connection: OpaquePointer) {
        _ = connections.withLock { $0.removeValue(forKey: key(connection)) }
    }

    private func closeOverdue() {
        let now = ContinuousClock.now
        let closed = connections.withLock { connections in
            let overdue = connections.filter { $0.value.deadline.map { $0 <= now } ?? false }
            for key in overdue.keys { close(key, in: &connections) }
            return overdue.values
        }
        for connection in closed {
            switch connection.stage {
            case .sendingAnswer(let bytes):
                logLine("closed the connection from \(connection.client): it did not take its answer of \(bytes) bytes within \(secondsToTake(answerOf: bytes)) s")
            case .awaitingRequest, .handling:
                logLine("closed the connection from \(connection.client): its request was not complete within \(seconds) s")
            }
        }
    }

    /// How long a client has to take an answer of `bytes` bytes.
    private func secondsToTake(answerOf bytes: Int) -> Int {
        seconds + bytes / minimumAnswerBytesPerSecond
    }

    /// Nil when there are no deadlines.
    private func deadline(after limit: Int) -> ContinuousClock.Instant? {
        seconds > 0 ? .now + .seconds(limit) : nil
    }

    /// Shuts the connection's socket; called with the lock held, so that
    /// MHD has not closed it (`closed` takes the lock first).
    private func close(_ key: UInt, in connections: inout [UInt: Connection]) {
        guard let socket = connections[key]?.socket else { return }
        shutdown(socket, Int32(SHUT_RDWR))
        connections[key]?.deadline = nil
        connections[key]?.isClosing = true
    }

    private func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection))) }
}
