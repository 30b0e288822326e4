import JSONText
import Quire

/// A note that a merge or a sync brought changes into, and how to see what
/// they did: `quire diff ID --from` its version here before them `--to` its
/// version right after them (not the current one, which may hold edits
/// made since), or, for a note new here, `quire show ID` (all of it was
/// brought, and no version is empty to diff from), as for a note whose copy
/// here the sync replaced (`sync --take-theirs`: the old copy's changes are
/// gone from it, kept in another note). `quire merge` and `quire sync` name them alike
/// (Specs/cli.md, `merge`; Specs/sync.md, "Commands").
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
    /// (a sync's pages, another process's edit between two): the diff
    /// shows that too, and the line says so.
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
            let command = note.isNew || note.replacedCopyKeptAs != nil ? "quire show \(id)"
                : "quire diff \(id) --from \(note.versionBefore) --to \(note.versionAfter)"
            let replaced = note.replacedCopyKeptAs.map { "this store's copy replaced, kept as note \($0.rawValue.prefix(idLength))" }
            let interleaved = note.isInterleaved ? "the diff also shows edits committed here during the \(event)" : nil
            let marks = [note.isNew ? "new" : nil, replaced, note.isRemoved ? "removed" : nil, interleaved].compactMap { $0 }
            return "  \(command)  # \(note.title ?? "(cannot be read)")" + (marks.isEmpty ? "" : " (\(marks.joined(separator: ", ")))")
        }
        let more = notes.count - lines.count
        return "What the \(event) brought into each note, against the note's version here before the \(event) (of a new note, all of it):\n"
            + lines.joined(separator: "\n")
            + (more > 0 ? "\n  ... and \(more) more (`--json` lists them all)" : "")
    }
}
