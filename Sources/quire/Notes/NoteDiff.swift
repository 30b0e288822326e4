import JSONText
import Quire

/// `quire diff`: what changed between two versions of a note. Texts as
/// insertions and deletions of whole words (`TextDiff.wordEdits`), other
/// fields as old → new.
struct NoteDiff {
    /// One insertion or deletion in a text field, at an offset of the old
    /// text (in characters, Unicode scalars).
    struct TextEdit {
        let key: String
        let isInsertion: Bool
        let offset: Int
        let text: String
    }

    struct FieldChange {
        let key: String
        let old: JSONValue
        let new: JSONValue
    }

    let textEdits: [TextEdit]
    let fieldChanges: [FieldChange]

    init(old: Note, new: Note) {
        textEdits = Self.edits(Note.Key.title, old.title, new.title) + Self.edits(Note.Key.body, old.body, new.body)
        let fields: [(String, JSONValue, JSONValue)] = [
            (Note.Key.tags, .array(old.tags.map(JSONValue.string)), .array(new.tags.map(JSONValue.string))),
            (Note.Key.pinned, .bool(old.pinned), .bool(new.pinned)),
            (Note.Key.removed, .bool(old.removed), .bool(new.removed)),
        ]
        fieldChanges = fields.filter { $0.1 != $0.2 }.map { FieldChange(key: $0.0, old: $0.1, new: $0.2) }
    }

    private static func edits(_ key: String, _ old: String, _ new: String) -> [TextEdit] {
        let newScalars = Array(new.unicodeScalars)
        let oldScalars = Array(old.unicodeScalars)
        var shift = 0  // how far the edits so far moved positions from the old text's
        return TextDiff.wordEdits(from: oldScalars, to: newScalars).map { edit in
            switch edit {
            case let .delete(at, count):
                defer { shift -= count }
                return TextEdit(key: key, isInsertion: false, offset: at - shift, text: string(oldScalars[(at - shift)..<(at - shift + count)]))
            case let .insert(at, count, from):
                defer { shift += count }
                return TextEdit(key: key, isInsertion: true, offset: at - shift, text: string(newScalars[from..<(from + count)]))
            }
        }
    }

    private static func string(_ scalars: ArraySlice<Unicode.Scalar>) -> String {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        return String(view)
    }

    /// Prints the diff from version `from` to version `to`; `current` is
    /// the note's version now, which the text names as such.
    func print(from: VersionVector, to: VersionVector, current: VersionVector, json: Bool, to output: Output) {
        if json {
            output.print(json: .object([
                "from": .string(from.description), "to": .string(to.description),
                "text": .array(textEdits.map { edit in
                    .object(["key": .string(edit.key), "kind": .string(edit.isInsertion ? "insert" : "delete"),
                             "offset": .integer(edit.offset), "text": .string(edit.text)])
                }),
                "fields": .array(fieldChanges.map { .object(["key": .string($0.key), "old": $0.old, "new": $0.new]) }),
            ]))
            return
        }
        // The versions compared first, as `log` prints them, so that a
        // reader knows what the old and the new side are.
        // The empty version (`diff --change` of a note's first change) would be an empty cell.
        let versions = Table(rows: [["from", from.isEmpty ? "- (before the note's first change)" : from.description],
                                    ["to", to.description + (to == current ? " (current)" : "")]]).render()
        if textEdits.isEmpty && fieldChanges.isEmpty {
            output.print(versions + "\n\nNo differences.")
            return
        }
        var lines = [versions, ""] + textEdits.map { edit in
            let line = "\(edit.key) @\(edit.offset) \(edit.isInsertion ? "+" : "-")\(JSONValue.quoted(edit.text))"
            return output.styled(line, edit.isInsertion ? .green : .red)
        }
        lines += fieldChanges.map { "\($0.key): \($0.old.compact) → \($0.new.compact)" }
        output.print(lines.joined(separator: "\n"))
    }
}
