/// The `replaced_documents` table (schema version 9): documents whose copy
/// in this store was dropped to take another store's whole
/// (`DocumentStore.discardCopy`), each with the document that keeps the
/// dropped copy. A row outlives the sync that brings the other copy back,
/// which may not be the first after the drop; the next drop clears the
/// rows of documents back by then.
public enum ReplacedDocuments {
    /// Records that `document`'s copy was dropped and kept as `keptAs`,
    /// clearing the rows of documents the store lists again.
    public static func record(_ document: String, keptAs: String, _ db: DatabaseConnection) throws {
        try db.execute(sql: "DELETE FROM replaced_documents WHERE document_id IN (SELECT id FROM documents)")
        try db.execute(sql: "INSERT OR REPLACE INTO replaced_documents(document_id, kept_as) VALUES (?, ?)",
                       arguments: [.text(document), .text(keptAs)])
    }

    /// Every recorded document, with the one keeping its dropped copy.
    public static func all(_ db: DatabaseConnection) throws -> [(document: String, keptAs: String)] {
        try db.query(sql: "SELECT document_id, kept_as FROM replaced_documents").map { (document: try $0.text(0), keptAs: try $0.text(1)) }
    }
}
