import Quire

/// `quire blame`: the visible body (or title) cut into pieces, each
/// inserted by one change; or the tags, each with the change that added it.
enum Blame {
    struct Piece {
        /// Where the piece starts in the text, in characters (Unicode scalars).
        let offset: Int
        let text: String
        let change: Change
        /// The Lamport stamp of the piece's first character.
        let lamport: UInt64

        /// The Lamport stamp of the piece's last character: one operation
        /// typed the piece, its characters at consecutive stamps.
        var lastLamport: UInt64 { lamport + UInt64(text.unicodeScalars.count) - 1 }
    }

    /// The pieces of the text at `key` (`Note.Key.body` or `Note.Key.title`).
    static func pieces(of document: Document, key: String, history: DocumentHistory) throws -> [Piece] {
        guard case .object(.text, let text)? = try document.get(.root, key: key) else { return [] }
        var pieces: [Piece] = []
        var offset = 0
        for run in try document.textRuns(text) where !run.isDeleted {
            // A run is consecutive ids of one replica, which several changes
            // (say, two appends) may have typed: cut it at change boundaries.
            var start = run.elements.startIndex
            while start < run.elements.endIndex {
                let id = run.id.advanced(by: UInt64(start - run.elements.startIndex))
                guard let change = history.change(containing: id) else {
                    throw CLIError.failure("document \(history.id) has no logged change holding \(id); its history may have been compacted")
                }
                let end = min(run.elements.endIndex, start + Int(change.lastID.counter - id.counter) + 1)
                var text = String.UnicodeScalarView()
                text.append(contentsOf: run.elements[start..<end])
                pieces.append(Piece(offset: offset, text: String(text), change: change,
                                    lamport: run.lamport + UInt64(start - run.elements.startIndex)))
                offset += end - start
                start = end
            }
        }
        return pieces
    }

    struct Tag {
        let tag: String
        let change: Change
        /// The Lamport stamp of the operation that put the tag in the list.
        let lamport: UInt64
    }

    /// The note's tags in list order, each with the change that added it.
    /// Unlike the listings (`Note.tags`), a tag two replicas added at once
    /// is here twice: two changes added it, and `--untag` removes both.
    static func tags(of document: Document, history: DocumentHistory) throws -> [Tag] {
        guard case .object(.list, let list)? = try document.get(.root, key: Note.Key.tags) else { return [] }
        return try zip(document.list(list), document.elementIDs(list)).compactMap { value, id in
            guard case .scalar(.string(let tag)) = value else { return nil }
            guard let change = history.change(containing: id) else {
                throw CLIError.failure("document \(history.id) has no logged change holding \(id); its history may have been compacted")
            }
            return Tag(tag: tag, change: change, lamport: change.lamport + (id.counter - change.id.counter))
        }
    }
}
