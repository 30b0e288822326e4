import Quire

/// `quire blame`: the visible body (or title) cut into pieces, each
/// inserted by one change; or the tags, each with the change that added it.
/// A piece or tag whose change compaction deleted is attributed to none.
enum Blame {
    struct Piece {
        /// Where the piece starts in the text, in characters (Unicode scalars).
        let offset: Int
        let text: String
        /// The operation that inserted the piece's first character.
        let id: OpID
        let attribution: Attribution
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
                let attribution = try attribution(of: id, in: history)
                // A deleted change's piece goes on to the next logged change of its replica.
                let runLast = run.id.advanced(by: UInt64(run.elements.count - 1)).counter
                let last = min(runLast, attribution.change?.lastID.counter ?? history.firstChange(after: id).map { $0.id.counter - 1 } ?? runLast)
                let end = start + Int(last - id.counter) + 1
                var text = String.UnicodeScalarView()
                text.append(contentsOf: run.elements[start..<end])
                pieces.append(Piece(offset: offset, text: String(text), id: id, attribution: attribution,
                                    lamport: run.lamport + UInt64(start - run.elements.startIndex)))
                offset += end - start
                start = end
            }
        }
        return pieces
    }

    struct Tag {
        let tag: String
        /// The operation that put the tag in the list.
        let id: OpID
        let attribution: Attribution
        /// The Lamport stamp of that operation.
        let lamport: UInt64
    }

    /// The note's tags in list order, each with the change that added it.
    /// Unlike the listings (`Note.tags`), a tag two replicas added at once
    /// is here twice: two changes added it, and `--untag` removes both.
    static func tags(of document: Document, history: DocumentHistory) throws -> [Tag] {
        guard case .object(.list, let list)? = try document.get(.root, key: Note.Key.tags) else { return [] }
        let stamps = try document.listRuns(list).filter { !$0.isDeleted }.flatMap { run in
            (0..<UInt64(run.count)).map { (id: run.id.advanced(by: $0), lamport: run.lamport + $0) }
        }
        return try zip(document.list(list), stamps).compactMap { value, stamp in
            guard case .scalar(.string(let tag)) = value else { return nil }
            return Tag(tag: tag, id: stamp.id, attribution: try attribution(of: stamp.id, in: history), lamport: stamp.lamport)
        }
    }

    /// The change that inserted `id`, or that compaction deleted it; a
    /// failure if neither, which a store's own log never gives.
    private static func attribution(of id: OpID, in history: DocumentHistory) throws -> Attribution {
        let attribution = history.attribution(of: id)
        guard attribution.change != nil || attribution.isCompacted else {
            throw CLIError.failure("note \(history.id) has no logged change holding \(id)")
        }
        return attribution
    }
}
