import Foundation
import Quire

/// `quire note new|list|show|edit|rm|restore`.
enum NoteCommands {
    static let group = Command(
        name: "note",
        summary: "Create, list, show, edit, remove and restore notes.",
        usage: ["COMMAND [ARGUMENTS] [OPTIONS]"],
        examples: ["quire note new --title \"Groceries\" --body \"milk\"", "quire note edit 0190f1c2 --append \", eggs\""],
        subcommands: [new, list, show, edit, remove, restore])

    static let new = Command(
        name: "new",
        summary: "Create a note and print its id.",
        usage: ["--title TEXT [--body TEXT | --body-file FILE] [--tag TAG]... [--pin] [--request-id KEY]"],
        options: [
            Option(name: "--title", values: ["TEXT"], help: "The title (required, not empty)."),
            Option(name: "--body", values: ["TEXT"], help: "The body (default: empty)."),
            bodyFileOption,
            Option(name: "--tag", values: ["TAG"], help: "Add a tag; may be repeated.", repeatable: true),
            Option(name: "--pin", help: "Pin the note."),
            Option(name: "--request-id", values: ["KEY"],
                   help: "Make a rerun safe (a script retrying): if this store made a note with KEY, print its id and make none."),
        ],
        examples: ["quire note new --title \"Groceries\" --body \"milk\" --tag home --pin",
                   "quire note new --title \"Standup\" --request-id standup-2026-12-05",
                   "quire note new --title \"Minutes\" --body-file minutes.md", "xclip -o | quire note new --title \"Paste\" --body-file -"],
        run: { invocation in
            try invocation.expectArguments(atMost: 0)
            guard let title = try oneLineTitle(invocation) else { throw invocation.usageError("missing --title") }
            let tags = try givenTags("--tag", invocation)
            let body = try newBody(invocation) ?? ""
            let key = invocation.value("--request-id")
            guard key != "" else { throw invocation.usageError("--request-id needs a key, not an empty one") }
            let store = try invocation.context.openStore()
            let create = { (tx: inout Transaction) in
                try tx.createNote(title: title, body: body, tags: tags, pinned: invocation.flag("--pin"))
            }
            guard let key else {
                invocation.context.output.print(try store.createDocument(create).rawValue)
                return
            }
            // The note a run with the key committed (the one this run repeats, or one running now) is the answer.
            let requestKey = NoteRequestKey(key, replica: store.replicaID, ownReplicas: try store.ownReplicaIDs())
            invocation.context.output.print(try store.createDocument(id: requestKey.newID(), unlessStoreHolds: requestKey.madeIt, create).id.rawValue)
        })

    static let list = Command(
        name: "list",
        summary: "List the notes: pinned first, then in creation order.",
        usage: ["[--all] [--json]"],
        options: [Option(name: "--all", help: "Include removed notes."), .json],
        examples: ["quire note list", "quire note list --all --json"],
        run: { invocation in
            try invocation.expectArguments(atMost: 0)
            let context = invocation.context
            let store = try context.openStore()
            let ids = try store.documents(includeRemoved: true).map(\.id)
            // A note that cannot be read (a damaged change) does not hide the others.
            var unreadable: [(id: DocumentID, error: any Error)] = []
            let notes = ids.compactMap { id in
                do { return try store.read(id) { try Note(id: id, document: $0) } } catch {
                    unreadable.append((id, error))
                    return nil
                }
            }
                .filter { invocation.flag("--all") || !$0.removed }
                .enumerated().sorted { ($0.element.pinned ? 0 : 1, $0.offset) < ($1.element.pinned ? 0 : 1, $1.offset) }
                .map(\.element)
            defer {
                for (id, error) in unreadable {
                    context.output.progress("error: note \(id) cannot be read: \(error); " + Context.damagedNoteAdvice(path: context.storePath))
                }
            }
            let failure = unreadable.isEmpty ? nil : CLIError.failure(
                "\(unreadable.count) note\(unreadable.count == 1 ? "" : "s") could not be read and \(unreadable.count == 1 ? "is" : "are") not listed")
            let updated = try notes.map { try store.lastChangeTime($0.id) }
            if invocation.flag("--json") {
                context.output.print(json: .array(zip(notes, updated).map { note, updated in
                    .object(note.jsonFields.merging(["updated": RelativeTime.json(updated)]) { $1 })
                }))
                if let failure { throw failure }
                return
            }
            let length = NoteIDs.abbreviationLength(ids)
            let rows = zip(notes, updated).map { note, updated in
                [String(note.id.rawValue.prefix(length)),
                 note.title + (note.removed ? " " + context.output.styled("(removed)", .red) : ""),
                 note.tags.joined(separator: ", "), note.pinned ? "yes" : "",
                 RelativeTime.describe(updated)]
            }
            // Removed notes left out are counted: a note removed by a sync must not look lost.
            let removedCount = invocation.flag("--all") ? 0 : ids.count - unreadable.count - notes.count
            if notes.isEmpty && failure == nil && removedCount > 0 {
                context.output.print("No notes shown: \(removedCount) removed (`quire note list --all` lists \(removedCount == 1 ? "it" : "them")).")
            } else if notes.isEmpty && failure == nil {
                context.output.print("No notes. Create one with `quire note new --title TEXT`.")
            } else if !notes.isEmpty {
                context.output.print(Table(header: ["ID", "TITLE", "TAGS", "PINNED", "UPDATED"].map { context.output.styled($0, .bold) },
                                           rows: rows).render())
            }
            if let failure { throw failure }
        })

    static let show = Command(
        name: "show",
        summary: "Show a note: its fields, then its body. With --at, as it was at a version.",
        usage: ["ID [--at VERSION] [--json]"],
        arguments: [noteArgument],
        options: [.at, .json],
        examples: ["quire note show 0190f1c2", "quire note show 0190f1c2 --at 3@7c0c5e135634e4e8 --json"],
        run: { invocation in
            try invocation.expectArguments(atMost: 1)
            let at = try invocation.version("--at")
            let (store, id) = try invocation.openStoreAndNote()
            let output = invocation.context.output
            let note: Note
            var version: VersionVector?
            if let at {
                // A replay, which names the version it shows, as `log` prints
                // versions (heads given are the vector they stand for).
                let history = try DocumentHistory(id, in: store)
                let shown = try history.version(at)
                note = try Note(id: id, document: history.document(at: shown))
                version = shown
            } else {
                note = try store.read(id) { try Note(id: id, document: $0) }
            }
            if invocation.flag("--json") {
                var fields = note.jsonFields
                if let version { fields["version"] = .string(version.description) }
                output.print(json: .object(fields))
                return
            }
            var fields = [["id", note.id.rawValue], ["title", output.styled(note.title, .bold)],
                          ["tags", note.tags.joined(separator: ", ")], ["pinned", note.pinned ? "yes" : "no"]]
            if note.removed { fields.append(["removed", output.styled("yes", .red)]) }
            if let version { fields.append(["version", version.description]) }
            output.print(Table(rows: fields).render() + "\n\n", thenExact: note.body)
        })

    static let edit = Command(
        name: "edit",
        summary: "Edit a note; with no option, open its title and body in $EDITOR.",
        usage: ["ID [--title TEXT] [--body TEXT | --body-file FILE] [--append TEXT] [--insert POS TEXT] [--delete POS COUNT] [--tag TAG]... [--untag TAG]... [--pin | --unpin]",
                "ID    (no option: edit the title and body in $EDITOR)"],
        arguments: [noteArgument],
        options: [
            Option(name: "--title", values: ["TEXT"], help: "Set the title, not to an empty one (recorded as the minimal text edit)."),
            Option(name: "--body", values: ["TEXT"], help: "Set the body (recorded as the minimal text edit)."),
            bodyFileOption,
            Option(name: "--append", values: ["TEXT"], help: "Add TEXT at the end of the body."),
            Option(name: "--insert", values: ["POS", "TEXT"], help: "Insert TEXT before character POS of the body (0 = start)."),
            Option(name: "--delete", values: ["POS", "COUNT"], help: "Delete COUNT characters of the body from POS on."),
            Option(name: "--tag", values: ["TAG"], help: "Add a tag; may be repeated.", repeatable: true),
            Option(name: "--untag", values: ["TAG"], help: "Remove a tag; may be repeated.", repeatable: true),
            Option(name: "--pin", help: "Pin the note."),
            Option(name: "--unpin", help: "Unpin the note."),
        ],
        examples: ["quire note edit 0190f1c2 --append \", eggs\"", "quire note edit 0190f1c2 --insert 0 \"TODO: \" --tag todo",
                   "EDITOR=nano quire note edit 0190f1c2"],
        run: runEdit)

    /// Positions count characters as Unicode scalars (Specs/cli.md).
    private static func runEdit(_ invocation: Invocation) throws {
        // The whole command line is checked before the store is opened: a
        // usage error is one (exit 64) whatever the store and the id.
        try invocation.expectArguments(atMost: 1)
        if invocation.flag("--pin") && invocation.flag("--unpin") { throw invocation.usageError("--pin and --unpin exclude each other") }
        let insert = try invocation.values("--insert").first.map { (try invocation.integer($0[0], "POS"), $0[1]) }
        let delete = try invocation.values("--delete").first.map { (try invocation.integer($0[0], "POS"), try invocation.integer($0[1], "COUNT")) }
        let (addedTags, removedTags) = (try givenTags("--tag", invocation), try givenTags("--untag", invocation))
        let (givenTitle, givenBody) = (try oneLineTitle(invocation), try newBody(invocation))
        let inEditor = invocation.options.isEmpty
        let (store, id) = try invocation.openStoreAndNote()
        // For the editor, the title and body it shows, with their characters'
        // ids: what a sync (or another edit) does to the note while the
        // editor is open is kept when the edited copy comes back.
        let (current, title, body) = try store.read(id) { document in
            (try Note(id: id, document: document),
             inEditor ? try document.noteTextReading(Note.Key.title) : nil, inEditor ? try document.noteTextReading(Note.Key.body) : nil)
        }
        guard !current.removed else {
            throw CLIError.failure("note \(id) is removed; `\(ShellWords.command("quire", "note", "restore", "\(id)"))` brings it back")
        }
        // `--untag` values the note does not have: most likely mistyped (tags
        // compare exactly, case and accents too), which a silent success hides.
        var absentTags: [String] = []
        // Every option in one change; returns whether the note was removed meanwhile.
        func save(newTitle: String?, newBody: String?) throws -> Bool { try store.edit(id) { tx in
            if let newTitle { try tx.setNoteText(Note.Key.title, to: newTitle, editedFrom: title) }
            if let newBody { try tx.setNoteText(Note.Key.body, to: newBody, editedFrom: body) }
            let body = try tx.noteText(Note.Key.body)
            if let (position, count) = delete {
                let length = try tx.document.textCount(body)
                // Compared without adding, which a huge POS or COUNT would overflow.
                guard position <= length, count <= length - position else {
                    throw CLIError.failure("cannot delete \(count) characters at \(position): the body has \(length) characters")
                }
                try tx.deleteText(body, at: position, count: count)
            }
            if let (position, text) = insert {
                let length = try tx.document.textCount(body)
                guard position <= length else {
                    throw CLIError.failure("cannot insert at \(position): the body has \(length) characters")
                }
                try tx.insertText(body, at: position, text)
            }
            if let text = invocation.value("--append") { try tx.insertText(body, at: tx.document.textCount(body), text) }
            for tag in addedTags { try tx.addTag(tag) }
            absentTags = try removedTags.filter { try !tx.removeTag($0) }
            if invocation.flag("--pin") { try tx.put(.root, key: Note.Key.pinned, .bool(true)) }
            if invocation.flag("--unpin") { try tx.put(.root, key: Note.Key.pinned, .bool(false)) }
            return try Note.isRemoved(tx.document)
        } }
        var removedMeanwhile = false
        if inEditor {
            try EditorSession(environment: invocation.context.environment).edit(noteID: id.rawValue, title: current.title, body: current.body) { title, body in
                removedMeanwhile = try save(newTitle: title, newBody: body)
            }
        } else {
            removedMeanwhile = try save(newTitle: givenTitle, newBody: givenBody)
        }
        if !absentTags.isEmpty {
            let quoted = absentTags.map { "\"\($0)\"" }.joined(separator: ", ")
            invocation.context.output.progress(
                "warning: note \(id) had no tag\(absentTags.count == 1 ? "" : "s") \(quoted) to remove (tags compare exactly: case and accents count); "
                + "`\(ShellWords.command("quire", "note", "show", "\(id)"))` lists its tags")
        }
        if removedMeanwhile {
            invocation.context.output.progress(
                "warning: note \(id) was removed while it was being edited (by a sync or another process); "
                + "the edit is saved, and `\(ShellWords.command("quire", "note", "restore", "\(id)"))` brings the note back")
        }
    }

    static let bodyFileOption = Option(
        name: "--body-file", values: ["FILE"], help: "The body from FILE (UTF-8 text), or from standard input for -.")

    /// The body `--body` or `--body-file` gives, if either does. A file
    /// holds what a command line cannot (long or binary-unsafe text).
    private static func newBody(_ invocation: Invocation) throws -> String? {
        guard let file = invocation.value("--body-file") else { return invocation.value("--body") }
        guard invocation.value("--body") == nil else { throw invocation.usageError("--body and --body-file exclude each other") }
        let data: Data
        if file == "-" {
            // Standard input may be closed (`<&-`) or a directory (`< /`): a failure to say, not a crash.
            guard let read = try? FileHandle.standardInput.readToEnd() ?? Data() else {
                throw CLIError.failure("cannot read standard input (--body-file -): it is closed, or not readable")
            }
            data = read
        } else {
            data = try Context.contents(of: file)
        }
        // Exactly as given: `String(data:encoding:)` drops a leading byte order mark.
        guard let text = String(validating: data, as: UTF8.self) else {
            throw CLIError.failure("\(file == "-" ? "standard input" : file) is not UTF-8 text: \(Context.firstNonUTF8Byte(in: data)) is not; "
                + "save it as UTF-8 (from Latin-1: `iconv -f LATIN1 -t UTF-8`)")
        }
        return text
    }

    /// The tags `option` (`--tag`, `--untag`) gives. An empty one (an unset
    /// shell variable) would be a tag no listing can show.
    private static func givenTags(_ option: String, _ invocation: Invocation) throws -> [String] {
        let tags = invocation.values(option).map { $0[0] }
        if tags.contains("") { throw invocation.usageError("\(option) needs a tag, not an empty word") }
        return tags
    }

    /// The `--title` value. A title is one line: the editor file and the
    /// listings show it on one, and would break a longer one in two. An
    /// empty one given, or one of whitespace only (which shows as empty),
    /// is most likely a script's unset variable, not a wish for an
    /// untitled note (which `note new` does not make).
    private static func oneLineTitle(_ invocation: Invocation) throws -> String? {
        let title = invocation.value("--title")
        if title?.contains(where: \.isNewline) == true { throw invocation.usageError("--title must be one line; put the rest in --body") }
        if title?.allSatisfy(\.isWhitespace) == true { throw invocation.usageError("--title needs text, not an empty one") }
        return title
    }

    static let remove = Command(
        name: "rm",
        summary: "Remove a note. Its history stays; `quire note restore` brings it back.",
        usage: ["ID"],
        arguments: [noteArgument],
        examples: ["quire note rm 0190f1c2"],
        run: { invocation in try setRemoved(true, invocation) })

    static let restore = Command(
        name: "restore",
        summary: "Bring back a removed note, with every edit made to it meanwhile.",
        usage: ["ID"],
        arguments: [noteArgument],
        examples: ["quire note restore 0190f1c2"],
        run: { invocation in try setRemoved(false, invocation) })

    /// `rm` and `restore` write the note's `removed` field, so the removal
    /// syncs like any edit (Specs/cli.md, "Notes").
    private static func setRemoved(_ removed: Bool, _ invocation: Invocation) throws {
        try invocation.expectArguments(atMost: 1)
        let (store, id) = try invocation.openStoreAndNote()
        // A note already so is left as it is: writing the field again would be a change to sync for nothing.
        let changed = try store.edit(id) { tx in
            guard try Note.isRemoved(tx.document) != removed else { return false }
            try tx.put(.root, key: Note.Key.removed, .bool(removed))
            return true
        }
        let output = invocation.context.output
        switch (removed, changed) {
        case (true, true): output.print("Removed note \(id); `\(ShellWords.command("quire", "note", "restore", "\(id)"))` brings it back.")
        case (true, false): output.print("Note \(id) is already removed; nothing changed.")
        case (false, true): output.print("Restored note \(id).")
        case (false, false): output.print("Note \(id) is not removed; nothing changed.")
        }
    }

    static let noteArgument = Command.Argument(name: "ID", help: "The note's id, or any prefix of it that no other note's id starts with.")
}
