import Foundation

/// The merge figures of Quire and its peers measured in turns: each round
/// merges the whole encoded history in Quire, then in each peer
/// (`peers.py merge-turns`, a process that waits for each round).
///
/// Measured one library after the other, a minute in which the shared host
/// was busy slowed one library's runs only, and one run's ratios moved by
/// up to a factor of two (friendsforever: Quire 2.81 times Yrs's merge time
/// in one run, 1.50 times ten minutes later). Taking turns gives every
/// library the same share of the slow moments.
///
/// Each library's timed merge comes right after an untimed one of the same
/// bytes, in Quire as in the peers, so that each starts on a processor busy
/// with the same work. Without it the conditions differed: Quire's merge
/// came straight after its thread had waited through the peers' turn, each
/// peer's after the 13–16 ms of CPU work of Python's `gc.collect()`; in one
/// full run on a quiet host Quire's friendsforever merge took 1.42 ms at
/// best and 2.15 ms at the median, against 1.36–1.42 ms merged back to back
/// (HISTORY.md, forty-third session, review134).
public struct MergeTurns {
    /// The fewest rounds the suite takes: a merge takes milliseconds, and
    /// the median of three to five rounds still moved automerge-paper's
    /// ratio to Yrs from 0.87 to 1.53 between runs on this project's shared machine.
    public static let minimumRounds = 15

    /// How long the peers get to answer, by default: a peer process that
    /// hangs (neither answers nor ends) fails its workload's merges in turns
    /// after this, instead of holding up the whole suite.
    public static let defaultAnswerTimeout: Duration = .seconds(300)

    private let process: Process
    private let toPeers: FileHandle
    private var fromPeers: LineReader
    private let answerTimeout: Duration

    /// Starts `peers.py merge-turns` through `runner` (`Benchmarks/peers/run.sh`)
    /// and waits until the peers have encoded the workload and merged it
    /// once each. `command` is `trace` or `replicas`. Each answer, "ready"
    /// included, must come within `answerTimeout`.
    public init(runner: String, command: String, path: String, answerTimeout: Duration = defaultAnswerTimeout) throws {
        self.answerTimeout = answerTimeout
        // A peer process that has died makes writing to it fail, not end this process.
        signal(SIGPIPE, SIG_IGN)
        process = Process()
        process.executableURL = URL(fileURLWithPath: runner)
        process.arguments = ["merge-turns", command, path]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        toPeers = input.fileHandleForWriting
        fromPeers = LineReader(output.fileHandleForReading)
        let first = try fromPeers.next(within: answerTimeout)
        guard first == "ready" else {
            finish()
            throw TurnsError(message: "peers.py merge-turns did not start (exit status \(process.terminationStatus))")
        }
    }

    /// Runs `rounds` rounds, each `quireMerge` (which returns its CPU time in
    /// nanoseconds) twice, the first untimed, then the same in each peer,
    /// and returns the spread of each library's timed merges, keyed "quire",
    /// "yrs" and "loro".
    public mutating func measure(rounds: Int, quireMerge: () throws -> UInt64) throws -> [String: Spread] {
        var quire: [UInt64] = []
        var peers: [String: [Double]] = [:]
        for _ in 0..<rounds {
            _ = try quireMerge()  // the untimed merge before the timed one (see the type's comment)
            quire.append(try quireMerge())
            // A peer process that has ended fails the write (EPIPE) or gives no line: the same failure.
            let line = try (try? toPeers.write(contentsOf: Data("merge\n".utf8))).flatMap { try fromPeers.next(within: answerTimeout) }
            guard let line, let times = Self.peerTimes(line) else {
                throw TurnsError(message: "peers.py merge-turns stopped answering")
            }
            for (peer, milliseconds) in times { peers[peer, default: []].append(milliseconds) }
        }
        var spreads = peers.compactMapValues { Spread(milliseconds: $0) }
        spreads["quire"] = Spread(nanoseconds: quire)
        return spreads
    }

    /// Closes the peers' input, which ends their process, and waits for it;
    /// one that is still running after a few seconds (a hung peer) is killed.
    public func finish() {
        try? toPeers.close()
        let deadline = ContinuousClock.now + .seconds(2)
        while process.isRunning && ContinuousClock.now < deadline { usleep(50_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Whether the peers' process is still running.
    var isRunning: Bool { process.isRunning }

    /// One round's answer from `peers.py merge-turns`: each peer's merge
    /// time in milliseconds, as a JSON object; nil for anything else.
    static func peerTimes(_ line: String) -> [String: Double]? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
        var times: [String: Double] = [:]
        for (peer, value) in object {
            guard let milliseconds = (value as? NSNumber)?.doubleValue, milliseconds >= 0 else { return nil }
            times[peer] = milliseconds
        }
        return times.isEmpty ? nil : times
    }

    public struct TurnsError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }
}

/// Lines read from a pipe as they come.
private struct LineReader {
    let handle: FileHandle
    var buffer: [UInt8] = []

    init(_ handle: FileHandle) { self.handle = handle }

    /// The next line without its newline, or nil at the end of the input.
    /// Throws if no whole line has come within `timeout`.
    mutating func next(within timeout: Duration) throws -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            // Waits for input, never past the deadline: reading would block for good on a hung peer.
            var descriptor = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            let left = ContinuousClock.now.duration(to: deadline)
            let milliseconds = max(0, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
            let ready = poll(&descriptor, 1, Int32(clamping: milliseconds))
            if ready == 0 {
                throw MergeTurns.TurnsError(message: "peers.py merge-turns gave no answer within \(timeout)")
            }
            if ready < 0 && errno == EINTR { continue }
            let data = handle.availableData
            if data.isEmpty { return nil }
            buffer += data
        }
    }
}

extension Spread {
    /// The spread of samples given in milliseconds; nil without samples.
    public init?(milliseconds samples: [Double]) {
        guard let spread = Spread(nanoseconds: samples.map { UInt64(($0 * 1e6).rounded()) }) else { return nil }
        self = spread
    }
}
