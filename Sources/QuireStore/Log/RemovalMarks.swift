/// The `removal_marks` table (schema version 7): each document's latest
/// removal or restore, so that a store can find those another store or
/// process made, which log no change (`Specs/storage.md`, "Outside
/// commits"). A document has at most one row; each change of its mark
/// replaces it with one under a new `seq` (AUTOINCREMENT, never reused),
/// so the table stays as small as the documents ever removed and a look
/// reads only the rows past its place.
public enum RemovalMarks {
    /// Records that `document`'s removed mark changed, inside the
    /// transaction that changes it, and returns the row's `seq`.
    public static func record(document: String, _ db: DatabaseConnection) throws -> Int64 {
        try db.execute(sql: "INSERT OR REPLACE INTO removal_marks(document) SELECT number FROM documents WHERE id = ?",
                       arguments: [.text(document)])
        return db.lastInsertedRowID
    }

    /// The highest `seq` ever given, 0 before the first.
    public static func highestSeq(_ db: DatabaseConnection) throws -> Int64 {
        try db.highestAutoincrementedID(of: "removal_marks")
    }

    /// The documents whose mark last changed under a `seq` in `range`, in
    /// the order of those changes.
    public static func documents(markedIn range: ClosedRange<Int64>, _ db: DatabaseConnection) throws -> [String] {
        try db.query(sql: """
            SELECT d.id FROM removal_marks r JOIN documents d ON d.number = r.document
            WHERE r.seq BETWEEN ? AND ? ORDER BY r.seq
            """, arguments: [.integer(range.lowerBound), .integer(range.upperBound)]).map { try $0.text(0) }
    }
}
