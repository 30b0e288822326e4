import JSONText
import Quire

/// Where concurrent writes met at a map key: the winner and the losers, as
/// the register keeps them (Specs/crdt.md, "Maps"). Also a removal made
/// without seeing edits of the note: alone at its key, it hides them with
/// the note, and a person whose edit vanished needs to find out why. And,
/// for `quire conflicts` (`report`), a title or body holding text typed
/// concurrently on several replicas: texts merge, so it is no conflict,
/// but a person asking which side won needs to hear that none did.
struct Conflict {
    /// The key, with the keys of enclosing maps: `title`, or `meta.color`.
    let key: String
    /// Winner first, then the losers by descending stamp.
    let entries: [RegisterEntry]
    let document: Document
    /// The logged change that made each entry's write, in `entries`' order:
    /// the line `log` shows for it, with its time. Unknown without a
    /// history (a merge's preview, which needs only the keys).
    let changes: [Attribution]
    /// For the `removed` key of a removed note: the logged changes made
    /// concurrently with the winning removal (neither saw the other).
    var unseenByRemoval: [Change] = []
    /// For the title or body: the replicas whose concurrent changes typed
    /// its visible text, and the `blame` command that shows who typed what.
    var mergedText: (replicas: [ReplicaID], blame: String)?

    /// Every conflict of a document, in the root map and the maps nested
    /// in it; with `history` (the document's), each entry's change.
    static func all(in document: Document, history: DocumentHistory? = nil) throws -> [Conflict] {
        var conflicts: [Conflict] = []
        var maps: [(ObjectID, String)] = [(.root, "")]
        while let (map, path) = maps.popLast() {
            for key in try document.keys(map) {
                if case .object(.map, let nested)? = try document.get(map, key: key) { maps.append((nested, path + key + ".")) }
            }
            for key in try document.conflictedKeys(map) {
                let entries = try document.entries(map, key: key)
                conflicts.append(Conflict(key: path + key, entries: entries, document: document,
                                          changes: entries.map { history?.attribution(of: $0.id) ?? .unknown }))
            }
        }
        if let history { try explainRemoval(in: document, history: history, conflicts: &conflicts) }
        return conflicts.sorted { $0.key < $1.key }
    }

    /// What `quire conflicts` lists: `all`, with the title and the body when
    /// the visible text of either holds text typed by changes of more than one
    /// replica made concurrently (`DocumentHistory.Concurrency`):
    /// the pieces `blame` shows, not their stamps, tell which changes typed
    /// it, and a retitle made after seeing another's is no merge. Those come
    /// after the write conflicts, which keep their places for a script that
    /// reads the first.
    static func report(in document: Document, history: DocumentHistory) throws -> [Conflict] {
        var conflicts = try all(in: document, history: history)
        var mergedTexts: [Conflict] = []
        let concurrency = history.concurrency
        for (key, blameOption) in [(Note.Key.title, " --title"), (Note.Key.body, "")] {
            let typed = try Blame.pieces(of: document, key: key, history: history).compactMap(\.attribution.change)
            let replicas = concurrency.replicasEditingConcurrently(among: typed)
            guard replicas.count > 1, let entry = try document.entries(.root, key: key).first else { continue }
            let mergedText = (replicas: replicas.sorted(), blame: "quire blame\(blameOption) " + ShellWords.quoted("\(history.id)"))
            // Concurrent writes to the key itself (the note made on two machines
            // with one request id) are a conflict already: it says both.
            if let index = conflicts.firstIndex(where: { $0.key == key }) {
                conflicts[index].mergedText = mergedText
            } else {
                mergedTexts.append(Conflict(key: key, entries: [entry], document: document, changes: [history.attribution(of: entry.id)],
                                            mergedText: mergedText))
            }
        }
        return conflicts + mergedTexts.sorted { $0.key < $1.key }
    }

    /// Whether this is only a merged text: no other entry at its key, nothing a removal hid.
    var isOnlyMergedText: Bool { mergedText != nil && entries.count == 1 && unseenByRemoval.isEmpty }

    /// Adds to `conflicts` the changes a removed note's winning removal did
    /// not see: as the `removed` conflict's, or as a `removed` entry of its own.
    private static func explainRemoval(in document: Document, history: DocumentHistory, conflicts: inout [Conflict]) throws {
        guard try Note.isRemoved(document), let winner = try document.entries(.root, key: Note.Key.removed).first,
              let removal = history.change(containing: winner.id) else { return }
        let unseen = history.concurrency.changes(concurrentWith: removal).filter(editsMoreThanRemoval)
        guard !unseen.isEmpty else { return }
        if let index = conflicts.firstIndex(where: { $0.key == Note.Key.removed }) {
            conflicts[index].unseenByRemoval = unseen
        } else {
            conflicts.append(Conflict(key: Note.Key.removed, entries: [winner], document: document,
                                      changes: [Attribution(change: removal, isCompacted: false)], unseenByRemoval: unseen))
        }
    }

    /// Whether a change does more than remove or restore the note: a
    /// removal or restore made at the same time has nothing to hide.
    private static func editsMoreThanRemoval(_ change: Change) -> Bool {
        change.operations.contains { operation in
            guard case .put(let object, let key, _, _) = operation else { return true }
            return object != .root || key != Note.Key.removed
        }
    }

    /// Why the winner won: stamps order by Lamport value, then replica id.
    /// A removal alone at its key won nothing: what it hid is the story;
    /// nor did a merged text: that it merged is.
    var reason: String {
        guard entries.count > 1 else { return removalExplanation ?? mergedTextExplanation ?? "" }
        let winner = entries[0].stamp, runnerUp = entries[1].stamp
        return winner.lamport > runnerUp.lamport
            ? "higher Lamport value (\(winner.lamport) > \(runnerUp.lamport))"
            : "same Lamport value \(winner.lamport), higher replica id (\(winner.replica) > \(runnerUp.replica))"
    }

    /// When a loser's change was made later than the winner's by its
    /// writer's clock, why that did not make it win: a person reading the
    /// times expects the last write to win. Nil otherwise.
    var clockExplanation: String? {
        guard let winnerTime = changes[0].change?.time, winnerTime > 0,
              changes.dropFirst().contains(where: { ($0.change?.time ?? 0) > winnerTime }) else { return nil }
        return "a loser was written later by its writer's clock; clocks do not order writes made without seeing each other "
            + "(machines' clocks differ): the Lamport value does, which counts the operations its writer had made or seen"
    }

    /// What a removal that did not see some edits did to them; nil when it saw every one.
    var removalExplanation: String? {
        let count = unseenByRemoval.count
        guard count > 0 else { return nil }
        return "removed by a change that had not seen \(count) change\(count == 1 ? "" : "s") made elsewhere at the same time (unseen); "
            + "their edits are kept, hidden with the note: `quire note restore` brings it back with them"
    }

    /// That the text merged from concurrent edits, and where to see who typed what; nil when it did not.
    var mergedTextExplanation: String? {
        guard let mergedText else { return nil }
        return "not a conflict: holds text typed concurrently on replicas \(mergedText.replicas.map(\.description).joined(separator: ", ")), "
            + "merged character by character (no side won); `\(mergedText.blame)` shows who typed each piece"
    }

    /// An entry's value as JSON: scalars as themselves, a text as its
    /// content, a list as its values, a removal as null.
    func json(_ value: Value?) -> JSONValue {
        switch value {
        case nil, .scalar(.null)?: return .null
        case .scalar(.bool(let bool))?: return .bool(bool)
        case .scalar(.int(let int))?: return .integer(int)
        case .scalar(.string(let string))?: return .string(string)
        case .scalar(let other)?: return .string(other.description)
        case .object(.text, let text)?: return .string((try? document.text(text)) ?? "")
        case .object(.list, let list)?: return .array(((try? document.list(list)) ?? []).map { json($0) })
        case .object(let kind, let id)?: return .string("\(kind)(\(id))")
        }
    }

    /// The entry at `index` of `entries`: its value and stamp, and the
    /// change that wrote it (`Attribution.jsonFields`).
    func json(entryAt index: Int) -> JSONValue {
        let entry = entries[index]
        return .object(changes[index].jsonFields.merging([
            "value": json(entry.value), "replica": .string(entry.id.replica.description),
            "lamport": .integer(entry.lamport), "id": .string(entry.id.description),
        ]) { $1 })
    }

    var json: JSONValue {
        var fields: [String: JSONValue] = [
            "key": .string(key), "winner": json(entryAt: 0), "losers": .array(entries.indices.dropFirst().map { json(entryAt: $0) }),
            "reason": .string(reason),
        ]
        if !unseenByRemoval.isEmpty {
            fields["unseenByRemoval"] = .array(unseenByRemoval.map { change in
                .object(["change": .string(change.id.description), "replica": .string(change.replica.description),
                         "lamport": .object(["first": .integer(change.lamport), "last": .integer(change.lastLamport)]),
                         "time": RelativeTime.json(change.date)])
            })
        }
        if let mergedText {
            fields["mergedFrom"] = .array(mergedText.replicas.map { .string($0.description) })
        }
        return .object(fields)
    }
}
