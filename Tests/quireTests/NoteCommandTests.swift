import Foundation
import Quire
import QuireTestSupport
import Testing

/// `quire note ...` end to end: exact output, JSON, exit codes.
@Suite struct NoteCommandTests {
    /// `note new` killed after it committed its note, before its id was
    /// printed, left a script that ran it again with two notes. With
    /// `--request-id KEY`, the run again prints the id of the note the
    /// first made (here, the first's output went nowhere: it committed,
    /// and its id was lost), and makes none; another key, or none, makes
    /// a note of its own; the id is a UUIDv7 as any note's.
    @Test func noteNewWithARequestIDMakesItsNoteOnceThoughRunAgain() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let standup = ["note", "new", "--title", "Standup", "--body", "notes", "--request-id", "standup-2026-12-05"]
            // Standard output a pipe nobody reads: the note is committed, its id never seen.
            let outputGone = ["python3", "-c", "import os, sys; r, w = os.pipe(); os.close(r); os.dup2(w, 1); os.execv(sys.argv[1], sys.argv[1:])"]
            let lost = try quire.run(standup, launcher: outputGone)
            #expect(lost.status == 1)
            #expect(lost.stderr.hasPrefix("error: cannot write to standard output"))
            let id = try quire.ok(standup).trimmingCharacters(in: .newlines)
            #expect(try quire.ok(standup) == id + "\n")
            var listed = try #require(try quire.run(["note", "list", "--json"]).json() as? [[String: Any]])
            #expect(listed.map { $0["id"] as? String } == [id])
            #expect(listed.first?["title"] as? String == "Standup")
            #expect(id.count == 36 && Array(id)[14] == "7")

            let retro = try quire.ok(["note", "new", "--title", "Retro", "--request-id", "retro-2026-12-05"]).trimmingCharacters(in: .newlines)
            let plain = try (0..<2).map { _ in try quire.ok(["note", "new", "--title", "Plain"]).trimmingCharacters(in: .newlines) }
            listed = try #require(try quire.run(["note", "list", "--json"]).json() as? [[String: Any]])
            #expect(Set(listed.compactMap { $0["id"] as? String }) == Set([id, retro] + plain))
            #expect(listed.count == 4)

            let empty = try quire.run(["note", "new", "--title", "x", "--request-id", ""])
            #expect(empty.status == 64)
            #expect(empty.stderr.hasPrefix("error: --request-id needs a key, not an empty one\nusage: quire note new"))
        }
    }

    /// Runs with one key at the same time (a script's retry while the run
    /// it repeats still works, or two scripts) make one note, and each
    /// prints its id: the store is looked at in the transaction that
    /// makes the note. Looked at before it, several runs made one each.
    @Test func noteNewRunsRacingWithOneRequestIDMakeOneNote() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            // Six runs started together. (Not sh's `&` and `wait`: its wait hangs under the test runner.)
            let racing = ["python3", "-c", "import subprocess, sys; [run.wait() for run in [subprocess.Popen(sys.argv[1:]) for _ in range(6)]]"]
            for round in 0..<4 {
                let runs = try quire.run(["note", "new", "--title", "Standup", "--request-id", "standup-\(round)"], launcher: racing)
                #expect(runs.stderr == "")
                let printed = runs.stdout.split(separator: "\n")
                #expect(printed.count == 6 && Set(printed).count == 1, "round \(round): \(printed)")
            }
            #expect(try #require(try quire.run(["note", "list", "--json"]).json() as? [[String: Any]]).count == 4)
        }
    }

    /// A note another store made with a key (merged in, as a sync would
    /// bring it) is that store's request: the same key here makes a note.
    @Test func aRequestIDIsThisStoresOwn() throws {
        try withRunner { quire in
            let other = quire.directory + "/other.quire"
            try quire.ok(["init"])
            try quire.ok(["init"], store: other)
            let arguments = ["note", "new", "--title", "Standup", "--request-id", "standup"]
            let theirs = try quire.ok(arguments, store: other)
            try quire.ok(["merge", other])
            let mine = try quire.ok(arguments)
            #expect(mine != theirs)
            #expect(try quire.ok(arguments) == mine)
        }
    }

    /// An empty field prints as its name alone, with no trailing spaces (a
    /// note without tags); the JSON is as before.
    @Test func emptyFieldsPrintWithoutTrailingSpaces() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Plain", "--body", "text"]).trimmingCharacters(in: .newlines)
            #expect(try quire.ok(["note", "show", id]) == "id      \(id)\ntitle   Plain\ntags\npinned  no\n\ntext\n")
            let shown = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
            #expect(shown["tags"] as? [String] == [])
        }
    }

    @Test func createListShowEditRemoveRestore() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Groceries", "--body", "milk", "--tag", "home"])
                .trimmingCharacters(in: .newlines)
            #expect(id.count == 36)
            try quire.ok(["note", "edit", id, "--append", " and eggs", "--insert", "0", "Buy ", "--tag", "food", "--untag", "home", "--pin"])
            #expect(try quire.ok(["note", "show", id]) == """
                id      \(id)
                title   Groceries
                tags    food
                pinned  yes

                Buy milk and eggs

                """)
            let shown = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
            #expect(shown["id"] as? String == id)
            #expect(shown["title"] as? String == "Groceries")
            #expect(shown["body"] as? String == "Buy milk and eggs")
            #expect(shown["tags"] as? [String] == ["food"])
            #expect(shown["pinned"] as? Bool == true)

            try quire.ok(["note", "edit", id, "--delete", "0", "4", "--title", "Shopping", "--unpin"])
            let listed = try #require(try quire.run(["note", "list", "--json"]).json() as? [[String: Any]])
            #expect(listed.count == 1)
            #expect(listed.first?["title"] as? String == "Shopping")
            #expect(listed.first?["body"] as? String == "milk and eggs")
            // UPDATED's time, as log --json gives its newest change's.
            let newest = try #require(try quire.run(["log", id, "--json"]).json() as? [[String: Any]]).first
            #expect(listed.first?["updated"] as? String == newest?["time"] as? String)
            #expect(try quire.ok(["note", "list"]) == """
                ID        TITLE     TAGS  PINNED  UPDATED
                \(id.prefix(8))  Shopping  food          just now

                """)

            #expect(try quire.ok(["note", "rm", id]) == "Removed note \(id); `quire note restore \(id)` brings it back.\n")
            #expect(try quire.ok(["note", "list", "--json"]) == "[]\n")
            #expect(try quire.ok(["note", "list", "--all"]).contains("Shopping (removed)"))
            let refused = try quire.run(["note", "edit", id, "--pin"])
            #expect(refused.status == 1)
            #expect(refused.stderr == "error: note \(id) is removed; `quire note restore \(id)` brings it back\n")
            #expect(try quire.ok(["note", "rm", id]) == "Note \(id) is already removed; nothing changed.\n")
            #expect(try quire.ok(["note", "restore", id]) == "Restored note \(id).\n")
            #expect(try quire.ok(["note", "show", id]).contains("milk and eggs"))
            // Neither a second rm nor a second restore wrote a change to sync.
            let changes = try #require(try quire.run(["log", id, "--json"]).json() as? [Any]).count
            #expect(try quire.ok(["note", "restore", id]) == "Note \(id) is not removed; nothing changed.\n")
            #expect(try #require(try quire.run(["log", id, "--json"]).json() as? [Any]).count == changes)
        }
    }

    /// Bytes that are not UTF-8 would have been stored as U+FFFD for good.
    @Test func anArgumentThatIsNotUTF8IsAUsageError() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            // The last argument as raw bytes, which a Swift String cannot carry.
            let appendingLatin1 = ["python3", "-c", "import os, sys; os.execv(sys.argv[1], [os.fsencode(a) for a in sys.argv[1:]] + [b'caf\\xe9'])"]
            let result = try quire.run(["note", "new", "--title"], launcher: appendingLatin1)
            #expect(result.status == 64)
            #expect(result.stderr == "error: argument 6 (\"caf\u{FFFD}\") is not UTF-8 text; quire reads its arguments as UTF-8\n")
            #expect(try quire.ok(["note", "list", "--json"]) == "[]\n")
        }
    }

    @Test func idsAbbreviateToAnyUniquePrefix() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let first = try quire.ok(["note", "new", "--title", "One"]).trimmingCharacters(in: .newlines)
            let second = try quire.ok(["note", "new", "--title", "Two"]).trimmingCharacters(in: .newlines)
            let common = zip(first, second).prefix { $0 == $1 }.count
            #expect(try quire.ok(["note", "show", String(first.prefix(common + 1))]).contains("title   One"))
            // Copied from a display that shows ids in capitals.
            #expect(first.uppercased() != first)
            #expect(try quire.ok(["note", "show", first.uppercased()]).contains("title   One"))

            let ambiguous = try quire.run(["note", "show", String(first.prefix(common))])
            #expect(ambiguous.status == 1)
            #expect(ambiguous.stderr == "error: \"\(first.prefix(common))\" matches 2 notes: \(first), \(second); type more of the id\n")

            let unknown = try quire.run(["note", "show", "zzzz"])
            #expect(unknown.status == 1)
            #expect(unknown.stderr == "error: no note matches \"zzzz\"; `quire note list --all` lists every note\n")
        }
    }

    /// A title synced from a hostile peer cannot drive the terminal: its
    /// control characters print in caret notation; `--json` keeps them
    /// exact, and so does `show` of the body to a pipe.
    @Test func controlCharactersInNotesPrintHarmlessly() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let title = "evil\u{1B}]0;pwned\u{07}\u{1B}[2J\u{9B}31m"
            let id = try quire.ok(["note", "new", "--title", title, "--body", "line\r\none\rtwo\u{7F}"]).trimmingCharacters(in: .newlines)
            let listed = try quire.ok(["note", "list"])
            #expect(!listed.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B })
            #expect(listed.contains("evil^[]0;pwned^G^[[2J<U+009B>31m"))
            let shown = try quire.ok(["note", "show", id])
            #expect(shown.contains("title   evil^[]0;pwned^G^[[2J<U+009B>31m\n"))
            // The body to a pipe is exact (an export); on a terminal it is shown.
            #expect(shown.hasSuffix("\n\nline\r\none\rtwo\u{7F}\n"))
            #expect(try quire.runOnTerminal(["note", "show", id]).hasSuffix("line\r\r\none^Mtwo^?\r\n"))
            let json = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
            #expect(json["title"] as? String == title)
        }
    }

    /// Bidirectional controls (Trojan Source) and other invisible format
    /// characters printed as they are let a note show one thing and hold
    /// another: every listing shows them as `<U+XXXX>`, and so does `show`
    /// on a terminal; `--json` and `show` to a pipe keep them, and the
    /// joiners emoji and scripts need stay as they are.
    @Test func bidirectionalAndInvisibleCharactersAreShown() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let title = "admin\u{202E}gpj.exe\u{202C}"
            let body = "if access \u{2067}// check later\u{2069}\u{2066} ok \u{200B}end 👩\u{200D}💻 می\u{200C}خواهم"
            let id = try quire.ok(["note", "new", "--title", title, "--body", body, "--tag", "a\u{2060}b"])
                .trimmingCharacters(in: .newlines)
            let shownBody = "if access <U+2067>// check later<U+2069><U+2066> ok <U+200B>end 👩\u{200D}💻 می\u{200C}خواهم"
            let listed = try quire.ok(["note", "list"])
            #expect(listed.contains("  admin<U+202E>gpj.exe<U+202C>  a<U+2060>b  "))
            let shown = try quire.ok(["note", "show", id])
            #expect(shown.hasPrefix("id      \(id)\ntitle   admin<U+202E>gpj.exe<U+202C>\ntags    a<U+2060>b\n"))
            #expect(shown.hasSuffix("\n\n" + body + "\n"))
            #expect(try quire.runOnTerminal(["note", "show", id]).hasSuffix("\r\n\r\n" + shownBody + "\r\n"))
            let json = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
            #expect(json["title"] as? String == title && json["body"] as? String == body)

            let before = try quire.ok(["vv", id]).trimmingCharacters(in: .newlines)
            try quire.ok(["note", "edit", id, "--append", " \u{202E}1 ,0"])
            #expect(try quire.ok(["blame", id]).contains("\"" + shownBody + "\"\n"))
            #expect(try quire.ok(["blame", id, "--title"]).hasSuffix("  \"admin<U+202E>gpj.exe<U+202C>\"\n"))
            #expect(try quire.ok(["diff", id, "--from", before]).hasSuffix("\nbody @\(body.unicodeScalars.count) +\" <U+202E>1 ,0\"\n"))
        }
    }

    /// A Hangul filler draws nothing, so a title of one alone would look
    /// empty and a tag holding one would look like another tag; where it
    /// spells a syllable of archaic Hangul (a filler beside a conjoining
    /// letter) it is drawn, and stays.
    @Test func hangulFillersThatDrawNothingAreShown() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let title = "\u{3164}"
            let body = "한글 \u{1100}\u{1160} \u{115F}\u{1161} \u{115F}\u{1160} x\u{FFA0}"
            let id = try quire.ok(["note", "new", "--title", title, "--body", body, "--tag", "admin\u{3164}"])
                .trimmingCharacters(in: .newlines)
            let listed = try quire.ok(["note", "list"])
            #expect(listed.contains("  <U+3164>  admin<U+3164>  "))
            let shownBody = "한글 \u{1100}\u{1160} \u{115F}\u{1161} <U+115F><U+1160> x<U+FFA0>"
            #expect(try quire.runOnTerminal(["note", "show", id]).hasSuffix("\r\n\r\n" + shownBody + "\r\n"))
            #expect(try quire.ok(["note", "show", id]).hasSuffix("\n\n" + body + "\n"))
        }
    }

    /// On a terminal in colour, Quire's own styles are escape sequences and
    /// a note's are shown, so a synced title cannot hide text (ESC [8m) or
    /// forge a style mark.
    @Test func aNotesEscapesShowOnAColourTerminal() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "hid\u{1B}[8mden", "--body", "a\u{F8F0}8\u{F8F1}b"])
                .trimmingCharacters(in: .newlines)
            let shown = try quire.runOnTerminal(["note", "show", id])
            #expect(shown.contains("\u{1B}[1mhid^[[8mden\u{1B}[0m"))  // the title in bold, its escape shown
            #expect(shown.contains("\r\nab\r\n"))  // the forged mark dropped
            let listed = try quire.runOnTerminal(["note", "list"])
            #expect(listed.hasPrefix("\u{1B}[1mID\u{1B}[0m        \u{1B}[1mTITLE\u{1B}[0m"))
            #expect(listed.contains("  hid^[[8mden  "))

            // A mark naming one of Quire's own styles colours nothing either, and
            // an open mark left alone does not take in the reset after the title.
            let forged = try quire.ok(["note", "new", "--title", "a\u{F8F0}31\u{F8F1}red\u{F8F0}", "--body", "b\u{F8F0}32\u{F8F1}green"])
                .trimmingCharacters(in: .newlines)
            let forgedShown = try quire.runOnTerminal(["note", "show", forged])
            #expect(forgedShown.contains("\u{1B}[1mared\u{1B}[0m\r\n"))
            #expect(forgedShown.hasSuffix("\r\nbgreen\r\n"))
            #expect(!forgedShown.contains("\u{1B}[31m") && !forgedShown.contains("\u{1B}[32m"))
        }
    }

    /// Chinese, Japanese and Korean characters and emoji take two columns.
    @Test func tablesAlignWideCharacters() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            try quire.ok(["note", "new", "--title", "日本語", "--tag", "a"])
            try quire.ok(["note", "new", "--title", "abcdefgh", "--tag", "b"])
            try quire.ok(["note", "new", "--title", "ok 👍", "--tag", "c"])
            let listed = try quire.ok(["note", "list"])
            #expect(listed.contains("  日本語    a  "))
            #expect(listed.contains("  abcdefgh  b  "))
            #expect(listed.contains("  ok 👍     c  "))
        }
    }

    /// A tab in a title pushed the rest of its row of `note list` out of
    /// its columns (the tab counted one column, and jumped to the next stop);
    /// so did a line break a synced title holds. In a table's cell both
    /// show in caret notation, as other control characters do; the body
    /// keeps them.
    @Test func tabsAndLineBreaksInTableCellsKeepTheColumns() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "a\tb", "--tag", "x", "--body", "one\ttwo\nthree"])
                .trimmingCharacters(in: .newlines)
            try quire.ok(["note", "new", "--title", "abcdefgh", "--tag", "y"])
            let listed = try quire.ok(["note", "list"])
            #expect(listed.contains("  a^Ib      x  "))
            #expect(listed.contains("  abcdefgh  y  "))
            #expect(try quire.ok(["note", "show", id]).hasSuffix("\n\none\ttwo\nthree\n"))
        }
    }

    @Test func aTagGivenTwiceIsAddedOnce() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T", "--tag", "home", "--tag", "home", "--tag", "food"])
                .trimmingCharacters(in: .newlines)
            try quire.ok(["note", "edit", id, "--tag", "food", "--tag", "todo", "--tag", "todo"])
            let note = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
            #expect(note["tags"] as? [String] == ["home", "food", "todo"])
        }
    }

    /// Tags differing only in Unicode normalization ("café" precomposed,
    /// and with "e" and U+0301) were taken for one: the second was not
    /// added, `--untag` of one removed the other, and `diff` saw no change
    /// from one to the other. They are two tags.
    @Test func tagsDifferingOnlyInNormalizationAreTwoTags() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let (precomposed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
            let id = try quire.ok(["note", "new", "--title", "T", "--tag", precomposed]).trimmingCharacters(in: .newlines)
            func tags() throws -> [[UInt8]] {
                let note = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
                return try #require(note["tags"] as? [String]).map { Array($0.utf8) }
            }
            let log = try #require(try quire.run(["log", id, "--json"]).json() as? [[String: Any]])
            let created = try #require(log.first?["version"] as? String)
            try quire.ok(["note", "edit", id, "--tag", decomposed])
            #expect(try tags() == [Array(precomposed.utf8), Array(decomposed.utf8)])
            try quire.ok(["note", "edit", id, "--untag", precomposed])
            #expect(try tags() == [Array(decomposed.utf8)])
            let diff = try #require(try quire.run(["diff", id, "--from", created, "--json"]).json() as? [String: Any])
            #expect((diff["fields"] as? [Any])?.count == 1)
        }
    }

    /// `--untag` of a tag the note does not have (mistyped, or "Work" for
    /// "work") succeeded without a word, as if it had removed it. It still
    /// succeeds, the rest of the edit made, and says the tag was not there.
    @Test func untagOfATagTheNoteLacksSaysSo() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T", "--tag", "work", "--tag", "home"]).trimmingCharacters(in: .newlines)
            let result = try quire.run(["note", "edit", id, "--untag", "wrok", "--untag", "home", "--untag", "Work", "--append", "x"])
            #expect(result.status == 0)
            #expect(result.stderr == "warning: note \(id) had no tags \"wrok\", \"Work\" to remove (tags compare exactly: case and accents count); "
                + "`quire note show \(id)` lists its tags\n")
            let note = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
            #expect(note["tags"] as? [String] == ["work"])
            #expect(note["body"] as? String == "x")
            #expect(try quire.run(["note", "edit", id, "--untag", "work"]).stderr == "")
        }
    }

    /// An empty tag (`--tag "$UNSET"`) was stored: a tag no listing shows
    /// (`tags` blank), only JSON (`[""]`). It is a usage error now.
    @Test func anEmptyTagIsAUsageError() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T", "--tag", "home"]).trimmingCharacters(in: .newlines)
            for arguments in [["note", "new", "--title", "U", "--tag", ""], ["note", "edit", id, "--tag", ""], ["note", "edit", id, "--untag", ""]] {
                let result = try quire.run(arguments)
                #expect(result.status == 64, "quire \(arguments)")
                #expect(result.stderr.hasPrefix("error: \(arguments[arguments.count - 2]) needs a tag, not an empty word\nusage: quire note "))
            }
            let notes = try #require(try quire.run(["note", "list", "--json"]).json() as? [[String: Any]])
            #expect(notes.count == 1)
            #expect(notes.first?["tags"] as? [String] == ["home"])
        }
    }

    @Test func anEmptyIdNamesNoNoteEvenInAStoreOfOne() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            try quire.ok(["note", "new", "--title", "Only"])
            let empty = try quire.run(["note", "rm", ""])  // as `quire note rm "$ID"` with ID unset
            #expect(empty.status == 64)
            #expect(empty.stderr.hasPrefix("error: ID is empty, which names no note; give a note's id or a prefix of it\nusage: quire note rm ID"))
            let notes = try #require(try quire.run(["note", "list", "--json"]).json() as? [[String: Any]])
            #expect(notes.map { $0["removed"] as? Bool } == [false])
        }
    }

    /// A body too long for a command line comes from a file or standard input.
    @Test func aBodyComesFromAFileOrStandardInput() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let long = String(repeating: "line of minutes\n", count: 20_000)  // 320 kB: past a single argument's limit
            let file = quire.directory + "/minutes.md"
            try long.write(toFile: file, atomically: true, encoding: .utf8)
            let id = try quire.ok(["note", "new", "--title", "Minutes", "--body-file", file]).trimmingCharacters(in: .newlines)
            func body() throws -> String? { try (quire.run(["note", "show", id, "--json"]).json() as? [String: Any])?["body"] as? String }
            #expect(try body() == long)

            #expect(try quire.run(["note", "edit", id, "--body-file", "-"], input: Data("short now\n".utf8)).status == 0)
            #expect(try body() == "short now\n")
            // A file that is a pipe or a device reads too: /dev/stdin, a shell's <(command), /dev/null.
            #expect(try quire.run(["note", "edit", id, "--body-file", "/dev/stdin"], input: Data("piped\n".utf8)).status == 0)
            #expect(try body() == "piped\n")
            try quire.ok(["note", "edit", id, "--body-file", "/dev/null"])
            #expect(try body() == "")
            #expect(try quire.run(["note", "edit", id, "--body-file", "-"], input: Data("short now\n".utf8)).status == 0)
            let both = try quire.run(["note", "edit", id, "--body", "x", "--body-file", file])
            #expect(both.status == 64 && both.stderr.hasPrefix("error: --body and --body-file exclude each other\n"))
            let binary = try quire.run(["note", "edit", id, "--body-file", "-"], input: Data([0x61, 0xFF]))
            #expect(binary.status == 1 && binary.stderr == "error: standard input is not UTF-8 text: byte 2 (0xFF) on line 1 is not; "
                + "save it as UTF-8 (from Latin-1: `iconv -f LATIN1 -t UTF-8`)\n")
            // One Latin-1 letter in a long UTF-8 file is found where it is, past
            // an emoji, a CRLF line and a line feed, to mend it in a moment.
            let latin1 = quire.directory + "/latin1.txt"
            try Data("😀 one\r\ntwo\ncaf".utf8 + [0xE9, 0x0A]).write(to: URL(fileURLWithPath: latin1))
            let mixed = try quire.run(["note", "new", "--title", "T", "--body-file", latin1])
            #expect(mixed.status == 1 && mixed.stderr == "error: \(latin1) is not UTF-8 text: byte 18 (0xE9) on line 3 is not; "
                + "save it as UTF-8 (from Latin-1: `iconv -f LATIN1 -t UTF-8`)\n", "\(mixed.stderr)")
            let missing = try quire.run(["note", "new", "--title", "T", "--body-file", file + ".gone"])
            #expect(missing.status == 1 && missing.stderr == "error: cannot read \(file).gone: no such file or directory\n")
            // A folder opens as a file would: only its read fails. It was said to be no such file, or not readable.
            let folder = try quire.run(["note", "new", "--title", "T", "--body-file", quire.directory])
            #expect(folder.status == 1 && folder.stderr == "error: cannot read \(quire.directory): it is a folder, not a file\n", "\(folder.stderr)")
            #expect(try body() == "short now\n")
        }
    }

    /// A body file beginning with a UTF-8 byte order mark (a file saved by
    /// Notepad) lost the mark: U+FEFF is a character of the text, kept.
    /// An editor that adds a mark to the note's file adds nothing to the
    /// note; a title that began with one keeps it.
    @Test func aByteOrderMarkIsKeptAsGivenButNotAddedByAnEditor() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let marked = Data([0xEF, 0xBB, 0xBF]) + Data("body\r\n".utf8)
            let id = try #require(try quire.run(["note", "new", "--title", "\u{FEFF}T", "--body-file", "-"], input: marked)
                .stdout.split(separator: "\n").first.map(String.init))
            // Read with JSONDecoder: Foundation's JSONSerialization drops a
            // U+FEFF that begins a string.
            struct Shown: Decodable { let title: String, body: String }
            func note(_ id: String = id) throws -> (title: [UInt8], body: [UInt8]) {
                let note = try JSONDecoder().decode(Shown.self, from: Data(quire.run(["note", "show", id, "--json"]).stdout.utf8))
                return (Array(note.title.utf8), Array(note.body.utf8))
            }
            #expect(try note().body == Array(marked))
            try quire.ok(["note", "edit", id], environment: ["EDITOR": "sed -i s/body/text/"])
            #expect(try note().title == Array("\u{FEFF}T".utf8))
            #expect(try note().body == Array("\u{FEFF}text\r\n".utf8))

            let plain = try quire.ok(["note", "new", "--title", "Plain", "--body", "x"]).trimmingCharacters(in: .newlines)
            try quire.ok(["note", "edit", plain], environment: ["EDITOR": "printf '\\357\\273\\277Plain\\n\\ny\\n' >"])
            #expect(try note(plain) == (Array("Plain".utf8), Array("y".utf8)))
        }
    }

    /// `--body-file -` with standard input closed (`<&-`) or a directory
    /// (`< /`) crashed quire (a trap in Foundation, exit 132): it is a
    /// failure naming standard input, and no note is made.
    @Test func aBodyFromStandardInputThatCannotBeReadIsAFailure() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            for redirection in ["<&-", "< /"] {
                let result = try quire.run(["note", "new", "--title", "T", "--body-file", "-"],
                                           launcher: ["sh", "-c", "exec \"$@\" \(redirection)", "sh"])
                #expect(result.status == 1, "\(redirection): \(result.stderr.prefix(200))")
                #expect(result.stderr == "error: cannot read standard input (--body-file -): it is closed, or not readable\n")
            }
            #expect(try quire.ok(["note", "list", "--json"]) == "[]\n")
        }
    }

    /// Standard output that cannot be written (a full disk, here
    /// /dev/full; a closed descriptor) made quire trap after `note new`
    /// had made the note (exit 132): a script retrying made it twice. It
    /// fails now, saying that the work is done and only the output lost.
    @Test func outputThatCannotBeWrittenIsAFailureNotACrash() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            for redirection in ["> /dev/full", ">&-"] {
                let result = try quire.run(["note", "new", "--title", "T"], launcher: ["sh", "-c", "exec \"$@\" \(redirection)", "sh"])
                #expect(result.status == 1, "\(redirection): \(result.stderr.prefix(200))")
                #expect(result.stderr.hasPrefix("error: cannot write to standard output ("))
                #expect(result.stderr.hasSuffix("); the command did its work, only what it printed is lost\n"))
            }
            #expect(try #require(try quire.run(["note", "list", "--json"]).json() as? [Any]).count == 2)
        }
    }

    @Test func editorEditsApplyAsMinimalTextEdits() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Old title", "--body", "old body"]).trimmingCharacters(in: .newlines)
            try quire.ok(["note", "edit", id], environment: ["EDITOR": "sed -i s/old/new/g"])
            let note = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
            #expect(note["title"] as? String == "Old title")
            #expect(note["body"] as? String == "new body")
            // Replacing "old" by "new" touched three characters, not the whole body.
            let log = try #require(try quire.run(["log", id, "--json"]).json() as? [[String: Any]])
            let counters = try #require(log.first?["counters"] as? [String: Int])
            #expect(counters["last"]! - counters["first"]! + 1 == 6)  // 3 deleted + 3 inserted
        }
    }

    /// An editor that saves with CRLF line ends: the first line is still the
    /// title alone, and the body what follows the empty line. A carriage
    /// return ending a body read back unchanged stays.
    @Test func anEditorSavingCRLFLineEndsKeepsTitleAndBodyApart() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Old", "--body", "one\ntwo\r"]).trimmingCharacters(in: .newlines)
            try quire.ok(["note", "edit", id], environment: ["EDITOR": "true"])
            var note = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
            #expect(note["body"] as? String == "one\ntwo\r")
            #expect(try #require(try quire.run(["log", id, "--json"]).json() as? [Any]).count == 1)

            try quire.ok(["note", "edit", id], environment: ["EDITOR": "printf 'New\\r\\n\\r\\none\\r\\nthree\\r\\n' >"])
            note = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
            #expect(note["title"] as? String == "New")
            #expect(note["body"] as? String == "one\r\nthree")
        }
    }

    /// An editor set to save CRLF line ends (as on Windows) made every line
    /// of a note without carriage returns a change, each line gaining a
    /// "\r". Of such a note, a file whose every line ends "\r\n" is read
    /// with "\n": only what was typed changes. A file with "\r\n" on some
    /// lines only (a text pasted from elsewhere) is taken as left.
    @Test func anEditorSavingCRLFThroughoutAddsNoCarriageReturns() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Groceries", "--body", "milk\neggs\nbread"]).trimmingCharacters(in: .newlines)
            func note() throws -> (title: [UInt8], body: [UInt8]) {
                let shown = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
                return (Array(try #require(shown["title"] as? String).utf8), Array(try #require(shown["body"] as? String).utf8))
            }
            func changes() throws -> Int { try #require(try quire.run(["log", id, "--json"]).json() as? [Any]).count }

            try quire.ok(["note", "edit", id], environment: ["EDITOR": "sed -i 's/$/\\r/'"])
            #expect(try note() == (Array("Groceries".utf8), Array("milk\neggs\nbread".utf8)))
            #expect(try changes() == 1)

            try quire.ok(["note", "edit", id], environment: ["EDITOR": "sed -i -e s/eggs/oat-milk/ -e 's/$/\\r/'"])
            #expect(try note() == (Array("Groceries".utf8), Array("milk\noat-milk\nbread".utf8)))
            #expect(try changes() == 2)

            try quire.ok(["note", "edit", id], environment: ["EDITOR": "sed -i '4s/$/\\r/'"])
            #expect(try note() == (Array("Groceries".utf8), Array("milk\noat-milk\r\nbread".utf8)))
        }
    }

    /// An editor's file emptied whole emptied the note, title and body,
    /// where a person who deletes everything most likely means to give up
    /// (as an empty message gives up `git commit`): the note is left as it
    /// was, and the error says how to empty it, its body, or remove it on
    /// purpose. Its lines blanked but kept empty it, as typed; a note
    /// already empty is edited as ever, without a word.
    @Test func anEmptiedEditorFileLeavesTheNoteAndSaysHowToEmptyIt() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Trip", "--body", "train\nhotel"]).trimmingCharacters(in: .newlines)
            func note() throws -> [String?] {
                let shown = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
                return [shown["title"] as? String, shown["body"] as? String]
            }
            for editor in [": >", "printf '\\n' >"] {
                let result = try quire.run(["note", "edit", id], environment: ["EDITOR": editor])
                #expect(result.status == 1)
                #expect(result.stderr == "error: the editor (\(editor)) left the file empty; the note is unchanged (an empty file cancels the edit): "
                    + "to empty the note, blank its lines but keep them (the title's and the empty one after it); "
                    + "to empty its body, `quire note edit \(id) --body ''`; to remove the note, `quire note rm \(id)`\n", "\(result.stderr)")
                #expect(try note() == ["Trip", "train\nhotel"])
            }
            try quire.ok(["note", "edit", id, "--body", ""])
            #expect(try note() == ["Trip", ""])
            try quire.ok(["note", "edit", id], environment: ["EDITOR": "printf '\\n\\n' >"])
            #expect(try note() == ["", ""])
            let again = try quire.run(["note", "edit", id], environment: ["EDITOR": ": >"])
            #expect(again.status == 0 && again.stderr.isEmpty, "\(again.stderr)")
            #expect(try note() == ["", ""])
        }
    }

    /// A note whose title is empty and whose body is only spaces holds
    /// something an emptied file would lose: the edit is cancelled, as for
    /// any note with text. (It emptied the body without a word: its file is
    /// all whitespace, which was taken for an empty note's.)
    @Test func anEmptiedEditorFileKeepsABodyOfSpaces() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Indent", "--body", "x"]).trimmingCharacters(in: .newlines)
            try quire.ok(["note", "edit", id], environment: ["EDITOR": "printf '\\n\\n    \\n' >"])
            func note() throws -> [String?] {
                let shown = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
                return [shown["title"] as? String, shown["body"] as? String]
            }
            try #require(try note() == ["", "    "])
            let result = try quire.run(["note", "edit", id], environment: ["EDITOR": ": >"])
            #expect(result.status == 1 && result.stderr.contains("left the file empty; the note is unchanged"), "\(result.stderr)")
            #expect(try note() == ["", "    "])
        }
    }

    /// While the editor is open, another process edits the note (as a sync
    /// would); what it wrote stays when the edited copy comes back.
    @Test func anEditWhileTheEditorIsOpenIsKept() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Shopping", "--body", "milk\neggs\nbread"]).trimmingCharacters(in: .newlines)
            let other = "'\(QuireRunner.binaryURL.path)' --store '\(quire.store)' note edit \(id) --append '\nbutter' --title Groceries"
            try quire.ok(["note", "edit", id], environment: ["EDITOR": "\(other) && sed -i s/eggs/oat-milk/"])
            let note = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
            #expect(note["title"] as? String == "Groceries")
            #expect(note["body"] as? String == "milk\noat-milk\nbread\nbutter")
        }
    }

    /// A note removed while the editor is open keeps the edit, and says so.
    @Test func anEditOfANoteRemovedMeanwhileIsSavedWithAWarning() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Trip", "--body", "train"]).trimmingCharacters(in: .newlines)
            let remove = "'\(QuireRunner.binaryURL.path)' --store '\(quire.store)' note rm \(id)"
            let result = try quire.run(["note", "edit", id], environment: ["EDITOR": "\(remove) >/dev/null && sed -i s/train/night-train/"])
            #expect(result.status == 0)
            #expect(result.stderr == "warning: note \(id) was removed while it was being edited (by a sync or another process); "
                + "the edit is saved, and `quire note restore \(id)` brings the note back\n")
            try quire.ok(["note", "restore", id])
            let note = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
            #expect(note["body"] as? String == "night-train")
        }
    }

    /// An editor that has another process take the store's write lock (and
    /// keep it 20 s, past the 5 s a save waits for it), runs `meanwhile` (a
    /// command ending in `;` or `&`), then changes "draft" to "final": its
    /// save waits, then fails.
    func editorLockingTheStore(_ quire: QuireRunner, meanwhile: String = "") -> String {
        let marker = quire.directory + "/locked"
        // It closes what it inherited, or the test's runner would wait for it too.
        let holdLock = "python3 -c \"import os, sqlite3, time; os.closerange(3, 4096); "
            + "c = sqlite3.connect('\(quire.store)', isolation_level=None); "
            + "c.execute('BEGIN EXCLUSIVE'); open('\(marker)', 'w').close(); time.sleep(20)\" >/dev/null 2>&1"
        return "\(holdLock) & while [ ! -e '\(marker)' ]; do sleep 0.05; done; \(meanwhile) sed -i s/draft/final/"
    }

    /// When the edit cannot be stored (here another process holds the
    /// store's write lock past the busy timeout), what the editor left is
    /// kept and its path printed.
    @Test func anEditThatCannotBeStoredKeepsTheEditorsFile() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T", "--body", "draft"]).trimmingCharacters(in: .newlines)
            let result = try quire.run(["note", "edit", id], environment: ["EDITOR": editorLockingTheStore(quire)])
            #expect(result.status == 1)
            let kept = try #require(result.stderr.firstRange(of: "kept at ").map { String(result.stderr[$0.upperBound...].dropLast()) })
            #expect(try String(contentsOfFile: kept, encoding: .utf8) == "T\n\nfinal\n")
            try? FileManager.default.removeItem(atPath: kept)
        }
    }

    /// Ctrl-C once the editor has exited, while the edit is applied (a long
    /// one takes a while; here the store is locked, so the save waits),
    /// ended quire at once and silently: the edit was left in the temporary
    /// folder, unnamed. Now quire names the file as it ends (exit 130).
    @Test func anInterruptWhileTheEditIsSavedNamesTheFileKeepingIt() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T", "--body", "draft"]).trimmingCharacters(in: .newlines)
            // $PPID, in the shell running the editor, is quire: Ctrl-C 1 s after
            // the editor exits, well within the 5 s the save waits for the lock.
            let editor = editorLockingTheStore(quire, meanwhile: "(sleep 1; kill -INT $PPID) >/dev/null 2>&1 &")
            let result = try quire.run(["note", "edit", id], environment: ["EDITOR": editor], launcher: QuireRunner.asForegroundGroup)
            #expect(result.status == 130, "\(result.stderr)")
            let kept = try #require(result.stderr.firstRange(of: "error: interrupted before the edit was surely saved; what the editor left is kept at ")
                .map { String(result.stderr[$0.upperBound...].dropLast()) }, "\(result.stderr)")
            #expect(try String(contentsOfFile: kept, encoding: .utf8) == "T\n\nfinal\n")
            try? FileManager.default.removeItem(atPath: kept)
        }
    }

    /// The edit is saved when the editor's shell exits, even if it left a
    /// process running (an editor's server): that one is not waited for.
    /// Here the process left running waits to see the edit saved.
    @Test func whatTheEditorLeavesRunningIsNotWaitedFor() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T", "--body", "draft"]).trimmingCharacters(in: .newlines)
            let seen = quire.directory + "/seen"
            let show = "'\(QuireRunner.binaryURL.path)' --store '\(quire.store)' note show \(id)"
            let server = "for i in $(seq 300); do \(show) | grep -q final && { touch '\(seen)'; break; }; sleep 0.1; done"
            try quire.ok(["note", "edit", id], environment: ["EDITOR": "(\(server)) >/dev/null 2>&1 & sed -i s/draft/final/"])
            #expect(FileManager.default.fileExists(atPath: seen))
        }
    }

    @Test func anEditorThatLeavesNoFileChangesNothing() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T", "--body", "abc"]).trimmingCharacters(in: .newlines)
            let removed = try quire.run(["note", "edit", id], environment: ["EDITOR": "rm"])
            #expect(removed.status == 1)
            #expect(removed.stderr.hasPrefix("error: the editor (rm) left no file at "))
            #expect(removed.stderr.hasSuffix("; the note is unchanged\n"))
            // A file that is not UTF-8 is kept, so that what was typed can be saved.
            let binary = try quire.run(["note", "edit", id], environment: ["EDITOR": "printf 'typed \\377' >"])
            #expect(binary.status == 1)
            #expect(binary.stderr.contains(" left a file that is not UTF-8 text (byte 7 (0xFF) on line 1 is not), kept at "), "\(binary.stderr)")
            let kept = try #require(binary.stderr.firstRange(of: "kept at ").map { binary.stderr[$0.upperBound...] }?.split(separator: ";").first)
            #expect(FileManager.default.contents(atPath: String(kept)) == Data(Array("typed ".utf8) + [0xFF]))
            try? FileManager.default.removeItem(atPath: String(kept))
            #expect(try quire.ok(["note", "show", id]).hasSuffix("title   T\ntags\npinned  no\n\nabc\n"))
        }
    }

    /// A new note with the body "body", titled `title` with `added` then
    /// typed at its end by another writer (code opening the store), as a
    /// sync brings what `--title` refuses: line breaks.
    func noteTitled(_ title: String, thenAdding added: String, _ quire: QuireRunner) throws -> String {
        try quire.ok(["init"])
        let id = try quire.ok(["note", "new", "--title", title, "--body", "body"]).trimmingCharacters(in: .newlines)
        try DocumentStore(path: quire.store).edit(try #require(DocumentID(rawValue: id))) { tx in
            if case .object(.text, let text)? = try tx.document.get(.root, key: "title") { try tx.insertText(text, at: title.unicodeScalars.count, added) }
        }
        return id
    }

    /// A title another replica wrote on two lines (a notes app may allow
    /// them) does not fit the file's one title line: read back, its second
    /// line would go to the body. An editor that changes nothing must leave
    /// the note as it is, not move text that then syncs everywhere.
    @Test func anEditorThatChangesNothingLeavesTheNoteAsItIs() throws {
        try withRunner { quire in
            let id = try noteTitled("Two", thenAdding: "\nlines\r", quire)
            try quire.ok(["note", "edit", id], environment: ["EDITOR": "true"])
            let note = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
            #expect(note["title"] as? String == "Two\nlines\r")
            #expect(note["body"] as? String == "body")
            #expect(try #require(try quire.run(["log", id, "--json"]).json() as? [Any]).count == 2)
        }
    }

    /// A title another replica ended with a carriage return was read back
    /// from the editor's file as a CRLF file's: the title lost its "\r",
    /// and the body gained a line break at each end.
    @Test func aTitleEndingInACarriageReturnKeepsItThroughTheEditor() throws {
        try withRunner { quire in
            let id = try noteTitled("Done", thenAdding: "\r", quire)
            try quire.ok(["note", "edit", id], environment: ["EDITOR": "sed -i s/body/text/"])
            let note = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
            #expect((note["title"] as? String).map { Array($0.utf8) } == Array("Done\r".utf8))
            #expect((note["body"] as? String).map { Array($0.utf8) } == Array("text".utf8))
        }
    }

    /// `$EDITOR`, else `$VISUAL`, else `vi`: an empty variable is passed
    /// over like an unset one. An empty `$VISUAL` was run as the editor
    /// (the shell then ran the note's file: "Permission denied", exit 1).
    @Test func emptyEditorVariablesFallBackToVi() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T", "--body", "draft"]).trimmingCharacters(in: .newlines)
            let bin = quire.directory + "/bin"
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
            try writeShellScript(#"sed -i s/draft/by-vi/ "$1""#, to: bin + "/vi")
            let path = bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            try quire.ok(["note", "edit", id], environment: ["EDITOR": "", "VISUAL": "", "PATH": path])
            #expect(try quire.ok(["note", "show", id]).hasSuffix("\n\nby-vi\n"))
        }
    }

    /// An editor that exits with an error (vim's `:cq`, a crash after a
    /// save) leaves the note unchanged, but what was typed into the file is
    /// kept and its path printed; a file left as it was is removed.
    @Test func anEditorThatFailsKeepsWhatWasTyped() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T", "--body", "draft"]).trimmingCharacters(in: .newlines)
            let typed = try quire.run(["note", "edit", id], environment: ["EDITOR": "sed -i s/draft/long-typed-text/ \"$1\"; exit 1; :"])
            #expect(typed.status == 1)
            #expect(typed.stderr.hasPrefix("error: the editor (sed -i s/draft/long-typed-text/ \"$1\"; exit 1; :) exited with status 1 and left a changed file, kept at "))
            let kept = try #require(typed.stderr.firstRange(of: "kept at ").map { typed.stderr[$0.upperBound...] }?.split(separator: ";").first)
            #expect(try String(contentsOfFile: String(kept), encoding: .utf8) == "T\n\nlong-typed-text\n")
            try? FileManager.default.removeItem(atPath: String(kept))
            #expect(typed.stderr.hasSuffix("; the note is unchanged\n"))

            let untouched = try quire.run(["note", "edit", id], environment: ["EDITOR": "false"])
            #expect(untouched.status == 1)
            #expect(untouched.stderr == "error: the editor (false) exited with status 1; the note is unchanged\n")
            #expect(try quire.ok(["note", "show", id]).hasSuffix("\n\ndraft\n"))
        }
    }

    /// An editor the shell cannot find (EDITOR set for another machine)
    /// said only "exited with status 127", and a temporary folder the note
    /// cannot be written to (full, or missing) printed Foundation's error
    /// object whole. Each now says what is wrong and what to do. The file
    /// is the user's alone: the temporary folder is shared.
    @Test func anEditorThatCannotRunOrGetItsFileSaysWhatToDo() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T", "--body", "draft"]).trimmingCharacters(in: .newlines)
            let missing = try quire.run(["note", "edit", id], environment: ["EDITOR": "quire-test-no-such-editor"])
            #expect(missing.status == 1 && missing.stderr.hasSuffix("error: the editor (quire-test-no-such-editor) was not found (the shell's status 127); the note is unchanged: "
                + "set EDITOR to an editor this machine has (nano, vi, `code --wait`), or edit with options (`quire note edit --help`)\n"), "\(missing.stderr)")

            let folder = quire.directory + "/no-such-folder/"
            let unwritable = try quire.run(["note", "edit", id], environment: ["EDITOR": "true", "TMPDIR": folder])
            #expect(unwritable.status == 1)
            #expect(unwritable.stderr.hasPrefix("error: cannot write the note to a file for the editor, \(folder)quire-note-"), "\(unwritable.stderr)")
            #expect(unwritable.stderr.hasSuffix(".txt: no such file or directory; the note is unchanged: "
                + "make room in \(folder), or set TMPDIR to a folder with room that you may write to\n"), "\(unwritable.stderr)")

            let mode = quire.directory + "/mode"
            try quire.ok(["note", "edit", id], environment: ["EDITOR": "stat -c %a >\(mode)"])
            #expect(try String(contentsOfFile: mode, encoding: .utf8) == "600\n")
            #expect(try quire.ok(["note", "show", id]).hasSuffix("\n\ndraft\n"))
        }
    }

    /// Ctrl-C (or Ctrl-\) typed while the editor is open goes to every
    /// process of the terminal's foreground group: quire, the shell running
    /// the editor, the editor. The editor handles it (vim running a `:!`
    /// command, a GUI editor started from the terminal) and goes on; quire
    /// and the shell wait on for it, as git does, instead of dying and
    /// leaving what the editor then saves out of the note. Here the editor
    /// ignores SIGINT, sends it to its group, then saves.
    @Test func anInterruptWhileTheEditorIsOpenDoesNotLoseTheEdit() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T", "--body", "draft"]).trimmingCharacters(in: .newlines)
            let editor = "sh -c 'trap \"\" INT QUIT; kill -INT 0; kill -QUIT 0; sed -i s/draft/final/ \"$1\"' editor"
            let result = try quire.run(["note", "edit", id], environment: ["EDITOR": editor], launcher: QuireRunner.asForegroundGroup)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try quire.ok(["note", "show", id]).hasSuffix("\n\nfinal\n"))
        }
    }

    /// The examples `note edit --help` prints, run by a shell as printed,
    /// do what they show: one appended "\\neggs", which a shell passes on as
    /// a backslash and an n, and quire stored as such.
    @Test func theEditExamplesWorkAsPrinted() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Shopping", "--body", "milk"]).trimmingCharacters(in: .newlines)
            let help = try quire.ok(["note", "edit", "--help"])
            let examples = help.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("quire note edit 0190f1c2 --") }
            #expect(examples.count == 2)
            let quireCommand = "'\(QuireRunner.binaryURL.path)' --store '\(quire.store)'"
            for example in examples {
                let command = example.replacingOccurrences(of: "quire", with: quireCommand).replacingOccurrences(of: "0190f1c2", with: id)
                let shell = Process()
                shell.executableURL = URL(fileURLWithPath: "/bin/sh")
                shell.arguments = ["-c", command]
                try shell.run()
                shell.waitUntilExit()
                #expect(shell.terminationStatus == 0, "\(example)")
            }
            let note = try #require(try quire.run(["note", "show", id, "--json"]).json() as? [String: Any])
            #expect(note["body"] as? String == "TODO: milk, eggs")
            #expect(note["tags"] as? [String] == ["todo"])
        }
    }

    @Test func usageErrorsAndFailures() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T", "--body", "abc"]).trimmingCharacters(in: .newlines)
            for arguments in [["note"], ["note", "new"], ["note", "new", "--title"], ["note", "edit", id, "--delete", "x", "1"],
                              ["note", "show"], ["note", "frob"], ["note", "list", "--title", "x"], ["note", "edit", id, "--pin", "--unpin"]] {
                let result = try quire.run(arguments)
                #expect(result.status == 64, "quire \(arguments) exited \(result.status)")
                #expect(result.stderr.hasPrefix("error: "))
                #expect(result.stderr.contains("usage: quire"))
            }
            // A wrong command line is a usage error whatever the id names, or a store that is not there.
            for (arguments, store) in [(["note", "edit", "ffffffff", "--pin", "--unpin"], quire.store),
                                       (["note", "edit", "ffffffff", "--insert", "x", "y"], quire.store),
                                       (["note", "edit", id, "--body", "a", "--body-file", "b"], quire.directory + "/missing.quire")] {
                let result = try quire.run(arguments, store: store)
                #expect(result.status == 64, "quire \(arguments) exited \(result.status)")
                #expect(result.stderr.contains("usage: quire note edit"))
            }
            for arguments in [["note", "show"], ["note", "rm"], ["log"], ["heads"], ["vv"], ["blame"], ["conflicts"], ["diff", "--from", "1@0000000000000001"]] {
                let result = try quire.run(arguments, store: quire.directory + "/missing.quire")
                #expect(result.status == 64, "quire \(arguments) exited \(result.status)")
                #expect(result.stderr.hasPrefix("error: missing ID\nusage: quire \(arguments.prefix { !$0.hasPrefix("-") }.joined(separator: " "))"))
            }
            // A title is one line: a second one would become the body after an editor session.
            for arguments in [["note", "new", "--title", "two\nlines"], ["note", "edit", id, "--title", "two\nlines"]] {
                let result = try quire.run(arguments)
                #expect(result.status == 64, "quire \(arguments) exited \(result.status)")
                #expect(result.stderr.hasPrefix("error: --title must be one line; put the rest in --body\n"))
            }
            // An empty title given is a script's mistake (an unset variable), not a wish for an untitled note;
            // one of whitespace only (`--title "$NAME "`) shows as empty just the same.
            for title in ["", "   ", "\t \u{3000}"] {
                for arguments in [["note", "new", "--title", title], ["note", "edit", id, "--title", title]] {
                    let result = try quire.run(arguments)
                    #expect(result.status == 64, "quire \(arguments) exited \(result.status)")
                    #expect(result.stderr.hasPrefix("error: --title needs text, not an empty one\nusage: quire note \(arguments[1])"), "\(result.stderr)")
                }
            }
            let titles = try #require(try quire.run(["note", "list", "--json"]).json() as? [[String: Any]])
            #expect(titles.map { $0["title"] as? String } == ["T"])
            // An option given twice is refused, not read as its last value: the first would be lost unsaid.
            let twice = try quire.run(["note", "new", "--title", "first", "--title", "second"])
            #expect(twice.status == 64)
            #expect(twice.stderr.hasPrefix("error: --title may be given only once\nusage: quire note new"))
            // A position or count below 0 is a usage error, for each number it takes.
            for arguments in [["--insert", "-1", "x"], ["--delete", "-1", "1"], ["--delete", "0", "-1"]] {
                let negative = try quire.run(["note", "edit", id] + arguments)
                #expect(negative.status == 64, "quire note edit \(arguments) exited \(negative.status)")
                let number = arguments[1] == "-1" ? "POS" : "COUNT"
                #expect(negative.stderr.hasPrefix("error: \(number) must be a whole number of 0 or more, not \"-1\"\n"))
            }
            #expect(try quire.ok(["note", "show", id]).hasSuffix("abc\n"))
            let notes = try #require(try quire.run(["note", "list", "--json"]).json() as? [[String: Any]])
            #expect(notes.map { $0["title"] as? String } == ["T"])
            let past = try quire.run(["note", "edit", id, "--insert", "9", "x"])
            #expect(past.status == 1)
            #expect(past.stderr == "error: cannot insert at 9: the body has 3 characters\n")
            // A count so large that adding it to the position would overflow is past the end too.
            let huge = try quire.run(["note", "edit", id, "--delete", "1", "\(Int.max)"])
            #expect(huge.status == 1)
            #expect(huge.stderr == "error: cannot delete \(Int.max) characters at 1: the body has 3 characters\n")
            // `--` ends the options: a body may start with a dash.
            try quire.ok(["note", "edit", "--append", "-x", "--", id])
            #expect(try quire.ok(["note", "show", id]).hasSuffix("abc-x\n"))
        }
    }

    /// A `note new` whose commit fails (here a trigger refuses the change's
    /// row, as a full disk would) leaves no note behind, not even an
    /// empty one: the note and its first change are one commit.
    @Test func aNewNoteThatCannotBeSavedLeavesNothing() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let database = try Database(path: quire.store)
            try database.execute(sql: "CREATE TRIGGER refuse BEFORE INSERT ON changes BEGIN SELECT RAISE(ABORT, 'refused'); END")
            database.close()
            let result = try quire.run(["note", "new", "--title", "Lost"])
            #expect(result.status == 1)
            #expect(try quire.ok(["note", "list", "--all", "--json"]) == "[]\n")
            #expect(try quire.ok(["status", "--json"]).contains("\"documents\": 0,"))
        }
    }

    /// A damaged store is named, with what to do about it, and SQLite's
    /// report after that; the failed command changes nothing in the file.
    @Test func aDamagedStoreFileGivesAClearError() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            for index in 0..<20 { try quire.ok(["note", "new", "--title", "Note \(index)", "--body", String(repeating: "x", count: 500)]) }
            // Overwrite the documents table's first page with garbage: the store opens, listing it fails.
            let database = try Database(path: quire.store, readOnly: true)
            let page = try database.query(sql: "SELECT rootpage FROM sqlite_master WHERE name = 'documents'")[0].int64(0)
            let pageSize = try database.query(sql: "PRAGMA page_size")[0].int64(0)
            database.close()
            let handle = try #require(FileHandle(forUpdatingAtPath: quire.store))
            try handle.seek(toOffset: UInt64((page - 1) * pageSize))
            try handle.write(contentsOf: Data(repeating: 0xA5, count: Int(pageSize)))
            try handle.close()
            let damaged = try Data(contentsOf: URL(fileURLWithPath: quire.store))
            let advice = "error: the store \(quire.store) is damaged; `quire inspect \(quire.store)` reports what is wrong with the file\n"
            for arguments in [["note", "list"], ["note", "new", "--title", "T"]] {
                let result = try quire.run(arguments)
                #expect(result.status == 1, "quire \(arguments) exited \(result.status)")
                #expect(result.stderr.hasPrefix(advice + "SQLite's report: the database file is corrupt: "), "quire \(arguments): \(result.stderr)")
                // One line, naming the file, without the statement SQLite ran (several lines of SQL).
                #expect(result.stderr.split(separator: "\n").count == 2 && result.stderr.hasSuffix(", in \(quire.store)\n"), "\(result.stderr)")
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: quire.store)) == damaged)
            // Merging it from a sound store names it, not the sound one.
            let sound = quire.directory + "/sound.quire"
            try quire.ok(["init"], store: sound)
            #expect(try quire.run(["merge", quire.store], store: sound).stderr.hasPrefix(advice))

            // A file cut short does not open at all: the same advice.
            try FileHandle(forUpdatingAtPath: quire.store)?.truncate(atOffset: 100)
            let cut = try quire.run(["note", "list"])
            #expect(cut.status == 1)
            #expect(cut.stderr.hasPrefix(advice + "SQLite's report: "))
        }
    }

    /// A store that may not be written says so, and what to check; it is
    /// left as it was, and still reads.
    @Test func aReadOnlyStoreSaysSoAndIsLeftAsItWas() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            try quire.ok(["note", "new", "--title", "kept"])
            let before = try Data(contentsOf: URL(fileURLWithPath: quire.store))
            // Permissions do not stop root, who runs these tests in CI; the immutable attribute does.
            if geteuid() == 0 {
                try #require(try runTool("/usr/bin/chattr", ["+i", quire.store]) == 0)
            } else {
                try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: quire.store)
            }
            defer { if geteuid() == 0 { _ = try? runTool("/usr/bin/chattr", ["-i", quire.store]) } }
            let refused = try quire.run(["note", "new", "--title", "lost"])
            #expect(refused.status == 1)
            #expect(refused.stderr.hasPrefix("""
                error: the store \(quire.store) is read-only, nothing was saved; check that you may write to the file and to its directory, and that its disk is not mounted read-only
                SQLite's report: the database is read-only
                """), "\(refused.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: quire.store)) == before)
            let titles = try #require(try quire.run(["note", "list", "--json"]).json() as? [[String: Any]]).map { $0["title"] as? String }
            #expect(titles == ["kept"])
        }
    }

    /// Runs a program and returns its exit status.
    private func runTool(_ path: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
