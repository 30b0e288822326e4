import Foundation
import Synchronization

/// The server's lines for its operator, on standard error, each prefixed
/// "quire http: ". A line that repeats the one before within `window`
/// seconds (a client opening connections as fast as it can, each refused
/// alike) is counted rather than shown; the count is shown before the next
/// line that is shown, as syslog's "last message repeated N times", or when
/// the server stops.
final class OperatorLog: Sendable {
    static let shared = OperatorLog()

    private let lines = Mutex(RepeatedLines())

    func write(_ line: String) {
        show(lines.withLock { $0.lines(for: line, at: ProcessInfo.processInfo.systemUptime) })
    }

    /// Shows how many repeats were held back, if any.
    func flush() {
        show(lines.withLock { $0.flush() })
    }

    private func show(_ lines: [String]) {
        guard !lines.isEmpty else { return }
        FileHandle.standardError.write(Data(lines.map { "quire http: \($0)\n" }.joined().utf8))
    }
}

/// Which lines of a stream to show, repeats of the line before held back
/// and counted (`OperatorLog`); times in seconds of a monotonic clock.
struct RepeatedLines {
    static let window = 60.0

    private var last: String?
    private var shownAt = 0.0
    private var repeats = 0

    /// The lines to show now for `line`, coming at `now`: none if it
    /// repeats the line shown less than `window` ago; else the count of
    /// held-back repeats, if any, then the line.
    mutating func lines(for line: String, at now: Double) -> [String] {
        if line == last && now - shownAt < Self.window {
            repeats += 1
            return []
        }
        let held = flush()
        (last, shownAt) = (line, now)
        return held + [line]
    }

    /// The count of held-back repeats as a line, if any; the count starts again.
    mutating func flush() -> [String] {
        defer { repeats = 0 }
        return repeats == 0 ? [] : ["(the line before came \(repeats) more time\(repeats == 1 ? "" : "s"))"]
    }
}
