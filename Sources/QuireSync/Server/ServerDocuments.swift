import Quire

/// The documents of the server's log, rebuilt from it, so that a pushed
/// change is applied, by the rules of `Specs/crdt.md`, before it is logged.
///
/// A change that breaks those rules (it edits an object or an element its
/// document does not hold, it is stamped below its origin...) would
/// otherwise be logged and sent to every client, each of which refuses it:
/// the page holding it never applies, the client's cursor never moves past
/// it, and every later sync of that document (and of the documents pulled
/// with it) fails.
///
/// The most recently written documents stay in memory, up to `capacity`;
/// one not held is rebuilt by applying its rows of the log in order.
struct ServerDocuments {
    /// The documents held, the most recently used last.
    private var held: [(id: DocumentID, document: Document)] = []
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Takes out the documents of `ids` that are held, for a writer to
    /// change without copying them; `restore` puts them back.
    mutating func take(_ ids: some Sequence<DocumentID>) -> [DocumentID: Document] {
        var taken: [DocumentID: Document] = [:]
        for id in ids {
            if let index = held.firstIndex(where: { $0.id == id }) { taken[id] = held.remove(at: index).document }
        }
        return taken
    }

    /// Holds `documents` as the most recently used, dropping the least
    /// recently used past `capacity` (of more documents than that, those
    /// last in id order stay). Linear: a push may write thousands.
    mutating func restore(_ documents: [DocumentID: Document]) {
        let restored = documents.keys.sorted().suffix(capacity)
        held.removeAll { documents[$0.id] != nil }
        held += restored.map { ($0, documents[$0]!) }
        if held.count > capacity { held.removeFirst(held.count - capacity) }
    }

    /// The document `id` as the log holds it: every row applied in `seq` order.
    ///
    /// - Throws: `SyncFailure` 500 if the log's rows do not apply (changes a
    ///   server without this check accepted); `documentDamaged` if one does
    ///   not decode (the disk damaged it).
    static func load(_ id: DocumentID, _ db: DatabaseConnection) throws -> Document {
        var document = Document(replica: ReplicaID(0))
        let rows = try db.query(sql: "SELECT seq, data FROM log WHERE document_id = ? ORDER BY seq", arguments: [.text(id.rawValue)])
        do {
            // A bundle that does not decompress or decode is damage, not a
            // change that does not apply. The room one makes in a text is
            // kept for the rows after it, given back after the last.
            for row in rows { _ = try ServerLog.readLogRow(row, of: id) { try document.applyEncodedRun($0, keepingSpanRoom: true) } }
            document.giveBackSpareSpanRoom()
        } catch let failure as SyncFailure {
            throw failure
        } catch {
            throw SyncFailure(status: 500, "the server's log of document \(id) does not apply: \(error)")
        }
        return document
    }
}
