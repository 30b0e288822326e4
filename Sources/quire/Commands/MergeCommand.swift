import Foundation
import JSONText
import Quire

/// `quire merge [--dry-run] OTHER_STORE`.
enum MergeCommand {
    static let command = Command(
        name: "merge",
        summary: "Merge another store file into this one (the other file is only read), or with --dry-run show what merging would bring.",
        usage: ["OTHER_STORE [--dry-run] [--json]"],
        arguments: [Command.Argument(name: "OTHER_STORE", help: "The path of another Quire store file; it is opened read-only.")],
        options: [Option(name: "--dry-run", help: "Only report the changes each side lacks and the conflicts merging would make; write nothing."), .json],
        examples: ["quire merge --dry-run /mnt/laptop/notes.quire", "quire merge /mnt/laptop/notes.quire"],
        run: { invocation in
            try invocation.expectArguments(atMost: 1)
            let context = invocation.context
            let otherPath = try invocation.argument(0, "OTHER_STORE")
            guard URL(fileURLWithPath: otherPath).standardized != URL(fileURLWithPath: context.storePath).standardized else {
                throw CLIError.failure("\(otherPath) is this store itself; give the path of another store")
            }
            let store = try context.openStore()
            let other = try Context.open(otherPath, readOnly: true, missingAdvice: "give the path of an existing store file")
            let dryRun = invocation.flag("--dry-run")
            var merge = try StoreMerge(into: store, from: other)
            if !dryRun { try merge.apply(to: store) }
            // Abbreviated as other listings are, among the notes this store
            // holds once merged: a merge that wrote already holds the new ones,
            // and an id counted twice would never be unique.
            let ids = Set(try store.documents(includeRemoved: true).map(\.id) + merge.documents.filter(\.isNew).map(\.id))
            report(merge, dryRun: dryRun, json: invocation.flag("--json"), idLength: NoteIDs.abbreviationLength(Array(ids)), output: context.output)
            let uncounted = merge.documents.filter { $0.outgoing == nil }.map { "note \($0.id) (\(TerminalText.inLine($0.title)))" }
            if !uncounted.isEmpty {
                context.output.progress("warning: this store compacted away changes of \(uncounted.joined(separator: ", ")) that \(otherPath) "
                    + "lacks: OUTGOING cannot count them, and merging this store into \(otherPath) cannot bring them; "
                    + "a copy of this store, once it holds the changes of \(otherPath), can take its place")
            }
            // What could be merged was; exit 1 for the notes that could not.
            var failures: [String] = []
            let leftOut = { (one: Bool) in dryRun ? "merging would leave \(one ? "it" : "them") out" : "\(one ? "it was" : "they were") not merged (the rest was)" }
            if !merge.compacted.isEmpty {
                let notes = merge.compacted.map { "note \($0.id) (\(TerminalText.inLine($0.title)))" }.joined(separator: ", ")
                failures.append("\(otherPath) compacted away changes of \(notes) that this store lacks: " + leftOut(merge.compacted.count == 1)
                    + "; merge from a store that still holds those changes (the one that wrote them), or copy \(otherPath) and "
                    + "merge this store into the copy (\(ShellWords.command("quire", "--store", "COPY", "merge", context.storePath))), "
                    + "which keeps the changes of both")
            }
            for damage in merge.damaged {
                let path = damage.isMine ? context.storePath : otherPath
                failures.append("note \(damage.id)\(damage.title.map { " (\(TerminalText.inLine($0)))" } ?? "") is damaged in \(damage.isMine ? "this store, " : "")\(path) "
                    + "(\(damage.reason)): " + leftOut(true) + "; `\(ShellWords.command("quire", "inspect", path))` reports the damage"
                    + (damage.isMine ? "" : "; merge the note from a backup or another store that holds it whole"))
            }
            for refusal in merge.refused {
                failures.append("this store refuses the changes of note \(refusal.id) (\(TerminalText.inLine(refusal.title))) in \(otherPath) (\(refusal.reason)): "
                    + leftOut(true))
            }
            if !failures.isEmpty { throw CLIError.failure(failures.joined(separator: "\nerror: ")) }
        })

    private static func report(_ merge: StoreMerge, dryRun: Bool, json: Bool, idLength: Int, output: Output) {
        if json {
            output.print(json: .object([
                "dryRun": .bool(dryRun), "incoming": .integer(merge.incomingCount), "outgoing": count(merge.outgoingCount),
                "documents": .array(merge.documents.map { plan in
                    .object(broughtChanges(plan).jsonMembers.merging(["outgoing": count(plan.outgoing),
                                                              "conflicts": .array(plan.newConflicts.map(JSONValue.string))]) { shared, _ in shared })
                }),
                "historyCompacted": .array(merge.compacted.map { .object(["id": .string($0.id.rawValue), "title": .string($0.title)]) }),
                "damaged": .array(merge.damaged.map { damage in
                    .object(["id": .string(damage.id.rawValue), "title": damage.title.map(JSONValue.string) ?? .null,
                             "inThisStore": .bool(damage.isMine), "reason": .string(damage.reason)])
                }),
                "refused": .array(merge.refused.map { .object(["id": .string($0.id.rawValue), "title": .string($0.title), "reason": .string($0.reason)]) }),
            ]))
            return
        }
        let newCount = merge.documents.filter { $0.isNew && $0.incomingCount > 0 }.count
        let touched = merge.documents.filter { $0.incomingCount > 0 }.count
        let brought = "\(merge.incomingCount) change\(merge.incomingCount == 1 ? "" : "s") into \(touched) note\(touched == 1 ? "" : "s") (\(newCount) new)"
        let summary = dryRun ? "Dry run: merging would bring \(brought); nothing was written." : "Merged \(brought)."
        guard !merge.documents.isEmpty else {
            // The notes that could not be merged are told on standard error.
            output.print(merge.compacted.isEmpty && merge.damaged.isEmpty && merge.refused.isEmpty ? "Nothing to merge: both stores hold the same changes." : summary)
            return
        }
        let rows = merge.documents.map { plan in
            // Marked as `note list --all` marks it: a removal merged in takes the note out of `note list`.
            let marks = [plan.isNew ? "new" : nil, plan.isRemoved ? "removed" : nil].compactMap { $0 }
            return [String(plan.id.rawValue.prefix(idLength)), plan.title + (marks.isEmpty ? "" : " (\(marks.joined(separator: ", ")))"),
                    "\(plan.incomingCount)", plan.outgoing.map { "\($0)" } ?? "?", plan.newConflicts.joined(separator: ", ")]
        }
        output.print(Table(header: ["NOTE", "TITLE", "INCOMING", "OUTGOING", "NEW CONFLICTS"], rows: rows).render() + "\n" + summary)
        // The table counts what came in; a person asking what it changed in
        // a note needs the version to diff from, which only this run knows.
        let changed = merge.documents.filter { $0.incomingCount > 0 }
        if !dryRun && !changed.isEmpty {
            output.print(BroughtChanges.listing(changed.map(broughtChanges), by: "merge", idLength: idLength))
        }
    }

    /// What merging brings into a note, as `sync` names what it brought too.
    private static func broughtChanges(_ plan: StoreMerge.DocumentPlan) -> BroughtChanges {
        BroughtChanges(id: plan.id, title: plan.title, isNew: plan.isNew, versionBefore: plan.versionBefore, versionAfter: plan.versionAfter,
                       isRemoved: plan.isRemoved, incoming: plan.incomingCount, replacedCopyKeptAs: plan.replacedCopyKeptAs)
    }

    /// A count, or null when it cannot be known.
    private static func count(_ value: Int?) -> JSONValue {
        value.map { .integer($0) } ?? .null
    }
}
