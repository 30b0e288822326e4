import Foundation
@testable import quire
import Testing

/// The commands quire prints for a person to paste (`ShellWords`), read
/// back by `/bin/sh` as the words they were made of.
@Suite struct ShellWordsTests {
    /// Words holding what a shell acts on (quotes, spaces, `$`, backslashes,
    /// line breaks, globs, an empty word) read back as they are, alone and
    /// in a command of several; words without any stay as they are.
    @Test func aPrintedWordReadsBackThroughAShellAsItIs() throws {
        let words = [
            "ssh host 'quire serve --stdio ~/it'\\''s notes.quire'", "it's notes.quire", "'", "''", "say \"hi\" \"",
            "two  spaces ", "$HOME ${HOME} $(false) `false` $", "back\\slash\\", "line\nbreak\n", "tab\there", "",
            "~/notes.quire", "*?[a]{b,c}!#&;|<>()^", "héllo wörld", "http://127.0.0.1:8080/a?b=c&d", "-n", "%s\\0",
        ]
        for word in words {
            #expect(try shellWords("x " + ShellWords.quoted(word)) == ["x", word], "\(ShellWords.quoted(word))")
        }
        let line = ShellWords.command("quire", "sync", "--via", words[0], "--take-theirs", words[1])
        #expect(try shellWords(line) == ["quire", "sync", "--via", words[0], "--take-theirs", words[1]], "\(line)")
        for plain in ["/tmp/quire-tests-0190F1C2/notes.quire", "http://127.0.0.1:8080", "0190f1c2-7a3b-7c4d-8e5f-0123456789ab",
                      "0000000000000001:3,0000000000000002:5", "5@0000000000000001", "a=b+c%d,e"] {
            #expect(ShellWords.quoted(plain) == plain)
        }
        #expect(ShellWords.quoted("") == "''")
        #expect(ShellWords.quoted("it's") == #"'it'\''s'"#)
    }
}
