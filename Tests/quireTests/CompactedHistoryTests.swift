import Foundation
import Quire
import QuireTestSupport
import Testing

/// The history commands on a note whose older changes `quire compact
/// --drop-history` deleted: they work from what is left (the snapshot at
/// the compaction point and the changes logged since) and name the
/// deleted changes `compacted`, rather than failing.
@Suite struct CompactedHistoryTests {
    /// A journal written over 23 days, the first 20 held by a peer, then
    /// compacted without history (deleting those 20 and the note's
    /// creation), then written on the 24th with a new tag. Returns its id.
    static func compactedJournal(_ quire: QuireRunner) throws -> String {
        try quire.ok(["init"])
        let id = try quire.ok(["note", "new", "--title", "Journal", "--body", "start", "--tag", "old"]).trimmingCharacters(in: .newlines)
        let journal = try #require(DocumentID(rawValue: id))
        let store = try DocumentStore(path: quire.store)
        for day in 1...20 { try CompactCommandTests.append(" day \(day)", to: id, in: store) }
        try store.acknowledge(peer: "laptop", id: journal, version: store.read(journal) { $0.versionVector })
        for day in 21...23 { try CompactCommandTests.append(" day \(day)", to: id, in: store) }
        try store.close()
        try quire.ok(["compact", id, "--drop-history"])
        try quire.ok(["note", "edit", id, "--append", " day 24", "--tag", "new"])
        return id
    }

    /// Two stores, laptop and phone, holding one note the laptop made and
    /// the phone merged.
    static func sharedNote(_ quire: QuireRunner) throws -> (laptop: String, phone: String, id: String) {
        let laptop = quire.directory + "/laptop.quire", phone = quire.directory + "/phone.quire"
        for store in [laptop, phone] { try quire.ok(["init"], store: store) }
        let id = try quire.ok(["note", "new", "--title", "shared", "--body", "a"], store: laptop).trimmingCharacters(in: .newlines)
        try quire.ok(["merge", laptop], store: phone)
        return (laptop, phone, id)
    }

    static func jsonArray(_ quire: QuireRunner, _ arguments: [String], store: String? = nil) throws -> [[String: Any]] {
        try #require(try JSONSerialization.jsonObject(with: Data(quire.ok(arguments, store: store).utf8)) as? [[String: Any]])
    }

    @Test func logListsTheChangesLeftAndWhereCompactionCut() throws {
        try withRunner { quire in
            let id = try Self.compactedJournal(quire)
            let log = try Self.jsonArray(quire, ["log", id, "--json"])
            // Day 24, then days 23-21, kept as no peer holds them.
            #expect(log.count == 4)
            let point = try #require(log.first?["compactedBefore"] as? String)
            #expect(log.allSatisfy { $0["compactedBefore"] as? String == point })
            #expect(log.dropFirst().allSatisfy { $0["version"] is NSNull })
            let current = try quire.ok(["vv", id]).trimmingCharacters(in: .newlines)
            #expect(log.first?["version"] as? String == current)
            // The point is the version before day 24: only it differs.
            let day24 = try #require(log.first?["counters"] as? [String: Int])
            let replica = try #require(log.first?["replica"] as? String)
            #expect(point == "\(replica):\(try #require(day24["first"]) - 1)")

            let text = try quire.ok(["log", id])
            #expect(text.hasSuffix("\nChanges before version \(point) were deleted by `quire compact --drop-history`; "
                + "those with version - are from before it, still logged: local changes a peer lacks, or the note's newest then.\n"), "\(text)")
            // A whole log says nothing of compaction.
            let other = try quire.ok(["note", "new", "--title", "Other"]).trimmingCharacters(in: .newlines)
            #expect(try Self.jsonArray(quire, ["log", other, "--json"]).first?["compactedBefore"] is NSNull)
            #expect(!(try quire.ok(["log", other]).contains("compact")))
        }
    }

    @Test func blameNamesTheDeletedChangesCompacted() throws {
        try withRunner { quire in
            let id = try Self.compactedJournal(quire)
            let log = try Self.jsonArray(quire, ["log", id, "--json"])
            let pieces = try Self.jsonArray(quire, ["blame", id, "--json"])
            let compacted = pieces.prefix { $0["compacted"] as? Bool == true }
            #expect(compacted.map { $0["text"] as? String ?? "" }.joined() == "start" + (1...20).map { " day \($0)" }.joined())
            #expect(compacted.allSatisfy { $0["change"] is NSNull && $0["time"] is NSNull && $0["lamport"] is Int && $0["replica"] is String })
            let logged = pieces.dropFirst(compacted.count)
            #expect(logged.map { $0["text"] as? String } == (21...24).map { " day \($0)" })
            #expect(logged.map { $0["change"] as? String } == log.reversed().map { $0["id"] as? String })
            #expect(logged.allSatisfy { $0["compacted"] as? Bool == false && $0["time"] is String })
            // Lamport stamps are the document's, whether the change is logged or not: each append's above the one before.
            let lamports = pieces.compactMap { $0["lamport"] as? Int }
            #expect(lamports.count == pieces.count && lamports == lamports.sorted())

            let text = try quire.ok(["blame", id])
            #expect(text.split(separator: "\n")[1].hasPrefix("compacted "), "\(text)")
            let tags = try Self.jsonArray(quire, ["blame", id, "--tags", "--json"])
            #expect(tags.map { $0["tag"] as? String } == ["old", "new"])
            #expect(tags.map { $0["compacted"] as? Bool } == [true, false])
            #expect(tags[0]["change"] is NSNull && tags[1]["change"] as? String == log.first?["id"] as? String)
            #expect(try quire.ok(["blame", id, "--tags"]).contains("\ncompacted "))
            #expect(try Self.jsonArray(quire, ["blame", id, "--title", "--json"]).map { $0["compacted"] as? Bool } == [true])
        }
    }

    /// `blame --deleted` after compaction: text deleted by a deleted change
    /// is still listed (the snapshot keeps every tombstone), both its
    /// changes `compacted`, as the document keeps no record of who deleted
    /// it; text deleted since is attributed to its logged deletion. So are
    /// removed tags (`--deleted --tags`).
    @Test func blameDeletedNamesTheDeletedChangesCompacted() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Plan", "--body", "one two three", "--tag", "a", "--tag", "b", "--tag", "c"])
                .trimmingCharacters(in: .newlines)
            try quire.ok(["note", "edit", id, "--delete", "0", "4", "--untag", "a"])  // "one "
            let store = try DocumentStore(path: quire.store)
            try CompactCommandTests.append(" four", to: id, in: store)
            let note = try #require(DocumentID(rawValue: id))
            try store.acknowledge(peer: "laptop", id: note, version: store.read(note) { $0.versionVector })
            try store.close()
            try quire.ok(["compact", id, "--drop-history"])
            try quire.ok(["note", "edit", id, "--delete", "0", "4", "--untag", "b"])  // "two "
            let deletion = try Self.jsonArray(quire, ["log", id, "--json"]).first?["id"] as? String

            // Text and tags alike: the first deleted by a deleted change, the second by the logged one.
            for (options, deleted) in [(["--deleted"], ["one ", "two "]), (["--deleted", "--tags"], ["a", "b"])] {
                let entries = try Self.jsonArray(quire, ["blame", id] + options + ["--json"])
                try #require(entries.map { ($0["text"] ?? $0["tag"]) as? String } == deleted)
                #expect(entries.allSatisfy { $0["change"] is NSNull && $0["time"] is NSNull && $0["compacted"] as? Bool == true && $0["lamport"] is Int })
                let deletedBy = entries.map { $0["deletedBy"] as? [String: Any] ?? [:] }
                #expect(deletedBy[0]["change"] is NSNull && deletedBy[0]["replica"] is NSNull && deletedBy[0]["lamport"] is NSNull)
                #expect(deletedBy[0]["time"] is NSNull && deletedBy[0]["compacted"] as? Bool == true)
                #expect(deletedBy[1]["change"] as? String == deletion && deletedBy[1]["compacted"] as? Bool == false && deletedBy[1]["lamport"] is Int)
                let rows = try quire.ok(["blame", id] + options).split(separator: "\n")
                #expect(rows.count == 3 && rows[1].hasPrefix("compacted ") && rows[1].split(separator: " ").filter { $0 == "compacted" }.count == 2,
                        "\(options): \(rows)")
            }
        }
    }

    @Test func showAndDiffRebuildVersionsFromTheCompactionOn() throws {
        try withRunner { quire in
            let id = try Self.compactedJournal(quire)
            let log = try Self.jsonArray(quire, ["log", id, "--json"])
            let point = try #require(log.first?["compactedBefore"] as? String)
            let atPoint = try #require(try JSONSerialization.jsonObject(with: Data(quire.ok(["show", id, "--at", point, "--json"]).utf8)) as? [String: Any])
            #expect(atPoint["body"] as? String == "start" + (1...23).map { " day \($0)" }.joined())
            #expect(atPoint["tags"] as? [String] == ["old"] && atPoint["version"] as? String == point)
            let day24 = try #require(log.first?["id"] as? String)
            #expect(try quire.ok(["show", id, "--at", day24]).hasSuffix(" day 23 day 24\n"))
            let diff = try quire.ok(["diff", id, "--from", point])
            #expect(diff.contains("body @\("start".count + (1...23).map { " day \($0)" }.joined().count) +\" day 24\""), "\(diff)")

            // Before the point: a clear error naming what can be shown.
            let replica = try #require(log.first?["replica"] as? String)
            for arguments in [["show", id, "--at", "1@\(replica)"], ["show", id, "--at", "\(replica):3"], ["diff", id, "--from", "\(replica):3"]] {
                let result = try quire.run(arguments)
                #expect(result.status == 1, "\(arguments)")
                #expect(result.stderr == "error: version \(arguments[3]) is from before what `quire compact --drop-history` left of note \(id): "
                    + "the oldest version it can show is \(point); `quire log \(id)` lists the versions since\n", "\(arguments)")
            }
        }
    }

    /// Two later snapshots prune the compaction's own: the point is still
    /// known (from the log), and versions from the oldest snapshot left on
    /// are rebuilt; those between fail, naming that snapshot's version,
    /// which the text of `log`, listing them, says too.
    @Test func laterSnapshotsLeaveTheVersionsFromTheOldestOn() throws {
        try withRunner { quire in
            let id = try Self.compactedJournal(quire)
            let point = try #require(try Self.jsonArray(quire, ["log", id, "--json"]).first?["compactedBefore"] as? String)
            let store = try DocumentStore(path: quire.store, snapshotInterval: 1)
            for day in 25...27 { try CompactCommandTests.append(" day \(day)", to: id, in: store) }
            try store.close()

            let log = try Self.jsonArray(quire, ["log", id, "--json"])
            #expect(log.count == 7 && log.allSatisfy { $0["compactedBefore"] as? String == point })
            let versions = log.compactMap { $0["version"] as? String }
            let refused = try quire.run(["show", id, "--at", point])
            #expect(refused.status == 1)
            let oldest = try #require(versions.first { refused.stderr.contains("the oldest version it can show is \($0);") }, "\(refused.stderr)")
            #expect(oldest != point)
            let shown = try #require(try JSONSerialization.jsonObject(with: Data(quire.ok(["show", id, "--at", oldest, "--json"]).utf8)) as? [String: Any])
            #expect((shown["body"] as? String)?.hasPrefix("start day 1 ") == true && shown["version"] as? String == oldest)
            #expect(try quire.ok(["diff", id, "--from", oldest]).contains("+\" day 27\""))
            let text = try quire.ok(["log", id])
            #expect(text.hasSuffix("\nVersions from before \(oldest) can no longer be shown: the store's later snapshots replaced the one at the compaction point "
                + "(`quire show --at` and `quire diff` rebuild versions from \(oldest) on).\n"), "\(text)")
        }
    }

    /// `quire compact` keeping history, after `--drop-history`: the
    /// versions `log` lists since the point stay showable, as the snapshot
    /// replays start from is kept beside the fresh one.
    @Test func compactingAgainWithHistoryKeepsTheVersionsSinceThePoint() throws {
        try withRunner { quire in
            let id = try Self.compactedJournal(quire)
            let point = try #require(try Self.jsonArray(quire, ["log", id, "--json"]).first?["compactedBefore"] as? String)
            let before = try quire.ok(["show", id, "--at", point, "--json"])
            try quire.ok(["compact", id])
            #expect(try quire.ok(["show", id, "--at", point, "--json"]) == before)
            #expect(try quire.ok(["diff", id, "--from", point]).contains("+\" day 24\""))
            // A second --drop-history moves the point on: one snapshot again.
            try quire.ok(["compact", id, "--drop-history"])
            #expect(try quire.ok(["show", id, "--at", try quire.ok(["vv", id]).trimmingCharacters(in: .newlines)]).hasSuffix(" day 24\n"))
        }
    }

    /// The heads `quire heads` prints name the current version even when
    /// one of them is in a change compaction deleted (another store's
    /// edit, concurrent with a local one the log keeps).
    @Test func headsInADeletedChangeNameTheirVersion() throws {
        try withRunner { quire in
            let (laptop, phone, id) = try Self.sharedNote(quire)
            try quire.ok(["note", "edit", id, "--append", "p"], store: phone)
            try quire.ok(["note", "edit", id, "--append", "l"], store: laptop)
            try quire.ok(["merge", phone], store: laptop)
            try quire.ok(["compact", id, "--drop-history"], store: laptop)

            let heads = try quire.ok(["heads", id], store: laptop).trimmingCharacters(in: .newlines)
            #expect(heads.contains(","), "\(heads)")
            let vector = try quire.ok(["vv", id], store: laptop).trimmingCharacters(in: .newlines)
            #expect(try quire.ok(["show", id, "--at", heads], store: laptop) == quire.ok(["show", id, "--at", vector], store: laptop))
            #expect(try quire.ok(["diff", id, "--from", heads], store: laptop).hasSuffix("No differences.\n"))
        }
    }

    /// A conflict one of whose writes was another store's, merged in and
    /// then compacted away: listed, that write's change named `compacted`.
    @Test func conflictsWorkFromTheCurrentState() throws {
        try withRunner { quire in
            let (laptop, phone, id) = try Self.sharedNote(quire)
            try quire.ok(["note", "edit", id, "--pin"], store: laptop)
            try quire.ok(["note", "edit", id, "--pin"], store: phone)
            try quire.ok(["merge", laptop], store: phone)
            try quire.ok(["note", "edit", id, "--append", "b"], store: phone)
            try quire.ok(["compact", id, "--drop-history"], store: phone)

            let conflicts = try Self.jsonArray(quire, ["conflicts", id, "--json"], store: phone)
            let pinned = try #require(conflicts.first)
            #expect(conflicts.count == 1 && pinned["key"] as? String == "pinned")
            let entries = [try #require(pinned["winner"] as? [String: Any])] + (try #require(pinned["losers"] as? [[String: Any]]))
            #expect(entries.count == 2)
            let laptopEntry = try #require(entries.first { $0["compacted"] as? Bool == true })
            let phoneEntry = try #require(entries.first { $0["compacted"] as? Bool == false })
            #expect(laptopEntry["change"] is NSNull && laptopEntry["time"] is NSNull && laptopEntry["lamport"] is Int)
            #expect(phoneEntry["change"] is String && phoneEntry["time"] is String)
            #expect(try quire.ok(["conflicts", id], store: phone).contains(" change compacted "))
            #expect(try Self.jsonArray(quire, ["blame", id, "--json"], store: phone).map { $0["compacted"] as? Bool } == [true, false])
        }
    }
}
