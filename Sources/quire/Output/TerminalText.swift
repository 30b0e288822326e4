/// Text from notes as it may go to a terminal.
///
/// Titles, bodies and tags come from other replicas through sync, so a
/// hostile peer could otherwise send escape sequences that retitle the
/// window, move the cursor or clear the screen. (`--json` output escapes
/// control characters itself and is left exact.)
enum TerminalText {
    /// `text` with every control character shown in caret notation (`^[`
    /// for escape, `^?` for delete; C1 controls as U+FFFD), except line
    /// feeds, tabs, a carriage return before a line feed, and, when
    /// `keepingColours`, the SGR sequences (`ESC [ digits ; ... m`) that
    /// `Output.styled` writes.
    static func safe(_ text: String, keepingColours: Bool) -> String {
        let scalars = Array(text.unicodeScalars)
        guard scalars.contains(where: isControl) else { return text }
        var result = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if keepingColours, scalar == "\u{1B}", let end = sgrEnd(scalars, from: index) {
                result.append(contentsOf: scalars[index..<end])
                index = end
                continue
            }
            switch scalar.value {
            case 0x0A, 0x09: result.append(scalar)
            case 0x0D where index + 1 < scalars.count && scalars[index + 1] == "\n": result.append(scalar)
            case 0x00..<0x20: result.append(contentsOf: "^\(Unicode.Scalar(UInt8(scalar.value + 0x40)))".unicodeScalars)
            case 0x7F: result.append(contentsOf: "^?".unicodeScalars)
            case 0x80..<0xA0: result.append("\u{FFFD}")
            default: result.append(scalar)
            }
            index += 1
        }
        return String(result)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 && scalar != "\n" && scalar != "\t" || (0x7F..<0xA0).contains(scalar.value)
    }

    /// Where the SGR sequence starting at `start` ends, or nil if none does.
    private static func sgrEnd(_ scalars: [Unicode.Scalar], from start: Int) -> Int? {
        guard start + 2 < scalars.count, scalars[start + 1] == "[" else { return nil }
        var index = start + 2
        while index < scalars.count, ("0"..."9").contains(scalars[index]) || scalars[index] == ";" { index += 1 }
        return index < scalars.count && scalars[index] == "m" ? index + 1 : nil
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
