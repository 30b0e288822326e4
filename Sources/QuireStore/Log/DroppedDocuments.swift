/// The `dropped_documents` table (schema version 10): each document whose
/// copy `DocumentStore.discardCopy` dropped (`quire sync --take-theirs`),
/// under the `seq` of its latest drop. A drop deletes every row of the
/// document and logs nothing, so this is how another store on the file
/// (another process) learns of it (`Specs/storage.md`, "Outside commits").
/// A document has at most one row; a drop of it again replaces the row
/// under a new `seq` (AUTOINCREMENT, never reused), so the table stays as
/// small as the documents ever dropped and a look reads only the rows past
/// its place.
///
/// Every drop also moves the sync cursors back (`SyncState.rewindCursors`)
/// in its transaction (once for the documents one transaction drops), so
/// the highest `seq` ever given moves with every rewind: a sync that read
/// it with the stored cursor its pages went on from and finds it changed
/// when it stores the cursor they reached does not store it
/// (`DocumentStore.syncCursorAndRewinds(peer:)`, `Specs/sync.md`, "Commands").
public enum DroppedDocuments {
    /// Records that `document`'s copy is dropped, inside the transaction
    /// that drops it, and returns the row's `seq`.
    public static func record(_ document: String, _ db: DatabaseConnection) throws -> Int64 {
        try db.execute(sql: "INSERT OR REPLACE INTO dropped_documents(document_id) VALUES (?)", arguments: [.text(document)])
        return db.lastInsertedRowID
    }

    /// The highest `seq` ever given, 0 before the first drop: how many
    /// documents the file has seen dropped.
    public static func highestSeq(_ db: DatabaseConnection) throws -> Int64 {
        try db.highestAutoincrementedID(of: "dropped_documents")
    }

    /// The documents last dropped under a `seq` in `range`, in the order
    /// of those drops.
    public static func documents(droppedIn range: ClosedRange<Int64>, _ db: DatabaseConnection) throws -> [String] {
        try db.query(sql: "SELECT document_id FROM dropped_documents WHERE seq BETWEEN ? AND ? ORDER BY seq",
                     arguments: [.integer(range.lowerBound), .integer(range.upperBound)]).map { try $0.text(0) }
    }
}
