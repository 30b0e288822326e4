import Foundation
import Synchronization

/// Sync with a peer through a command that speaks `quire serve --stdio` on
/// its standard input and output, such as
/// `ssh host quire --store notes.quire serve --stdio`. The command runs
/// through `/bin/sh -c` once, for the whole session; its standard error
/// passes through to ours. A command that goes silent for `timeout`
/// seconds while an answer is due (or takes no input for that long), or
/// that trickles a frame slower than `StdioFraming` allows, fails the
/// exchange and is stopped.
///
///     let transport = try StdioSyncTransport(command: "quire --store other.quire serve --stdio")
///     defer { transport.close() }
public final class StdioSyncTransport: SyncTransport {
    public let command: String
    /// Seconds the command may go without taking or sending a byte while a
    /// request is written or its answer read, beyond a long-poll wait; a
    /// frame may take that long and a second per
    /// `StdioFraming.minimumBytesPerSecond` bytes.
    public let timeout: TimeInterval
    private let process: Mutex<Process?>
    private let toPeer: FileHandle
    private let fromPeer: FileHandle
    /// Written to by `close()`, to end an exchange's wait at once.
    private let interrupt: Pipe
    private let isClosed = Atomic(false)
    public var otherSide: SyncOtherSide { .peer }

    public init(command: String, timeout: TimeInterval = 30) throws {
        // A peer that dies would otherwise kill us with SIGPIPE at the next
        // write; ignored, the write fails with EPIPE and is reported.
        signal(SIGPIPE, SIG_IGN)
        self.command = command
        self.timeout = timeout
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        toPeer = input.fileHandleForWriting
        fromPeer = output.fileHandleForReading
        interrupt = Pipe()
        self.process = Mutex(process)
    }

    public func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
        // One request at a time: the answers come back in order on one stream.
        let outcome: Result<[UInt8]?, any Error> = process.withLock { process in
            guard !isClosed.load(ordering: .sequentiallyConsistent) else { return .failure(StdioFraming.StreamError.interrupted) }
            guard let running = process else { return .success(nil) }
            let interrupt = interrupt.fileHandleForReading.fileDescriptor
            do {
                do {
                    try StdioFraming.write(request, to: toPeer, timeout: timeout, interrupt: interrupt)
                } catch StdioFraming.StreamError.system(_, EPIPE) {
                    // The command stopped reading (it ended, say): what it
                    // wrote before, if anything, is still to be read and tells why.
                }
                return .success(try StdioFraming.read(from: fromPeer, timeout: timeout, firstByteWithin: timeout + longPollSeconds,
                                                      interrupt: interrupt))
            } catch {
                if error is StdioFraming.StreamError {
                    // A silent command is stopped, and not waited for: it may ignore SIGTERM.
                    Self.stop(running)
                    process = nil
                }
                return .failure(error)
            }
        }
        switch outcome {
        case .success(let answer?): return answer
        case .success(nil): throw .unreachable("the command \"\(command)\" ended without answering", otherSide: .peer)
        case .failure(StdioFraming.StreamError.interrupted):
            throw .unreachable("the transport to the command \"\(command)\" was closed during the sync", otherSide: .peer)
        // Bytes came, but not in frames: a shell's greeting, a program that is not `quire serve --stdio`.
        case .failure(let failure as SyncFailure):
            throw .protocolViolation("the command \"\(command)\" answered with something that is not a sync message (\(failure.message))", otherSide: .peer)
        case .failure(let error): throw .unreachable("the command \"\(command)\" failed: \(error)", otherSide: .peer)
        }
    }

    /// Sends SIGTERM to `process` and to every process it started, and
    /// theirs, as Linux lists them now: sh forks the command, which would
    /// otherwise live on holding our standard error.
    private static func stop(_ process: Process) {
        var tree = [process.processIdentifier], next = 0
        while next < tree.count {
            let pid = tree[next]
            next += 1
            guard let children = try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8) else { continue }
            tree += children.split(separator: " ").compactMap { pid_t($0) }
        }
        for pid in tree { kill(pid, SIGTERM) }
    }

    /// Ends an exchange in progress at once (it fails as unreachable,
    /// saying the transport was closed, and its command is stopped), then
    /// closes the command's input and output, so that it ends, and waits
    /// for it, `timeout` seconds at most: a command still running then is
    /// stopped with what it started, and not waited for, as it may ignore
    /// SIGTERM. Its output is closed too: a command that ignores its input
    /// and keeps writing (its answer refused as too large) would otherwise
    /// fill the pipe and block. Later exchanges fail the same way.
    public func close() {
        guard !isClosed.exchange(true, ordering: .sequentiallyConsistent) else { return }
        try? interrupt.fileHandleForWriting.write(contentsOf: [1])
        process.withLock { process in
            try? toPeer.close()
            try? fromPeer.close()
            guard let running = process else { return }
            process = nil
            for _ in 0..<Int(timeout * 100) where running.isRunning { usleep(10_000) }
            if running.isRunning { Self.stop(running) }
        }
    }
}
