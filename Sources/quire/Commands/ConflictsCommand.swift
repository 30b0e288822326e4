import Quire

/// `quire conflicts ID`.
enum ConflictsCommand {
    static let command = Command(
        name: "conflicts",
        summary: "List every field of a note where concurrent writes met (the winner, the losers, and why: the higher Lamport value, then replica id), "
            + "and the edits a removal had not seen; concurrent edits of the title, body and tags merge instead (`quire blame`, `quire diff`).",
        usage: ["ID [--at VERSION] [--json]"],
        arguments: [NoteCommands.noteArgument],
        options: [.at, .json],
        examples: ["quire conflicts 0190f1c2", "quire conflicts 0190f1c2 --json", "quire conflicts 0190f1c2 --at 7c0c5e135634e4e8:18,9a41d0c2e8b7f613:4"],
        run: { invocation in
            try invocation.expectArguments(atMost: 1)
            let output = invocation.context.output
            let at = try invocation.version("--at")
            let (store, id) = try invocation.openStoreAndNote()
            let history = try DocumentHistory(id, in: store)
            let conflicts: [Conflict]
            var shownVersion: VersionVector?
            if let at {
                // The note replayed to that version, asked only of the changes it holds.
                let version = try history.version(at)
                conflicts = try Conflict.report(in: history.document(at: version), history: history.upTo(version))
                shownVersion = version
            } else {
                conflicts = try store.read(id) { try Conflict.report(in: $0, history: history) }
            }
            if invocation.flag("--json") {
                // An array, as without --at: scripts read that shape.
                output.print(json: .array(conflicts.map(\.json)))
                return
            }
            // The version shown first, as `show --at` names it among its
            // fields (heads given stand for their version vector).
            let version = shownVersion.map { Table(rows: [["version", $0.description]]).render() + "\n\n" } ?? ""
            output.print(version + text(conflicts, output))
        })

    /// The text form: per key, `KEY: why the winner won`, then the entries, winner
    /// first, each with the change that wrote it (as `log` lists it) and
    /// that change's time; for a removed note, the changes its removal did not
    /// see. Lines under the header explain what the times would mislead about.
    /// A text merged from concurrent edits, no conflict, is one line, `KEY: why`,
    /// after the conflicts (after `No conflicts.` when there are none).
    static func text(_ conflicts: [Conflict], _ output: Output) -> String {
        let mergedTexts = conflicts.filter(\.isOnlyMergedText).map { output.styled($0.key, .bold) + ": " + $0.reason }
        let writeConflicts = conflicts.filter { !$0.isOnlyMergedText }
        guard !writeConflicts.isEmpty else { return (["No conflicts."] + mergedTexts).joined(separator: "\n") }
        return writeConflicts.map { conflict in
            let rows = conflict.entries.enumerated().map { index, entry in
                let change = conflict.changes[index]
                return [index == 0 ? output.styled("winner", .green) : output.styled("loser", .red),
                        conflict.json(entry.value).compact, "lamport \(entry.lamport)", "replica \(entry.id.replica)", entry.id.description,
                        "change " + change.text(output), RelativeTime.describe(change.change?.date)]
            }
            // The changes a removal did not see, after the entries, in the same columns.
            let unseenRows = conflict.unseenByRemoval.map { change in
                [output.styled("unseen", .yellow), "", "lamport \(change.lamport)-\(change.lastLamport)", "replica \(change.replica)", "",
                 "change " + output.styled(change.id.description, .yellow), RelativeTime.describe(change.date)]
            }
            // A removal or merged text that also beat other writes to its key says both.
            let alsoTrue = conflict.entries.count > 1 ? [conflict.removalExplanation, conflict.mergedTextExplanation] : []
            let notes = (alsoTrue + [conflict.clockExplanation]).compactMap { $0.map { "\n  " + $0 } }.joined()
            return output.styled(conflict.key, .bold) + ": " + conflict.reason + notes + "\n"
                + Table(rows: rows + unseenRows, indent: 2).render()
        }.joined(separator: "\n\n") + mergedTexts.map { "\n\n" + $0 }.joined()
    }
}
