import JSONText
import Quire

/// A note that a merge or a sync brought changes into, and how to see what
/// they did: `quire diff ID --from` its version here before them `--to` its
/// version right after them (not the current one, which may hold edits
/// made since), or, for a note new here, `quire show ID --at` its version
/// right after them (all of it was brought, and no version is empty to
/// diff from), as for a note whose copy here the sync replaced (`sync
/// --take-theirs`: the old copy's changes are gone from it, kept in another
/// note). `quire merge` and `quire sync` name them alike (Specs/cli.md,
/// `merge`; Specs/sync.md, "Commands").
struct BroughtChanges {
    let id: DocumentID
    /// Its title now; nil when it cannot be read.
    let title: String?
    /// Not in this store before: the merge or sync made it here.
    let isNew: Bool
    /// This store's version of the note before (empty for a new one, and
    /// for one whose copy was replaced).
    let versionBefore: VersionVector
    /// This store's version of the note right after the changes went in.
    let versionAfter: VersionVector
    /// Removed now (`note list` leaves it out).
    let isRemoved: Bool
    /// How many changes were brought into it.
    let incoming: Int
    /// For a note whose copy here was dropped before the sync, to take the
    /// other side's whole (`sync --take-theirs`): the note that keeps the
    /// dropped copy. The note is not new to the person, but no version is
    /// left to diff from.
    var replacedCopyKeptAs: DocumentID? = nil
    /// Something else was committed to the note while the changes went in
    /// (a sync's pages, another process's edit between two): the diff (or
    /// the note shown) holds that too, and the line says so.
    var isInterleaved = false

    /// Its JSON members, the keys `merge`'s `documents` and `sync`'s
    /// `changedNotes` share.
    var jsonMembers: [String: JSONValue] {
        ["id": .string(id.rawValue), "title": title.map(JSONValue.string) ?? .null, "new": .bool(isNew), "removed": .bool(isRemoved),
         "incoming": .integer(incoming), "versionBefore": isNew || replacedCopyKeptAs != nil ? .null : .string(versionBefore.description),
         "versionAfter": .string(versionAfter.description)]
    }

    /// The most notes the text lists: a sync or merge of thousands of notes
    /// would bury its summary under as many lines. `--json` lists them all.
    static let listedAtMost = 20

    /// The text naming `notes`: a heading, then a command a line, runnable
    /// as it is, the note's title after `#`, marked as `note list --all`
    /// marks it (`new`, `removed`), a replaced copy said so with the note
    /// keeping it, and a diff that also spans edits committed meanwhile
    /// said so; past `listedAtMost`, how many more.
    /// Ids abbreviated to `idLength` characters. `event` names what
    /// brought the changes: "merge" or "sync".
    /// Only the notes listed are taken from `notes`, which may be lazy
    /// (a title read from the store as each is taken).
    static func listing(_ notes: some Collection<BroughtChanges>, by event: String, idLength: Int) -> String {
        let lines = notes.prefix(listedAtMost).map { note in
            let id = note.id.rawValue.prefix(idLength)
            let isShown = note.isNew || note.replacedCopyKeptAs != nil
            let command = isShown ? ShellWords.command("quire", "show", String(id), "--at", "\(note.versionAfter)")
                : ShellWords.command("quire", "diff", String(id), "--from", "\(note.versionBefore)", "--to", "\(note.versionAfter)")
            let replaced = note.replacedCopyKeptAs.map { "this store's copy replaced, kept as note \($0.rawValue.prefix(idLength))" }
            let interleaved = note.isInterleaved ? "the \(isShown ? "note shown also holds" : "diff also shows") edits committed here during the \(event)" : nil
            let marks = [note.isNew ? "new" : nil, replaced, note.isRemoved ? "removed" : nil, interleaved].compactMap { $0 }
            return "  \(command)  # \(note.title.map(TerminalText.inLine) ?? "(cannot be read)")" + (marks.isEmpty ? "" : " (\(marks.joined(separator: ", ")))")
        }
        let more = notes.count - lines.count
        return "What the \(event) brought into each note, against the note's version here before the \(event) (of a new note, all of it):\n"
            + lines.joined(separator: "\n")
            + (more > 0 ? "\n  ... and \(more) more (`--json` lists them all)" : "")
    }
}

extension BroughtChanges {
    /// Whether a note changes came into is new here or came back replaced,
    /// told from its version here before them: one with an empty version
    /// before is new, unless this store dropped its copy to take the other
    /// side's whole (`sync --take-theirs`, in this run or in an earlier one
    /// that failed before the other side's copy came), which the store
    /// records (`DocumentStore.replacedCopies()`). `quire sync` and `quire
    /// merge` decide it through this alone, so that they list a note alike.
    struct NewOrReplaced {
        /// The record: each replaced note, with the note keeping its dropped copy.
        private let keptCopies: [DocumentID: DocumentID]

        /// `versionsBefore`: the versions here before the changes of the
        /// notes to decide. The record is read only when one is empty. One
        /// that cannot be read (a damaged store) leaves such notes new: the
        /// changes went in by then, and the command's own outcome stays
        /// (an error now would say that a merge written whole failed).
        init(in store: DocumentStore, versionsBefore: some Sequence<VersionVector>) {
            keptCopies = versionsBefore.contains(where: \.isEmpty) ? (try? store.replacedCopies()) ?? [:] : [:]
        }

        /// For note `id`, whose version here before the changes was
        /// `versionBefore`: whether it is new here, and the note keeping
        /// this store's dropped copy when it came back replaced.
        func decide(_ id: DocumentID, versionBefore: VersionVector) -> (isNew: Bool, replacedCopyKeptAs: DocumentID?) {
            guard versionBefore.isEmpty else { return (false, nil) }
            let keptAs = keptCopies[id]
            return (keptAs == nil, keptAs)
        }
    }
}
