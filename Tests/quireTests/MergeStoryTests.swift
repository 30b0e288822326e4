import Foundation
import Quire
import QuireStore
import Testing

/// Two stores edited offline, then merged with `quire merge`; the history
/// commands on the result.
@Suite struct MergeStoryTests {
    /// A laptop and a phone store; the note made on the laptop and merged into the phone.
    struct TwoStores {
        let quire: QuireRunner
        let laptop: String, phone: String
        let laptopReplica: String, phoneReplica: String
        let id: String

        init(_ quire: QuireRunner) throws {
            self.quire = quire
            laptop = quire.directory + "/laptop.quire"
            phone = quire.directory + "/phone.quire"
            try quire.ok(["init"], store: laptop)
            try quire.ok(["init"], store: phone)
            laptopReplica = try Self.replica(quire, laptop)
            phoneReplica = try Self.replica(quire, phone)
            id = try quire.ok(["note", "new", "--title", "Groceries", "--body", "milk"], store: laptop).trimmingCharacters(in: .newlines)
            try quire.ok(["merge", laptop], store: phone)
        }

        /// Edits the note offline on both stores (`note edit ID` with each
        /// one's options), then merges the phone's edit into the laptop.
        func editBothAndMerge(laptop laptopEdit: [String], phone phoneEdit: [String]) throws {
            try quire.ok(["note", "edit", id] + laptopEdit, store: laptop)
            try quire.ok(["note", "edit", id] + phoneEdit, store: phone)
            try quire.ok(["merge", phone], store: laptop)
        }

        static func replica(_ quire: QuireRunner, _ store: String) throws -> String {
            let status = try #require(try quire.run(["status", "--json"], store: store).json() as? [String: Any])
            return try #require(status["replica"] as? String)
        }
    }

    /// Tags are a set to the person: one added on both stores at once is
    /// shown once, and one --untag removes it.
    @Test func aTagAddedOnTwoStoresAtOnceIsOneTag() throws {
        try withRunner { quire in
            let stores = try TwoStores(quire)
            let (laptop, phone, id) = (stores.laptop, stores.phone, stores.id)
            try quire.ok(["note", "edit", id, "--tag", "home", "--tag", "food"], store: laptop)
            try quire.ok(["note", "edit", id, "--tag", "home"], store: phone)
            try quire.ok(["merge", laptop], store: phone)
            let merged = try #require(try quire.run(["note", "show", id, "--json"], store: phone).json() as? [String: Any])
            #expect(merged["tags"] as? [String] == ["home", "food"])
            #expect(try quire.ok(["note", "show", id], store: phone).contains("\ntags    home, food\n"))

            try quire.ok(["note", "edit", id, "--untag", "home"], store: phone)
            let untagged = try #require(try quire.run(["note", "show", id, "--json"], store: phone).json() as? [String: Any])
            #expect(untagged["tags"] as? [String] == ["food"])
        }
    }

    /// Writes with the same Lamport value are ordered by replica id, and
    /// the reason names both ids, so a person sees which is higher.
    @Test func aTieOfLamportValuesNamesBothReplicas() throws {
        try withRunner { quire in
            let stores = try TwoStores(quire)
            let (laptop, phone, id) = (stores.laptop, stores.phone, stores.id)
            try quire.ok(["note", "edit", id, "--pin"], store: laptop)
            try quire.ok(["note", "edit", id, "--pin"], store: phone)
            try quire.ok(["merge", laptop], store: phone)
            let (higher, lower) = stores.laptopReplica > stores.phoneReplica
                ? (stores.laptopReplica, stores.phoneReplica) : (stores.phoneReplica, stores.laptopReplica)
            let conflicts = try #require(try quire.run(["conflicts", id, "--json"], store: phone).json() as? [[String: Any]])
            let reason = try #require(conflicts.first?["reason"] as? String)
            #expect(reason.hasPrefix("same Lamport value ") && reason.hasSuffix(", higher replica id (\(higher) > \(lower))"))
        }
    }

    /// A merge that brings new notes lists them as `note list` then does:
    /// abbreviated, not whole because the merged store counted them twice.
    /// A store in a directory the person may not write (a backup on a
    /// read-only disk, another user's folder, an app's bundle) merges from:
    /// opened read-only, SQLite cannot make the `-wal` and `-shm` it reads
    /// a WAL file through, and reads the file alone.
    @Test func aStoreInADirectoryThatCannotBeWrittenMergesFrom() throws {
        try withRunner { quire in
            let (shipped, mine) = (quire.directory + "/shipped", quire.directory + "/mine")
            for directory in [shipped, mine] { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false) }
            try quire.ok(["init"], store: shipped + "/notes.quire")
            let id = try quire.ok(["note", "new", "--title", "Shipped"], store: shipped + "/notes.quire").trimmingCharacters(in: .newlines)
            try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: shipped)
            defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: shipped) }
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: mine)
            let launcher = QuireRunner.withoutRootsPermissions
            for arguments in [["init"], ["merge", shipped + "/notes.quire"]] {
                let result = try quire.run(arguments, store: mine + "/notes.quire", launcher: launcher)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
            }
            let listed = try quire.ok(["note", "list"], store: mine + "/notes.quire")
            #expect(listed.contains(id.prefix(8) + "  Shipped"), "\(listed)")
        }
    }

    /// One whose `-wal` holds commits (copied with the file, as a backup
    /// taken while the store was open is) cannot be read there: SQLite needs
    /// a `-shm` to read the `-wal` through, and the file alone lacks those
    /// commits. The merge says so, naming the file and what to do, and
    /// changes nothing; from a folder it may write, it brings them.
    @Test func aStoreWhoseLogHoldsCommitsInADirectoryThatCannotBeWrittenSaysWhatToDo() throws {
        try withRunner { quire in
            let (original, shipped, mine) = (quire.directory + "/original.quire", quire.directory + "/shipped", quire.directory + "/mine")
            for directory in [shipped, mine] { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false) }
            try quire.ok(["init"], store: original)
            // Held open, the file is not checkpointed when the note's command ends: the note is in the -wal alone.
            let holder = try Database(path: original)
            defer { holder.close() }
            let id = try quire.ok(["note", "new", "--title", "Shipped"], store: original).trimmingCharacters(in: .newlines)
            let store = shipped + "/notes.quire"
            for suffix in ["", "-wal"] { try FileManager.default.copyItem(atPath: original + suffix, toPath: store + suffix) }
            let copied = try [store, store + "-wal"].map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
            #expect(!copied[1].isEmpty)
            try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: shipped)
            defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: shipped) }
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: mine)
            let launcher = QuireRunner.withoutRootsPermissions
            #expect(try quire.run(["init"], store: mine + "/notes.quire", launcher: launcher).status == 0)

            let refused = try quire.run(["merge", store], store: mine + "/notes.quire", launcher: launcher)
            #expect(refused.status == 1)
            #expect(refused.stderr.hasPrefix("error: the store \(store) is read-only, nothing was saved; check that you may write "
                + "to the file and to its directory"), "\(refused.stderr)")
            #expect(refused.stderr.contains("\(store)-wal holds commits not yet checkpointed into the file, and SQLite cannot make "
                + "the \(store)-shm it reads them through, as the folder \(shipped) is not writable"), "\(refused.stderr)")
            #expect(try [store, store + "-wal"].map { try Data(contentsOf: URL(fileURLWithPath: $0)) } == copied)
            #expect(!FileManager.default.fileExists(atPath: store + "-shm"))

            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: shipped)
            let merged = try quire.run(["merge", store], store: mine + "/notes.quire", launcher: launcher)
            #expect(merged.status == 0, "\(merged.stderr)")
            let listed = try quire.ok(["note", "list"], store: mine + "/notes.quire")
            #expect(listed.contains(id.prefix(8) + "  Shipped"), "\(listed)")
        }
    }

    @Test func aMergeAbbreviatesTheNotesItBrings() throws {
        try withRunner { quire in
            let (laptop, phone) = (quire.directory + "/laptop.quire", quire.directory + "/phone.quire")
            try quire.ok(["init"], store: laptop)
            try quire.ok(["init"], store: phone)
            let id = try quire.ok(["note", "new", "--title", "Groceries"], store: laptop).trimmingCharacters(in: .newlines)
            let plannedRow = try quire.ok(["merge", "--dry-run", laptop], store: phone).split(separator: "\n")[1]
            let mergedRow = try quire.ok(["merge", laptop], store: phone).split(separator: "\n")[1]
            let listedRow = try quire.ok(["note", "list"], store: phone).split(separator: "\n")[1]
            for row in [plannedRow, mergedRow, listedRow] {
                #expect(row.hasPrefix(id.prefix(8) + "  Groceries"), "\(row)")
            }
        }
    }

    /// A title another program wrote on two lines (the library takes any
    /// text; `quire` refuses one) is quoted on one line, its line feed shown
    /// as `^J` as in a table's cell: in the commands a merge lists to paste,
    /// its second line stood on a line of its own, which a shell pasted
    /// into ran as a command; so it did among the notes `compact` names.
    @Test func aTitleOnTwoLinesStaysOnTheLineThatQuotesIt() throws {
        try withRunner { quire in
            let laptop = quire.directory + "/laptop.quire"
            try quire.ok(["init"], store: laptop)
            try quire.ok(["init"])
            let store = try DocumentStore(path: laptop)
            let id = try store.createDocument { tx in
                try tx.insertText(tx.putObject(.root, key: "title", kind: .text), at: 0, "Trip\nrm -rf ~")
            }
            try store.close()
            let merged = try quire.ok(["merge", laptop])
            let listed = try #require(broughtNotes(in: merged, by: "merge")?.notes)
            #expect(listed.count == 1 && listed[0].isShow(of: id.rawValue), "\(merged)")
            #expect(listed.first?.comment == "Trip^Jrm -rf ~ (new)", "\(merged)")
            let compacted = try quire.ok(["compact", "--all", "--drop-history"])
            #expect(compacted.contains("  \(id.rawValue.prefix(8)) Trip^Jrm -rf ~\n"), "\(compacted)")
            for output in [merged, compacted] {
                #expect(!output.split(separator: "\n").contains { $0.hasPrefix("rm") }, "\(output)")
            }
        }
    }

    /// What a merge brought into a note is a diff from the note's version
    /// before it to its version right after it, which only the merge knew:
    /// it prints the command (JSON: `versionBefore`, `versionAfter`), for
    /// the notes it changed, not for new ones.
    @Test func aMergeNamesTheVersionToDiffFromToSeeWhatItBrought() throws {
        try withRunner { quire in
            let stores = try TwoStores(quire)
            let (laptop, phone, id) = (stores.laptop, stores.phone, stores.id)
            try quire.ok(["note", "edit", id, "--append", " and eggs"], store: laptop)
            try quire.ok(["note", "edit", id, "--insert", "0", "Buy "], store: phone)
            let other = try quire.ok(["note", "new", "--title", "Trip"], store: phone).trimmingCharacters(in: .newlines)
            let before = try quire.ok(["vv", id], store: laptop).trimmingCharacters(in: .newlines)

            let plan = try #require(try quire.run(["merge", phone, "--dry-run", "--json"], store: laptop).json() as? [String: Any])
            let planned = try #require(plan["documents"] as? [[String: Any]])
            #expect(planned.first { $0["id"] as? String == id }?["versionBefore"] as? String == before)
            #expect(planned.first { $0["id"] as? String == other }?["versionBefore"] is NSNull)
            // The keys `sync --json` shares in `changedNotes`, and merge's own.
            #expect(planned.allSatisfy {
                Set($0.keys) == ["id", "title", "new", "removed", "incoming", "versionBefore", "versionAfter", "outgoing", "conflicts"]
            })
            // A dry run changes nothing to diff.
            #expect(!(try quire.ok(["merge", phone, "--dry-run"], store: laptop).contains("quire diff")))

            let merged = try quire.ok(["merge", phone], store: laptop)
            let after = try quire.ok(["vv", id], store: laptop).trimmingCharacters(in: .newlines)
            #expect(merged.contains("\nMerged 2 changes into 2 notes (1 new).\nWhat the merge brought into each note"), "\(merged)")
            // Each note abbreviated as in the table, in id order, titled; the new one is shown whole.
            let listed = try #require(broughtNotes(in: merged, by: "merge"), "\(merged)")
            #expect(listed.more == nil)
            let changed = try #require(listed.notes.first { $0.comment == "Groceries" }, "\(merged)")
            let command = changed.arguments
            #expect(command.count == 6 && command[0] == "diff" && id.hasPrefix(command[1]) && command[2] == "--from" && command[3] == before
                    && command[4] == "--to" && command[5] == after, "\(merged)")
            let new = try #require(listed.notes.first { $0.comment == "Trip (new)" }, "\(merged)")
            #expect(new.isShow(of: other), "\(merged)")
            #expect(listed.notes.count == 2 && listed.notes.map(\.arguments[1]) == listed.notes.map(\.arguments[1]).sorted(), "\(merged)")
            // The command shows the phone's edit, and not the laptop's own,
            // made before the merge or after it (it showed the later one).
            try quire.ok(["note", "edit", id, "--append", " later"], store: laptop)
            let diff = try quire.ok(command, store: laptop)
            #expect(diff.hasSuffix("\n\nbody @0 +\"Buy \"\n"), "\(diff)")
        }
    }

    @Test func offlineEditsMergeAndConcurrentWritesShowAsConflicts() throws {
        try withRunner { quire in
            let stores = try TwoStores(quire)
            let (laptop, phone, id) = (stores.laptop, stores.phone, stores.id)
            // Offline on both: concurrent body and title edits, opposite pins.
            try quire.ok(["note", "edit", id, "--append", " and eggs", "--title", "Groceries list", "--pin"], store: laptop)
            try quire.ok(["note", "edit", id, "--insert", "0", "Buy ", "--title", "Shopping", "--unpin"], store: phone)

            let dryRun = try quire.ok(["merge", "--dry-run", laptop, "--json"], store: phone)
            let plan = try #require(try JSONSerialization.jsonObject(with: Data(dryRun.utf8)) as? [String: Any])
            #expect(plan["dryRun"] as? Bool == true)
            #expect(plan["incoming"] as? Int == 1)
            #expect(plan["outgoing"] as? Int == 1)
            let planned = try #require((plan["documents"] as? [[String: Any]])?.first)
            #expect(planned["conflicts"] as? [String] == ["pinned"])
            #expect(try quire.ok(["conflicts", id], store: phone) == "No conflicts.\n")  // nothing written

            let table = try quire.ok(["merge", "--dry-run", laptop], store: phone)
            #expect(table.hasSuffix("\nDry run: merging would bring 1 change into 1 note (0 new); nothing was written.\n"))
            // The note's id abbreviated, as note list shows it.
            #expect(table.split(separator: "\n")[1].hasPrefix(id.prefix(8) + "  "))
            #expect(try quire.ok(["merge", laptop], store: phone).contains("\nMerged 1 change into 1 note (0 new).\n"))
            try quire.ok(["merge", phone], store: laptop)
            // Both now hold the same note: the text edits merged, nothing lost.
            let onPhone = try quire.ok(["note", "show", id, "--json"], store: phone)
            #expect(try quire.ok(["note", "show", id, "--json"], store: laptop) == onPhone)
            let note = try #require(try JSONSerialization.jsonObject(with: Data(onPhone.utf8)) as? [String: Any])
            #expect(note["body"] as? String == "Buy milk and eggs")
            #expect(note["title"] as? String == "Shopping list")

            // The phone's pin write has the higher Lamport value: it saw more operations (its edit is longer).
            // Then the title and body, which merged texts typed at once on both (not conflicts, but said).
            let conflicts = try #require(try quire.run(["conflicts", id, "--json"], store: phone).json() as? [[String: Any]])
            #expect(conflicts.map { $0["key"] as? String } == ["pinned", "body", "title"])
            #expect(conflicts.map { $0["mergedFrom"] == nil } == [true, false, false])
            let conflict = try #require(conflicts.first)
            #expect(conflict["key"] as? String == "pinned")
            let winner = try #require(conflict["winner"] as? [String: Any])
            let loser = try #require((conflict["losers"] as? [[String: Any]])?.first)
            #expect(winner["value"] as? Bool == false)
            #expect(winner["replica"] as? String == stores.phoneReplica)
            #expect(loser["value"] as? Bool == true)
            #expect(loser["replica"] as? String == stores.laptopReplica)
            // Each entry names the change that wrote it, as `log` lists it
            // (the pin is the last write of its change, not its first), and
            // that change's time: who set it, and when.
            let log = try #require(try quire.run(["log", id, "--json"], store: phone).json() as? [[String: Any]])
            for entry in [winner, loser] {
                let change = try #require(log.first { $0["id"] as? String == entry["change"] as? String }, "\(entry)")
                let counters = try #require(change["counters"] as? [String: Int])
                let counter = try #require((entry["id"] as? String)?.split(separator: "@").first.flatMap { Int($0) })
                #expect(change["replica"] as? String == entry["replica"] as? String && (counters["first"]!...counters["last"]!).contains(counter))
                #expect(counter != counters["first"] && entry["time"] as? String == change["time"] as? String)
            }
            let (winnerLamport, loserLamport) = (try #require(winner["lamport"] as? Int), try #require(loser["lamport"] as? Int))
            let lines = try quire.ok(["conflicts", id], store: phone).split(separator: "\n").map(String.init)
            #expect(lines.count == 5)  // the empty lines between keys left out
            #expect(lines[3].hasPrefix("body: not a conflict: ") && lines[4].hasPrefix("title: not a conflict: "))
            #expect(lines[0] == "pinned: higher Lamport value (\(winnerLamport) > \(loserLamport))")
            #expect(lines[1].hasPrefix("  winner  false  lamport \(winnerLamport)  replica \(stores.phoneReplica)  \(winner["id"]!)  "))
            #expect(lines[1].contains("  change \(winner["change"]!) ") && lines[1].hasSuffix(" just now"))
            #expect(lines[2].hasPrefix("  loser   true   lamport \(loserLamport)  replica \(stores.laptopReplica)  \(loser["id"]!)"))
            #expect(lines[2].contains("  change \(loser["change"]!) ") && lines[2].hasSuffix(" just now"))
            // Merging again brings nothing.
            #expect(try quire.ok(["merge", laptop], store: phone) == "Nothing to merge: both stores hold the same changes.\n")
        }
    }

    /// A note removed on one store while the other edited it: the edit is
    /// hidden with the note, and `conflicts` says which removal hid which
    /// changes (it had not seen them), and what brings them back.
    @Test func aRemovalThatDidNotSeeAnEditSaysWhatItHides() throws {
        try withRunner { quire in
            let stores = try TwoStores(quire)
            let (laptop, phone, id) = (stores.laptop, stores.phone, stores.id)
            try quire.ok(["note", "rm", id], store: laptop)
            try quire.ok(["note", "edit", id, "--append", " and eggs"], store: phone)
            // The merge marks the note as `note list --all` does, and `note list` says why it shows none.
            let plan = try #require(try quire.run(["merge", laptop, "--dry-run", "--json"], store: phone).json() as? [String: Any])
            #expect((plan["documents"] as? [[String: Any]])?.first?["removed"] as? Bool == true)
            // The removal hides the append: a new conflict at `removed`, as `conflicts` lists it.
            #expect((plan["documents"] as? [[String: Any]])?.first?["conflicts"] as? [String] == ["removed"])
            let merged = try quire.ok(["merge", laptop], store: phone)
            let row = merged.split(separator: "\n")[1]
            #expect(row.hasPrefix(id.prefix(8) + "  Groceries (removed)  ") && row.hasSuffix("  removed"), "\(merged)")
            // The other way, the append merged into the removed note is hidden by it just as well.
            let laptopPlan = try #require(try quire.run(["merge", phone, "--dry-run", "--json"], store: laptop).json() as? [String: Any])
            #expect((laptopPlan["documents"] as? [[String: Any]])?.first?["conflicts"] as? [String] == ["removed"])
            #expect(try quire.ok(["note", "list"], store: phone) == "No notes shown: 1 removed (`quire note list --all` lists it).\n")
            let log = try #require(try quire.run(["log", id, "--json"], store: phone).json() as? [[String: Any]])
            let removal = try #require(log.first { $0["replica"] as? String == stores.laptopReplica && $0["operations"] as? Int == 1 })
            let edit = try #require(log.first { $0["replica"] as? String == stores.phoneReplica })

            let conflicts = try #require(try quire.run(["conflicts", id, "--json"], store: phone).json() as? [[String: Any]])
            #expect(conflicts.count == 1)
            let removed = try #require(conflicts.first)
            #expect(removed["key"] as? String == "removed")
            let winner = try #require(removed["winner"] as? [String: Any])
            #expect(winner["value"] as? Bool == true && winner["change"] as? String == removal["id"] as? String)
            #expect((removed["losers"] as? [Any])?.isEmpty == true)
            let unseen = try #require(removed["unseenByRemoval"] as? [[String: Any]])
            #expect(unseen.map { $0["change"] as? String } == [edit["id"] as? String])
            #expect(unseen.first?["replica"] as? String == stores.phoneReplica)

            let lines = try quire.ok(["conflicts", id], store: phone).split(separator: "\n").map(String.init)
            #expect(lines.count == 3)
            #expect(lines[0].hasPrefix("removed: removed by a change that had not seen 1 change made elsewhere at the same time (unseen)"))
            #expect(lines[0].hasSuffix("`quire note restore` brings it back with them"))
            #expect(lines[1].hasPrefix("  winner  true  ") && lines[1].contains("change \(removal["id"]!)"))
            #expect(lines[2].hasPrefix("  unseen  ") && lines[2].contains("replica \(stores.phoneReplica)")
                    && lines[2].contains("change \(edit["id"]!)"))

            // Restored, nothing is hidden, and nothing is said.
            try quire.ok(["note", "restore", id], store: phone)
            #expect(try quire.ok(["conflicts", id], store: phone) == "No conflicts.\n")
            // A removal that saw every change hides none of them.
            try quire.ok(["note", "edit", id, "--tag", "later"], store: phone)
            try quire.ok(["note", "rm", id], store: phone)
            #expect(try quire.ok(["conflicts", id], store: phone) == "No conflicts.\n")
            // Nor is it a new conflict where it is merged.
            let laterPlan = try #require(try quire.run(["merge", phone, "--dry-run", "--json"], store: laptop).json() as? [String: Any])
            #expect((laterPlan["documents"] as? [[String: Any]])?.first?["conflicts"] as? [String] == [])
        }
    }

    /// Removed on both stores at once: a conflict at `removed`, and neither
    /// removal hides an edit, so none is listed as unseen.
    @Test func aRemovalOnBothStoresHidesNoEdit() throws {
        try withRunner { quire in
            let stores = try TwoStores(quire)
            try quire.ok(["note", "rm", stores.id], store: stores.laptop)
            try quire.ok(["note", "rm", stores.id], store: stores.phone)
            try quire.ok(["merge", stores.phone], store: stores.laptop)
            let text = try quire.ok(["conflicts", stores.id], store: stores.laptop)
            // Two entries and no unseen row; the clock line may come too (the second removal can be a millisecond later).
            let rows = text.split(separator: "\n").filter { $0.hasPrefix("  winner ") || $0.hasPrefix("  loser ") }
            #expect(text.hasPrefix("removed: ") && rows.count == 2 && !text.contains("unseen"), "\(text)")
            let conflicts = try #require(try quire.run(["conflicts", stores.id, "--json"], store: stores.laptop).json() as? [[String: Any]])
            #expect(conflicts.count == 1 && conflicts.first?["unseenByRemoval"] == nil)
        }
    }

    /// A winner written earlier by the clocks than the loser looks wrong to
    /// a person expecting the last write to win: the text says why not.
    @Test func aWinnerEarlierByTheClockSaysClocksDoNotOrderWrites() throws {
        try withRunner { quire in
            let stores = try TwoStores(quire)
            let (laptop, phone, id) = (stores.laptop, stores.phone, stores.id)
            try quire.ok(["note", "edit", id, "--pin"], store: laptop)
            // The phone's unpin an hour earlier by its clock, after more typing: a higher Lamport value.
            let documentID = try #require(DocumentID(rawValue: id))
            try DocumentStore(path: phone).edit(documentID, time: Date().addingTimeInterval(-3600)) { tx in
                guard case .object(.text, let body)? = try tx.document.get(.root, key: "body") else { return }
                try tx.insertText(body, at: 4, " and eggs")
                try tx.put(.root, key: "pinned", .bool(false))
            }
            try quire.ok(["merge", phone], store: laptop)
            let conflicts = try #require(try quire.run(["conflicts", id, "--json"], store: laptop).json() as? [[String: Any]])
            let winner = try #require(conflicts.first?["winner"] as? [String: Any])
            #expect(winner["value"] as? Bool == false && winner["replica"] as? String == stores.phoneReplica)
            let lines = try quire.ok(["conflicts", id], store: laptop).split(separator: "\n").map(String.init)
            #expect(lines.count == 4)
            #expect(lines[0].hasPrefix("pinned: higher Lamport value ("))
            #expect(lines[1] == "  a loser was written later by its writer's clock; clocks do not order writes made without seeing each other "
                    + "(machines' clocks differ): the Lamport value does, which counts the operations its writer had made or seen")
            #expect(lines[2].hasPrefix("  winner  false ") && lines[2].hasSuffix(" 1 h ago"))
            #expect(lines[3].hasPrefix("  loser   true ") && lines[3].hasSuffix(" just now"))
        }
    }

    @Test func logHeadsVersionVectorShowAtDiffAndBlame() throws {
        try withRunner { quire in
            let stores = try TwoStores(quire)
            let (laptop, phone, id) = (stores.laptop, stores.phone, stores.id)
            let (l, p) = (stores.laptopReplica, stores.phoneReplica)
            // "Groceries" (9) + "milk" (4) + title, body, tags, pinned, removed writes (5) = 18 counters.
            try quire.ok(["note", "edit", id, "--append", " and eggs"], store: phone)  // 9 counters: 1@p ... 9@p
            try quire.ok(["merge", phone], store: laptop)
            try quire.ok(["note", "edit", id, "--delete", "0", "4", "--insert", "0", "oat milk"], store: laptop)

            #expect(try quire.ok(["heads", id], store: laptop) == "\(30)@\(l)\n")  // 18 + 4 deleted + 8 inserted
            #expect(try quire.ok(["vv", id], store: laptop) == [l < p ? "\(l):30,\(p):9" : "\(p):9,\(l):30"].joined() + "\n")

            let log = try #require(try quire.run(["log", id, "--json"], store: laptop).json() as? [[String: Any]])
            #expect(log.map { $0["id"] as? String } == ["19@\(l)", "1@\(p)", "1@\(l)"])
            #expect(log.map { $0["parents"] as? [String] } == [["9@\(p)"], ["18@\(l)"], []])
            #expect(log.map { $0["operations"] as? Int } == [2, 1, 7])
            let afterAppend = try #require(log[1]["version"] as? String)
            let afterCreate = try #require(log[2]["version"] as? String)
            #expect(afterCreate == "\(l):18")

            let lines = try quire.ok(["log", id], store: laptop).split(separator: "\n")
            #expect(lines.count == 4)
            #expect(lines[0].split(separator: " ", omittingEmptySubsequences: true).map(String.init)
                == ["CHANGE", "COUNTERS", "LAMPORT", "PARENTS", "OPS", "TIME", "ACKED", "VERSION"])
            #expect(lines[3].split(separator: " ", omittingEmptySubsequences: true).map(String.init)
                == ["1@\(l)", "1-18", "1-18", "-", "7", "just", "now", "no", "\(l):18"])

            // The same version, as a version vector or as heads.
            #expect(try quire.ok(["show", id, "--at", afterAppend], store: laptop).hasSuffix("\nversion  \(afterAppend)\n\nmilk and eggs\n"))
            // Heads stand for a version vector, which show names.
            #expect(try quire.ok(["show", id, "--at", "9@\(p)"], store: laptop).hasSuffix("\nversion  \(afterAppend)\n\nmilk and eggs\n"))
            let shownAt = try #require(try quire.run(["show", id, "--at", "9@\(p)", "--json"], store: laptop).json() as? [String: Any])
            #expect(shownAt["version"] as? String == afterAppend && shownAt["body"] as? String == "milk and eggs")
            #expect(try #require(try quire.run(["show", id, "--json"], store: laptop).json() as? [String: Any])["version"] == nil)
            #expect(try quire.ok(["note", "show", id, "--at", afterCreate], store: laptop).hasSuffix("\n\nmilk\n"))

            // The text names the versions compared, as `log` prints them.
            let current = try quire.ok(["vv", id], store: laptop).trimmingCharacters(in: .newlines)
            #expect(try quire.ok(["diff", id, "--from", afterCreate, "--to", afterAppend], store: laptop)
                == "from  \(afterCreate)\nto    \(afterAppend)\n\nbody @4 +\" and eggs\"\n")
            #expect(try quire.ok(["diff", id, "--from", afterAppend], store: laptop)
                == "from  \(afterAppend)\nto    \(current) (current)\n\nbody @0 +\"oat \"\n")
            #expect(try quire.ok(["diff", id, "--from", "30@\(l)"], store: laptop)
                == "from  \(current)\nto    \(current) (current)\n\nNo differences.\n")
            let diff = try #require(try quire.run(["diff", id, "--from", afterCreate, "--json"], store: laptop).json() as? [String: Any])
            let edits = try #require(diff["text"] as? [[String: Any]])
            #expect(edits.map { $0["kind"] as? String } == ["insert", "insert"])
            #expect(edits.map { $0["offset"] as? Int } == [0, 4])
            #expect(edits.map { $0["text"] as? String } == ["oat ", " and eggs"])

            // "milk" was deleted and typed again by change 19: blame names the
            // retyping, and the Lamport stamps of each piece's first and last
            // characters: change 19, made after the phone's (19-27) was merged,
            // took 28-31 for its deletes and 32-39 for its typing.
            // The CHANGE column is as wide as its widest id, "19@" and 16 hex digits.
            func pad(_ text: String) -> String { text + String(repeating: " ", count: 19 - text.count) }
            #expect(try quire.ok(["blame", id], store: laptop) == """
                \(pad("CHANGE"))  LAMPORT  TIME      OFFSET  TEXT
                \(pad("19@\(l)"))  32-39    just now  0       "oat milk"
                \(pad("1@\(p)"))  19-27    just now  8       " and eggs"

                """)

            // A version the note does not have, and one that is not a version.
            #expect(try quire.run(["show", id, "--at", "\(l):99"], store: laptop).status == 1)
            for text in ["yesterday", "\(l):19,", ",19@\(l)", "\(l):0"] {
                #expect(try quire.run(["show", id, "--at", text], store: laptop).status == 64, "\(text)")
            }
            // The phone's change without the laptop's change it builds on: no state the note ever had.
            let withoutParent = try quire.run(["diff", id, "--from", afterCreate, "--to", "\(p):9"], store: laptop)
            #expect(withoutParent.status == 1)
            #expect(withoutParent.stderr == "error: version \(p):9 holds change 1@\(p) but not 18@\(l), which it builds on; `quire log \(id)` lists the note's versions\n")
            // Part of the laptop's first change (counters 1-18): no state the note ever had either.
            let partOfChange = try quire.run(["show", id, "--at", "\(l):5"], store: laptop)
            #expect(partOfChange.status == 1)
            #expect(partOfChange.stderr == "error: version \(l):5 holds part of change 1@\(l) (counters 1-18), which applies whole; `quire log \(id)` lists the note's versions\n")
        }
    }

    @Test func headsStandForEverythingTheirChangeBuildsOnThroughEarlierChangesOfItsReplica() throws {
        try withRunner { quire in
            let stores = try TwoStores(quire)
            let (phone, id, p) = (stores.phone, stores.id, stores.phoneReplica)
            try quire.ok(["note", "edit", id, "--append", " and eggs"], store: phone)  // 1@p ... 9@p, on the laptop's 18
            try quire.ok(["note", "edit", id, "--append", "!"], store: phone)          // 10@p, on 9@p
            // 10@p builds on 9@p, which builds on the laptop's change: all three are in.
            #expect(try quire.ok(["show", id, "--at", "10@\(p)"], store: phone).hasSuffix("\n\nmilk and eggs!\n"))
            #expect(try quire.ok(["diff", id, "--from", "9@\(p)", "--to", "10@\(p)"], store: phone).hasSuffix("\n\nbody @13 +\"!\"\n"))
        }
    }

    /// A store compacted without history no longer holds the changes of
    /// other replicas it merged in (Specs/storage.md, "Compaction").
    /// Merging from it brings every other note and names the one it cannot
    /// give, with what to do: exit 1, that note here as it was. Merging the
    /// other way takes everything, that note's OUTGOING unknown; done in a
    /// copy of the compacted store, as the message says, it ends holding
    /// the changes of both.
    @Test func aMergeFromAStoreCompactedPastWhatThisOneLacksMergesTheRestAndNamesTheNote() throws {
        try withRunner { quire in
            let laptop = quire.directory + "/laptop.quire", hub = quire.directory + "/hub.quire"
            let phone = quire.directory + "/phone.quire", copy = quire.directory + "/copy.quire"
            for store in [laptop, hub, phone] { try quire.ok(["init"], store: store) }
            let shared = try quire.ok(["note", "new", "--title", "shared", "--body", "a"], store: laptop).trimmingCharacters(in: .newlines)
            try quire.ok(["merge", laptop], store: phone)
            // Two merges into the hub, two rows of its log: compaction keeps the newest, and the phone lacks the first.
            try quire.ok(["note", "edit", shared, "--append", " one"], store: laptop)
            try quire.ok(["merge", laptop], store: hub)
            try quire.ok(["note", "edit", shared, "--append", " two"], store: laptop)
            let later = try quire.ok(["note", "new", "--title", "later"], store: laptop).trimmingCharacters(in: .newlines)
            try quire.ok(["merge", laptop], store: hub)
            try DocumentStore(path: hub).compact(try #require(DocumentID(rawValue: shared)), keepHistory: false)
            try quire.ok(["note", "edit", shared, "--pin"], store: phone)
            let before = try quire.ok(["note", "show", shared, "--json"], store: phone)

            let result = try quire.run(["merge", hub, "--json"], store: phone)
            #expect(result.status == 1)
            let json = try #require(try result.json() as? [String: Any])
            #expect((json["documents"] as? [[String: Any]])?.map { $0["id"] as? String } == [later])
            #expect(json["historyCompacted"] as? [[String: String]] == [["id": shared, "title": "shared"]])
            #expect(result.stderr == """
                error: \(hub) compacted away changes of note \(shared) (shared) that this store lacks: it was not merged (the rest \
                was); merge from a store that still holds those changes (the one that wrote them), or copy \(hub) and merge this \
                store into the copy (quire --store COPY merge \(phone)), which keeps the changes of both

                """)
            #expect(try quire.ok(["note", "show", shared, "--json"], store: phone) == before)
            try quire.ok(["note", "show", later], store: phone)

            try FileManager.default.copyItem(atPath: hub, toPath: copy)
            let table = try quire.run(["merge", "--dry-run", phone], store: copy).stdout.split(separator: "\n")
            #expect(table[1].split(separator: " ").dropFirst() == ["shared", "1", "?"], "\(table)")
            let merged = try quire.run(["merge", phone, "--json"], store: copy)
            #expect(merged.status == 0, "\(merged.stderr)")
            let plan = try #require(try merged.json() as? [String: Any])
            let document = try #require((plan["documents"] as? [[String: Any]])?.first)
            #expect(plan["outgoing"] is NSNull && document["outgoing"] is NSNull && document["incoming"] as? Int == 1)
            #expect(merged.stderr == """
                warning: this store compacted away changes of note \(shared) (shared) that \(phone) lacks: OUTGOING cannot count \
                them, and merging this store into \(phone) cannot bring them; a copy of this store, once it holds the changes of \
                \(phone), can take its place

                """)
            let note = try #require(try quire.run(["note", "show", shared, "--json"], store: copy).json() as? [String: Any])
            #expect(note["body"] as? String == "a one two" && note["pinned"] as? Bool == true)
        }
    }

    /// A note damaged in either store is left out and named with the store
    /// it is damaged in: nothing damaged is merged, and the other notes merge.
    @Test func aNoteDamagedInEitherStoreIsLeftOutAndTheRestMerges() throws {
        try withRunner { quire in
            let laptop = quire.directory + "/laptop.quire", phone = quire.directory + "/phone.quire"
            for store in [laptop, phone] { try quire.ok(["init"], store: store) }
            func new(_ title: String, in store: String) throws -> String {
                try quire.ok(["note", "new", "--title", title, "--body", "text"], store: store).trimmingCharacters(in: .newlines)
            }
            let shared = try new("shared", in: laptop)
            try quire.ok(["merge", laptop], store: phone)
            let damagedThere = try new("damaged there", in: laptop), whole = try new("whole", in: laptop)
            try quire.ok(["note", "edit", shared, "--append", " more"], store: laptop)
            try quire.damageTheChanges(ofNote: damagedThere, in: laptop)
            try quire.damageTheChanges(ofNote: shared, in: phone)

            let result = try quire.run(["merge", laptop, "--json"], store: phone)
            #expect(result.status == 1)
            let json = try #require(try result.json() as? [String: Any])
            #expect((json["documents"] as? [[String: Any]])?.map { $0["id"] as? String } == [whole])
            let damaged = try #require(json["damaged"] as? [[String: Any]])
            #expect(damaged.map { $0["id"] as? String } == [shared, damagedThere].sorted())
            #expect(damaged.first { $0["id"] as? String == shared }?["inThisStore"] as? Bool == true)
            #expect(damaged.first { $0["id"] as? String == shared }?["title"] as? String == "shared")
            #expect(damaged.first { $0["id"] as? String == damagedThere }?["inThisStore"] as? Bool == false)
            #expect(result.stderr.contains("error: note \(shared) (shared) is damaged in this store, \(phone) (change "))
            #expect(result.stderr.contains("error: note \(damagedThere) is damaged in \(laptop) (change "))
            #expect(result.stderr.contains("merge the note from a backup or another store that holds it whole"))
            #expect(try quire.ok(["note", "show", whole, "--json"], store: phone).contains("\"whole\""))
            #expect(try quire.run(["note", "show", damagedThere], store: phone).stderr.contains("no note matches"))
        }
    }

    /// A laptop store, with notes Groceries and Trip, where Groceries
    /// holds two changes of replica 7 at Lamport values `first` and
    /// `second`, taken one at a time: their ids.
    private func laptopWithReplica7Changes(_ quire: QuireRunner, at first: UInt64, _ second: UInt64, in laptop: String) throws
        -> (groceries: String, trip: String) {
        try quire.ok(["init"], store: laptop)
        let id = try quire.ok(["note", "new", "--title", "Groceries"], store: laptop).trimmingCharacters(in: .newlines)
        let trip = try quire.ok(["note", "new", "--title", "Trip"], store: laptop).trimmingCharacters(in: .newlines)
        let store = try DocumentStore(path: laptop)
        defer { try? store.close() }
        let note = try #require(DocumentID(rawValue: id))
        let last = OpID(replica: store.replicaID, counter: try store.read(note) { $0.versionVector[store.replicaID] })
        for (counter, lamport) in [(UInt64(1), first), (2, second)] {
            let previous = counter == 1 ? last : OpID(replica: ReplicaID(7), counter: counter - 1)
            try store.apply(note, [Change(id: OpID(replica: ReplicaID(7), counter: counter), lamport: lamport,
                                          parents: [previous], operations: [.put(object: .root, key: "x", value: .scalar(.int(1)),
                                          pred: counter == 1 ? [] : [previous])])])
        }
        return (id, trip)
    }

    /// A note whose Lamport values climb more than `maxLamportLead` beyond
    /// this store's highest, in steps the other store took one at a time,
    /// each within the lead, merges as one batch: the lead is measured from
    /// the highest before each change, the batch's earlier ones counted.
    @Test func aHistoryTheOtherStoreTookInStepsMergesAsOneBatch() throws {
        try withRunner { quire in
            let laptop = quire.directory + "/laptop.quire", phone = quire.directory + "/phone.quire"
            let lead = DocumentStore.maxLamportLead
            let (groceries, trip) = try laptopWithReplica7Changes(quire, at: lead, 2 * lead, in: laptop)
            try quire.ok(["init"], store: phone)
            #expect(try quire.ok(["merge", laptop, "--dry-run"], store: phone).contains("Groceries"))
            let result = try quire.run(["merge", laptop], store: phone)
            #expect(result.status == 0, "\(result.stderr)")
            let listed = try #require(try quire.run(["note", "list", "--all", "--json"], store: phone).json() as? [[String: Any]])
            #expect(Set(listed.compactMap { $0["id"] as? String }) == [groceries, trip])
        }
    }

    /// A note whose changes this store refuses (the other store holds a
    /// Lamport value further beyond the one before than the lead allows,
    /// as one written before the rule could) is left out of the merge and
    /// named, as a damaged one is; every other note is merged. A dry run
    /// reports it alike: planning asks the store's own rule.
    @Test func aNoteThisStoreRefusesIsLeftOutAndTheOthersAreMerged() throws {
        try withRunner { quire in
            let laptop = quire.directory + "/laptop.quire", phone = quire.directory + "/phone.quire"
            let lead = DocumentStore.maxLamportLead
            let (id, trip) = try laptopWithReplica7Changes(quire, at: 1000, 1001, in: laptop)
            do {
                // The second change of replica 7 as such a store holds it: at 2^33 + 1000.
                let database = try Database(path: laptop)
                defer { database.close() }
                let farAhead = Change(id: OpID(replica: ReplicaID(7), counter: 2), lamport: 2 * lead + 1000, parents: [OpID(replica: ReplicaID(7), counter: 1)],
                                      operations: [.put(object: .root, key: "x", value: .scalar(.int(1)), pred: [OpID(replica: ReplicaID(7), counter: 1)])])
                let rewritten = try database.write { db in
                    try db.query(sql: "UPDATE changes SET data = ?, first_lamport = ?, last_lamport = ? WHERE replica = 7 AND first_counter = 2 RETURNING 1",
                                 arguments: [.blob(StoredBundle.stored(ChangeEncoding.encode([farAhead]))),
                                             .unsigned(farAhead.lamport), .unsigned(farAhead.lastLamport)])
                }
                #expect(rewritten.count == 1)
            }
            try quire.ok(["init"], store: phone)
            let reason = "its Lamport value \(2 * lead + 1000) lies more than \(lead) beyond the highest before it, 1000)"
            let dryRun = try quire.run(["merge", laptop, "--dry-run"], store: phone)
            #expect(dryRun.status == 1)
            #expect(dryRun.stderr.hasSuffix(reason + ": merging would leave it out\n"), "\(dryRun.stderr)")
            #expect(dryRun.stdout.contains("Trip") && !dryRun.stdout.contains("Groceries"), "\(dryRun.stdout)")
            let result = try quire.run(["merge", laptop], store: phone)
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("error: this store refuses the changes of note \(id) (Groceries) in \(laptop) (change "))
            #expect(result.stderr.hasSuffix(reason + ": it was not merged (the rest was)\n"), "\(result.stderr)")
            #expect(result.stdout.contains("Trip") && !result.stdout.contains("Groceries"), "\(result.stdout)")
            let listed = try #require(try quire.run(["note", "list", "--all", "--json"], store: phone).json() as? [[String: Any]])
            #expect(listed.map { $0["id"] as? String } == [trip])
            // Merged again, the refused note is still refused and listed as such; Trip has nothing left to bring.
            let again = try quire.run(["merge", laptop, "--json"], store: phone)
            #expect(again.status == 1)
            let report = try #require(try again.json() as? [String: Any])
            #expect((report["documents"] as? [[String: Any]])?.isEmpty == true)
            let refused = try #require(report["refused"] as? [[String: Any]])
            #expect(refused.map { $0["id"] as? String } == [id])
            #expect(refused.first?["title"] as? String == "Groceries")
            #expect((refused.first?["reason"] as? String)?.hasPrefix("change ") == true)
        }
    }
}
