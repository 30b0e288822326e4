import QuireCore

/// What each peer has acknowledged, per document: a version vector kept as
/// one row per replica. The outbox (`ChangeLog.outbox`) is the local changes
/// beyond it.
public enum PeerAcknowledgements {
    /// Records that `peer` holds `version` of `document`. Acknowledgements
    /// only grow: an older one arriving late changes nothing.
    public static func acknowledge(peer: String, document: String, version: VersionVector, _ db: DatabaseConnection) throws {
        for replica in version.replicas {
            try db.execute(
                sql: """
                    INSERT INTO peer_acknowledgements(peer, document_id, replica, counter) VALUES (?, ?, ?, ?)
                    ON CONFLICT(peer, document_id, replica) DO UPDATE SET counter = max(counter, excluded.counter)
                    """,
                arguments: [.text(peer), .text(document), .replica(replica), .unsigned(version[replica])])
        }
    }

    /// A query of `document_id, replica, counter`: what `peer` (bound as
    /// `?1`) acknowledged or, with no peer named, the highest counter any
    /// peer acknowledged. A local change is acknowledged by one peer as soon
    /// as by all the peers it reached, as a replica's changes apply in order.
    static func counters(peer: String?) -> String {
        peer == nil
            ? "SELECT document_id, replica, max(counter) AS counter FROM peer_acknowledgements GROUP BY document_id, replica"
            : "SELECT document_id, replica, counter FROM peer_acknowledgements WHERE peer = ?1"
    }

    /// The version vector `peer` has acknowledged for each document it
    /// acknowledged something of.
    public static func versions(peer: String, _ db: DatabaseConnection) throws -> [(document: String, version: VersionVector)] {
        try DocumentVersions.grouped(db.query(
            sql: "SELECT document_id, replica, counter FROM peer_acknowledgements WHERE peer = ? ORDER BY document_id",
            arguments: [.text(peer)]))
    }

    /// The version vector `peer` has acknowledged for `document`; with no
    /// peer named, the highest counter of each replica any peer acknowledged.
    public static func version(peer: String?, document: String, _ db: DatabaseConnection) throws -> VersionVector {
        let rows = try db.query(
            sql: "SELECT replica, counter FROM (\(counters(peer: peer))) WHERE document_id = ?\(peer == nil ? 1 : 2)",
            arguments: (peer.map { [.text($0)] } ?? []) + [.text(document)])
        var version = VersionVector()
        for row in rows { version[try row.replica(0)] = try row.unsigned(1) }
        return version
    }
}
