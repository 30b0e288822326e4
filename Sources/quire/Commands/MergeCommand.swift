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
            let merge = try StoreMerge(into: store, from: other)
            if !dryRun { try merge.apply(to: store) }
            // Abbreviated as other listings are, among the notes this store
            // holds once merged: a merge that wrote already holds the new ones,
            // and an id counted twice would never be unique.
            let ids = Set(try store.documents(includeRemoved: true).map(\.id) + merge.documents.filter(\.isNew).map(\.id))
            report(merge, dryRun: dryRun, json: invocation.flag("--json"), idLength: NoteIDs.abbreviationLength(Array(ids)), output: context.output)
        })

    private static func report(_ merge: StoreMerge, dryRun: Bool, json: Bool, idLength: Int, output: Output) {
        if json {
            output.print(json: .object([
                "dryRun": .bool(dryRun), "incoming": .integer(merge.incomingCount), "outgoing": .integer(merge.outgoingCount),
                "documents": .array(merge.documents.map { plan in
                    .object(["id": .string(plan.id.rawValue), "title": .string(plan.title), "new": .bool(plan.isNew),
                             "incoming": .integer(plan.incoming.count), "outgoing": .integer(plan.outgoing),
                             "conflicts": .array(plan.newConflicts.map(JSONValue.string))])
                }),
            ]))
            return
        }
        let newCount = merge.documents.filter { $0.isNew && !$0.incoming.isEmpty }.count
        let touched = merge.documents.filter { !$0.incoming.isEmpty }.count
        let brought = "\(merge.incomingCount) change\(merge.incomingCount == 1 ? "" : "s") into \(touched) note\(touched == 1 ? "" : "s") (\(newCount) new)"
        let summary = dryRun ? "Dry run: merging would bring \(brought); nothing was written." : "Merged \(brought)."
        guard !merge.documents.isEmpty else {
            output.print("Nothing to merge: both stores hold the same changes.")
            return
        }
        let rows = merge.documents.map { plan in
            [String(plan.id.rawValue.prefix(idLength)), plan.title + (plan.isNew ? " (new)" : ""), "\(plan.incoming.count)", "\(plan.outgoing)",
             plan.newConflicts.joined(separator: ", ")]
        }
        output.print(Table(header: ["NOTE", "TITLE", "INCOMING", "OUTGOING", "NEW CONFLICTS"], rows: rows).render() + "\n" + summary)
    }
}
