import JSONText
import Quire

/// A note: one document of the store whose root map holds
///
/// - `title`, `body`: text objects (edits merge character by character),
/// - `tags`: a list of strings, shown once each,
/// - `pinned`, `removed`: booleans (last writer wins; `removed` is a CRDT
///   field, so a removal syncs and `restore` brings back the note with any
///   edit made concurrently elsewhere).
///
/// Absent fields read as empty or false, so any document reads as a note.
struct Note {
    enum Key {
        static let title = "title", body = "body", tags = "tags", pinned = "pinned", removed = "removed"
    }

    let id: DocumentID
    var title = ""
    var body = ""
    var tags: [String] = []
    var pinned = false
    var removed = false

    init(id: DocumentID, document: Document) throws {
        self.id = id
        title = try Self.text(document, Key.title)
        body = try Self.text(document, Key.body)
        if case .object(.list, let list)? = try document.get(.root, key: Key.tags) {
            // Two replicas adding a tag at once put it in the list twice;
            // to a person tags are a set, so it shows once (`--untag`
            // removes every copy). Compared as values are, by scalars: "café"
            // precomposed and decomposed are two tags.
            var seen = Set<Value>()
            tags = try document.list(list).compactMap { value in
                if case .scalar(.string(let tag)) = value, seen.insert(value).inserted { tag } else { nil }
            }
        }
        pinned = try Self.bool(document, Key.pinned)
        removed = try Self.isRemoved(document)
    }

    /// The `removed` field alone, without reading the texts.
    static func isRemoved(_ document: Document) throws -> Bool {
        try bool(document, Key.removed)
    }

    private static func text(_ document: Document, _ key: String) throws -> String {
        guard case .object(.text, let text)? = try document.get(.root, key: key) else { return "" }
        return try document.text(text)
    }

    private static func bool(_ document: Document, _ key: String) throws -> Bool {
        guard case .scalar(.bool(let value))? = try document.get(.root, key: key) else { return false }
        return value
    }

    /// The JSON shape of `note show --json` (Specs/cli.md).
    var json: JSONValue { .object(jsonFields) }

    /// The fields of `json`, to which `note list --json` adds one.
    var jsonFields: [String: JSONValue] {
        ["id": .string(id.rawValue), "title": .string(title), "body": .string(body),
         "tags": .array(tags.map(JSONValue.string)), "pinned": .bool(pinned), "removed": .bool(removed)]
    }
}
