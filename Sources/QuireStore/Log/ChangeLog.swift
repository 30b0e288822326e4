import QuireCore

/// The op log: every change of every document, in the order this store
/// applied them (the `seq` column), each as a one-change `QCHG` bundle.
///
/// All functions run on a connection inside the caller's transaction, so a
/// change and whatever goes with it commit together.
///
///     try db.write { db in
///         try ChangeLog.append([change], document: "note-1", isLocal: true, db)
///     }
///     let all = try db.read { db in try ChangeLog.changes(document: "note-1", after: 0, db) }
public enum ChangeLog {
    /// Appends changes to a document's log, in order.
    ///
    /// `isLocal` marks changes this store made (under any of its replica
    /// ids): they are what the outbox offers to peers.
    public static func append(_ changes: some Sequence<Change>, document: String, isLocal: Bool, _ db: DatabaseConnection) throws {
        for change in changes {
            try db.execute(
                sql: """
                    INSERT INTO changes(document_id, replica, first_counter, last_counter, first_lamport, last_lamport,
                                        parents, time, is_local, data)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    .text(document), .replica(change.replica), .unsigned(change.id.counter), .unsigned(change.lastID.counter),
                    .unsigned(change.lamport), .unsigned(change.lastLamport),
                    .text(change.parents.map(\.description).joined(separator: " ")),
                    .integer(change.time), .integer(isLocal ? 1 : 0), .blob(ChangeEncoding.encode([change])),
                ])
        }
    }

    /// A document's changes with `seq` above `seq`, in log order.
    public static func changes(document: String, after seq: Int64, _ db: DatabaseConnection) throws -> [Change] {
        let rows = try db.query(
            sql: "SELECT seq, data FROM changes WHERE document_id = ? AND seq > ? ORDER BY seq",
            arguments: [.text(document), .integer(seq)])
        return try rows.map { row in try decode(row, document: document) }
    }

    /// A document's logged changes that `version` lacks, in log order.
    public static func changes(document: String, since version: VersionVector, _ db: DatabaseConnection) throws -> [Change] {
        let rows = try db.query(
            sql: "SELECT seq, data, replica, last_counter FROM changes WHERE document_id = ? ORDER BY seq",
            arguments: [.text(document)])
        // Filtering before decoding: a peer that is nearly up to date costs
        // a scan of small columns, not a decode of the whole log.
        return try rows.filter { row in try row.unsigned(3) > version[row.replica(2)] }
            .map { row in try decode(row, document: document) }
    }

    /// The first of `changes` that clashes with a logged change: same
    /// replica and overlapping counters, but not the same change. Such a
    /// change means a replica id was used twice. A change whose counters
    /// compaction removed from the log cannot be checked and passes.
    public static func firstConflict(among changes: some Sequence<Change>, document: String, _ db: DatabaseConnection) throws -> Change? {
        for change in changes {
            let rows = try db.query(
                sql: """
                    SELECT first_counter, data FROM changes
                    WHERE document_id = ? AND replica = ? AND first_counter <= ? AND last_counter >= ?
                    """,
                arguments: [.text(document), .replica(change.replica), .unsigned(change.lastID.counter), .unsigned(change.id.counter)])
            for row in rows where try row.unsigned(0) != change.id.counter || row.blob(1) != ChangeEncoding.encode([change]) {
                return change
            }
        }
        return nil
    }

    /// The highest `seq` of a document's log, or 0 for an empty log.
    public static func lastSeq(document: String, _ db: DatabaseConnection) throws -> Int64 {
        let row = try db.query(sql: "SELECT max(seq) FROM changes WHERE document_id = ?", arguments: [.text(document)])[0]
        return row.isNull(0) ? 0 : try row.int64(0)
    }

    /// The local changes `peer` has not acknowledged, per document, in log order.
    public static func outbox(peer: String, _ db: DatabaseConnection) throws -> [(document: String, changes: [Change])] {
        let rows = try db.query(
            sql: """
                SELECT c.seq, c.data, c.document_id FROM changes c
                LEFT JOIN peer_acknowledgements a
                    ON a.peer = ? AND a.document_id = c.document_id AND a.replica = c.replica
                WHERE c.is_local = 1 AND c.last_counter > coalesce(a.counter, 0)
                ORDER BY c.document_id, c.seq
                """,
            arguments: [.text(peer)])
        var outbox: [(document: String, changes: [Change])] = []
        for row in rows {
            let document = try row.text(2)
            let change = try decode(row, document: document)
            if outbox.last?.document == document { outbox[outbox.count - 1].changes.append(change) }
            else { outbox.append((document, [change])) }
        }
        return outbox
    }

    /// Deletes the log rows of `document` up to `seq` that nothing needs any
    /// more: remote changes, and local changes every peer that syncs this
    /// document has acknowledged. Local changes stay while no peer has
    /// acknowledged anything of the document: they have never been sent.
    public static func deleteCompacted(document: String, through seq: Int64, _ db: DatabaseConnection) throws {
        try db.execute(
            sql: """
                DELETE FROM changes WHERE document_id = ?1 AND seq <= ?2 AND (
                    is_local = 0 OR (
                        EXISTS (SELECT 1 FROM peer_acknowledgements WHERE document_id = ?1)
                        AND NOT EXISTS (
                            SELECT 1 FROM (SELECT DISTINCT peer FROM peer_acknowledgements WHERE document_id = ?1) p
                            LEFT JOIN peer_acknowledgements a
                                ON a.peer = p.peer AND a.document_id = ?1 AND a.replica = changes.replica
                            WHERE coalesce(a.counter, 0) < changes.last_counter)))
                """,
            arguments: [.text(document), .integer(seq)])
    }

    private static func decode(_ row: Row, document: String) throws -> Change {
        let seq = try row.int64(0)
        do {
            let changes = try ChangeEncoding.decode(try row.blob(1))
            guard changes.count == 1 else { throw DecodingError.invalid("the row holds \(changes.count) changes") }
            return changes[0]
        } catch let error as DecodingError {
            throw StoreError.corruptChange(document: document, seq: seq, reason: error.description)
        }
    }
}
