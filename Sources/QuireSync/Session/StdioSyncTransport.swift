import Foundation
import QuireCore
import Synchronization
import TerminalSafety

/// Sync with a peer through a command that speaks `quire serve --stdio` on
/// its standard input and output, such as
/// `ssh host quire --store notes.quire serve --stdio`. The command runs
/// through `/bin/sh -c` once, for the whole session; its standard error
/// passes through to ours as it comes, each line prefixed `peer: ` and its
/// control characters shown (`PeerErrorLines`), and its last lines, with
/// its exit status, say in the error why a command ended without answering. A command that goes silent for `timeout`
/// seconds while an answer is due (or takes no input for that long), or
/// that trickles a frame slower than `StdioFraming` allows, fails the
/// exchange and is stopped. The session's first request follows a
/// statement of the change bundle versions this build reads, so that a
/// peer answers in the newest; the peer's own statement, in answer, says
/// what the client pushes in (`Specs/sync.md`, "Peer to peer").
///
///     let transport = try StdioSyncTransport(command: "quire --store other.quire serve --stdio")
///     defer { transport.close() }
public final class StdioSyncTransport: SyncTransport {
    /// The shell command line the transport runs, as given.
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
    /// Set once the session's first request went, after the statement of
    /// the change bundle versions this build reads.
    private let isStated = Atomic(false)
    /// The versions the peer stated it reads, in answer to that statement;
    /// nil until then, and for a peer before review202, which refuses it.
    private let peerReadsBundleVersions = Mutex<Set<UInt64>?>(nil)
    private let errorOutput = CommandErrorOutput()
    public var otherSide: SyncOtherSide { .peer }

    /// The first frame of a session: the versions this build reads
    /// (`SyncMessage.bundleVersions`), so that a peer answers in the newest.
    private static let statement = SyncMessage.bundleVersions(Set(ChangeEncoding.readVersions)).encoded()

    /// Starts `command` now; it runs until `close()`. Throws what
    /// `Process.run()` throws when `/bin/sh` cannot be started; a command
    /// that the shell cannot find fails the first exchange instead, with
    /// the shell's message.
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
        process.standardError = errorOutput.pipe
        try process.run()
        errorOutput.start()
        toPeer = input.fileHandleForWriting
        fromPeer = output.fileHandleForReading
        interrupt = Pipe()
        self.process = Mutex(process)
    }

    public func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
        // What the command said on the way out, for a failure: " (exit status 1): …".
        var ending = ""
        // One request at a time: the answers come back in order on one stream.
        let outcome: Result<[UInt8]?, any Error> = process.withLock { process in
            guard !isClosed.load(ordering: .sequentiallyConsistent) else { return .failure(StdioFraming.StreamError.interrupted) }
            guard let running = process else { return .success(nil) }
            let interrupt = interrupt.fileHandleForReading.fileDescriptor
            // The session's first request goes right after a statement of the
            // versions this build reads, as HTTP's header states them: the
            // peer answers it before it reads the request, so it costs no round trip.
            let stating = !isStated.exchange(true, ordering: .sequentiallyConsistent)
            do {
                do {
                    if stating { try StdioFraming.write(Self.statement, to: toPeer, timeout: timeout, interrupt: interrupt) }
                    try StdioFraming.write(request, to: toPeer, timeout: timeout, interrupt: interrupt)
                } catch StdioFraming.StreamError.system(_, EPIPE) {
                    // The command stopped reading (it ended, say): what it
                    // wrote before, if anything, is still to be read and tells why.
                }
                func readAnswer() throws -> [UInt8]? {
                    try StdioFraming.read(from: fromPeer, timeout: timeout, firstByteWithin: timeout + longPollSeconds, interrupt: interrupt)
                }
                // A peer states what it reads; one before review202 refuses the
                // kind of message it does not know (400), stores nothing and
                // goes on, answering in version 3, which this build reads.
                if stating, let stated = try readAnswer() {
                    switch try? SyncMessage.decode(stated) {
                    case .bundleVersions(let versions)?: peerReadsBundleVersions.withLock { $0 = versions }
                    case .failure?: break
                    default:
                        return .failure(SyncError.protocolViolation("the command \"\(command)\" answered the statement of the change bundle "
                            + "versions this build reads with neither its own nor a refusal", otherSide: .peer))
                    }
                }
                let answer = try readAnswer()
                if answer == nil { ending = describeEnding(of: running) }
                return .success(answer)
            } catch {
                if error is StdioFraming.StreamError {
                    // A silent command is stopped, and not waited for: it may ignore SIGTERM.
                    Self.stop(running)
                    process = nil
                }
                // It may run on (a shell's greeting) or have been stopped by us: its status would say nothing.
                if case StdioFraming.StreamError.interrupted = error {} else { ending = errorOutput.quoted(waitingUpTo: 0) }
                return .failure(error)
            }
        }
        switch outcome {
        case .success(let answer?): return answer
        case .success(nil): throw .unreachable("the command \"\(command)\" ended without answering\(ending)", otherSide: .peer)
        case .failure(StdioFraming.StreamError.interrupted):
            throw .unreachable("the transport to the command \"\(command)\" was closed during the sync", otherSide: .peer)
        case .failure(let violation as SyncError): throw violation
        // Bytes came, but not in frames: a shell's greeting, a program that is not `quire serve --stdio`.
        case .failure(let failure as SyncFailure):
            throw .protocolViolation("the command \"\(command)\" answered with something that is not a sync message (\(failure.message))\(ending)", otherSide: .peer)
        case .failure(let error): throw .unreachable("the command \"\(command)\" failed: \(error)\(ending)", otherSide: .peer)
        }
    }

    /// The versions the peer stated it reads, once it has answered the
    /// statement of this build's: the same for the whole session.
    public var readsBundleVersions: Set<UInt64>? { peerReadsBundleVersions.withLock { $0 } }

    /// How `running` ended, for an error, once its output ended: its exit
    /// status (or signal), waited for a second at most, and the last lines
    /// of its standard error, as " (exit status 1); its standard error ended with:\n  LINE".
    private func describeEnding(of running: Process) -> String {
        var status = Self.exitStatus(of: running)
        for _ in 0..<100 where status == nil {
            usleep(10_000)
            status = Self.exitStatus(of: running)
        }
        // The command may have left its standard error open (a process it started holds it): then what came so far.
        return " (\(status ?? "still running"))" + errorOutput.quoted(waitingUpTo: status == nil ? 0 : 0.5)
    }

    /// "exit status N" or "ended by signal N" once `running` (the shell) has
    /// ended, else nil.
    private static func exitStatus(of running: Process) -> String? {
        if !running.isRunning {
            return running.terminationReason == .uncaughtSignal ? "ended by signal \(running.terminationStatus)" : "exit status \(running.terminationStatus)"
        }
        // Foundation counts it running while a process it started lives on
        // (`sleep 60 &`); the kernel knows, and WNOWAIT leaves it to reap.
        var info = siginfo_t()
        guard waitid(P_PID, id_t(running.processIdentifier), &info, WEXITED | WNOHANG | WNOWAIT) == 0,
              info._sifields._sigchld.si_pid == running.processIdentifier else { return nil }
        let code = info._sifields._sigchld.si_status
        return info.si_code == CLD_EXITED ? "exit status \(code)" : "ended by signal \(code)"
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
            // Its own end, not that of what it left running (`sleep 60 &`), which Foundation waits for.
            for _ in 0..<Int(timeout * 100) where Self.exitStatus(of: running) == nil { usleep(10_000) }
            if Self.exitStatus(of: running) == nil { Self.stop(running) }
        }
        errorOutput.stop()
    }
}

/// The standard error of a transport's command: passed through to ours as
/// it comes (what ssh or the command says is the user's to see), as
/// `PeerErrorLines` shows it, its last `tailLimit` bytes kept for an error
/// to quote. A thread of its own reads it, so that a command writing much
/// there never blocks on a full pipe.
private final class CommandErrorOutput: Sendable {
    /// What an error quotes at most: a few lines of an error message.
    static let tailLimit = 4096
    /// The most lines of it an error quotes.
    static let lineLimit = 10
    let pipe = Pipe()
    private let tail = Mutex<[UInt8]>([])
    /// Signalled once the reading ends (the command's end, or `stop()`).
    private let ended = DispatchSemaphore(value: 0)
    private let isEnded = Atomic(false)
    /// Written to by `stop()`: the command may have left a process holding
    /// the pipe open, whose read would otherwise never end.
    private let stopSignal = Pipe()

    /// Reads until every writer closed the pipe, or `stop()`; to be called
    /// once the command runs with `pipe` as its standard error.
    func start() {
        // Our copy of the writing end would keep the read from ever ending.
        try? pipe.fileHandleForWriting.close()
        let source = pipe.fileHandleForReading.fileDescriptor, stop = stopSignal.fileHandleForReading.fileDescriptor
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            var shown = PeerErrorLines()
            var watched = [pollfd(fd: source, events: Int16(POLLIN), revents: 0), pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
            while true {
                watched[0].revents = 0
                watched[1].revents = 0
                if poll(&watched, 2, -1) < 0 {
                    if errno == EINTR { continue }
                    break
                }
                // What is there is read before a stop is heeded: the command's last words.
                if watched[0].revents != 0 {
                    let count = read(source, &buffer, buffer.count)
                    if count < 0 && errno == EINTR { continue }
                    guard count > 0 else { break }
                    // A read that did not fill the buffer took all there was: a line begun (a prompt) is shown.
                    Self.show(shown.text(for: buffer[..<count], showingUnfinished: count < buffer.count))
                    tail.withLock { tail in
                        tail += buffer[..<count]
                        if tail.count > Self.tailLimit { tail.removeFirst(tail.count - Self.tailLimit) }
                    }
                } else if watched[1].revents != 0 {
                    break
                }
            }
            Self.show(shown.finish())
            try? pipe.fileHandleForReading.close()
            isEnded.store(true, ordering: .sequentiallyConsistent)
            ended.signal()
        }
    }

    /// Writes `text` to our standard error, whole: a thread of its own
    /// writes it, so a short write is finished rather than cut mid-line.
    private static func show(_ text: String) {
        guard !text.isEmpty else { return }
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let count = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }  // Our standard error is gone: nothing is left to tell.
            bytes = bytes.dropFirst(count)
        }
    }

    /// Ends the reading once what is in the pipe is read.
    func stop() {
        try? stopSignal.fileHandleForWriting.write(contentsOf: [1])
    }

    /// "; its standard error ended with:" and its last whole lines
    /// (`lineLimit` at most, of what is kept), each on a line of its own,
    /// indented and its control characters shown (`UntrustedText.safe`), once
    /// the reading has ended or `seconds` have passed; "" if it wrote nothing.
    func quoted(waitingUpTo seconds: TimeInterval) -> String {
        if !isEnded.load(ordering: .sequentiallyConsistent), ended.wait(timeout: .now() + seconds) == .success {
            ended.signal()  // for a later call
        }
        var kept = tail.withLock { $0 }
        // Cut to its limit, it may begin within a line, even within a character.
        if kept.count == Self.tailLimit, let newline = kept.firstIndex(of: UInt8(ascii: "\n")) { kept.removeFirst(newline + 1) }
        // Split as bytes: a String takes "\r\n" as one character, not a line feed.
        let lines = kept.split(separator: UInt8(ascii: "\n")).map { $0.last == UInt8(ascii: "\r") ? $0.dropLast() : $0 }
            .filter { !$0.isEmpty }.suffix(Self.lineLimit)
        return lines.isEmpty ? "" : "; its standard error ended with:"
            + lines.map { "\n  " + UntrustedText.safe(String(decoding: $0, as: UTF8.self), asOneLine: true) }.joined()
    }
}

/// A peer command's standard error as it goes to ours: each line prefixed
/// `peer: `, as git prefixes a remote's with `remote: `, so that the user
/// tells it from quire's own, and shown by `UntrustedText.safe`, as the
/// peer (or a host ssh reaches) could otherwise retitle, clear or colour
/// the user's terminal, or hide text.
struct PeerErrorLines {
    static let prefix = "peer: "
    /// The most of a line held back waiting for its end.
    static let heldLimit = 4096
    /// What came of a line not shown yet.
    private var unfinished: [UInt8] = []
    /// Whether the line's start was shown already, with the prefix.
    private var midLine = false

    /// What to show for `bytes`, the next the command wrote: each line
    /// they end; and with `showingUnfinished` (nothing more came for now:
    /// a prompt, a progress line), or past `heldLimit`, the line begun, but
    /// for a character or a carriage return the next bytes may end.
    mutating func text(for bytes: ArraySlice<UInt8>, showingUnfinished: Bool) -> String {
        unfinished += bytes
        var text = ""
        if let lastNewline = unfinished.lastIndex(of: UInt8(ascii: "\n")) {
            for line in unfinished[...lastNewline].split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast() {
                text += shown(line) + "\n"
                midLine = false
            }
            unfinished.removeFirst(lastNewline + 1)
        }
        if showingUnfinished || unfinished.count >= Self.heldLimit {
            let complete = unfinished.count - Self.cutEndCount(of: unfinished)
            if complete > 0 {
                text += shown(unfinished[..<complete])
                midLine = true
                unfinished.removeFirst(complete)
            }
        }
        return text
    }

    /// What is left once the command's standard error ended, ending its line.
    mutating func finish() -> String {
        defer { (unfinished, midLine) = ([], false) }
        return unfinished.isEmpty && !midLine ? "" : shown(unfinished[...]) + "\n"
    }

    private func shown(_ bytes: ArraySlice<UInt8>) -> String {
        var line = String(decoding: bytes, as: UTF8.self)
        if line.hasSuffix("\r") { line.removeLast() }  // a CRLF line end
        return (midLine ? "" : Self.prefix) + UntrustedText.safe(line, asOneLine: true)
    }

    /// How many bytes at the end of `bytes` the next ones may complete: a
    /// carriage return (of a CRLF) or a UTF-8 character begun.
    private static func cutEndCount(of bytes: [UInt8]) -> Int {
        if bytes.last == UInt8(ascii: "\r") { return 1 }
        // The last lead byte among the last three, and whether its character's bytes all came.
        for back in stride(from: 1, through: min(3, bytes.count), by: 1) {
            let byte = bytes[bytes.count - back]
            if byte & 0xC0 == 0x80 { continue }  // a continuation byte
            let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
            return length > back ? back : 0
        }
        return 0
    }
}
