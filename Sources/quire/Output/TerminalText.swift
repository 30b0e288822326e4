import TerminalSafety

/// Text from notes as it may go to a terminal.
///
/// Titles, bodies and tags come from other replicas through sync, so a
/// hostile peer could otherwise send escape sequences that retitle the
/// window, move the cursor, clear the screen or hide text, or
/// bidirectional controls that show a line in another order than it holds
/// (`safe`). (`--json` output escapes control characters itself and is
/// left exact; so is the body `show` writes to a file or a pipe, `Output`.)
///
/// Quire's own colours (`Output.styled`) therefore never travel as escape
/// sequences: they are marks around a style's code (two private-use
/// scalars), turned into escape sequences only as the text is written, and
/// only for the codes of `Output.Style`. Every escape in the text is shown.
/// A note may hold the marks' scalars too, but not `markKey`, which every
/// mark Quire makes carries: a note's marks style nothing.
enum TerminalText {
    static let styleOpen: Unicode.Scalar = "\u{F8F0}", styleClose: Unicode.Scalar = "\u{F8F1}"
    /// Random to each run of the tool, so that no note can know it.
    private static let markKey = String(UInt64.random(in: .min ... .max), radix: 16) + ":"

    /// `text` with what a terminal would act on unseen shown instead
    /// (`UntrustedText.safe`, in TerminalSafety, as QuireSync shows a
    /// peer command's standard error by it too). The one rule for every
    /// line quire prints for people (`Output`), Specs/cli.md, "Control and
    /// invisible characters".
    static func safe(_ text: String, asOneLine: Bool = false) -> String {
        UntrustedText.safe(text, asOneLine: asOneLine)
    }

    /// A title (text others wrote) quoted inside a line of quire's own: its
    /// line breaks and tabs shown as a table's cell shows them, so that it
    /// cannot start a line of its own, which a person pasting a listed
    /// command (`quire diff ID ...  # TITLE`) would run as one.
    static func inLine(_ text: String) -> String {
        safe(text, asOneLine: true)
    }

    /// `text` between style marks.
    static func marked(_ text: String, code: String) -> String {
        "\(styleOpen)\(markKey)\(code)\(styleClose)\(text)\(styleOpen)\(markKey)0\(styleClose)"
    }

    /// `text` with its style marks made escape sequences (`ESC [ code m`)
    /// for a terminal in colour, else dropped. A mark without `markKey`, or
    /// naming no style of `Output.Style` (one a note held), is dropped
    /// either way, and so is an open mark left without its close, which
    /// would otherwise take in the next mark of Quire's (its reset, say).
    static func applyingStyles(_ text: String, inColour: Bool) -> String {
        guard text.unicodeScalars.contains(styleOpen) else { return text }
        var result = String.UnicodeScalarView()
        var rest = text.unicodeScalars[...]
        while let open = rest.firstIndex(of: styleOpen) {
            result.append(contentsOf: rest[..<open])
            let afterOpen = rest.index(after: open)
            guard let close = rest[afterOpen...].firstIndex(of: styleClose), !rest[afterOpen..<close].contains(styleOpen) else {
                rest = rest[afterOpen...]
                continue
            }
            let mark = String(String.UnicodeScalarView(rest[afterOpen..<close]))
            let code = mark.hasPrefix(markKey) ? String(mark.dropFirst(markKey.count)) : nil
            if inColour, let code, code == "0" || Output.Style(rawValue: code) != nil {
                result.append(contentsOf: "\u{1B}[\(code)m".unicodeScalars)
            }
            rest = rest[rest.index(after: close)...]
        }
        result.append(contentsOf: rest)
        return String(result)
    }

    /// The columns `text` takes on a terminal: those of what is printed
    /// once its style marks are applied (escape sequences take none).
    static func width(_ text: String) -> Int {
        // Printable ASCII, most cells of a long table (`log`, `blame`), is a
        // column a byte: looking up each character's properties took most
        // of printing such a table.
        if text.utf8.allSatisfy({ (0x20..<0x7F).contains($0) }) { return text.utf8.count }
        return applyingStyles(text, inColour: false).reduce(0) { $0 + columns(of: $1) }
    }

    /// How many terminal columns `character` takes: 2 for East Asian wide
    /// and fullwidth characters and emoji shown as pictures, 0 for marks and
    /// other characters that draw nothing on their own, else 1.
    static func columns(of character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if scalars.contains(where: { $0.properties.isEmojiPresentation }) || scalars.contains("\u{FE0F}") && first.properties.isEmoji {
            return 2
        }
        if isWide(first) { return 2 }
        switch first.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: return 1
        }
    }

    /// East Asian Wide and Fullwidth blocks (Unicode's EastAsianWidth.txt,
    /// by block: Hangul Jamo, CJK and Kana, Hangul syllables, compatibility
    /// ideographs, fullwidth forms, the supplementary ideograph planes).
    private static func isWide(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
             0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x20000...0x3FFFD:
            true
        default:
            false
        }
    }
}
