import Foundation
import Quire

/// Sync messages over a pair of byte streams (stdin and stdout of
/// `quire serve --stdio`): each message is preceded by its length as a
/// 4-byte little-endian number. Requests are answered one at a time, in
/// order; the end of the input ends the session.
public enum StdioFraming {
    /// The longest frame accepted, in bytes.
    public static let maxFrameBytes = 64 << 20
    /// The slowest a frame may go through: `t` seconds after its first
    /// byte, at least `(t - timeout) * minimumBytesPerSecond` of its bytes
    /// must be through, so that a peer trickling a byte now and then cannot
    /// hold the other side for ever (16 KiB/s, below any link worth syncing over).
    public static let minimumBytesPerSecond = 16 << 10

    /// Writes `message` as one frame. With `timeout`, throws
    /// `StreamError.silent` when the other side takes no byte for that long,
    /// `.tooSlow` when it takes them slower than `minimumBytesPerSecond`
    /// allows. `interrupt` is a descriptor that turns
    /// readable when the wait should stop (`.interrupted`).
    public static func write(_ message: [UInt8], to handle: FileHandle, timeout: TimeInterval? = nil, interrupt: Int32? = nil) throws {
        var frame = ByteWriter()
        frame.writeUInt32(UInt32(message.count))
        frame.writeBytes(message)
        var pace = Pace(fd: handle.fileDescriptor, timeout: timeout, interrupt: interrupt)
        pace.begin(frameBytes: frame.bytes.count)
        try frame.bytes.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                var length = bytes.count - offset
                if timeout != nil || interrupt != nil {
                    try pace.wait(for: Int16(POLLOUT))
                    // A pipe said writable takes PIPE_BUF bytes without blocking, not always more.
                    length = min(length, Int(PIPE_BUF))
                }
                let written = Glibc.write(pace.fd, bytes.baseAddress! + offset, length)
                if written < 0 {
                    if errno == EINTR { continue }
                    // A descriptor another process made non-blocking: wait as a blocking one would.
                    if errno == EAGAIN { try pace.wait(for: Int16(POLLOUT)); continue }
                    throw StreamError.system("write", errno)
                }
                offset += written
                pace.through = offset
            }
        }
    }

    /// The next frame, or nil at the end of the input. `firstByteWithin`
    /// bounds the wait for its first byte (nil: for ever); from there on,
    /// with `timeout`, throws `StreamError.silent` when no byte comes for
    /// that long and `.tooSlow` when they come slower than
    /// `minimumBytesPerSecond` allows.
    /// A frame over `maxFrameBytes` is refused with a 413 `SyncFailure`;
    /// with `dropOversized`, only once its bytes have been read and
    /// dropped, so that the next frame can be read.
    public static func read(from handle: FileHandle, timeout: TimeInterval? = nil, firstByteWithin: TimeInterval? = nil,
                            interrupt: Int32? = nil, dropOversized: Bool = false) throws -> [UInt8]? {
        var pace = Pace(fd: handle.fileDescriptor, timeout: timeout, interrupt: interrupt)
        pace.firstByteWithin = firstByteWithin
        let header = try readUpTo(4, &pace)
        if header.isEmpty { return nil }
        // An input that ends inside the length is as cut short as one that ends inside the message.
        guard header.count == 4 else { throw SyncFailure(status: 400, "the input ended inside a frame's length") }
        var reader = ByteReader(header)
        let length = Int(try reader.readUInt32("the frame length"))
        pace.begin(frameBytes: 4 + length)
        guard length <= maxFrameBytes else {
            if dropOversized { _ = try readUpTo(length, &pace, keeping: false) }
            throw SyncFailure(status: 413, "a frame of \(length) bytes, above the limit of \(maxFrameBytes) bytes (64 MiB)")
        }
        let message = try readUpTo(length, &pace)
        guard message.count == length else { throw SyncFailure(status: 400, "the input ended inside a frame") }
        return message
    }

    /// Why a stream failed underneath the frames.
    public enum StreamError: Error, Equatable, DescribedError {
        /// Nothing could be read or written for that many seconds.
        case silent(seconds: TimeInterval)
        /// Only `through` bytes of a frame of `of` went through in that
        /// many seconds: slower than `minimumBytesPerSecond` past the timeout.
        case tooSlow(through: Int, of: Int, seconds: TimeInterval)
        /// The wait was interrupted (the transport was closed).
        case interrupted
        /// A system call failed with that errno.
        case system(String, Int32)

        public var description: String {
            switch self {
            case .silent(let seconds): "nothing came through for \(seconds.formatted()) s"
            case .tooSlow(let through, let bytes, let seconds):
                "only \(through) bytes of a frame of \(bytes) went through in \(seconds.formatted(.number.precision(.fractionLength(0...1)))) s, "
                    + "slower than the \(minimumBytesPerSecond) bytes a second a frame must keep up past the timeout"
            case .interrupted: "the transport was closed"
            case .system(let call, let code): "\(call) failed: \(String(cString: strerror(code)))"
            }
        }
    }

    /// How long a frame's bytes may be waited for: each (the timeout), the
    /// frame's first (`firstByteWithin`), and all those through so far.
    private struct Pace {
        let fd: Int32
        let timeout: TimeInterval?
        let interrupt: Int32?
        /// Until a frame has begun: how long its first byte may take; nil: for ever.
        var firstByteWithin: TimeInterval?
        /// Set once the frame has begun (its first byte came, or its writing started).
        var start: ContinuousClock.Instant?
        /// The frame's length, as far as known, and its bytes through so far.
        var frameBytes = 0, through = 0

        init(fd: Int32, timeout: TimeInterval?, interrupt: Int32?) {
            self.fd = fd
            self.timeout = timeout
            self.interrupt = interrupt
        }

        /// The frame is under way, `frameBytes` long as far as known.
        mutating func begin(frameBytes: Int) {
            if start == nil { start = .now }
            self.frameBytes = frameBytes
        }

        /// Returns once `fd` is ready for `events` (or closed at the other
        /// end, which the next read or write reports).
        func wait(for events: Int16) throws {
            var entries = [pollfd(fd: fd, events: events, revents: 0)]
            if let interrupt { entries.append(pollfd(fd: interrupt, events: Int16(POLLIN), revents: 0)) }
            while true {
                // The silence allowed, or less when the frame is behind its pace:
                // past the timeout, `minimumBytesPerSecond` since it began.
                var limit = start == nil ? firstByteWithin : timeout
                var elapsed = 0.0, behind = false
                if let start, let timeout {
                    let duration = start.duration(to: .now)
                    elapsed = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
                    let left = timeout + Double(through) / Double(minimumBytesPerSecond) - elapsed
                    if left < timeout { (limit, behind) = (max(0, left), true) }
                }
                let milliseconds = limit.map { Int32(clamping: Int(($0 * 1000).rounded(.up))) } ?? -1
                let ready = poll(&entries, nfds_t(entries.count), milliseconds)
                if ready < 0 {
                    if errno == EINTR { continue }
                    throw StreamError.system("poll", errno)
                }
                if entries.count > 1 && entries[1].revents != 0 { throw StreamError.interrupted }
                if ready > 0 { return }
                if behind { throw StreamError.tooSlow(through: through, of: frameBytes, seconds: elapsed + (limit ?? 0)) }
                if let limit { throw StreamError.silent(seconds: limit) }
            }
        }
    }

    /// `count` bytes (or, not `keeping`, read and dropped), or fewer if the
    /// input ends first. Read in chunks, so that a length a peer claims
    /// reserves no more than it sends. The first byte begins the frame.
    private static func readUpTo(_ count: Int, _ pace: inout Pace, keeping: Bool = true) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: min(count, 1 << 16))
        var taken = 0
        while taken < count {
            try pace.wait(for: Int16(POLLIN))
            let wanted = min(count - taken, chunk.count)
            let got = chunk.withUnsafeMutableBytes { Glibc.read(pace.fd, $0.baseAddress!, wanted) }
            if got < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw StreamError.system("read", errno)
            }
            if got == 0 { break }
            if pace.start == nil { pace.begin(frameBytes: count) }
            taken += got
            pace.through += got
            if keeping { bytes += chunk[..<got] }
        }
        return keeping ? bytes : []
    }

    /// Why a session served by `serve` ended.
    public enum SessionEnd: Equatable, Sendable {
        /// The client closed its end of the input.
        case inputEnded
        /// No request began for that many seconds (`idleTimeout`).
        case idle(seconds: TimeInterval)
    }

    /// Serves `service` on `input` and `output` until the input ends, or
    /// until no request begins for `idleTimeout` seconds (nil: wait for
    /// ever): a client that went silent without closing its end would
    /// otherwise hold the process, and its store, for ever. Between requests
    /// the client works (applies a page), so that limit is far above
    /// `timeout`: once begun, a request must come, and its answer go, within
    /// `timeout` as `read` and `write` say. A request over `maxFrameBytes` is
    /// read and dropped and answered with a 413 failure, as the HTTP server does.
    /// The versions of change bundles a client states it reads (at the start
    /// of its session: `SyncMessage.bundleVersions`) hold for its requests
    /// after; a client that states none is answered in
    /// `ChangeEncoding.olderReadersVersion`, as one before them.
    @discardableResult
    public static func serve(_ service: some SyncService, access: Access = .unrestricted,
                             input: FileHandle = .standardInput, output: FileHandle = .standardOutput,
                             timeout: TimeInterval? = 30, idleTimeout: TimeInterval? = nil) async throws -> SessionEnd {
        // A client that closed its end would otherwise kill the process with
        // SIGPIPE at the next answer; the write fails with EPIPE instead, said as such.
        signal(SIGPIPE, SIG_IGN)
        var readsBundleVersions = Set<UInt64>()
        while true {
            if let idleTimeout, try !inputArrives(on: input, within: idleTimeout) { return .idle(seconds: idleTimeout) }
            let answer: [UInt8]
            do {
                guard let request = try read(from: input, timeout: timeout, dropOversized: true) else { return .inputEnded }
                answer = await service.respond(toMessage: request, access: access, readsBundleVersions: &readsBundleVersions)
            } catch let failure as SyncFailure where failure.status == 413 {
                // Only an oversized frame is refused with 413 here, once its bytes are dropped: the next frame is in step.
                answer = SyncMessage.failure(failure).encoded()
            }
            try write(answer, to: output, timeout: timeout)
        }
    }

    /// Whether `handle` has input, or its end, within `seconds`.
    private static func inputArrives(on handle: FileHandle, within seconds: TimeInterval) throws -> Bool {
        var pace = Pace(fd: handle.fileDescriptor, timeout: nil, interrupt: nil)
        pace.firstByteWithin = seconds
        do { try pace.wait(for: Int16(POLLIN)) } catch StreamError.silent { return false }
        return true
    }
}
