import Foundation
import Quire
import Testing

/// The merge-explaining commands (`show --at`, `diff`, `blame`, `log`,
/// `conflicts`) on the cases a review found them wrong in.
@Suite struct HistoryCommandTests {
    @Test func aVersionThatIsNoVersionIsAUsageErrorWhateverTheNoteAndTheStore() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T", "--body", "abc"]).trimmingCharacters(in: .newlines)
            let missing = quire.directory + "/missing.quire"
            for (arguments, store) in [(["show", "ffffffff", "--at", "yesterday"], quire.store),
                                       (["note", "show", id, "--at", "1@"], missing),
                                       (["diff", "ffffffff", "--from", "yesterday"], quire.store),
                                       (["diff", id, "--from", "1@0000000000000001", "--to", ","], missing),
                                       // A sign, which Swift's integer parsing takes: "+" made another replica.
                                       (["show", id, "--at", "1@+000000000000001"], missing),
                                       (["show", id, "--at", "0000000000000001:+1"], missing),
                                       // Empty, as from an unset shell variable: the note before it was made.
                                       (["show", id, "--at", ""], quire.store), (["diff", id, "--from", ""], quire.store),
                                       (["conflicts", "ffffffff", "--at", "yesterday"], quire.store), (["conflicts", id, "--at", ""], missing)] {
                let result = try quire.run(arguments, store: store)
                #expect(result.status == 64, "quire \(arguments) exited \(result.status)")
                #expect(result.stderr.contains("usage: quire \(arguments.prefix { !$0.hasPrefix("-") }.dropLast().joined(separator: " ")) ID"),
                        "\(result.stderr)")
            }
        }
    }

    /// An empty note id (an unset shell variable) names no note, even in a
    /// store of one, whose id every prefix check passes: a usage error
    /// naming the argument, before the store is opened, in every command
    /// that takes one (`log ""` said `no note matches ""`, exit 1).
    @Test func anEmptyNoteIDIsAUsageErrorInEveryCommandTakingOne() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            try quire.ok(["note", "new", "--title", "T", "--body", "abc"])
            let missing = quire.directory + "/missing.quire"
            let commands: [[String]] = [["log", ""], ["heads", ""], ["vv", ""], ["show", ""], ["diff", "", "--from", "1@0000000000000001"],
                                        ["blame", ""], ["blame", "", "--title"], ["blame", "", "--deleted"], ["conflicts", ""], ["note", "show", ""],
                                        ["note", "edit", "", "--title", "U"], ["note", "rm", ""], ["note", "restore", ""], ["compact", ""]]
            for arguments in commands {
                for store in [quire.store, missing] {
                    let result = try quire.run(arguments, store: store)
                    #expect(result.status == 64, "quire \(arguments) exited \(result.status)")
                    #expect(result.stderr.hasPrefix("error: ID is empty, which names no note; give a note's id or a prefix of it\nusage: quire "),
                            "\(result.stderr)")
                }
            }
            #expect(try quire.ok(["note", "list"]).contains("T"))
        }
    }

    /// `diff` shows whole words: "Cat" to "Cart" is the word replaced, not
    /// an "r" typed inside it, and two changed words with a space between
    /// are one edit (it showed `title @2 +"r"`, then `body @7 -"ck"`,
    /// `body @9 +"et"`, `body @10 -"f"`, `body @11 +"b"` around the letters
    /// both words kept).
    @Test func diffShowsWholeWords() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Cat", "--body", "the quick fox"]).trimmingCharacters(in: .newlines)
            let before = try quire.ok(["vv", id]).trimmingCharacters(in: .newlines)
            try quire.ok(["note", "edit", id, "--title", "Cart", "--body", "the quiet box"])
            let after = try quire.ok(["vv", id]).trimmingCharacters(in: .newlines)
            #expect(try quire.ok(["diff", id, "--from", before]) == """
                from  \(before)
                to    \(after) (current)

                title @0 -"Cat"
                title @3 +"Cart"
                body @4 -"quick fox"
                body @13 +"quiet box"

                """)
        }
    }

    /// What one change did, which `log` lists but does not show: `diff
    /// --change` compares the note it built on with the note after it, so a
    /// merged-in change shows its own edits, not the other side's; a note's
    /// first change is compared with nothing.
    @Test func diffOfAChangeShowsWhatThatChangeDidAlone() throws {
        try withRunner { quire in
            let stores = try MergeStoryTests.TwoStores(quire)  // "Groceries", "milk"
            let (laptop, id, phoneReplica) = (stores.laptop, stores.id, stores.phoneReplica)
            try stores.editBothAndMerge(laptop: ["--insert", "0", "Buy "], phone: ["--delete", "0", "4", "--insert", "0", "bread", "--tag", "t"])
            let log = try #require(try quire.run(["log", id, "--json"], store: laptop).json() as? [[String: Any]])
            let phoneChange = try #require(log.first { $0["replica"] as? String == phoneReplica })
            let (made, edited) = (try #require(log.last), try #require(log.dropFirst().first))
            // Each change's id (its first operation) and the version right after it.
            func key(_ change: [String: Any], _ name: String) throws -> String { try #require(change[name] as? String) }
            let (madeID, editedID, phoneID) = (try key(made, "id"), try key(edited, "id"), try key(phoneChange, "id"))
            let (madeVersion, editedVersion) = (try key(made, "version"), try key(edited, "version"))
            // Not the phone change's version in this log, which holds the laptop's edit applied before it: its own and its past.
            let phoneVersion = try key(try #require(try quire.run(["show", id, "--at", phoneID, "--json"], store: laptop).json() as? [String: Any]), "version")

            let phoneDiff = """
                from  \(madeVersion)
                to    \(phoneVersion)

                body @0 -"milk"
                body @4 +"bread"
                tags: [] → ["t"]

                """
            #expect(try quire.ok(["diff", id, "--change", phoneID], store: laptop) == phoneDiff)
            // Any operation of the change names it, as in versions.
            let last = try #require((phoneChange["counters"] as? [String: Int])?["last"])
            #expect(try quire.ok(["diff", id, "--change", "\(last)@\(phoneReplica)"], store: laptop) == phoneDiff)
            #expect(try quire.ok(["diff", id, "--change", editedID], store: laptop) == """
                from  \(madeVersion)
                to    \(editedVersion)

                body @0 +"Buy "

                """)
            let first = try #require(try quire.run(["diff", id, "--change", madeID, "--json"], store: laptop).json() as? [String: Any])
            #expect(first["from"] as? String == "" && first["to"] as? String == madeVersion)
            #expect((first["text"] as? [[String: Any]])?.map { $0["text"] as? String } == ["Groceries", "milk"])
            #expect(try quire.ok(["diff", id, "--change", madeID], store: laptop).hasPrefix("from  - (before the note's first change)\n"))

            for wrong in [["--change", "1@phone"], ["--change", "1@\(phoneReplica)", "--from", "1@\(phoneReplica)"], ["--change", ""]] {
                let result = try quire.run(["diff", id] + wrong, store: laptop)
                #expect(result.status == 64 && result.stderr.contains("usage: quire diff ID"), "\(wrong): \(result.stderr)")
            }
            let missing = try quire.run(["diff", id, "--change", "99@\(phoneReplica)"], store: laptop)
            #expect(missing.status == 1 && missing.stderr.hasPrefix("error: note \(id) has no operation 99@\(phoneReplica);"), "\(missing.stderr)")
        }
    }

    /// `diff --change` of a change `compact --drop-history` deleted says so,
    /// naming the operation given, as the spec has it. (It said `version
    /// OP is from before what ... left`, the message for a version: the one
    /// naming the deletion could not be reached.)
    @Test func diffOfADeletedChangeSaysItWasDeleted() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Journal", "--body", "start"]).trimmingCharacters(in: .newlines)
            let store = try DocumentStore(path: quire.store)
            for day in 1...3 { try CompactCommandTests.append(" day \(day)", to: id, in: store) }
            let note = try #require(DocumentID(rawValue: id))
            try store.acknowledge(peer: "laptop", id: note, version: store.read(note) { $0.versionVector })
            try CompactCommandTests.append(" day 4", to: id, in: store)
            let first = try #require(try store.changes(note).first).id
            try store.close()
            try quire.ok(["compact", id, "--drop-history"])

            let result = try quire.run(["diff", id, "--change", first.description])
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("error: the change holding \(first) was deleted by `quire compact --drop-history`"), "\(result.stderr)")
        }
    }

    /// A line of 50,000 words: an edit in one place shows as itself, and
    /// so do 2,500 edits all along it (more than one search's 2,000
    /// differences: they showed as the whole line deleted and inserted).
    @Test func editsInAHugeLineShowAsThemselves() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let vocabulary = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
            let words = (0..<50_000).map { vocabulary[$0 % vocabulary.count] + String($0 % 97) }
            func edit(_ id: String?, _ words: [String]) throws -> (id: String, version: String) {
                let file = quire.directory + "/body.txt"
                try words.joined(separator: " ").write(toFile: file, atomically: true, encoding: .utf8)
                let created = try id.map { try quire.ok(["note", "edit", $0, "--body-file", file]); return $0 }
                    ?? quire.ok(["note", "new", "--title", "Long", "--body-file", file]).trimmingCharacters(in: .newlines)
                return (created, try quire.ok(["vv", created]).trimmingCharacters(in: .newlines))
            }
            func shownEdits(from version: String, of id: String) throws -> [String] {
                let diff = try #require(try quire.run(["diff", id, "--from", version, "--json"]).json() as? [String: Any])
                return try #require(diff["text"] as? [[String: Any]]).map { "\($0["kind"]!) \($0["offset"]!) \($0["text"]!)" }
            }
            let (id, original) = try edit(nil, words)
            var oneEdit = words
            oneEdit[25_000] = "changed"
            let (_, editedOnce) = try edit(id, oneEdit)
            #expect(try shownEdits(from: original, of: id) == ["delete 191170 alpha71", "insert 191177 changed"])

            var everywhere = oneEdit
            for index in stride(from: 0, to: everywhere.count, by: 20) { everywhere[index] += "x" }
            _ = try edit(id, everywhere)
            let shown = try shownEdits(from: editedOnce, of: id)
            #expect(shown.count == 2 * 2_500)
            #expect(shown.prefix(4) == ["delete 0 alpha0", "insert 6 alpha0x", "delete 145 epsilon20", "insert 154 epsilon20x"])
        }
    }

    /// `log` lists changes in the reverse of the order this store applied
    /// them, so a change merged in from another store comes first however
    /// old it is: its help said "newest first", which the list is not.
    /// Concurrent retitles are no conflict: the help says where to look.
    @Test func conflictsHelpSaysTheRuleAndWhatMergesInstead() throws {
        try withRunner { quire in
            let help = try quire.ok(["conflicts", "--help"])
            #expect(help.contains("higher Lamport value, then replica id") && help.contains("edits a removal had not seen"))
            #expect(help.contains("title, body and tags merge instead (`quire blame`, `quire diff`)"))
        }
    }

    /// A title retitled on two machines at once holds text of both (texts
    /// merge character by character): `conflicts` says so in one line, and
    /// in JSON, naming `blame --title`; it said only "No conflicts.", and a
    /// person asking which title won learnt nothing. A retitle or an append
    /// made after seeing the other replica's text merged nothing: no word.
    @Test func conflictsSaysATextMergedConcurrentEditsAndOnlyThen() throws {
        try withRunner { quire in
            let stores = try MergeStoryTests.TwoStores(quire)
            let (laptop, phone, id, l, p) = (stores.laptop, stores.phone, stores.id, stores.laptopReplica, stores.phoneReplica)
            // One after the other: the phone edits the title and body the laptop typed, having merged them.
            try quire.ok(["note", "edit", id, "--title", "Groceries list"], store: laptop)
            try quire.ok(["merge", laptop], store: phone)
            try quire.ok(["note", "edit", id, "--title", "My Groceries list", "--append", " and eggs"], store: phone)
            try quire.ok(["merge", phone], store: laptop)
            let typedBy = { (options: [String]) in
                Set(try #require(try quire.run(["blame", id, "--json"] + options, store: laptop).json() as? [[String: Any]])
                    .compactMap { $0["replica"] as? String })
            }
            #expect(try typedBy(["--title"]) == [l, p] && typedBy([]) == [l, p])  // two replicas' text, typed in turn
            #expect(try quire.ok(["conflicts", id], store: laptop) == "No conflicts.\n")
            #expect(try quire.ok(["conflicts", id, "--json"], store: laptop) == "[]\n")

            // At once: the laptop retitles while the phone, offline, adds to the title.
            try stores.editBothAndMerge(laptop: ["--title", "Our Groceries list"], phone: ["--title", "My Groceries list!"])
            let note = try #require(try quire.run(["note", "show", id, "--json"], store: laptop).json() as? [String: Any])
            #expect(note["title"] as? String == "Our Groceries list!")
            let replicas = [l, p].sorted().joined(separator: ", ")
            let line = "title: not a conflict: holds text typed concurrently on replicas \(replicas), merged character by character "
                + "(no side won); `quire blame --title \(id)` shows who typed each piece"
            #expect(try quire.ok(["conflicts", id], store: laptop) == "No conflicts.\n" + line + "\n")
            let entries = try #require(try quire.run(["conflicts", id, "--json"], store: laptop).json() as? [[String: Any]])
            #expect(entries.count == 1)
            #expect(entries.first?["key"] as? String == "title" && entries.first?["mergedFrom"] as? [String] == [l, p].sorted())
            #expect(entries.first?["reason"] as? String == String(line.dropFirst("title: ".count)))
            let winner = try #require(entries.first?["winner"] as? [String: Any])
            #expect(winner["value"] as? String == "Our Groceries list!" && winner["change"] as? String == "1@\(l)")
            #expect((entries.first?["losers"] as? [Any])?.isEmpty == true)
        }
    }

    @Test func logsHelpSaysItsOrderIsTheStoresOwn() throws {
        try withRunner { quire in
            let (laptop, phone) = (quire.directory + "/laptop.quire", quire.directory + "/phone.quire")
            try quire.ok(["init"], store: laptop)
            try quire.ok(["init"], store: phone)
            let id = try quire.ok(["note", "new", "--title", "T"], store: phone).trimmingCharacters(in: .newlines)
            try quire.ok(["merge", phone], store: laptop)
            try quire.ok(["note", "edit", id, "--append", "made first"], store: phone)
            try quire.ok(["note", "edit", id, "--append", "made last"], store: laptop)
            try quire.ok(["merge", phone], store: laptop)
            let log = try #require(try quire.run(["log", id, "--json"], store: laptop).json() as? [[String: Any]])
            #expect(log.first?["replica"] as? String != log.dropFirst().first?["replica"] as? String)
            let phoneReplica = try #require(try quire.run(["status", "--json"], store: phone).json() as? [String: Any])["replica"] as? String
            #expect(log.first?["replica"] as? String == phoneReplica)  // the phone's older edit, merged in last, comes first
            let help = try quire.ok(["log", "--help"])
            #expect(!help.contains("newest first") && help.contains("the last this store applied first"))
            // VERSION is this store's, with the laptop's edit merged before the phone's: the writer's view is CHANGE.
            #expect(help.contains("`quire show ID --at VERSION`") && help.contains("`quire show ID --at CHANGE` shows the note as the change's writer left it"))
            let version = try #require(log.first?["version"] as? String), change = try #require(log.first?["id"] as? String)
            func body(at version: String) throws -> String? {
                try #require(try quire.run(["show", id, "--at", version, "--json"], store: laptop).json() as? [String: Any])["body"] as? String
            }
            #expect(try body(at: version).map { $0.contains("made last") && $0.contains("made first") } == true)
            #expect(try body(at: change) == "made first")
        }
    }

    @Test func aVersionPastTheNotesIsSaidToBeSo() throws {
        try withRunner { quire in
            let (laptop, phone) = (quire.directory + "/laptop.quire", quire.directory + "/phone.quire")
            try quire.ok(["init"], store: laptop)
            try quire.ok(["init"], store: phone)
            let id = try quire.ok(["note", "new", "--title", "T", "--body", "milk"], store: laptop).trimmingCharacters(in: .newlines)
            try quire.ok(["merge", laptop], store: phone)
            try quire.ok(["note", "edit", id, "--append", " and eggs"], store: phone)
            try quire.ok(["merge", phone], store: laptop)
            try quire.ok(["note", "edit", id, "--append", "!"], store: laptop)
            let laptopReplica = try #require(try quire.run(["status", "--json"], store: laptop).json() as? [String: Any])["replica"] as? String
            // The laptop's last change builds on the phone's, which the
            // version leaves out: but what is wrong is the counter past the note's.
            let future = "\(try #require(laptopReplica)):99"
            let result = try quire.run(["show", id, "--at", future], store: laptop)
            #expect(result.status == 1)
            let fromAnotherStore = "; a version copied from another store's `quire log` is shown here once its changes are: sync or merge with that store first\n"
            #expect(result.stderr == "error: version \(future) names operations note \(id) does not have; `quire log \(id)` lists its versions" + fromAnotherStore)
            // Heads name the note's operations as well: a missing one says so in the words the other commands use.
            let missingHead = "99@\(try #require(laptopReplica))"
            let heads = try quire.run(["diff", id, "--from", missingHead], store: laptop)
            #expect(heads.status == 1 && heads.stdout.isEmpty)
            #expect(heads.stderr == "error: note \(id) has no operation \(missingHead); `quire log \(id)` lists its changes" + fromAnotherStore)
        }
    }

    @Test func aVersionThatIsNotOneIsNamedWithItsOptionAndTheWrongPart() throws {
        try withRunner { quire in
            // Read before the store is opened: no store, no note needed.
            let (laptop, phone) = ("05b6db2a77d059a1", "05df2988635748a5")
            let cases: [(arguments: [String], why: String)] = [
                // A space after the comma, as a person copying a version may type it.
                (["show", "abc", "--at", "\(laptop):80, \(phone):26"],
                 "--at \"\(laptop):80, \(phone):26\" is not a version: \" \(phone):26\" is not replica:counter (16 hex digits, a colon, a counter from 1)"),
                (["diff", "abc", "--from", "\(laptop):3", "--to", "\(laptop):3,\(laptop):5"],
                 "--to \"\(laptop):3,\(laptop):5\" is not a version: replica \(laptop) is given twice"),
                (["diff", "abc", "--from", "3@\(laptop),\(phone):2"],
                 "--from \"3@\(laptop),\(phone):2\" is not a version: \"\(phone):2\" is not counter@replica"),
                (["show", "abc", "--at", ""], "--at is empty, which names no state of the note"),
            ]
            for (arguments, why) in cases {
                let result = try quire.run(arguments)
                #expect(result.status == 64 && result.stdout.isEmpty)
                #expect(result.stderr.hasPrefix("error: \(why); give replica:counter,... (a version vector) or counter@replica,... (heads), "
                    + "as `quire log` prints them\nusage: quire \(arguments[0]) "), "\(result.stderr)")
            }
        }
    }

    @Test func aTimeAheadOfThisClockSaysHowFarAhead() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T", "--body", "milk"]).trimmingCharacters(in: .newlines)
            // An edit made on a machine whose clock is three days ahead (and an hour, so that rounding keeps three).
            let store = try DocumentStore(path: quire.store)
            try store.edit(try #require(DocumentID(rawValue: id)), time: Date().addingTimeInterval(3 * 86_400 + 3600)) { tx in
                if case .object(.text, let body)? = try tx.document.get(.root, key: "body") { try tx.insertText(body, at: 4, "!") }
            }
            let log = try quire.ok(["log", id]).split(separator: "\n")
            #expect(log.count == 3)
            #expect(log[1].contains("  in 3 days  "), "\(log[1])")
            #expect(try quire.ok(["blame", id]).split(separator: "\n").last?.contains("  in 3 days  ") == true)
        }
    }

    /// Blame and heads find the change holding an operation among each
    /// replica's changes (by halves, not by a scan of the log, which made
    /// them quadratic): with three replicas' changes interleaved in the log,
    /// each piece names the change that typed it, and heads stand for their
    /// change and what it builds on, without the concurrent ones logged before it.
    @Test func blameAndHeadsFindTheChangeOfEachOperationAmongThreeReplicas() throws {
        try withRunner { quire in
            let (a, b, c) = (quire.directory + "/a.quire", quire.directory + "/b.quire", quire.directory + "/c.quire")
            for store in [a, b, c] { try quire.ok(["init"], store: store) }
            let (ra, rb, rc) = (try MergeStoryTests.TwoStores.replica(quire, a), try MergeStoryTests.TwoStores.replica(quire, b),
                                try MergeStoryTests.TwoStores.replica(quire, c))
            let id = try quire.ok(["note", "new", "--title", "T", "--body", "abc"], store: a).trimmingCharacters(in: .newlines)  // 1-9@a
            try quire.ok(["merge", a], store: b)
            try quire.ok(["merge", a], store: c)
            try quire.ok(["note", "edit", id, "--append", "B1"], store: b)       // 1-2@b
            try quire.ok(["note", "edit", id, "--insert", "0", "C"], store: c)   // 1@c
            try quire.ok(["note", "edit", id, "--append", "B2"], store: b)       // 3-4@b
            try quire.ok(["note", "edit", id, "--insert", "1", "A"], store: a)   // 10@a
            try quire.ok(["merge", c], store: a)
            try quire.ok(["merge", b], store: a)
            let pieces = try #require(try quire.run(["blame", id, "--json"], store: a).json() as? [[String: Any]])
            #expect(pieces.map { $0["text"] as? String } == ["C", "a", "A", "bc", "B1", "B2"])
            #expect(pieces.map { $0["change"] as? String } == ["1@\(rc)", "1@\(ra)", "10@\(ra)", "1@\(ra)", "1@\(rb)", "3@\(rb)"])
            #expect(pieces.map { $0["offset"] as? Int } == [0, 1, 2, 3, 5, 7])
            let atHeads = { (version: String) in try #require(try quire.run(["show", id, "--at", version, "--json"], store: a).json() as? [String: Any])["body"] as? String }
            #expect(try atHeads("4@\(rb)") == "abcB1B2")
            #expect(try atHeads("3@\(rb)") == "abcB1B2")  // inside the change: the whole change
            #expect(try atHeads("2@\(rb),1@\(rc)") == "CabcB1")
            #expect(try atHeads("10@\(ra)") == "aAbc")
            #expect(try quire.run(["show", id, "--at", "5@\(rb)"], store: a).status == 1)
        }
    }

    /// Two replicas append at the end of one body at once: the merge puts
    /// the append with the greater stamp first (Specs/crdt.md, "Ordering
    /// rule"), and blame's text shows the stamps that decided it: the same
    /// Lamport value, so the greater replica id first.
    @Test func blameShowsTheStampsThatOrderedConcurrentInsertions() throws {
        try withRunner { quire in
            let stores = try MergeStoryTests.TwoStores(quire)
            let (laptop, id, l, p) = (stores.laptop, stores.id, stores.laptopReplica, stores.phoneReplica)
            try stores.editBothAndMerge(laptop: ["--append", " eggs"], phone: ["--append", " bread"])
            let rows = try quire.ok(["blame", id], store: laptop).split(separator: "\n")
                .map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
            #expect(rows.count == 4 && rows[0] == ["CHANGE", "LAMPORT", "TIME", "OFFSET", "TEXT"])
            // "milk" was typed by the laptop's first change (1-18, Lamport
            // 1-18); both appends came right after it, at Lamport 19.
            let (eggs, bread) = (["19@\(l)", "eggs\""], ["1@\(p)", "bread\""])
            let (first, second) = l > p ? (eggs, bread) : (bread, eggs)
            #expect([rows[2].first, rows[2].last] == first && [rows[3].first, rows[3].last] == second, "\(rows)")
            #expect(rows[2][1].hasPrefix("19-") && rows[3][1].hasPrefix("19-"))
            // The JSON gives both stamps too (it gave the first only).
            let pieces = try #require(try quire.run(["blame", id, "--json"], store: laptop).json() as? [[String: Any]])
            #expect(pieces.map { "\($0["lamport"] as? Int ?? -1)-\($0["lastLamport"] as? Int ?? -1)" } == rows.dropFirst().map { $0[1] })
            #expect(pieces.last?["lastLamport"] as? Int == 19 + (l > p ? " bread" : " eggs").count - 1)
            #expect(try quire.ok(["conflicts", id], store: laptop).hasPrefix("No conflicts.\nbody: not a conflict: holds text typed concurrently"))
        }
    }

    /// A long history, its changes made a year ago (shown as dates): `log`
    /// and `blame` write it in chunks, a row or an element at a time, each
    /// time formatted alike, with nothing lost or doubled at a chunk's edge.
    @Test func theLogAndBlameOfALongHistoryShowEveryChangeWithItsDate() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T"]).trimmingCharacters(in: .newlines)
            let store = try DocumentStore(path: quire.store)
            let yearAgo = Date(timeIntervalSince1970: 1_733_400_000)  // 2024-12-05T12:00:00Z
            let edits = 1500
            for edit in 0..<edits {
                try store.edit(try #require(DocumentID(rawValue: id)), time: yearAgo.addingTimeInterval(Double(edit))) { tx in
                    if case .object(.text, let body)? = try tx.document.get(.root, key: "body") { try tx.insertText(body, at: 0, "ab") }
                }
            }
            try store.close()
            let log = try quire.ok(["log", id]).split(separator: "\n")
            #expect(log.count == edits + 2)  // the header and the note's creation
            #expect(log[1].contains("  2024-12-05T12:24:59Z  "), "\(log[1])")
            #expect(log[edits].contains("  2024-12-05T12:00:00Z  "), "\(log[edits])")
            let entries = try #require(try quire.run(["log", id, "--json"]).json() as? [[String: Any]])
            #expect(entries.count == edits + 1)
            #expect(entries.prefix(edits).map { $0["time"] as? String } == (0..<edits).reversed().map { edit in
                let seconds = 12 * 3600 + edit
                return String(format: "2024-12-05T%02d:%02d:%02dZ", seconds / 3600, seconds / 60 % 60, seconds % 60)
            })
            let pieces = try #require(try quire.run(["blame", id, "--json"]).json() as? [[String: Any]])
            #expect(pieces.count == edits)
            #expect(pieces.first?["time"] as? String == "2024-12-05T12:24:59Z")
            #expect(try quire.ok(["blame", id]).split(separator: "\n").count == edits + 1)
        }
    }

    @Test func blameOfAnEmptyBodySaysSo() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let empty = try quire.ok(["note", "new", "--title", "T"]).trimmingCharacters(in: .newlines)
            let emptied = try quire.ok(["note", "new", "--title", "U", "--body", "gone"]).trimmingCharacters(in: .newlines)
            try quire.ok(["note", "edit", emptied, "--delete", "0", "4"])
            for id in [empty, emptied] {
                #expect(try quire.ok(["blame", id]) == "The body is empty.\n")
                #expect(try quire.ok(["blame", id, "--json"]) == "[]\n")
            }
        }
    }

    /// `blame --tags` names the change that added each tag: a tag added on
    /// two stores at once, shown once by the listings, is listed for both
    /// changes, so the person sees why `--untag` is needed on neither.
    @Test func blameOfTagsNamesTheChangeThatAddedEach() throws {
        try withRunner { quire in
            let stores = try MergeStoryTests.TwoStores(quire)
            let (laptop, id, l, p) = (stores.laptop, stores.id, stores.laptopReplica, stores.phoneReplica)
            #expect(try quire.ok(["blame", id, "--tags"], store: laptop) == "The note has no tags.\n")
            try stores.editBothAndMerge(laptop: ["--tag", "home"], phone: ["--tag", "home", "--tag", "food"])
            let tags = try #require(try quire.run(["blame", id, "--tags", "--json"], store: laptop).json() as? [[String: Any]])
            let added = tags.map { "\($0["tag"] as? String ?? "?") by \($0["replica"] as? String ?? "?")" }
            #expect(added.sorted() == ["food by \(p)", "home by \(l)", "home by \(p)"].sorted())
            let log = try #require(try quire.run(["log", id, "--json"], store: laptop).json() as? [[String: Any]])
            let changes = Set(log.compactMap { $0["id"] as? String })
            #expect(tags.allSatisfy { changes.contains($0["change"] as? String ?? "") })
            let food = try #require(tags.first { $0["tag"] as? String == "food" })
            let home = try #require(tags.first { $0["tag"] as? String == "home" && $0["replica"] as? String == p })
            #expect(food["change"] as? String == home["change"] as? String)  // one edit added both
            #expect((food["lamport"] as? Int).map { $0 != home["lamport"] as? Int } == true)
            let text = try quire.ok(["blame", id, "--tags"], store: laptop).split(separator: "\n")
            #expect(text.first?.hasPrefix("CHANGE") == true && text.count == 4)
            let both = try quire.run(["blame", id, "--tags", "--title"], store: laptop)
            #expect(both.status == 64 && both.stderr.contains("--title and --tags exclude each other"))
        }
    }

    @Test func blameTellsWhoTypedEachCharacterOfAMergedTitle() throws {
        try withRunner { quire in
            let stores = try MergeStoryTests.TwoStores(quire)
            let (laptop, id, l, p) = (stores.laptop, stores.id, stores.laptopReplica, stores.phoneReplica)
            // Offline on both: two retitles of "Groceries", which merge character by character.
            try stores.editBothAndMerge(laptop: ["--title", "Groceries list"], phone: ["--title", "My Groceries"])
            #expect(try quire.ok(["conflicts", id], store: laptop).hasPrefix("No conflicts.\ntitle: not a conflict: holds text typed concurrently"))
            let note = try #require(try quire.run(["show", id, "--json"], store: laptop).json() as? [String: Any])
            #expect(note["title"] as? String == "My Groceries list")
            let pieces = try #require(try quire.run(["blame", id, "--title", "--json"], store: laptop).json() as? [[String: Any]])
            #expect(pieces.map { $0["text"] as? String } == ["My ", "Groceries", " list"])
            #expect(pieces.map { $0["replica"] as? String } == [p, l, l])
            #expect(pieces.map { $0["offset"] as? Int } == [0, 3, 12])
            #expect(pieces.map { $0["change"] as? String } == ["1@\(p)", "1@\(l)", "19@\(l)"])
            // A title emptied in the editor (`--title` takes no empty one).
            let untitled = try quire.ok(["note", "new", "--title", "x"], store: laptop).trimmingCharacters(in: .newlines)
            try quire.ok(["note", "edit", untitled], store: laptop, environment: ["EDITOR": "sed -i 1s/.*//"])
            #expect(try quire.ok(["blame", untitled, "--title"], store: laptop) == "The title is empty.\n")
        }
    }

    /// "Who deleted my paragraph": `blame --deleted` lists the text typed
    /// and deleted since, in document order, each piece typed by one change
    /// and deleted by one. Here the laptop deletes "mil" of "milk eggs
    /// bread" while the phone, offline, deletes "lk eggs": the "l" both
    /// deleted goes to the deletion with the lower stamp, the same in both
    /// stores once merged.
    @Test func blameDeletedNamesWhoTypedAndWhoDeletedEachPiece() throws {
        try withRunner { quire in
            let stores = try MergeStoryTests.TwoStores(quire)
            let (laptop, phone, id, l, p) = (stores.laptop, stores.phone, stores.id, stores.laptopReplica, stores.phoneReplica)
            #expect(try quire.ok(["blame", id, "--deleted"], store: laptop) == "The body has no deleted text.\n")
            #expect(try quire.ok(["blame", id, "--deleted", "--json"], store: laptop) == "[]\n")
            try quire.ok(["note", "edit", id, "--append", " eggs bread"], store: laptop)
            try quire.ok(["merge", laptop], store: phone)
            try stores.editBothAndMerge(laptop: ["--delete", "0", "3"], phone: ["--delete", "2", "7"])
            try quire.ok(["merge", laptop], store: phone)
            #expect(try #require(try quire.run(["show", id, "--json"], store: laptop).json() as? [String: Any])["body"] as? String == " bread")

            let log = try #require(try quire.run(["log", id, "--json"], store: laptop).json() as? [[String: Any]])
            func change(_ replica: String, _ index: Int) -> String? {
                log.filter { $0["replica"] as? String == replica }.reversed().compactMap { $0["id"] as? String }.dropFirst(index).first
            }
            let (created, appended, laptopDelete, phoneDelete) = (change(l, 0), change(l, 1), change(l, 2), change(p, 0))
            let pieces = try #require(try quire.run(["blame", id, "--deleted", "--json"], store: laptop).json() as? [[String: Any]])
            try #require(pieces.map { $0["text"] as? String } == ["mi", "lk", " eggs"])
            #expect(pieces.map { $0["change"] as? String } == [created, created, appended])
            #expect(pieces.map { $0["replica"] as? String } == [l, l, l])
            #expect(pieces.map { $0["offset"] as? Int } == [0, 0, 0])
            #expect(pieces.allSatisfy { $0["compacted"] as? Bool == false && $0["time"] is String })
            // Typed stamps: "mi" and "lk" one after the other, typed at once.
            let typed = pieces.map { ($0["lamport"] as? Int ?? -1, $0["lastLamport"] as? Int ?? -1) }
            #expect(typed[0].1 == typed[0].0 + 1 && typed[1].0 == typed[0].0 + 2 && typed[1].1 == typed[1].0 + 1, "\(typed)")
            let deletedBy = pieces.map { $0["deletedBy"] as? [String: Any] ?? [:] }
            #expect(deletedBy.map { $0["change"] as? String } == [laptopDelete, phoneDelete, phoneDelete])
            #expect(deletedBy.map { $0["replica"] as? String } == [l, p, p])
            #expect(deletedBy.allSatisfy { $0["compacted"] as? Bool == false && $0["time"] is String })
            // Both deletions began at one Lamport value: the laptop's "l" was
            // its third character, the phone's its first, so the phone's is lower.
            let stamps = deletedBy.compactMap { $0["lamport"] as? Int }
            #expect(stamps.count == 3 && stamps[0] == stamps[1] && stamps[2] == stamps[1] + 2, "\(stamps)")
            #expect(try quire.ok(["blame", id, "--deleted", "--json"], store: phone) == quire.ok(["blame", id, "--deleted", "--json"], store: laptop))

            let rows = try quire.ok(["blame", id, "--deleted"], store: laptop).split(separator: "\n")
                .map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
            #expect(rows.first == ["CHANGE", "LAMPORT", "TIME", "DELETED_BY", "DELETED_TIME", "OFFSET", "TEXT"])
            #expect(rows.count == 4 && rows[2].first == created && rows[2].contains(phoneDelete ?? "?") && rows[2].last == "\"lk\"", "\(rows)")
            // The visible body's blame is as it was.
            let visible = try #require(try quire.run(["blame", id, "--json"], store: laptop).json() as? [[String: Any]])
            #expect(visible.map { $0["text"] as? String } == [" bread"] && visible.allSatisfy { $0["deletedBy"] == nil })

            // The title: a retitle's " list" deleted by the next.
            #expect(try quire.ok(["blame", id, "--deleted", "--title"], store: laptop) == "The title has no deleted text.\n")
            try quire.ok(["note", "edit", id, "--title", "Groceries list"], store: laptop)
            try quire.ok(["note", "edit", id, "--title", "Groceries"], store: laptop)
            let title = try #require(try quire.run(["blame", id, "--deleted", "--title", "--json"], store: laptop).json() as? [[String: Any]])
            let retitles = try #require(try quire.run(["log", id, "--json"], store: laptop).json() as? [[String: Any]]).prefix(2).compactMap { $0["id"] as? String }
            #expect(title.map { $0["text"] as? String } == [" list"] && title.first?["offset"] as? Int == 9)
            #expect(title.first?["change"] as? String == retitles.last && (title.first?["deletedBy"] as? [String: Any])?["change"] as? String == retitles.first)

            #expect(try quire.ok(["blame", "--help"]).contains("--deleted"))
        }
    }

    /// `blame --deleted --tags`: the tags removed from the note, in list
    /// order, each with the change that added it and the one that removed
    /// it, in `blame --deleted`'s columns and keys. Both stores untag "food"
    /// at once (the lower stamp names the removal, the same in both stores);
    /// both tag "urgent" at once, and one `--untag` removes the two.
    @Test func blameDeletedTagsNamesWhoAddedAndWhoRemovedEachTag() throws {
        try withRunner { quire in
            let stores = try MergeStoryTests.TwoStores(quire)
            let (laptop, phone, id, l, p) = (stores.laptop, stores.phone, stores.id, stores.laptopReplica, stores.phoneReplica)
            #expect(try quire.ok(["blame", id, "--deleted", "--tags"], store: laptop) == "The note has no removed tags.\n")
            try quire.ok(["note", "edit", id, "--tag", "home", "--tag", "food", "--tag", "old"], store: laptop)
            try quire.ok(["merge", laptop], store: phone)
            #expect(try quire.ok(["blame", id, "--deleted", "--tags", "--json"], store: laptop) == "[]\n")
            try stores.editBothAndMerge(laptop: ["--untag", "food", "--tag", "urgent"], phone: ["--untag", "food", "--untag", "old", "--tag", "urgent"])
            try quire.ok(["note", "edit", id, "--untag", "urgent"], store: laptop)
            try quire.ok(["merge", laptop], store: phone)

            let log = try #require(try quire.run(["log", id, "--json"], store: laptop).json() as? [[String: Any]])
            func change(_ replica: String, _ index: Int) -> String? {
                log.filter { $0["replica"] as? String == replica }.reversed().compactMap { $0["id"] as? String }.dropFirst(index).first
            }
            let (tagged, laptopUntag, untagUrgent, phoneUntag) = (change(l, 1), change(l, 2), change(l, 3), change(p, 0))
            let removed = try #require(try quire.run(["blame", id, "--deleted", "--tags", "--json"], store: laptop).json() as? [[String: Any]])
            try #require(removed.map { $0["tag"] as? String } == ["food", "old", "urgent", "urgent"])
            #expect(removed.allSatisfy { Set($0.keys) == ["tag", "change", "replica", "lamport", "time", "compacted", "deletedBy"] })
            #expect(removed.prefix(2).allSatisfy { $0["change"] as? String == tagged && $0["replica"] as? String == l })
            #expect(Set(removed.suffix(2).compactMap { $0["replica"] as? String }) == [l, p])
            #expect(removed.allSatisfy { $0["compacted"] as? Bool == false && $0["time"] is String && $0["lamport"] is Int })
            let removedBy = removed.map { $0["deletedBy"] as? [String: Any] ?? [:] }
            #expect(removedBy.allSatisfy { Set($0.keys) == ["change", "replica", "lamport", "time", "compacted"] })
            // "food", untagged on both at one Lamport value: the lower replica id's removal.
            let foodRemoval = l < p ? (laptopUntag, l) : (phoneUntag, p)
            #expect(removedBy.map { $0["change"] as? String } == [foodRemoval.0, phoneUntag, untagUrgent, untagUrgent])
            #expect(removedBy.map { $0["replica"] as? String } == [foodRemoval.1, p, l, l])
            #expect(removedBy.allSatisfy { $0["compacted"] as? Bool == false && $0["time"] is String && $0["lamport"] is Int })
            #expect(try quire.ok(["blame", id, "--deleted", "--tags", "--json"], store: phone)
                == quire.ok(["blame", id, "--deleted", "--tags", "--json"], store: laptop))

            let rows = try quire.ok(["blame", id, "--deleted", "--tags"], store: laptop).split(separator: "\n")
                .map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
            #expect(rows.first == ["CHANGE", "LAMPORT", "TIME", "DELETED_BY", "DELETED_TIME", "TAG"])
            #expect(rows.count == 5 && rows[2].first == tagged && rows[2].contains(phoneUntag ?? "?") && rows[2].last == "old", "\(rows)")
            // The visible tags' blame is as it was.
            let visible = try #require(try quire.run(["blame", id, "--tags", "--json"], store: laptop).json() as? [[String: Any]])
            #expect(visible.map { $0["tag"] as? String } == ["home"] && visible.allSatisfy { $0["deletedBy"] == nil })
            let clash = try quire.run(["blame", id, "--deleted", "--tags", "--title"], store: laptop)
            #expect(clash.status == 64 && clash.stderr.contains("--title and --tags exclude each other"), "\(clash.stderr)")
            #expect(try quire.ok(["blame", "--help"]).contains("--deleted [--title | --tags]"))
        }
    }

    /// `blame --at VERSION`: who typed each piece of the note as it was
    /// then, and (`--deleted`) who had deleted what by then: a deletion made
    /// after the version is not named. The text first names the version
    /// shown, as `conflicts --at` does; the JSON stays an array.
    @Test func blameAtAVersionIsTheBlameOfThatVersion() throws {
        try withRunner { quire in
            let stores = try MergeStoryTests.TwoStores(quire)
            let (laptop, phone, id) = (stores.laptop, stores.phone, stores.id)
            try quire.ok(["note", "edit", id, "--append", " eggs bread"], store: laptop)
            try quire.ok(["merge", laptop], store: phone)
            let before = try quire.ok(["vv", id], store: laptop).trimmingCharacters(in: .newlines)
            let blameThen = try quire.ok(["blame", id, "--json"], store: laptop)
            try stores.editBothAndMerge(laptop: ["--delete", "0", "3"], phone: ["--delete", "2", "7"])
            #expect(try quire.ok(["blame", id, "--json"], store: laptop) != blameThen)

            #expect(try quire.ok(["blame", id, "--at", before, "--json"], store: laptop) == blameThen)
            #expect(try quire.ok(["blame", id, "--at", before, "--deleted", "--json"], store: laptop) == "[]\n")
            #expect(try quire.ok(["blame", id, "--at", before, "--deleted"], store: laptop) == "version  \(before)\n\nThe body has no deleted text.\n")
            #expect(try quire.ok(["blame", id, "--at", before], store: laptop).hasPrefix("version  \(before)\n\nCHANGE "))

            // At the laptop's deletion, before it met the phone's: only "mil" is deleted, by it.
            let log = try #require(try quire.run(["log", id, "--json"], store: laptop).json() as? [[String: Any]])
            let laptopDelete = try #require(log.first { $0["replica"] as? String == stores.laptopReplica }?["id"] as? String)
            let deleted = try #require(try quire.run(["blame", id, "--at", laptopDelete, "--deleted", "--json"], store: laptop).json() as? [[String: Any]])
            #expect(deleted.map { $0["text"] as? String } == ["mil"])
            #expect(deleted.map { ($0["deletedBy"] as? [String: Any])?["change"] as? String } == [laptopDelete])
            let visible = try #require(try quire.run(["blame", id, "--at", laptopDelete, "--json"], store: laptop).json() as? [[String: Any]])
            #expect(visible.compactMap { $0["text"] as? String }.joined() == "k eggs bread")
            #expect(try quire.ok(["blame", id, "--at", laptopDelete, "--tags", "--json"], store: laptop) == quire.ok(["blame", id, "--tags", "--json"], store: laptop))
            #expect(try quire.ok(["blame", "--help"]).contains("[--at VERSION]"))
        }
    }

    /// `conflicts --at VERSION`: the conflicts as they stood then. Both
    /// stores pin the note at once; the laptop then unpins it, a write that
    /// saw both, which ends the conflict: at the merge's version it is still
    /// listed. The text first names the version shown, as `show --at` does
    /// (heads given stand for their version vector); the JSON stays an array.
    @Test func conflictsAtAVersionAreThoseOfThatVersion() throws {
        try withRunner { quire in
            let stores = try MergeStoryTests.TwoStores(quire)
            let (laptop, phone, id, p) = (stores.laptop, stores.phone, stores.id, stores.phoneReplica)
            let before = try quire.ok(["vv", id], store: laptop).trimmingCharacters(in: .newlines)
            try stores.editBothAndMerge(laptop: ["--pin"], phone: ["--pin"])
            let merged = try quire.ok(["vv", id], store: laptop).trimmingCharacters(in: .newlines)
            let conflictsThen = try quire.ok(["conflicts", id], store: laptop)
            let jsonThen = try quire.ok(["conflicts", id, "--json"], store: laptop)
            #expect(conflictsThen.hasPrefix("pinned: "))
            try quire.ok(["note", "edit", id, "--unpin"], store: laptop)
            #expect(try quire.ok(["conflicts", id], store: laptop) == "No conflicts.\n")

            #expect(try quire.ok(["conflicts", id, "--at", merged], store: laptop) == "version  \(merged)\n\n" + conflictsThen)
            #expect(try quire.ok(["conflicts", id, "--at", merged, "--json"], store: laptop) == jsonThen)
            #expect(try quire.ok(["conflicts", id, "--at", before], store: laptop) == "version  \(before)\n\nNo conflicts.\n")
            #expect(try quire.ok(["conflicts", id, "--at", before, "--json"], store: laptop) == "[]\n")
            let now = try quire.ok(["heads", id], store: laptop).trimmingCharacters(in: .newlines)
            let vector = try quire.ok(["vv", id], store: laptop).trimmingCharacters(in: .newlines)
            #expect(try quire.ok(["conflicts", id, "--at", now], store: laptop) == "version  \(vector)\n\nNo conflicts.\n")
            #expect(try quire.ok(["conflicts", id, "--at", now, "--json"], store: laptop) == quire.ok(["conflicts", id, "--json"], store: laptop))
            // The line is the one `show --at` prints among its fields.
            #expect(try quire.ok(["show", id, "--at", now], store: laptop).split(separator: "\n").contains("version  \(vector)"))

            // A version this store has not reached: the phone's next change.
            try quire.ok(["note", "edit", id, "--append", "!"], store: phone)
            let phoneHeads = try quire.ok(["heads", id], store: phone).trimmingCharacters(in: .newlines)
            #expect(phoneHeads.hasSuffix("@\(p)"))
            let unreached = try quire.run(["conflicts", id, "--at", phoneHeads], store: laptop)
            #expect(unreached.status == 1 && unreached.stdout.isEmpty)
            #expect(unreached.stderr == "error: note \(id) has no operation \(phoneHeads); `quire log \(id)` lists its changes; a version copied from "
                + "another store's `quire log` is shown here once its changes are: sync or merge with that store first\n")
            #expect(try quire.ok(["conflicts", "--help"]).contains("--at VERSION"))
        }
    }

    /// A title retitled at once on both stores merged their texts: at a
    /// version before the merge, `conflicts --at` says nothing of it, as
    /// only the changes that version holds are compared.
    @Test func conflictsAtAVersionBeforeAMergeOfTextsSayNothingOfIt() throws {
        try withRunner { quire in
            let stores = try MergeStoryTests.TwoStores(quire)
            let (laptop, id) = (stores.laptop, stores.id)
            try quire.ok(["note", "edit", id, "--title", "Groceries list"], store: laptop)
            let laptopOnly = try quire.ok(["vv", id], store: laptop).trimmingCharacters(in: .newlines)
            try quire.ok(["note", "edit", id, "--title", "My Groceries"], store: stores.phone)
            try quire.ok(["merge", stores.phone], store: laptop)
            #expect(try quire.ok(["conflicts", id], store: laptop).contains("title: not a conflict"))
            #expect(try quire.ok(["conflicts", id, "--at", laptopOnly], store: laptop) == "version  \(laptopOnly)\n\nNo conflicts.\n")
        }
    }
}
