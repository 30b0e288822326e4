import Foundation
import JSONText

/// Standard output and standard error, and whether output is for a
/// terminal (colour only then, and only when `NO_COLOR` is unset).
struct Output {
    let isTerminal: Bool
    let isColorEnabled: Bool

    init() {
        isTerminal = isatty(STDOUT_FILENO) == 1
        isColorEnabled = isTerminal && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
    }

    /// Writes `text` and a newline to standard output, its control
    /// characters made harmless (`TerminalText`).
    func print(_ text: String) {
        Self.writeToStandardOutput(shown(text) + "\n")
    }

    /// Writes `text`, then `exactText` and a newline: `exactText` as it is
    /// unless standard output is a terminal, where it is made harmless as
    /// `print` makes text. A note's body, which `quire show ID > FILE`
    /// exports byte for byte (Specs/cli.md, "Control and invisible characters").
    func print(_ text: String, thenExact exactText: String) {
        Self.writeToStandardOutput(shown(text) + (isTerminal ? shown(exactText) : exactText) + "\n")
    }

    /// `text` as standard output shows it: control characters made
    /// harmless, style marks applied in colour or dropped.
    private func shown(_ text: String) -> String {
        TerminalText.applyingStyles(TerminalText.safe(text), inColour: isColorEnabled)
    }

    /// Writes a JSON value to standard output, exact: its strings escape
    /// every control character.
    func print(json: JSONValue) {
        Self.writeToStandardOutput(json.indented + "\n")
    }

    /// Writes a table's lines as `print` writes text, a chunk at a time:
    /// a table of hundreds of thousands of rows (`quire log` of a long
    /// history) is not held again as one string, and `| head` gets its
    /// first lines before the last are made.
    func print(_ table: Table) {
        Self.writeInChunks { write in
            for line in table.lines { write(shown(line) + "\n") }
        }
    }

    /// Writes a JSON array as `print(json: .array(elements))` does, one
    /// element at a time: the elements are made as they are written, never
    /// held all at once.
    func print(jsonArray elements: some Sequence<JSONValue>) {
        Self.writeInChunks { write in
            JSONValue.indentedArray(elements, write)
            write("\n")
        }
    }

    /// Writes to standard output what `produce` hands its argument, in
    /// chunks of about 64 KiB: a write a line would be a system call a line.
    private static func writeInChunks(_ produce: ((String) -> Void) -> Void) {
        var chunk = ""
        produce { piece in
            chunk += piece
            if chunk.utf8.count >= 65_536 {
                writeToStandardOutput(chunk)
                chunk = ""
            }
        }
        if !chunk.isEmpty { writeToStandardOutput(chunk) }
    }

    /// Writes a progress or warning line to standard error.
    func progress(_ text: String) {
        // A progress line that cannot be written is no reason to stop.
        _ = Self.write("\(TerminalText.applyingStyles(TerminalText.safe(text), inColour: false))\n", to: STDERR_FILENO)
    }

    /// Why a write to standard output failed (a full disk, a closed
    /// descriptor), if one did: the command goes on, as what it did is
    /// done, and then fails saying so (`QuireTool`), rather than trapping
    /// (Foundation's `FileHandle.write` does) after a note was made.
    static var failedWrite: String? { standardOutputFailure.errorNumber.map { String(cString: strerror($0)) } }

    private static let standardOutputFailure = FirstWriteFailure()

    private static func writeToStandardOutput(_ text: String) {
        if let errorNumber = write(text, to: STDOUT_FILENO) { standardOutputFailure.record(errorNumber) }
    }

    /// Writes all of `text`; returns errno if that fails.
    static func write(_ text: String, to descriptor: Int32) -> Int32? {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard written >= 0 else {
                if errno == EINTR { continue }
                return errno
            }
            bytes = bytes.dropFirst(written)
        }
        return nil
    }

    /// `text` in a colour (an ANSI SGR code) when colour is enabled, as
    /// marks that `print` makes escape sequences (`TerminalText`).
    func styled(_ text: String, _ style: Style) -> String {
        isColorEnabled ? TerminalText.marked(text, code: style.rawValue) : text
    }

    enum Style: String {
        case bold = "1", dim = "2", red = "31", green = "32", yellow = "33", cyan = "36"
    }
}

/// The errno of the first failed write to a descriptor, kept across threads.
private final class FirstWriteFailure: @unchecked Sendable {
    private let lock = NSLock()
    private var first: Int32?

    var errorNumber: Int32? { lock.withLock { first } }

    func record(_ errorNumber: Int32) {
        lock.withLock { if first == nil { first = errorNumber } }
    }
}
