/// Text others wrote (a synced note, a peer command's standard error) as
/// it may go to a terminal: the one rule for it, shared by the `quire`
/// tool (`TerminalText`) and QuireSync (`StdioSyncTransport`), which
/// cannot import the tool.
///
/// A hostile replica or peer could otherwise send escape sequences that
/// retitle the window, move the cursor, clear the screen, colour or hide
/// text, or bidirectional controls that show a line in another order than
/// it holds. Colour (SGR) sequences are shown too, unlike git's "remote:"
/// lines: one can hide text as well (`ESC [ 8 m`), and what runs as a
/// peer writes to a pipe, where it does not colour.
public enum UntrustedText {
    /// `text` with what a terminal would act on unseen shown instead:
    /// control characters in caret notation (`^[` for escape, `^?` for
    /// delete) except line feeds, tabs and a carriage return before a line
    /// feed, unless `asOneLine` (a table's cell, which they would push out
    /// of its column); C1 controls and `isHidden` scalars (bidirectional
    /// controls, other format characters) as `<U+XXXX>`, as `less` shows
    /// them, and so are the Hangul fillers where they draw nothing (a title
    /// of U+3164 alone looks empty). Specs/cli.md, "Control and invisible
    /// characters".
    public static func safe(_ text: String, asOneLine: Bool = false) -> String {
        // Printable ASCII, most text, needs nothing: checked a byte at a time.
        guard text.utf8.contains(where: { $0 < 0x20 || $0 >= 0x7F }) else { return text }
        let scalars = Array(text.unicodeScalars)
        var result = String.UnicodeScalarView()
        for (index, scalar) in scalars.enumerated() {
            switch scalar.value {
            case 0x0A where !asOneLine, 0x09 where !asOneLine: result.append(scalar)
            case 0x0D where !asOneLine && index + 1 < scalars.count && scalars[index + 1] == "\n": result.append(scalar)
            case 0x00..<0x20: result.append(contentsOf: "^\(Unicode.Scalar(UInt8(scalar.value + 0x40)))".unicodeScalars)
            case 0x7F: result.append(contentsOf: "^?".unicodeScalars)
            case 0x80..<0xA0: result.append(contentsOf: codePoint(scalar).unicodeScalars)
            case _ where isHidden(scalar) || isLoneHangulFiller(at: index, in: scalars):
                result.append(contentsOf: codePoint(scalar).unicodeScalars)
            default: result.append(scalar)
            }
        }
        return String(result)
    }

    /// `<U+202E>`: four hex digits at least, as `less` writes a character it does not show.
    private static func codePoint(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "<U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + ">"
    }

    /// Whether a terminal would lay out text differently for `scalar`, or
    /// draw nothing for it, so that a note could show one thing and hold
    /// another (the Trojan Source attack): the bidirectional controls
    /// (U+202A–U+202E, U+2066–U+2069, the marks U+200E, U+200F and U+061C),
    /// every other format character (a zero-width space, a word joiner, a
    /// byte order mark inside text) and the line and paragraph separators.
    /// Not the format characters text needs and terminals handle: the
    /// zero-width joiner and non-joiner (Persian, Indic scripts, emoji
    /// sequences), the tag characters of flag emoji (U+E0020–U+E007F), and
    /// the soft hyphen, which terminals draw.
    private static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case ...0xAD, 0x200C, 0x200D, 0xE0020...0xE007F: false  // Latin-1 holds no other format character
        case 0x2028, 0x2029: true
        default: scalar.properties.generalCategory == .format
        }
    }

    /// Whether the scalar at `index` is a Hangul filler that draws nothing:
    /// the compatibility fillers (U+3164, and U+FFA0 half width) always;
    /// the conjoining ones only outside a syllable, as the choseong filler
    /// U+115F before a vowel and the jungseong filler U+1160 after a
    /// leading consonant spell archaic Hangul, which terminals draw. They
    /// are letters (Lo), not format characters, so `isHidden` misses them.
    private static func isLoneHangulFiller(at index: Int, in scalars: [Unicode.Scalar]) -> Bool {
        switch scalars[index].value {
        case 0x3164, 0xFFA0: return true
        case 0x115F:
            guard index + 1 < scalars.count else { return true }
            return !isJamo(scalars[index + 1], in: [0x1161...0x11A7, 0xD7B0...0xD7C6])  // vowels
        case 0x1160:
            guard index > 0 else { return true }
            return !isJamo(scalars[index - 1], in: [0x1100...0x115E, 0xA960...0xA97C])  // leading consonants
        default: return false
        }
    }

    private static func isJamo(_ scalar: Unicode.Scalar, in ranges: [ClosedRange<UInt32>]) -> Bool {
        ranges.contains { $0.contains(scalar.value) }
    }
}
