import QuireCore

/// The `snapshots` table: framed document states (`SnapshotFrame`), each
/// covering a document's log up to a `seq`.
///
/// Loading a document is "newest valid snapshot + the logged changes after
/// it": `load` tries the snapshots newest first and skips any that fails
/// its checks, reporting each one skipped, never using it.
public enum SnapshotStore {
    /// A stored snapshot, not yet checked.
    public struct Stored: Sendable {
        public let id: Int64
        /// Every change of the document with `seq <= coversSeq` is in it.
        public let coversSeq: Int64
        public let frame: [UInt8]
    }

    /// Frames and stores a snapshot of `document` covering its log up to
    /// `coversSeq`, and returns it as stored.
    @discardableResult
    public static func write(_ document: Document, id: String, coversSeq: Int64, now: Int64, _ db: DatabaseConnection) throws -> Stored {
        let frame = try SnapshotFrame.seal(document.encodeSnapshot(includeHistory: false),
                                           changeCount: UInt64(document.changeCount))
        try db.execute(
            sql: "INSERT INTO snapshots(document_id, covers_seq, created_at, frame) VALUES (?, ?, ?, ?)",
            arguments: [.text(id), .integer(coversSeq), .integer(now), .blob(frame)])
        return Stored(id: db.lastInsertedRowID, coversSeq: coversSeq, frame: frame)
    }

    /// The `frame` column as bytes, whatever type a hand edit left it in
    /// (`x || y` in `sqlite3` makes TEXT of two BLOBs): a frame of another
    /// type then fails its checks and is skipped as damaged, instead of
    /// failing the query and with it the document.
    public static let frameBytes = "CAST(frame AS BLOB)"

    /// A document's snapshots, newest first.
    public static func newestFirst(document: String, _ db: DatabaseConnection) throws -> [Stored] {
        try db.query(
            sql: "SELECT id, covers_seq, \(frameBytes) FROM snapshots WHERE document_id = ? ORDER BY id DESC",
            arguments: [.text(document)]
        ).map { row in Stored(id: try row.int64(0), coversSeq: try row.int64(1), frame: try row.blob(2)) }
    }

    /// Decodes a stored snapshot into a document editing as `replica`,
    /// the frame's CRC-32 standing for the encoding's own
    /// (`SnapshotFrame.document(in:replica:limits:)`). Without decoding
    /// limits (the frame's size is bounded): the document it holds may
    /// have runs longer than a peer may send in one operation.
    public static func decode(_ stored: Stored, replica: ReplicaID) throws -> Document {
        try SnapshotFrame.document(in: stored.frame, replica: replica, limits: .unlimited)
    }

    /// Deletes all but the `count` newest snapshots of a document and,
    /// given `andOldestCovering`, its oldest snapshot covering that `seq`:
    /// after compaction without history, the one replays of the versions
    /// since start from (`quire show --at`).
    public static func prune(document: String, keepingNewest count: Int, andOldestCovering seq: Int64? = nil,
                             _ db: DatabaseConnection) throws {
        try db.execute(
            sql: """
                DELETE FROM snapshots WHERE document_id = ?1 AND id NOT IN (
                    SELECT id FROM snapshots WHERE document_id = ?1 ORDER BY id DESC LIMIT ?2)
                AND id IS NOT (SELECT min(id) FROM snapshots WHERE document_id = ?1 AND ?3 IS NOT NULL AND covers_seq >= ?3)
                """,
            arguments: [.text(document), .integer(count), seq.map { .integer($0) } ?? .null])
    }
}
