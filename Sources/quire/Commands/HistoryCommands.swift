import Foundation
import JSONText
import Quire

/// Merge inspection: `quire log`, `heads`, `vv`, `show`, `diff` and `blame`.
enum HistoryCommands {
    static let log = Command(
        name: "log",
        summary: "List a note's changes, the last this store applied first (a change synced in today may be a week old), with the version right after each here "
            + "(what this store held then, edits merged before it included: `quire show ID --at VERSION`, `quire diff ID --from VERSION`); "
            + "`quire show ID --at CHANGE` shows the note as the change's writer left it, `quire diff ID --change CHANGE` what it did.",
        usage: ["ID [--json]"],
        arguments: [NoteCommands.noteArgument],
        options: [.json],
        examples: ["quire log 0190f1c2", "quire log 0190f1c2 --json"],
        run: { invocation in
            try invocation.expectArguments(atMost: 1)
            let context = invocation.context
            let (store, id) = try invocation.openStoreAndNote()
            let history = try DocumentHistory(id, in: store)
            let acknowledged = try context.acknowledgedVersion(peer: context.serverPeer, id: history.id)
            let entries = zip(history.changes, history.versionsAfterEachChange).reversed()
            let compactedBefore = history.compaction?.version
            if invocation.flag("--json") {
                context.output.print(jsonArray: entries.lazy.map { change, version in
                    .object([
                        "id": .string(change.id.description), "replica": .string(change.replica.description),
                        "counters": .object(["first": .integer(change.id.counter), "last": .integer(change.lastID.counter)]),
                        "lamport": .object(["first": .integer(change.lamport), "last": .integer(change.lastLamport)]),
                        "parents": .array(change.parents.map { .string($0.description) }),
                        "operations": .integer(change.operations.count),
                        "time": RelativeTime.json(change.date),
                        "acknowledged": .bool(acknowledged.contains(change.lastID)),
                        "version": version.map { .string($0.description) } ?? .null,
                        "compactedBefore": compactedBefore.map { .string($0.description) } ?? .null,
                        // What the text's line on the later snapshots says, for each entry:
                        // a key of its own, as the array has no place for one of the whole log.
                        "versionShowable": .bool(version.map(history.canRebuild) ?? false),
                    ])
                })
                return
            }
            let rows = entries.map { change, version in
                [context.output.styled(change.id.description, .yellow), "\(change.id.counter)-\(change.lastID.counter)",
                 "\(change.lamport)-\(change.lastLamport)", change.parents.isEmpty ? "-" : change.parents.map(\.description).joined(separator: ","),
                 "\(change.operations.count)", RelativeTime.describe(change.date),
                 acknowledged.contains(change.lastID) ? "yes" : "no", version?.description ?? "-"]
            }
            context.output.print(Table(header: ["CHANGE", "COUNTERS", "LAMPORT", "PARENTS", "OPS", "TIME", "ACKED", "VERSION"], rows: rows))
            if let compaction = history.compaction {
                context.output.print("Changes before version \(compaction.version) were deleted by `quire compact --drop-history`"
                    + (compaction.keptCount > 0 ? "; those with version - are from before it, still logged: local changes a peer lacks, or the note's newest then." : "."))
                // The store's own snapshots prune the compaction's after two
                // more: versions listed from before the oldest left would
                // fail `show --at` and `diff`, which the list above invites.
                let oldest = compaction.snapshot.versionVector
                if oldest != compaction.version {
                    context.output.print("Versions from before \(oldest) can no longer be shown: the store's later snapshots replaced the one at the compaction point "
                        + "(`quire show --at` and `quire diff` rebuild versions from \(oldest) on).")
                }
            }
        })

    static let heads = Command(
        name: "heads",
        summary: "Print a note's heads: the changes no other change builds on.",
        usage: ["ID [--json]"],
        arguments: [NoteCommands.noteArgument],
        options: [.json],
        examples: ["quire heads 0190f1c2"],
        run: { invocation in
            try invocation.expectArguments(atMost: 1)
            let (store, id) = try invocation.openStoreAndNote()
            let heads = try store.read(id) { $0.heads }
            if invocation.flag("--json") {
                invocation.context.output.print(json: .array(heads.map { .string($0.description) }))
            } else {
                invocation.context.output.print(heads.map(\.description).joined(separator: ","))
            }
        })

    static let versionVector = Command(
        name: "vv",
        summary: "Print a note's version vector: the highest counter it holds from each replica.",
        usage: ["ID [--json]"],
        arguments: [NoteCommands.noteArgument],
        options: [.json],
        examples: ["quire vv 0190f1c2"],
        run: { invocation in
            try invocation.expectArguments(atMost: 1)
            let (store, id) = try invocation.openStoreAndNote()
            let version = try store.read(id) { $0.versionVector }
            if invocation.flag("--json") {
                invocation.context.output.print(json: .version(version))
            } else {
                invocation.context.output.print(version.description)
            }
        })

    /// `quire show` is `quire note show`, at the top level beside the other
    /// history commands.
    static let show = Command(
        name: "show", summary: NoteCommands.show.summary, usage: NoteCommands.show.usage,
        arguments: NoteCommands.show.arguments, options: NoteCommands.show.options,
        examples: ["quire show 0190f1c2", "quire show 0190f1c2 --at 3@7c0c5e135634e4e8", "quire show 0190f1c2 --at 7c0c5e135634e4e8:18,9a41d0c2e8b7f613:4"], run: NoteCommands.show.run)

    static let diff = Command(
        name: "diff",
        summary: "Show what changed in a note between two versions, or what one change did: text insertions and deletions, field changes.",
        usage: ["ID --from VERSION [--to VERSION] [--json]", "ID --change CHANGE [--json]"],
        arguments: [NoteCommands.noteArgument],
        options: [.from, .to,
                  Option(name: "--change", values: ["CHANGE"], help: "What that change did: the note as it built on (its parents) against the note with it. CHANGE as `quire log` prints it (counter@replica; any operation of the change will do)."),
                  .json],
        examples: ["quire diff 0190f1c2 --from 7c0c5e135634e4e8:18", "quire diff 0190f1c2 --from 3@7c0c5e135634e4e8 --to 9@7c0c5e135634e4e8 --json",
                   "quire diff 0190f1c2 --change 4@9a41d0c2e8b7f613"],
        run: { invocation in
            try invocation.expectArguments(atMost: 1)
            let change = try invocation.value("--change").map { text in
                guard let id = OpID(text) else {
                    throw invocation.usageError("--change \"\(text)\" is not a change: give counter@replica, as `quire log` prints it under CHANGE")
                }
                return id
            }
            let fromVersion = try invocation.version("--from"), toVersion = try invocation.version("--to")
            if change != nil && (fromVersion != nil || toVersion != nil) {
                throw invocation.usageError("--change excludes --from and --to: it compares the note before the change with the note after it")
            }
            // The two versions compared, found once the note's history is read.
            let versions: (DocumentHistory) throws -> (VersionVector, VersionVector)
            if let change {
                versions = { history in try history.versions(around: change) }
            } else if let fromVersion {
                versions = { history in (try history.version(fromVersion), try toVersion.map { try history.version($0) } ?? history.current) }
            } else {
                throw invocation.usageError("missing --from VERSION (or --change CHANGE)")
            }
            let (store, id) = try invocation.openStoreAndNote()
            let history = try DocumentHistory(id, in: store)
            let (from, to) = try versions(history)
            let old = try Note(id: history.id, document: history.document(at: from))
            let new = try Note(id: history.id, document: history.document(at: to))
            NoteDiff(old: old, new: new).print(from: from, to: to, current: history.current, json: invocation.flag("--json"), to: invocation.context.output)
        })

    static let blame = Command(
        name: "blame",
        summary: "Show a note's body (or title) with each run of characters attributed to the change that inserted it, and its Lamport stamps, which order insertions made at one place at once; "
            + "with --deleted, the text deleted from it and the change that deleted each piece; or its tags, each with the change that added it "
            + "(with --deleted, the tags removed, each also with the change that removed it). With --at, as it was at a version.",
        usage: ["ID [--title | --tags] [--at VERSION] [--json]", "ID --deleted [--title | --tags] [--at VERSION] [--json]"],
        arguments: [NoteCommands.noteArgument],
        options: [Option(name: "--title", help: "Blame the title instead of the body: concurrent retitles merge character by character."),
                  Option(name: "--tags", help: "Blame the tags: which change added each (a tag two replicas added at once is listed twice)."),
                  Option(name: "--deleted", help: "The text typed into the body (title) and deleted since, in document order: each piece with the change that typed it "
                      + "(CHANGE, LAMPORT, TIME), the change that deleted it (DELETED_BY) and when (DELETED_TIME), and OFFSET, where it stood in the visible text. "
                      + "With --tags, the tags removed since, in list order: each with the change that added it and the one that removed it."),
                  .at, .json],
        examples: ["quire blame 0190f1c2", "quire blame 0190f1c2 --title", "quire blame 0190f1c2 --tags", "quire blame 0190f1c2 --deleted",
                   "quire blame 0190f1c2 --deleted --tags", "quire blame 0190f1c2 --at 7c0c5e135634e4e8:18,9a41d0c2e8b7f613:4"],
        run: { invocation in
            try invocation.expectArguments(atMost: 1)
            if invocation.flag("--title") && invocation.flag("--tags") { throw invocation.usageError("--title and --tags exclude each other") }
            if invocation.flag("--tags") { return try invocation.flag("--deleted") ? blameRemovedTags(invocation) : blameTags(invocation) }
            let key = invocation.flag("--title") ? Note.Key.title : Note.Key.body
            if invocation.flag("--deleted") { return try blameDeleted(invocation, key: key) }
            let (pieces, version) = try blamed(invocation) { try Blame.pieces(of: $0, key: key, history: $1) }
            let output = invocation.context.output
            printBlame(pieces, at: version, invocation, ifNone: "The \(key) is empty.", header: ["CHANGE", "LAMPORT", "TIME", "OFFSET", "TEXT"],
                       json: { .object(jsonFields($0)) },
                       row: { piece in typedColumns(piece, output) + ["\(piece.offset)", JSONValue.quoted(piece.text)] })
        })

    /// `blame --deleted`: the deleted text, each piece with who typed it and who deleted it.
    private static func blameDeleted(_ invocation: Invocation, key: String) throws {
        let (pieces, version) = try blamed(invocation) { try Blame.deletedPieces(of: $0, key: key, history: $1) }
        let output = invocation.context.output
        printBlame(pieces, at: version, invocation, ifNone: "The \(key) has no deleted text.",
                   header: ["CHANGE", "LAMPORT", "TIME", "DELETED_BY", "DELETED_TIME", "OFFSET", "TEXT"],
                   json: { deleted in .object(jsonFields(deleted.piece).merging(["deletedBy": json(deleted.deletedBy)]) { $1 }) },
                   row: { deleted in
                       typedColumns(deleted.piece, output) + deletedColumns(deleted.deletedBy, output)
                           + ["\(deleted.piece.offset)", JSONValue.quoted(deleted.piece.text)]
                   })
    }

    /// `deletedBy` in `blame --deleted --json`: the change's keys as
    /// `blame` gives them, its replica, and the deleting operation's stamp.
    private static func json(_ deletedBy: Blame.DeletedBy) -> JSONValue {
        .object(deletedBy.attribution.jsonFields.merging([
            "replica": deletedBy.attribution.change.map { JSONValue.string($0.replica.description) } ?? .null,
            "lamport": deletedBy.lamport.map { JSONValue.integer($0) } ?? .null,
        ]) { $1 })
    }

    /// The columns that say who deleted: DELETED_BY, DELETED_TIME.
    private static func deletedColumns(_ deletedBy: Blame.DeletedBy, _ output: Output) -> [String] {
        [deletedBy.attribution.text(output), RelativeTime.describe(deletedBy.attribution.change?.date)]
    }

    /// A piece's JSON keys, as `blame` and `blame --deleted` give them.
    private static func jsonFields(_ piece: Blame.Piece) -> [String: JSONValue] {
        piece.attribution.jsonFields.merging([
            "offset": .integer(piece.offset), "text": .string(piece.text),
            "replica": .string(piece.id.replica.description), "lamport": .integer(piece.lamport),
            "lastLamport": .integer(piece.lastLamport),
        ]) { $1 }
    }

    /// The columns that say who typed a piece: CHANGE, LAMPORT, TIME.
    private static func typedColumns(_ piece: Blame.Piece, _ output: Output) -> [String] {
        [piece.attribution.text(output), "\(piece.lamport)-\(piece.lastLamport)", RelativeTime.describe(piece.attribution.change?.date)]
    }

    private static func blameTags(_ invocation: Invocation) throws {
        let (tags, version) = try blamed(invocation) { try Blame.tags(of: $0, history: $1) }
        let output = invocation.context.output
        printBlame(tags, at: version, invocation, ifNone: "The note has no tags.", header: ["CHANGE", "LAMPORT", "TIME", "TAG"],
                   json: { .object(jsonFields($0)) }, row: { addedColumns($0, output) + [$0.tag] })
    }

    /// `blame --deleted --tags`: the removed tags, each with who added it and who removed it.
    private static func blameRemovedTags(_ invocation: Invocation) throws {
        let (tags, version) = try blamed(invocation) { try Blame.removedTags(of: $0, history: $1) }
        let output = invocation.context.output
        printBlame(tags, at: version, invocation, ifNone: "The note has no removed tags.", header: ["CHANGE", "LAMPORT", "TIME", "DELETED_BY", "DELETED_TIME", "TAG"],
                   json: { removed in .object(jsonFields(removed.tag).merging(["deletedBy": json(removed.removedBy)]) { $1 }) },
                   row: { removed in addedColumns(removed.tag, output) + deletedColumns(removed.removedBy, output) + [removed.tag.tag] })
    }

    /// A tag's JSON keys, as `blame --tags` and `blame --deleted --tags` give them.
    private static func jsonFields(_ tag: Blame.Tag) -> [String: JSONValue] {
        tag.attribution.jsonFields.merging([
            "tag": .string(tag.tag), "replica": .string(tag.id.replica.description), "lamport": .integer(tag.lamport),
        ]) { $1 }
    }

    /// The columns that say who added a tag: CHANGE, LAMPORT, TIME.
    private static func addedColumns(_ tag: Blame.Tag, _ output: Output) -> [String] {
        [tag.attribution.text(output), "\(tag.lamport)", RelativeTime.describe(tag.attribution.change?.date)]
    }

    /// What `blame` reads: the note as it is, or with `--at` as it was at
    /// that version (then also returned), with the history up to it, so
    /// that a deletion or removal made after it is not named.
    private static func blamed<Entries>(_ invocation: Invocation,
                                        _ entries: (Document, DocumentHistory) throws -> Entries) throws -> (Entries, VersionVector?) {
        let at = try invocation.version("--at")
        let (store, id) = try invocation.openStoreAndNote()
        let history = try DocumentHistory(id, in: store)
        guard let at else { return (try store.read(id) { try entries($0, history) }, nil) }
        let version = try history.version(at)
        return (try entries(history.document(at: version), history.upTo(version)), version)
    }

    /// What `blame` prints of its entries: JSON with `--json`, else a
    /// table, or `ifNone` when there are none, after the version shown
    /// when `--at` gave one (as `conflicts --at` names it).
    private static func printBlame<Entry>(_ entries: [Entry], at version: VersionVector?, _ invocation: Invocation, ifNone: String,
                                          header: [String], json: (Entry) -> JSONValue, row: (Entry) -> [String]) {
        let output = invocation.context.output
        if invocation.flag("--json") {
            output.print(jsonArray: entries.lazy.map(json))
            return
        }
        if let version { output.print(Table(rows: [["version", version.description]]).render() + "\n") }
        if entries.isEmpty {
            output.print(ifNone)
        } else {
            output.print(Table(header: header, rows: entries.map(row)))
        }
    }
}
