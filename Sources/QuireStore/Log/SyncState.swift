import QuireCore

/// Where a client stands with each sync server (a "peer", named by its
/// URL): its cursor in the server's log, and the local changes the server
/// refused for good (a permanent error such as 403), which stay in the log
/// and are shown to the user instead of being retried at every sync.
///
///     try db.write { db in try SyncState.setCursor(SyncCursor(logID: 7, seq: 42), peer: url, now: 0, db) }
///     let cursor = try db.read { db in try SyncState.cursor(peer: url, db) }
public enum SyncState {
    public static func cursor(peer: String, _ db: DatabaseConnection) throws -> SyncCursor? {
        let rows = try db.query(sql: "SELECT log_id, seq FROM sync_cursors WHERE peer = ?", arguments: [.text(peer)])
        return try rows.first.map { row in SyncCursor(logID: try row.unsigned(0), seq: try row.unsigned(1)) }
    }

    /// Stores the cursor of `peer`. In the same log it never goes back: two
    /// syncs with one server at once may end in either order, and the
    /// later-ending one's older cursor would only make the next sync pull
    /// again what it has. (A reset forgets the cursor first.)
    public static func setCursor(_ cursor: SyncCursor, peer: String, now: Int64, _ db: DatabaseConnection) throws {
        try db.execute(
            sql: """
                INSERT INTO sync_cursors(peer, log_id, seq, synced_at) VALUES (?1, ?2, ?3, ?4)
                ON CONFLICT(peer) DO UPDATE SET
                    seq = CASE WHEN log_id = excluded.log_id THEN max(seq, excluded.seq) ELSE excluded.seq END,
                    log_id = excluded.log_id, synced_at = excluded.synced_at
                """,
            arguments: [.text(peer), .unsigned(cursor.logID), .unsigned(cursor.seq), .integer(now)])
    }

    /// The peer synced with most recently whose name starts with `prefix`
    /// (say `http`, for servers rather than stdio peers), or nil.
    public static func mostRecentPeer(prefix: String, _ db: DatabaseConnection) throws -> String? {
        let rows = try db.query(
            sql: "SELECT peer FROM sync_cursors WHERE substr(peer, 1, length(?1)) = ?1 ORDER BY synced_at DESC, peer LIMIT 1",
            arguments: [.text(prefix)])
        return try rows.first?.text(0)
    }

    /// Forgets the cursor, every acknowledgement and the refused documents
    /// of `peer`: what to send it is then worked out again from its version
    /// vectors, from the start of its log. For a server that lost its log
    /// or was replaced.
    public static func forget(peer: String, _ db: DatabaseConnection) throws {
        for table in ["sync_cursors", "peer_acknowledgements", "refused_documents"] {
            try db.execute(sql: "DELETE FROM \(table) WHERE peer = ?", arguments: [.text(peer)])
        }
    }

    /// Moves every peer's cursor back to the start of its log (seq 0, the
    /// same log id), keeping its acknowledgements: the next sync with it
    /// states every document and is sent every row their versions do not
    /// cover, as after a `cursor reset`. For when the store dropped rows
    /// a cursor stands for (`DocumentStore.discardCopy`).
    public static func rewindCursors(_ db: DatabaseConnection) throws {
        try db.execute(sql: "UPDATE sync_cursors SET seq = 0")
    }

    /// The documents the last sync with `peer` left out because this store
    /// refuses `peer`'s changes to them (schema version 8).
    public static func refusedDocuments(peer: String, _ db: DatabaseConnection) throws -> [String] {
        try db.query(sql: "SELECT document_id FROM refused_documents WHERE peer = ?", arguments: [.text(peer)]).map { try $0.text(0) }
    }

    /// Makes `documents` the ones `refusedDocuments` gives for `peer`.
    public static func setRefusedDocuments(_ documents: some Sequence<String>, peer: String, _ db: DatabaseConnection) throws {
        try db.execute(sql: "DELETE FROM refused_documents WHERE peer = ?", arguments: [.text(peer)])
        for document in documents {
            try db.execute(sql: "INSERT INTO refused_documents(peer, document_id) VALUES (?, ?)", arguments: [.text(peer), .text(document)])
        }
    }

    /// Every peer this store keeps something of: a cursor, an
    /// acknowledgement or a refusal.
    public static func peers(_ db: DatabaseConnection) throws -> [String] {
        let rows = try db.query(sql: """
            SELECT peer FROM sync_cursors UNION SELECT peer FROM peer_acknowledgements
            UNION SELECT peer FROM rejected_changes ORDER BY 1
            """)
        return try rows.map { try $0.text(0) }
    }

    /// Moves what is kept of `old` to `new`, two names of one server: the
    /// acknowledgements of both (the highest counters), the refusals and
    /// refused documents of both, and one cursor (in one log, the further; else the newer).
    public static func mergePeer(_ old: String, into new: String, _ db: DatabaseConnection) throws {
        let names: [DatabaseValue] = [.text(old), .text(new)]
        // `WHERE true` tells SQLite's parser the ON CONFLICT is the upsert's, not a join's.
        try db.execute(sql: """
            INSERT INTO peer_acknowledgements(peer, document_id, replica, counter)
            SELECT ?2, document_id, replica, counter FROM peer_acknowledgements WHERE peer = ?1 AND true
            ON CONFLICT(peer, document_id, replica) DO UPDATE SET counter = max(counter, excluded.counter)
            """, arguments: names)
        try db.execute(sql: """
            INSERT INTO sync_cursors(peer, log_id, seq, synced_at)
            SELECT ?2, log_id, seq, synced_at FROM sync_cursors WHERE peer = ?1 AND true
            ON CONFLICT(peer) DO UPDATE SET
                seq = CASE WHEN log_id = excluded.log_id THEN max(seq, excluded.seq)
                           WHEN excluded.synced_at > synced_at THEN excluded.seq ELSE seq END,
                log_id = CASE WHEN excluded.synced_at > synced_at THEN excluded.log_id ELSE log_id END,
                synced_at = max(synced_at, excluded.synced_at)
            """, arguments: names)
        try db.execute(sql: """
            INSERT OR IGNORE INTO rejected_changes(peer, document_id, replica, first_counter, last_counter, status, reason, rejected_at)
            SELECT ?2, document_id, replica, first_counter, last_counter, status, reason, rejected_at FROM rejected_changes WHERE peer = ?1
            """, arguments: names)
        try db.execute(sql: "INSERT OR IGNORE INTO refused_documents(peer, document_id) SELECT ?2, document_id FROM refused_documents WHERE peer = ?1",
                       arguments: names)
        try forget(peer: old, db)
        try clearRejected(peer: old, db)
    }

    /// Records that `peer` refused `changes` of `document` with `status`.
    /// Recording the same change again keeps the newest reason.
    public static func reject(_ changes: some Sequence<Change>, document: String, peer: String,
                              status: Int, reason: String, now: Int64, _ db: DatabaseConnection) throws {
        for change in changes {
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO rejected_changes(peer, document_id, replica, first_counter, last_counter,
                                                            status, reason, rejected_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [.text(peer), .text(document), .replica(change.replica), .unsigned(change.id.counter),
                            .unsigned(change.lastID.counter), .integer(status), .text(reason), .integer(now)])
        }
    }

    /// The changes `peer` refused, by document and first id; with no peer
    /// named, those every peer refused, by peer too.
    public static func rejected(peer: String?, _ db: DatabaseConnection) throws -> [RejectedChange] {
        let rows = try db.query(
            sql: """
                SELECT document_id, replica, first_counter, last_counter, status, reason, rejected_at, peer
                FROM rejected_changes WHERE ?1 IS NULL OR peer = ?1 ORDER BY peer, document_id, replica, first_counter
                """,
            arguments: [peer.map { .text($0) } ?? .null])
        return try rows.map { row in
            RejectedChange(peer: try row.text(7), document: try row.text(0),
                           id: OpID(replica: try row.replica(1), counter: try row.unsigned(2)),
                           lastCounter: try row.unsigned(3), status: Int(try row.int64(4)), reason: try row.text(5),
                           rejectedAt: try row.int64(6))
        }
    }

    /// Forgets one refusal by `peer`.
    public static func forgetRejected(_ rejected: RejectedChange, peer: String, _ db: DatabaseConnection) throws {
        try db.execute(sql: "DELETE FROM rejected_changes WHERE peer = ? AND document_id = ? AND replica = ? AND first_counter = ?",
                       arguments: [.text(peer), .text(rejected.document), .replica(rejected.id.replica), .unsigned(rejected.id.counter)])
    }

    /// Forgets every refusal by `peer`, so that the next sync offers those
    /// changes again.
    public static func clearRejected(peer: String, _ db: DatabaseConnection) throws {
        try db.execute(sql: "DELETE FROM rejected_changes WHERE peer = ?", arguments: [.text(peer)])
    }
}

/// A position in a sync server's log: the client holds every change the
/// server committed up to `seq` (of the documents it may read). `logID`
/// names the log, so that a cursor into a replaced server's log is noticed.
public struct SyncCursor: Hashable, Sendable {
    public var logID: UInt64
    public var seq: UInt64

    public init(logID: UInt64, seq: UInt64) {
        self.logID = logID
        self.seq = seq
    }
}

/// A local change a sync server refused with a permanent error.
public struct RejectedChange: Hashable, Sendable {
    /// The server (or peer) that refused it, as `quire sync` names it.
    public var peer: String
    public var document: String
    /// The id of its first operation.
    public var id: OpID
    public var lastCounter: UInt64
    /// The HTTP status of the refusal (400, 403, 409).
    public var status: Int
    /// What the server said.
    public var reason: String
    /// Milliseconds since 1970.
    public var rejectedAt: Int64
}
