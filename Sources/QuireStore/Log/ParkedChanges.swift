import QuireCore

/// Remote changes that arrived before the changes they depend on.
///
/// `Document` keeps them in memory until they are ready; the store keeps
/// them here too, so that a restart never drops one. A parked change leaves
/// this table in the transaction that logs it as applied.
public enum ParkedChanges {
    /// Records changes as waiting; a change already parked is kept once.
    public static func park(_ changes: some Sequence<Change>, document: String, _ db: DatabaseConnection) throws {
        for change in changes {
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO parked_changes(document_id, replica, first_counter, last_counter, data)
                    VALUES (?, ?, ?, ?, ?)
                    """,
                arguments: [.text(document), .replica(change.replica), .unsigned(change.id.counter),
                            .unsigned(change.lastID.counter), .blob(StoredBundle.stored(ChangeEncoding.encode([change])))])
        }
    }

    /// Forgets the parked changes `version` now covers (they were applied).
    public static func removeCovered(by version: VersionVector, document: String, _ db: DatabaseConnection) throws {
        for replica in version.replicas {
            try db.execute(
                sql: "DELETE FROM parked_changes WHERE document_id = ? AND replica = ? AND last_counter <= ?",
                arguments: [.text(document), .replica(replica), .unsigned(version[replica])])
        }
    }

    /// The SQL of `rowCount` for the document bound to `?1`, for a query
    /// that reads it with other columns: the counts a store compares
    /// (`DocumentStore.isCurrent`) must all be taken the same way.
    public static let rowCountExpression = "(SELECT count(*) FROM parked_changes WHERE document_id = ?1)"

    /// How many rows the document has in the table, decodable or not.
    public static func rowCount(document: String, _ db: DatabaseConnection) throws -> Int64 {
        try db.query(sql: "SELECT \(rowCountExpression)", arguments: [.text(document)])[0].int64(0)
    }

    /// Every parked change of a document, and a description of each row
    /// that no longer decodes, which is left out: a peer sends its change
    /// again, as it would any change the store lacks. Without decoding
    /// limits, as the log's rows (`ChangeLog`): each met the caller's
    /// limits when it was parked.
    public static func all(document: String, _ db: DatabaseConnection) throws -> (changes: [Change], damaged: [String]) {
        let rows = try db.query(sql: "SELECT replica, first_counter, CAST(data AS BLOB) FROM parked_changes WHERE document_id = ?",
                                arguments: [.text(document)])
        var changes: [Change] = [], damaged: [String] = []
        for row in rows {
            let id = OpID(replica: try row.replica(0), counter: try row.unsigned(1))
            do {
                guard let change = try ChangeEncoding.decode(StoredBundle.bundle(row.blob(2)), limits: .unlimited).first else {
                    throw DecodingError.invalid("the row holds no change")
                }
                changes.append(change)
            } catch {
                damaged.append("parked change \(id) is damaged (\(error))")
            }
        }
        return (changes, damaged)
    }
}
