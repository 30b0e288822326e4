import Dispatch
import Foundation
import Synchronization

/// Closes connections whose client takes longer than `seconds` to send a
/// whole request (headers and body), counted from when the connection
/// opened or its previous answer went out; and, when more than
/// `maxConnections` are open, the one that has waited longest for its
/// request, to make room for the newcomer.
///
/// libmicrohttpd's own timeout counts only idle time, so a client sending
/// a header byte every few seconds would hold its connection (and its
/// thread) for ever. A handler's wait (a long-poll) does not count, nor
/// does sending the answer: that is the handler's business and the idle
/// timeout's. The deadline alone frees a connection only after `seconds`,
/// and a client that opens a new one at once (from a few addresses, past
/// the per-address limit) would still take every connection; making room
/// lets the others in all the same.
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
        /// Nil while the request's handler runs, or once it is being closed.
        var deadline: ContinuousClock.Instant?
        /// Shut already; MHD will tell `closed` shortly.
        var isClosing = false
    }

    let seconds: Int
    let maxConnections: Int
    /// Keyed by MHD's connection pointer, which stays the same while the connection is open.
    private let connections = Mutex<[UInt: Connection]>([:])
    private let timer: DispatchSourceTimer

    /// Starts the timer; `stop()` ends it.
    init(seconds: Int, maxConnections: Int) {
        self.seconds = seconds
        self.maxConnections = maxConnections
        timer = DispatchSource.makeTimerSource(queue: .global())
        // A second's slack on a deadline of seconds is of no consequence.
        timer.schedule(deadline: .now() + 1, repeating: 1, leeway: .milliseconds(200))
        timer.setEventHandler { [weak self] in self?.closeOverdue() }
        timer.activate()
    }

    func stop() { timer.cancel() }

    /// A new connection: if that makes more than `maxConnections`, the one
    /// waiting longest for its request is closed, or, if none is waiting
    /// (every handler runs), the new one is.
    func opened(_ connection: OpaquePointer, socket: Int32) {
        guard socket >= 0 else { return }
        let madeRoom = connections.withLock { connections in
            let newcomer = key(connection)
            connections[newcomer] = Connection(socket: socket, deadline: .now + .seconds(seconds))
            guard connections.values.count(where: { !$0.isClosing }) > maxConnections else { return true }
            let longestWaiting = connections.filter { $0.value.deadline != nil && $0.key != newcomer }
                .min { $0.value.deadline! < $1.value.deadline! }?.key
            close(longestWaiting ?? newcomer, in: &connections)
            return longestWaiting != nil
        }
        if !madeRoom { logLine("refused a connection: all \(maxConnections) are busy with requests") }
    }

    /// The request is complete; its handler may wait as long as it needs.
    func requestReceived(_ connection: OpaquePointer) {
        connections.withLock { $0[key(connection)]?.deadline = nil }
    }

    /// The answer went out (or the request ended otherwise): the next
    /// request on this connection has `seconds` from now.
    func answered(_ connection: OpaquePointer) {
        connections.withLock { connections in
            guard connections[key(connection)]?.isClosing == false else { return }
            connections[key(connection)]?.deadline = .now + .seconds(seconds)
        }
    }

    func closed(_ connection: OpaquePointer) {
        _ = connections.withLock { $0.removeValue(forKey: key(connection)) }
    }

    private func closeOverdue() {
        let now = ContinuousClock.now
        let count = connections.withLock { connections in
            let overdue = connections.filter { $0.value.deadline.map { $0 <= now } ?? false }
            for key in overdue.keys { close(key, in: &connections) }
            return overdue.count
        }
        if count > 0 {
            logLine("closed \(count) connection(s) whose request was not complete within \(seconds) s")
        }
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
