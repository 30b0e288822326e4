import Quire

/// The edits `note new` and `note edit` make, as operations inside one
/// transaction: texts change by minimal text edits, never by replacing the
/// whole text object, so concurrent edits elsewhere merge.
extension Transaction {
    /// Writes the fields of a new note.
    mutating func createNote(title: String, body: String, tags: [String], pinned: Bool) throws {
        try insertText(putObject(.root, key: Note.Key.title, kind: .text), at: 0, title)
        try insertText(putObject(.root, key: Note.Key.body, kind: .text), at: 0, body)
        _ = try putObject(.root, key: Note.Key.tags, kind: .list)
        for tag in tags { try addTag(tag) }
        try put(.root, key: Note.Key.pinned, .bool(pinned))
        try put(.root, key: Note.Key.removed, .bool(false))
    }

    /// The text object at `key`, created if the note has none.
    mutating func noteText(_ key: String) throws -> ObjectID {
        if case .object(.text, let text)? = try document.get(.root, key: key) { return text }
        return try putObject(.root, key: key, kind: .text)
    }

    /// Makes the text at `key` hold `value`, recording only what differs.
    /// With `base`, the reading `value` was edited from, what other edits
    /// did to the text since that reading stays (see `TextReading`).
    mutating func setNoteText(_ key: String, to value: String, editedFrom base: TextReading? = nil) throws {
        let text = try noteText(key)
        if let base { try setText(text, to: value, editedFrom: base) } else { try setText(text, to: value) }
    }

    /// Adds `tag` at the end of the tags, unless it is there already.
    mutating func addTag(_ tag: String) throws {
        let list = try tagList()
        let tags = try document.list(list)
        if !tags.contains(.scalar(.string(tag))) { try insert(list, at: tags.count, .string(tag)) }
    }

    /// Removes every occurrence of `tag` (concurrent adds can make two),
    /// and returns whether there was one.
    mutating func removeTag(_ tag: String) throws -> Bool {
        let list = try tagList()
        var removed = false
        while let index = try document.list(list).firstIndex(of: .scalar(.string(tag))) {
            try delete(list, at: index)
            removed = true
        }
        return removed
    }

    private mutating func tagList() throws -> ObjectID {
        if case .object(.list, let list)? = try document.get(.root, key: Note.Key.tags) { return list }
        return try putObject(.root, key: Note.Key.tags, kind: .list)
    }
}

extension Document {
    /// The text at `key` as read now, to edit a copy of it; nil if the note has none.
    func noteTextReading(_ key: String) throws -> TextReading? {
        guard case .object(.text, let text)? = try get(.root, key: key) else { return nil }
        return try reading(text)
    }
}
