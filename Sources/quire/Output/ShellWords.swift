/// Commands the tool prints for a person to paste into a shell (advice
/// such as `quire sync --via COMMAND --take-theirs ID`), written so that a
/// POSIX shell reads each word back as it is: a path, a `--via` command or
/// a note id (another replica chose it) may hold quotes, spaces, `$`,
/// backslashes or line breaks. Specs/cli.md, "Commands printed".
enum ShellWords {
    /// The words, each `quoted`, separated by spaces.
    static func command(_ words: String...) -> String {
        command(words)
    }

    static func command(_ words: [String]) -> String {
        words.map(quoted).joined(separator: " ")
    }

    /// `word` as one shell word: as it is when it holds only characters no
    /// shell treats specially (so that the usual paths, URLs and ids read
    /// as before), else in single quotes, inside which a shell takes every
    /// byte as it is but a single quote, written `'\''` (the quotes closed,
    /// an escaped quote, the quotes opened again).
    static func quoted(_ word: String) -> String {
        guard word.isEmpty || !word.utf8.allSatisfy(isPlain) else { return word }
        return "'" + word.replacing("'", with: #"'\''"#) + "'"
    }

    /// ASCII letters, digits and `_ - . / : , = + @ %`: none expands,
    /// splits, globs or quotes, in any position.
    private static func isPlain(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: ","),
             UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "@"), UInt8(ascii: "%"): true
        default: false
        }
    }
}
