import Foundation
import JSONText

/// Standard output and standard error, and whether output is for a
/// terminal (colour only then, and only when `NO_COLOR` is unset).
struct Output {
    let isColorEnabled: Bool

    init() {
        isColorEnabled = isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
    }

    /// Writes `text` and a newline to standard output, its control
    /// characters made harmless (`TerminalText`).
    func print(_ text: String) {
        FileHandle.standardOutput.write(Data((TerminalText.applyingStyles(TerminalText.safe(text), inColour: isColorEnabled) + "\n").utf8))
    }

    /// Writes a JSON value to standard output, exact: its strings escape
    /// every control character.
    func print(json: JSONValue) {
        FileHandle.standardOutput.write(Data((json.indented + "\n").utf8))
    }

    /// Writes a progress or warning line to standard error.
    func progress(_ text: String) {
        FileHandle.standardError.write(Data("\(TerminalText.applyingStyles(TerminalText.safe(text), inColour: false))\n".utf8))
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
