import Foundation
import Quire

/// Sync messages over a pair of byte streams (stdin and stdout of
/// `quire serve --stdio`): each message is preceded by its length as a
/// 4-byte little-endian number. Requests are answered one at a time, in
/// order; the end of the input ends the session.
public enum StdioFraming {
    /// The longest frame accepted, in bytes.
    public static let maxFrameBytes = 64 << 20

    /// Writes `message` as one frame. With `idleTimeout`, throws
    /// `StreamError.silent` when the other side takes no byte for that long.
    public static func write(_ message: [UInt8], to handle: FileHandle, idleTimeout: TimeInterval? = nil) throws {
        var frame = ByteWriter()
        frame.writeUInt32(UInt32(message.count))
        frame.writeBytes(message)
        let fd = handle.fileDescriptor
        try frame.bytes.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                var length = bytes.count - offset
                if let idleTimeout {
                    try waitUntilReady(fd, for: Int16(POLLOUT), idleTimeout)
                    // A pipe said writable takes PIPE_BUF bytes without blocking, not always more.
                    length = min(length, Int(PIPE_BUF))
                }
                let written = Glibc.write(fd, bytes.baseAddress! + offset, length)
                if written < 0 {
                    if errno == EINTR { continue }
                    // A descriptor another process made non-blocking: wait as a blocking one would.
                    if errno == EAGAIN { try waitUntilReady(fd, for: Int16(POLLOUT), idleTimeout); continue }
                    throw StreamError.system("write", errno)
                }
                offset += written
            }
        }
    }

    /// The next frame, or nil at the end of the input. With `idleTimeout`,
    /// throws `StreamError.silent` when no byte comes for that long.
    public static func read(from handle: FileHandle, idleTimeout: TimeInterval? = nil) throws -> [UInt8]? {
        let header = try readUpTo(4, from: handle, idleTimeout)
        if header.isEmpty { return nil }
        // An input that ends inside the length is as cut short as one that ends inside the message.
        guard header.count == 4 else { throw SyncFailure(status: 400, "the input ended inside a frame's length") }
        var reader = ByteReader(header)
        let length = Int(try reader.readUInt32("the frame length"))
        guard length <= maxFrameBytes else {
            throw SyncFailure(status: 413, "a frame of \(length) bytes, above the limit of \(maxFrameBytes)")
        }
        let message = try readUpTo(length, from: handle, idleTimeout)
        guard message.count == length else { throw SyncFailure(status: 400, "the input ended inside a frame") }
        return message
    }

    /// Why a stream failed underneath the frames.
    public enum StreamError: Error, Equatable, DescribedError {
        /// Nothing could be read or written for that many seconds.
        case silent(seconds: TimeInterval)
        /// A system call failed with that errno.
        case system(String, Int32)

        public var description: String {
            switch self {
            case .silent(let seconds): "nothing came through for \(seconds.formatted()) s"
            case .system(let call, let code): "\(call) failed: \(String(cString: strerror(code)))"
            }
        }
    }

    /// `count` bytes, or fewer if the input ends first. Read in chunks, so
    /// that a length a peer claims reserves no more than it sends.
    private static func readUpTo(_ count: Int, from handle: FileHandle, _ idleTimeout: TimeInterval?) throws -> [UInt8] {
        let fd = handle.fileDescriptor
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: min(count, 1 << 16))
        while bytes.count < count {
            if let idleTimeout { try waitUntilReady(fd, for: Int16(POLLIN), idleTimeout) }
            let wanted = min(count - bytes.count, chunk.count)
            let got = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, wanted) }
            if got < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN { try waitUntilReady(fd, for: Int16(POLLIN), idleTimeout); continue }
                throw StreamError.system("read", errno)
            }
            if got == 0 { break }
            bytes += chunk[..<got]
        }
        return bytes
    }

    /// Returns once `fd` is ready for `events` (or closed at the other end,
    /// which the next read or write reports); waits for ever without a timeout.
    private static func waitUntilReady(_ fd: Int32, for events: Int16, _ timeout: TimeInterval?) throws {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        let milliseconds = timeout.map { Int32(clamping: Int(($0 * 1000).rounded(.up))) } ?? -1
        while true {
            let ready = poll(&entry, 1, milliseconds)
            if ready > 0 { return }
            if ready == 0, let timeout { throw StreamError.silent(seconds: timeout) }
            if ready < 0 && errno != EINTR { throw StreamError.system("poll", errno) }
        }
    }

    /// Serves `service` on `input` and `output` until the input ends.
    public static func serve(_ service: some SyncService, access: Access = .unrestricted,
                             input: FileHandle = .standardInput, output: FileHandle = .standardOutput) async throws {
        while let request = try read(from: input) {
            try write(await service.respond(toMessage: request, access: access), to: output)
        }
    }
}
