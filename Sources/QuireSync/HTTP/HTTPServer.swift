import CMicroHTTPD
import Dispatch
import Foundation
import QuireStore
import Synchronization

/// An HTTP/1.1 server over GNU libmicrohttpd (MHD), which does all the HTTP
/// parsing. Each request is handed, body complete, to an async `handler`.
///
/// ```swift
/// let server = HTTPServer(port: 0, limits: .init()) { request in
///     .text(200, "hello \(request.path)")
/// }
/// try server.start()
/// print("listening on 127.0.0.1:\(server.port)")
/// // ...
/// server.stop()
/// ```
///
/// Threading: MHD runs one thread per connection (plus one that accepts).
/// A handler may wait for seconds (sync long-polls wait up to ~30 s): it
/// holds only its own connection's thread, so every other connection is
/// still served. A thread pool would not do: each pool thread multiplexes
/// many connections, and one waiting handler would stall all of them.
/// `limits.maxConnections` bounds the number of threads serving requests;
/// `busyConnections` more at most tell newcomers to a full server 503, and
/// one more, briefly, is a newcomer making room or being refused.
///
/// Lifetime: a started server keeps itself alive until `stop()` is called,
/// because MHD's threads hold a pointer to it.
public final class HTTPServer: Sendable {
    /// Bounds on what clients may make the server do.
    public struct Limits: Sendable {
        /// Largest request body accepted; a larger one gets 413.
        public var maxBodyBytes: Int
        /// Connections served at once (each one is a thread). When all are
        /// taken, a new one makes the one that has waited longest for its
        /// request be closed (none whose handler runs, nor any with no
        /// request deadline, `requestDeadlineSeconds` 0); if none can be,
        /// the new one's request is answered 503 with `Retry-After`, or,
        /// past `HTTPServer.busyConnections` such answers at once, the new
        /// one is closed unanswered.
        public var maxConnections: Int
        /// Connections one client address may hold at once; 0 for no limit.
        /// It bounds one client's share of the connections. Behind a reverse
        /// proxy every client has the proxy's address: set 0 there, and let
        /// the proxy limit clients.
        public var maxConnectionsPerAddress: Int
        /// A connection idle this long is closed. Keep it above the longest
        /// time a handler may wait (long-polls), or MHD may drop the
        /// connection before the answer is sent.
        public var connectionTimeoutSeconds: Int
        /// A client must send each whole request (headers and body) within
        /// this many seconds of opening the connection or of its previous
        /// answer, and take each answer within this many seconds plus one
        /// per `minimumAnswerBytesPerSecond` of it, or the connection is
        /// closed; 0 for no limit. The idle timeout alone lets a client
        /// trickling a byte now and then, or reading its answer so, hold a
        /// connection for ever. A handler's wait does not count.
        public var requestDeadlineSeconds: Int
        /// The slowest rate at which a large answer must be taken, past the
        /// `requestDeadlineSeconds` every answer has: 16 KiB/s (128 kbit/s)
        /// gives a 16 MiB answer 17 minutes more.
        public var minimumAnswerBytesPerSecond: Int

        public init(
            maxBodyBytes: Int = 16 << 20, maxConnections: Int = 64, maxConnectionsPerAddress: Int = 16,
            connectionTimeoutSeconds: Int = 60, requestDeadlineSeconds: Int = 60, minimumAnswerBytesPerSecond: Int = 16 << 10
        ) {
            self.maxBodyBytes = maxBodyBytes
            self.maxConnections = maxConnections
            self.maxConnectionsPerAddress = maxConnectionsPerAddress
            self.connectionTimeoutSeconds = connectionTimeoutSeconds
            self.requestDeadlineSeconds = requestDeadlineSeconds
            self.minimumAnswerBytesPerSecond = minimumAnswerBytesPerSecond
        }
    }

    /// Answers one request. A thrown error becomes a 500 (see Specs/sync.md).
    /// Long waits should `await` (e.g. `Task.sleep`), not block the thread:
    /// handlers run on Swift's shared cooperative pool. On `stop()` running
    /// handlers are cancelled.
    public typealias Handler = @Sendable (HTTPRequest) async throws -> HTTPResponse

    /// How far past `maxBodyBytes` a declared body may go and still be read
    /// (and dropped) so that the client gets its 413 cleanly.
    static let drainableExcess = 64 << 20

    /// Connections past `limits.maxConnections` whose request is answered
    /// 503 (`Retry-After: 1`) when every connection is busy, so that a
    /// client is told to try again rather than cut off. A fixed few: each
    /// is a thread, and they are held no longer than any request.
    public static let busyConnections = 4

    public let host: String
    public let limits: Limits
    private let handler: Handler
    private let requestedPort: UInt16
    private let state = Mutex(State())
    /// Held for the whole of `start()` and `stop()` so that they run one at
    /// a time. It cannot be `state`: MHD calls back into `log`, which takes
    /// `state`, while starting.
    private let lifecycle = Mutex(())

    struct State {
        var daemon: Daemon?
        /// Nil while the server is stopped.
        var deadlines: RequestDeadlines?
        var boundPort: UInt16 = 0
        var stopping = false
        /// Handlers running now, so that `stop()` can cancel them.
        var running: [UInt64: Task<Void, Never>] = [:]
        var nextHandlerID: UInt64 = 0
        /// What MHD logged while `start()` runs: the last line explains a
        /// failure, and all are shown once it succeeds.
        var startupLog: [String]?
    }

    /// An MHD daemon handle. It is `@unchecked Sendable` because MHD allows
    /// the calls made on it (reading the bound port, stopping) from any
    /// thread; Quire never touches it concurrently anyway (the state lock).
    struct Daemon: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// - Parameters:
    ///   - host: a numeric IPv4 or IPv6 address to listen on; loopback by default.
    ///   - port: the TCP port; 0 picks a free one (read it back from `port`).
    public init(host: String = "127.0.0.1", port: UInt16, limits: Limits = Limits(), handler: @escaping Handler) {
        self.host = host
        self.requestedPort = port
        self.limits = limits
        self.handler = handler
    }

    /// The port the server listens on; 0 while it is not running.
    public var port: UInt16 { state.withLock { $0.boundPort } }

    /// Whether `host` is an address the server can listen on (numeric
    /// IPv4 or IPv6), for a caller to check before it sets anything up.
    public static func isListenable(_ host: String) -> Bool {
        (try? socketAddress(host: host, port: 0)) != nil
    }

    /// Binds `host:port` and starts serving.
    /// - Throws: `HTTPServerError` if the address is not numeric, the port is
    ///   taken, or the server already runs.
    public func start() throws {
        try lifecycle.withLock { _ in try startDaemon() }
    }

    private func startDaemon() throws {
        try state.withLock { state in
            guard state.daemon == nil else { throw HTTPServerError.alreadyRunning }
            state.stopping = false
            state.startupLog = []
            // Before the daemon: MHD tells of connections as soon as it runs.
            state.deadlines = RequestDeadlines(
                seconds: limits.requestDeadlineSeconds, maxConnections: limits.maxConnections,
                busySlots: Self.busyConnections, maxConnectionsPerAddress: limits.maxConnectionsPerAddress,
                minimumAnswerBytesPerSecond: limits.minimumAnswerBytesPerSecond)
        }
        var (address, isIPv6) = try socketAddress(host: host, port: requestedPort)
        var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_THREAD_PER_CONNECTION.rawValue
            | MHD_USE_AUTO.rawValue | MHD_USE_ERROR_LOG.rawValue
        if isIPv6 { flags |= MHD_USE_IPv6.rawValue }

        // Balanced by `release()` in stop(): MHD's threads use `self`.
        let unmanagedSelf = Unmanaged.passRetained(self)
        let context = OpaquePointer(unmanagedSelf.toOpaque())
        let pointer = withUnsafePointer(to: &address) { address in
            let options: [CVarArg] = [
                // The logger first, so that it receives the errors about the other options too.
                MHD_OPTION.EXTERNAL_LOGGER.rawValue, MHDCallbacks.logPointer, context,
                // The busy answers, and one more: a newcomer that makes room or is refused.
                MHD_OPTION.CONNECTION_LIMIT.rawValue, UInt32(clamping: limits.maxConnections + Self.busyConnections + 1),
                MHD_OPTION.CONNECTION_TIMEOUT.rawValue, UInt32(clamping: limits.connectionTimeoutSeconds),
                MHD_OPTION.NOTIFY_COMPLETED.rawValue, MHDCallbacks.completedPointer, context,
                MHD_OPTION.NOTIFY_CONNECTION.rawValue, MHDCallbacks.connectionPointer, context,
                MHD_OPTION.SOCK_ADDR.rawValue, OpaquePointer(address),
                MHD_OPTION.END.rawValue,
            ]
            return withVaList(options) { arguments in
                // The per-address limit is the accept policy's (`RequestDeadlines.admits`), so that a refusal names the client.
                MHD_start_daemon_va(flags, requestedPort, MHDCallbacks.acceptPolicy, UnsafeMutableRawPointer(context),
                                    MHDCallbacks.access, UnsafeMutableRawPointer(context), arguments)
            }
        }
        guard let pointer else {
            unmanagedSelf.release()
            let reason = state.withLock { state in
                defer { (state.startupLog, state.deadlines) = (nil, nil) }
                state.deadlines?.stop()
                return state.startupLog?.last
            }
            throw HTTPServerError.cannotListen(host: host, port: requestedPort, reason: reason ?? "libmicrohttpd could not start")
        }
        let startupLog = state.withLock { state in
            state.daemon = Daemon(pointer: pointer)
            state.boundPort = quire_mhd_bind_port(pointer)
            defer { state.startupLog = nil }
            return state.startupLog ?? []
        }
        startupLog.forEach(logLine)
    }

    /// Stops listening, cancels running handlers, closes every connection
    /// and waits for MHD's threads to end. A handler that ignores
    /// cancellation delays `stop()` until it returns. Safe to call twice.
    public func stop() {
        lifecycle.withLock { _ in
            let (daemon, running, deadlines) = state.withLock { state in
                defer { (state.daemon, state.boundPort, state.stopping, state.deadlines) = (nil, 0, true, nil) }
                return (state.daemon, Array(state.running.values), state.deadlines)
            }
            guard let daemon else { return }
            for task in running { task.cancel() }
            deadlines?.stop()
            MHD_stop_daemon(daemon.pointer)
            OperatorLog.shared.flush()
            Unmanaged.passUnretained(self).release()
        }
    }

    /// Runs the handler for a complete request and waits for its answer.
    /// Called on the connection's own MHD thread, which may block.
    ///
    /// The handler's task prefers a `ConnectionExecutor` that runs its jobs
    /// on this very thread: handlers then never wait for a thread of Swift's
    /// shared cooperative pool (two on this machine), which anything else in
    /// the process (tests running in parallel, say) may keep busy.
    func respond(to request: HTTPRequest) -> HTTPResponse {
        let executor = ConnectionExecutor()
        let task = Task(executorPreference: executor) { [handler] in
            let response: HTTPResponse
            do {
                response = try await handler(request)
            } catch is CancellationError {
                // Only stop() cancels handlers.
                response = .text(503, "server is stopping")
            } catch {
                // The client gets no internals; the operator gets the error.
                logLine("handler for \(request.method) \(request.path) threw: \(error)")
                response = .text(500, "internal server error")
            }
            executor.finish(response)
        }
        let id: UInt64? = state.withLock { state in
            if state.stopping { return nil }
            state.nextHandlerID += 1
            state.running[state.nextHandlerID] = task
            return state.nextHandlerID
        }
        if id == nil { task.cancel() }
        let response = executor.runUntilFinished()
        if let id { _ = state.withLock { $0.running.removeValue(forKey: id) } }
        return response
    }

    /// Where connections' deadlines and shares are kept; nil while stopped.
    var deadlines: RequestDeadlines? { state.withLock { $0.deadlines } }

    /// Shows what MHD logged on stderr, or keeps it while `start()` runs.
    /// Once running, a client that went away is routine and not shown.
    func log(_ message: String) {
        let starting = state.withLock { state in
            state.startupLog?.append(message)
            return state.startupLog != nil
        }
        if !starting, let line = Self.operatorLine(forLibraryMessage: message) { logLine(line) }
    }

    /// What an operator is shown of a message MHD logs while serving, or
    /// nil for a connection closed because the client went away (or was
    /// cut by `RequestDeadlines`, which logs that itself, naming the client).
    static func operatorLine(forLibraryMessage message: String) -> String? {
        let clientWentAway = [
            "Connection was closed by remote side", "Socket has been disconnected", "Connection socket is closed",
            "The connection was forcibly closed", "Failed to send data in request", "Failed to send the response",
            "Failed to send the chunked response", "Failed to send the footers",
        ]
        if clientWentAway.contains(where: message.hasPrefix) { return nil }
        // MHD checks its limit before it asks the accept policy, so this refusal cannot name the client.
        if message.hasPrefix("Server reached connection limit") {
            return "refused a connection unanswered: the server holds all the connections it can"
        }
        return message
    }
}

/// Why a server could not start.
public enum HTTPServerError: Error, DescribedError, Equatable {
    case alreadyRunning
    case invalidAddress(String)
    case cannotListen(host: String, port: UInt16, reason: String)

    public var description: String {
        switch self {
        case .alreadyRunning:
            "the HTTP server is already running"
        case .invalidAddress(let host):
            "cannot listen on \"\(host)\": give a numeric IPv4 or IPv6 address"
        case .cannotListen(let host, let port, let reason):
            "cannot listen on \(host):\(port): \(reason)"
        }
    }
}

/// Runs one handler's jobs on the MHD connection thread that waits for
/// its answer, and hands the answer over.
private final class ConnectionExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` and `response` are only touched with `condition` locked.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var response: HTTPResponse?

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    func finish(_ value: HTTPResponse) {
        condition.lock()
        response = value
        condition.signal()
        condition.unlock()
    }

    /// Runs the handler's jobs on the calling thread until it has answered.
    func runUntilFinished() -> HTTPResponse {
        while true {
            condition.lock()
            while jobs.isEmpty && response == nil { condition.wait() }
            if jobs.isEmpty, let response {
                condition.unlock()
                return response
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// `host:port` as a socket address for MHD_OPTION_SOCK_ADDR.
private func socketAddress(host: String, port: UInt16) throws -> (sockaddr_storage, isIPv6: Bool) {
    var storage = sockaddr_storage()
    var v4 = sockaddr_in()
    if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
        v4.sin_family = sa_family_t(AF_INET)
        v4.sin_port = port.bigEndian
        withUnsafeBytes(of: v4) { bytes in
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) }
        }
        return (storage, false)
    }
    var v6 = sockaddr_in6()
    if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
        v6.sin6_family = sa_family_t(AF_INET6)
        v6.sin6_port = port.bigEndian
        withUnsafeBytes(of: v6) { bytes in
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) }
        }
        return (storage, true)
    }
    throw HTTPServerError.invalidAddress(host)
}

func logLine(_ message: String) {
    OperatorLog.shared.write(message)
}
