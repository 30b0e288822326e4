import Quire

/// Note ids on the command line: any unique prefix names a note, as git
/// abbreviates commits; listings print the shortest prefix that stays
/// unique among the store's notes, at least `minimumLength` characters.
enum NoteIDs {
    static let minimumLength = 8

    /// The one note whose id is `prefix` (not empty: `Invocation.noteID(_:)`) or starts with it, among every
    /// document of the store (removed notes included); if none does, the
    /// one whose id starts with it in any case (an id copied from a
    /// display that shows it in capitals).
    static func resolve(_ prefix: String, in store: DocumentStore) throws -> DocumentID {
        // Every id starts with "": a store of one note would hand it over.
        precondition(!prefix.isEmpty, "an empty note id reached NoteIDs.resolve; check it with Invocation.noteID(_:)")
        let ids = try store.documents(includeRemoved: true).map(\.id)
        if let exact = ids.first(where: { $0.rawValue == prefix }) { return exact }
        var matches = ids.filter { $0.rawValue.hasPrefix(prefix) }
        if matches.isEmpty {
            let lowered = prefix.lowercased()
            matches = ids.filter { $0.rawValue.lowercased().hasPrefix(lowered) }
        }
        switch matches.count {
        case 1:
            return matches[0]
        case 0:
            throw CLIError.failure("no note matches \"\(prefix)\"; `quire note list --all` lists every note")
        default:
            let listed = matches.prefix(5).map(\.rawValue).joined(separator: ", ")
            throw CLIError.failure("\"\(prefix)\" matches \(matches.count) notes: \(listed)\(matches.count > 5 ? ", ..." : ""); type more of the id")
        }
    }

    /// How many leading characters keep every one of `ids` unique.
    static func abbreviationLength(_ ids: [DocumentID]) -> Int {
        let sorted = ids.map { Array($0.rawValue) }.sorted { $0.lexicographicallyPrecedes($1) }
        var length = minimumLength
        for (a, b) in zip(sorted, sorted.dropFirst()) {
            let common = zip(a, b).prefix { $0 == $1 }.count
            length = max(length, common + 1)
        }
        return length
    }
}

extension Invocation {
    /// Opens the store and finds the note the command's ID argument names.
    /// A missing ID is a usage error, told before the store is opened, so
    /// whether or not there is one.
    func openStoreAndNote() throws -> (store: DocumentStore, id: DocumentID) {
        let prefix = try noteID(argument(0, "ID"))
        let store = try context.openStore()
        return (store, try NoteIDs.resolve(prefix, in: store))
    }

    /// `text`, a note id argument, unless it is empty: every id starts with
    /// "", but an empty word (an unset shell variable) names no note, even
    /// in a store of one, and is a usage error, told before the store is opened.
    func noteID(_ text: String) throws -> String {
        guard !text.isEmpty else { throw usageError("ID is empty, which names no note; give a note's id or a prefix of it") }
        return text
    }
}
