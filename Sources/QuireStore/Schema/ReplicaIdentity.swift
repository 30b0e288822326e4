import Foundation
import QuireCore

/// The replica id a store writes under, and the rule that keeps two copies
/// of one store file from ever writing under the same id.
///
/// The id is made once, at random, and kept in the `replica` table together
/// with the *fingerprint* of the file it was made for: host name, device and
/// inode. Copying the file (to another path, another disk or another
/// machine) changes the fingerprint; the copy then mints a new id before it
/// writes anything. Renaming the file keeps its inode and so its id. A new
/// id is always safe, only a shared one is not, so a false alarm costs
/// nothing but a wider version vector. For that reason a store that drops
/// its own changes from a document also takes a new id (`renew`).
///
///     let replica = try db.write { db in try ReplicaIdentity.establish(db, fingerprint: ReplicaIdentity.fingerprint(ofFile: path)) }
public enum ReplicaIdentity {
    /// The fingerprint of the file at `path`: `host:device:inode`.
    public static func fingerprint(ofFile path: String) throws -> String {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        let device = (attributes[.systemNumber] as? NSNumber)?.uint64Value ?? 0
        let inode = (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
        return "\(ProcessInfo.processInfo.hostName):\(device):\(inode)"
    }

    /// The store's replica id, made now if the store has none or if
    /// `fingerprint` differs from the one recorded (a copied file).
    ///
    /// Run it inside a write transaction before any other write, so that a
    /// copy never appends a change under the original's id.
    public static func establish(_ db: DatabaseConnection, fingerprint: String, now: Int64) throws -> ReplicaID {
        if let replica = try recorded(db, for: fingerprint) { return replica }
        let replica = try mint(db, now: now)
        try db.execute(
            sql: """
                INSERT INTO replica(singleton, replica_id, file_fingerprint) VALUES (1, ?, ?)
                ON CONFLICT(singleton) DO UPDATE SET replica_id = excluded.replica_id, file_fingerprint = excluded.file_fingerprint
                """,
            arguments: [.replica(replica), .text(fingerprint)])
        return replica
    }

    /// Retires the store's replica id for a new one, kept for the same
    /// file: for a store that dropped changes it made under its id from a
    /// document (`DocumentStore.discardCopy`). Its next edit of that
    /// document would take the dropped changes' counters again (a
    /// replica's counters in a document run on without a gap), and so make
    /// a change under an id a peer may hold with other content. The
    /// retired id stays in `local_replicas`: changes under it are still
    /// the store's own.
    public static func renew(_ db: DatabaseConnection, now: Int64) throws -> ReplicaID {
        let replica = try mint(db, now: now)
        try db.execute(sql: "UPDATE replica SET replica_id = ? WHERE singleton = 1", arguments: [.replica(replica)])
        return replica
    }

    /// The store's replica id if it was made for the file with `fingerprint`;
    /// nil if the store has none yet or the file is a copy (`establish`
    /// then makes one).
    public static func recorded(_ db: DatabaseConnection, for fingerprint: String) throws -> ReplicaID? {
        guard let row = try db.query(sql: "SELECT replica_id, file_fingerprint FROM replica WHERE singleton = 1").first,
              try row.text(1) == fingerprint else { return nil }
        return try row.replica(0)
    }

    /// Makes the store take whatever file holds it for a copy: its next
    /// open for writing mints a new id. For a backup, which may be restored
    /// by copying it over the original file (`cp` keeps the original's
    /// inode, and so its fingerprint) while the original wrote on after it.
    public static func forgetFile(_ db: DatabaseConnection) throws {
        try db.execute(sql: "UPDATE replica SET file_fingerprint = '' WHERE singleton = 1")
    }

    /// The store's replica id as recorded, without checking the fingerprint;
    /// for read-only access, which never writes under it.
    public static func recorded(_ db: DatabaseConnection) throws -> ReplicaID? {
        try db.query(sql: "SELECT replica_id FROM replica WHERE singleton = 1").first?.replica(0)
    }

    /// Every id the store has written under: changes under them are its own.
    public static func all(_ db: DatabaseConnection) throws -> Set<ReplicaID> {
        Set(try db.query(sql: "SELECT replica_id FROM local_replicas").map { try $0.replica(0) })
    }

    /// A random id this store has never used, recorded in `local_replicas`.
    /// 0 is left out: it is what ids default to, so no real replica looks
    /// like an unset one.
    private static func mint(_ db: DatabaseConnection, now: Int64) throws -> ReplicaID {
        while true {
            let candidate = ReplicaID(UInt64.random(in: 1...UInt64.max))
            let used = try db.query(sql: "SELECT 1 FROM local_replicas WHERE replica_id = ?", arguments: [.replica(candidate)])
            guard used.isEmpty else { continue }
            try db.execute(sql: "INSERT INTO local_replicas(replica_id, created_at) VALUES (?, ?)",
                           arguments: [.replica(candidate), .integer(now)])
            return candidate
        }
    }
}
