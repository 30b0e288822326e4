import Foundation
import Quire
import QuireTestSupport
import Testing

/// `quire compact` as a note-taker on a small disk runs it: the file gives
/// its space back, what the history commands need stays (unless
/// `--drop-history`, which keeps what no peer holds yet), and a vacuum
/// that fails loses nothing.
@Suite struct CompactCommandTests {
    /// A note of 300,000 seeded letters appended to 12 times through the
    /// library with a snapshot every 4 changes: the two newest snapshots
    /// are kept, and the pages of the one pruned last are free (fewer than
    /// the store's own rule gives back: 1 MiB, a quarter of the file).
    static func journalWithFreePages(_ quire: QuireRunner) throws -> String {
        try quire.ok(["init"])
        var random = SeededGenerator(seed: 88)
        let letters = quire.directory + "/letters.txt"
        try Data((0..<300_000).map { _ in UInt8.random(in: 97...122, using: &random) }).write(to: URL(fileURLWithPath: letters))
        let id = try quire.ok(["note", "new", "--title", "Journal", "--body-file", letters]).trimmingCharacters(in: .newlines)
        let store = try DocumentStore(path: quire.store, snapshotInterval: 4)
        for day in 1...12 { try append(" day \(day)", to: id, in: store) }
        try store.close()
        return id
    }

    /// Appends `text` to the body of note `id`, as `note edit --append` does.
    static func append(_ text: String, to id: String, in store: DocumentStore) throws {
        try store.edit(try #require(DocumentID(rawValue: id))) { tx in
            guard case .object(.text, let body)? = try tx.document.get(.root, key: "body") else { return }
            try tx.insertText(body, at: tx.document.textCount(body), text)
        }
    }

    static func fileLength(_ path: String) throws -> Int64 {
        try (FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? -1
    }

    static func freeSpace(_ path: String) throws -> FreeSpace {
        let database = try Database(path: path, readOnly: true)
        defer { database.close() }
        return try database.freeSpace()
    }

    /// What the history commands print of a note, from its oldest version.
    static func history(of id: String, _ quire: QuireRunner) throws -> [String] {
        let log = try quire.ok(["log", id, "--json"])
        let oldest = try #require((try JSONSerialization.jsonObject(with: Data(log.utf8)) as? [[String: Any]])?.last?["version"] as? String)
        return [log, try quire.ok(["blame", id, "--json"]), try quire.ok(["show", id, "--at", oldest, "--json"]),
                try quire.ok(["diff", id, "--from", oldest, "--json"]), try quire.ok(["conflicts", id, "--json"])]
    }

    @Test func theDefaultGivesTheFreePagesBackAndKeepsTheHistory() throws {
        try withRunner { quire in
            let id = try Self.journalWithFreePages(quire)
            let grown = try Self.freeSpace(quire.store)
            #expect(grown.freeBytes > 100_000 && !grown.isWorthVacuuming, "\(grown)")
            let history = try Self.history(of: id, quire)

            let report = try #require(try JSONSerialization.jsonObject(with: Data(quire.ok(["compact", "--json"]).utf8)) as? [String: Any])
            #expect(Set(report.keys) == ["notes", "historyDropped", "changesBefore", "changesAfter", "bytesBefore", "bytesAfter",
                                         "freeBytes", "vacuumed", "vacuumError"])
            #expect(report["notes"] as? [[String: String]] == [["id": id, "title": "Journal"]])
            #expect(report["historyDropped"] as? Bool == false && report["vacuumed"] as? Bool == true)
            #expect(report["vacuumError"] is NSNull)
            #expect(report["changesBefore"] as? Int == 13 && report["changesAfter"] as? Int == 13)
            #expect(report["bytesBefore"] as? Int64 == grown.fileBytes)
            #expect(report["freeBytes"] as? Int == 0)
            let compacted = try Self.freeSpace(quire.store)
            #expect(compacted.freeBytes == 0 && compacted.fileBytes < grown.fileBytes - 100_000)
            #expect(report["bytesAfter"] as? Int64 == compacted.fileBytes)
            #expect(try Self.fileLength(quire.store) == compacted.fileBytes)
            // log, blame, show --at, diff and conflicts print what they printed.
            #expect(try Self.history(of: id, quire) == history)

            let again = try quire.ok(["compact", String(id.prefix(8))])
            #expect(again.hasPrefix("Compacted 1 note, keeping its history (13 logged changes): a fresh snapshot each, older snapshots deleted.\n"
                + "Wrote the file again without its free pages: "), "\(again)")
        }
    }

    /// One change is counted as one, not "1 logged changes".
    @Test func oneChangeIsCountedInTheSingular() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Once"]).trimmingCharacters(in: .newlines)
            #expect(try quire.ok(["compact", id]).hasPrefix("Compacted 1 note, keeping its history (1 logged change): "))
            #expect(try quire.ok(["compact", id, "--drop-history"]).contains("\n0 of 1 logged change deleted; 1 stays: "))
        }
    }

    /// `--drop-history` deletes the changes every peer holds and keeps the
    /// local ones no peer has acknowledged, which a later sync still sends;
    /// the history commands work from what is left (`CompactedHistoryTests`).
    /// A note not named keeps its whole log.
    @Test func dropHistoryDeletesWhatThePeersHoldAndKeepsUnsentChanges() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Journal", "--body", "start"]).trimmingCharacters(in: .newlines)
            let other = try quire.ok(["note", "new", "--title", "Other", "--body", "kept"]).trimmingCharacters(in: .newlines)
            let journal = try #require(DocumentID(rawValue: id)), otherID = try #require(DocumentID(rawValue: other))
            let store = try DocumentStore(path: quire.store)
            for day in 1...20 { try Self.append(" day \(day)", to: id, in: store) }
            // A peer holds everything so far; the last three days are not sent yet.
            for note in [journal, otherID] {
                try store.acknowledge(peer: "laptop", id: note, version: store.read(note) { $0.versionVector })
            }
            for day in 21...23 { try Self.append(" day \(day)", to: id, in: store) }
            try store.close()
            let otherHistory = try Self.history(of: other, quire)
            #expect(try quire.run(["compact", "--drop-history"]).status == 64)

            let text = try quire.ok(["compact", id, "--drop-history"])
            #expect(text.hasPrefix("Compacted 1 note, dropping its history:\n  \(id.prefix(8))"), "\(text)")
            #expect(text.contains(" Journal\n21 of 24 logged changes deleted; 3 stay: local changes a peer lacks"), "\(text)")
            #expect(text.contains("log, blame and conflicts of a note that lost changes name what those did `compacted`, "
                + "show --at and diff reach back to the compaction only"), "\(text)")
            #expect(try quire.ok(["note", "show", id]).hasSuffix("\nstart" + (1...23).map { " day \($0)" }.joined() + "\n"))
            // The three unsent changes stay, for the peer to take.
            let reopened = try DocumentStore(path: quire.store, readOnly: true)
            #expect(try reopened.outbox(peer: "laptop")[journal]?.count == 3)
            #expect(try reopened.outbox(peer: "laptop")[otherID] == nil)
            try reopened.close()
            let status = try #require(try JSONSerialization.jsonObject(with: Data(quire.ok(["status", "--json"]).utf8)) as? [String: Any])
            #expect(status["pending"] as? Int == 3)
            for command in [["log", id], ["blame", id], ["conflicts", id]] { #expect(try quire.run(command).status == 0, "\(command)") }
            #expect(try Self.history(of: other, quire) == otherHistory)
        }
    }

    /// A vacuum that cannot write (the process may write no file past 700
    /// KB, as a full disk stops it) leaves the compaction committed and
    /// the file whole: the report says so, and `compact` run again gives
    /// the space back.
    @Test func aVacuumThatFailsLosesNothing() throws {
        try withRunner { quire in
            let id = try Self.journalWithFreePages(quire)
            let history = try Self.history(of: id, quire)
            let limited = ["python3", "-c", "import os, resource, signal, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (700_000, 700_000)); "
                           + "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])"]
            let failed = try quire.run(["compact", "--json"], launcher: limited)
            #expect(failed.status == 1)
            let report = try #require(try failed.json() as? [String: Any])
            #expect(report["vacuumed"] as? Bool == false && report["vacuumError"] is String)
            let free = try #require(report["freeBytes"] as? Int), bytes = try #require(report["bytesAfter"] as? Int)
            #expect(free > 100_000)
            #expect(failed.stderr.hasPrefix("error: the file was not written again without its free pages"), "\(failed.stderr)")
            #expect(failed.stderr.contains("SQLite could not write it; a vacuum needs about \(2 * (bytes - free)) bytes free"), "\(failed.stderr)")
            #expect(failed.stderr.contains("the compaction is done and nothing was lost"), "\(failed.stderr)")
            #expect(try Self.history(of: id, quire) == history)

            #expect(try quire.ok(["compact"]).contains("Wrote the file again without its free pages"))
            #expect(try Self.freeSpace(quire.store).freeBytes == 0)
            #expect(try Self.history(of: id, quire) == history)
        }
    }

    /// A note whose change is damaged cannot be compacted (its snapshot
    /// cannot be made): it is named, and the other notes are compacted.
    @Test func aDamagedNoteIsNamedAndTheOthersCompacted() throws {
        try withRunner { quire in
            let (damaged, sound) = try quire.storeWithADamagedNote()

            let result = try quire.run(["compact", "--json"])
            #expect(result.status == 1)
            #expect((try result.json() as? [String: Any])?["notes"] as? [[String: String]] == [["id": sound, "title": "second"]])
            #expect(result.stderr.hasPrefix("error: note \(damaged): "), "\(result.stderr)")
        }
    }

    /// The store's own trouble (here another process holds its lock past
    /// the busy timeout; a full disk and a read-only file likewise) is said
    /// once, with what to do, and the notes after the one it stopped are
    /// not tried: each failed alike, one line of SQLite's bare report a
    /// note, and a busy store made each wait out the timeout again.
    @Test func theStoresOwnFailureIsSaidOnceAndTheNotesAfterItAreNotTried() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let first = try quire.ok(["note", "new", "--title", "one"]).trimmingCharacters(in: .newlines)
            try quire.ok(["note", "new", "--title", "two"])
            try quire.ok(["note", "new", "--title", "three"])
            let writer = try Database(path: quire.store)
            let result = try writer.write { _ in try quire.run(["compact", "--json"]) }
            writer.close()
            #expect(result.status == 1)
            #expect(((try result.json() as? [String: Any])?["notes"] as? [Any])?.isEmpty == true)
            #expect(result.stderr.hasPrefix("error: note \(first) and the 2 after it were not compacted: the store \(quire.store) is busy: "
                + "another process kept it locked for 5 s, nothing was saved; try again once it is done\nSQLite's report: "), "\(result.stderr)")
            #expect(result.stderr.components(separatedBy: "error: ").count == 2, "\(result.stderr)")
            #expect(try quire.ok(["compact"]).hasPrefix("Compacted 3 notes"))
        }
    }

    @Test func usageErrorsAndHelp() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T"]).trimmingCharacters(in: .newlines)
            for (arguments, message) in [(["compact", "--drop-history"], "--drop-history deletes history for good"),
                                         (["compact", id, "--all"], "give notes or --all, not both"),
                                         (["compact", "--json=1"], "--json does not take"),
                                         (["compact", "--bogus"], "unknown option")] {
                let result = try quire.run(arguments)
                #expect(result.status == 64, "\(arguments)")
                #expect(result.stderr.hasPrefix("error: \(message)"), "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains("usage: quire compact [ID... | --all] [--json]"))
            }
            #expect(try quire.run(["compact", "ffffffff"]).stderr.hasPrefix("error: no note matches \"ffffffff\""))
            let help = try quire.ok(["compact", "--help"])
            #expect(help.contains("holds the store's write lock") && help.contains("needs free disk about twice"))
            #expect(try quire.ok(["--help"]).contains("  compact "))
        }
    }
}
