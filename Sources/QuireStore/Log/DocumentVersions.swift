import QuireCore

/// The `document_versions` table: each document's version vector, the
/// highest counter of each replica whose changes are logged, written in the
/// transaction that logs them. A sync states every document's version from
/// here without loading any document; compaction, which deletes log rows,
/// leaves it alone.
public enum DocumentVersions {
    /// Raises `document`'s entries for `replicas` to what `version` holds;
    /// entries never go down.
    public static func raise(document: String, replicas: some Sequence<ReplicaID>, to version: VersionVector,
                             _ db: DatabaseConnection) throws {
        for replica in replicas {
            try db.execute(
                sql: """
                    INSERT INTO document_versions(document_id, replica, counter) VALUES (?, ?, ?)
                    ON CONFLICT(document_id, replica) DO UPDATE SET counter = max(counter, excluded.counter)
                    """,
                arguments: [.text(document), .replica(replica), .unsigned(version[replica])])
        }
    }

    /// The version vector of every document that has logged changes.
    public static func all(_ db: DatabaseConnection) throws -> [(document: String, version: VersionVector)] {
        try grouped(db.query(sql: "SELECT document_id, replica, counter FROM document_versions ORDER BY document_id"))
    }

    /// The version vector of one document (empty if it has no logged change).
    public static func version(document: String, _ db: DatabaseConnection) throws -> VersionVector {
        try grouped(db.query(sql: "SELECT document_id, replica, counter FROM document_versions WHERE document_id = ?",
                             arguments: [.text(document)])).first?.version ?? VersionVector()
    }

    /// Version vectors from rows `(document_id, replica, counter)` that come
    /// a document at a time. Not a dictionary keyed by the id: that would
    /// merge two documents whose ids differ only in Unicode normalization.
    static func grouped(_ rows: [Row]) throws -> [(document: String, version: VersionVector)] {
        var versions: [(document: String, version: VersionVector)] = []
        for row in rows {
            let document = try row.text(0)
            if versions.last?.document.hasSameBytes(as: document) != true { versions.append((document, VersionVector())) }
            versions[versions.count - 1].version[try row.replica(1)] = try row.unsigned(2)
        }
        return versions
    }

    /// Fills the table of a file from before it (schema version 4): from the
    /// log, and for a compacted document also from its newest snapshot that
    /// decodes, which holds what compaction deleted. A compacted document
    /// without one cannot be loaded anyway and keeps what its log says.
    static func fill(_ db: DatabaseConnection) throws {
        try db.execute(sql: """
            INSERT INTO document_versions(document_id, replica, counter)
            SELECT document_id, replica, max(last_counter) FROM changes GROUP BY document_id, replica
            """)
        for row in try db.query(sql: "SELECT id, log_start_seq FROM documents WHERE log_start_seq > 0") {
            let document = try row.text(0)
            for stored in try SnapshotStore.newestFirst(document: document, db) where stored.coversSeq >= (try row.int64(1)) {
                // Only the version vector is read: any replica id will do.
                guard let version = try? SnapshotStore.decode(stored, replica: ReplicaID(0)).versionVector else { continue }
                try raise(document: document, replicas: version.replicas, to: version, db)
                break
            }
        }
    }
}
