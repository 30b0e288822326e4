import Quire

/// `quire blame`: the visible body (or title) cut into pieces, each
/// inserted by one change; with `--deleted`, the text deleted from it, each
/// piece also with the change that deleted it; or the tags, each with the
/// change that added it (with `--deleted`, the tags removed since, each
/// also with the change that removed it). A piece or tag whose change
/// compaction deleted is attributed to none.
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

    /// The pieces of the visible text at `key` (`Note.Key.body` or `Note.Key.title`).
    static func pieces(of document: Document, key: String, history: DocumentHistory) throws -> [Piece] {
        guard let text = try textObject(of: document, key: key) else { return [] }
        var pieces: [Piece] = []
        var offset = 0
        for run in try document.textRuns(text) where !run.isDeleted {
            pieces += try typedPieces(of: run, at: offset, history: history)
            offset += run.elements.count
        }
        return pieces
    }

    /// The change that deleted a character or removed a tag; none when
    /// compaction deleted that change, as the document keeps no record of
    /// who deleted an element.
    struct DeletedBy {
        let attribution: Attribution
        /// The Lamport stamp of the deleting operation (of the first
        /// character, for a piece); nil when its change was compacted away.
        let lamport: UInt64?
    }

    /// A piece of text typed and later deleted, with the change that deleted it.
    struct DeletedPiece {
        /// `offset` is where it stood among the visible text: the visible
        /// characters before it (the same for pieces deleted side by side).
        let piece: Piece
        let deletedBy: DeletedBy
    }

    /// The deleted text at `key` in document order, in pieces each typed by
    /// one change and deleted by one change.
    static func deletedPieces(of document: Document, key: String, history: DocumentHistory) throws -> [DeletedPiece] {
        guard let text = try textObject(of: document, key: key) else { return [] }
        let deletions = deletions(in: text, of: history)
        var pieces: [DeletedPiece] = []
        var offset = 0
        for run in try document.textRuns(text) {
            guard run.isDeleted else {
                offset += run.elements.count
                continue
            }
            for typed in try typedPieces(of: run, at: offset, history: history) {
                let scalars = Array(typed.text.unicodeScalars)
                // Cut where the deleting change changes: one deletion may have taken part of a piece.
                func deletedBy(at index: Int) throws -> DeletedBy {
                    try Blame.deletedBy(typed.id.advanced(by: UInt64(index)), among: deletions, in: history)
                }
                var start = 0
                while start < scalars.count {
                    let first = try deletedBy(at: start)
                    var end = start + 1
                    while end < scalars.count, try deletedBy(at: end).attribution.change?.id == first.attribution.change?.id { end += 1 }
                    let piece = Piece(offset: offset, text: String(scalars: scalars[start..<end]), id: typed.id.advanced(by: UInt64(start)),
                                      attribution: typed.attribution, lamport: typed.lamport + UInt64(start))
                    pieces.append(DeletedPiece(piece: piece, deletedBy: first))
                    start = end
                }
            }
        }
        return pieces
    }

    /// The text object at `key` of the root map; nil when the note has none there.
    private static func textObject(of document: Document, key: String) throws -> ObjectID? {
        guard case .object(.text, let text)? = try document.get(.root, key: key) else { return nil }
        return text
    }

    /// `run` cut into pieces each typed by one change, the first at `offset`.
    private static func typedPieces(of run: SequenceRun<Unicode.Scalar>, at offset: Int, history: DocumentHistory) throws -> [Piece] {
        // A run is consecutive ids of one replica, which several changes
        // (say, two appends) may have typed: cut it at change boundaries.
        var pieces: [Piece] = []
        var start = run.elements.startIndex
        while start < run.elements.endIndex {
            let id = run.id.advanced(by: UInt64(start - run.elements.startIndex))
            let attribution = try attribution(of: id, in: history)
            // A deleted change's piece goes on to the next logged change of its replica.
            let runLast = run.id.advanced(by: UInt64(run.elements.count - 1)).counter
            let last = min(runLast, attribution.change?.lastID.counter ?? history.firstChange(after: id).map { $0.id.counter - 1 } ?? runLast)
            let end = start + Int(last - id.counter) + 1
            pieces.append(Piece(offset: run.isDeleted ? offset : offset + start - run.elements.startIndex,
                                text: String(scalars: run.elements[start..<end]), id: id, attribution: attribution,
                                lamport: run.lamport + UInt64(start - run.elements.startIndex)))
            start = end
        }
        return pieces
    }

    /// The operation that deleted a character: its stamp, and its change.
    private struct Deletion {
        let change: Change
        let lamport: UInt64

        var stamp: Stamp { Stamp(lamport: lamport, replica: change.replica) }
    }

    /// For each element of the text or list `sequence` that a logged change
    /// deleted, that deletion. Of concurrent deletions of one element
    /// (neither change saw the other), the one with the lower stamp, so that
    /// every store holding the same changes names the same. Only logged
    /// changes are seen: after compaction, the lower one may be gone.
    private static func deletions(in sequence: ObjectID, of history: DocumentHistory) -> [OpID: Deletion] {
        var deletions: [OpID: Deletion] = [:]
        for change in history.changes {
            // An operation takes as many counters and Lamport values as it has elements.
            var lamport = change.lamport
            for operation in change.operations {
                defer { lamport += UInt64(operation.width) }
                guard case .delete(let object, let target) = operation, object == sequence else { continue }
                for index in 0..<target.length {
                    let deletion = Deletion(change: change, lamport: lamport + UInt64(index))
                    let id = target.start.advanced(by: UInt64(index))
                    if let earlier = deletions[id], earlier.stamp < deletion.stamp { continue }
                    deletions[id] = deletion
                }
            }
        }
        return deletions
    }

    /// Who deleted the element `id`: its deletion among `deletions`, or
    /// a change compaction deleted; a failure if neither, which a store's
    /// own log never gives (every applied change is logged unless
    /// compaction deleted it).
    private static func deletedBy(_ id: OpID, among deletions: [OpID: Deletion], in history: DocumentHistory) throws -> DeletedBy {
        if let deletion = deletions[id] {
            return DeletedBy(attribution: Attribution(change: deletion.change, isCompacted: false), lamport: deletion.lamport)
        }
        guard history.compaction != nil else { throw CLIError.failure("note \(history.id) has no logged change deleting \(id)") }
        return DeletedBy(attribution: Attribution(change: nil, isCompacted: true), lamport: nil)
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
        guard let list = try tagList(of: document) else { return [] }
        return try tags(in: list, of: document, history: history, removed: false)
    }

    /// A tag removed from the note, with the change that removed it.
    struct RemovedTag {
        let tag: Tag
        let removedBy: DeletedBy
    }

    /// The tags removed from the note, in list order (tombstones the
    /// document keeps), each with the change that added it and the one
    /// that removed it. A tag added twice at once is here twice if removed.
    static func removedTags(of document: Document, history: DocumentHistory) throws -> [RemovedTag] {
        guard let list = try tagList(of: document) else { return [] }
        let deletions = deletions(in: list, of: history)
        return try tags(in: list, of: document, history: history, removed: true).map { tag in
            RemovedTag(tag: tag, removedBy: try deletedBy(tag.id, among: deletions, in: history))
        }
    }

    /// The list of tags of the root map; nil when the note has none.
    private static func tagList(of document: Document) throws -> ObjectID? {
        guard case .object(.list, let list)? = try document.get(.root, key: Note.Key.tags) else { return nil }
        return list
    }

    /// The tags of `list` in list order, the visible ones or (`removed`)
    /// the deleted ones, each with the change that added it.
    private static func tags(in list: ObjectID, of document: Document, history: DocumentHistory, removed: Bool) throws -> [Tag] {
        var tags: [Tag] = []
        for run in try document.listRuns(list) where run.isDeleted == removed {
            for (index, value) in zip(UInt64(0)..., run.elements) {
                guard case .scalar(.string(let tag)) = value else { continue }
                let id = run.id.advanced(by: index)
                tags.append(Tag(tag: tag, id: id, attribution: try attribution(of: id, in: history), lamport: run.lamport + index))
            }
        }
        return tags
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
