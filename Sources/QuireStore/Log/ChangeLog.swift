import QuireCore

/// The op log: every change of every document, in the order this store
/// applied them (the `seq` column). A row holds a run: one change, or
/// several consecutive changes of one replica (each the next counter of the
/// one before), as one `QCHG` bundle. A catch-up of thousands of changes is
/// so a few rows, stored as the bytes that arrived, not a row per change.
/// A row of at least `StoredBundle.compressionThreshold` bytes holds its
/// bundle as a zstd frame when that is smaller (`StoredBundle`).
///
/// All functions run on a connection inside the caller's transaction, so a
/// change and whatever goes with it commit together.
///
///     try db.write { db in
///         try ChangeLog.append([change], document: "note-1", isLocal: true, db)
///     }
///     let all = try db.read { db in try ChangeLog.changes(document: "note-1", after: 0, db).changes }
public enum ChangeLog {
    /// The most changes one row holds: a row is read whole, so a bound keeps
    /// a peer that lacks only the end of a run from decoding all of it.
    public static let maxRunLength = 16_384

    /// Appends changes to a document's log, in order, a row per run.
    ///
    /// `isLocal` marks changes this store made (under any of its replica
    /// ids): they are what the outbox offers to peers.
    public static func append(_ changes: [Change], document: String, isLocal: Bool, _ db: DatabaseConnection) throws {
        for run in runs(of: changes) {
            try append(run: RunBounds(run)!, encodedAs: ChangeEncoding.encode(run), document: document, isLocal: isLocal, db)
        }
    }

    /// Appends one run that `fitsOneRow` as one row holding `bundle`, which
    /// must be the run's encoding: bytes received as a bundle are stored as
    /// they came (compressed, if large: `StoredBundle`), without decoding or
    /// encoding them again.
    public static func append(run: RunBounds, encodedAs bundle: [UInt8], document: String, isLocal: Bool,
                              _ db: DatabaseConnection) throws {
        let first = run.first
        try db.execute(
            sql: """
                INSERT INTO changes(document, replica, first_counter, last_counter, first_lamport, last_lamport,
                                    time, is_local, data)
                VALUES (\(number(ofDocument: 1)), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                """,
            arguments: [
                .text(document), .replica(first.replica), .unsigned(first.id.counter), .unsigned(run.lastID.counter),
                .unsigned(first.lamport), .unsigned(run.lastLamport), .integer(run.lastTime), .integer(isLocal ? 1 : 0),
                .blob(StoredBundle.stored(bundle)),
            ])
    }

    /// Splits changes, in order, into runs of at most `maxRunLength`
    /// consecutive changes of one replica.
    public static func runs(of changes: [Change]) -> [ArraySlice<Change>] {
        var runs: [ArraySlice<Change>] = []
        var start = changes.startIndex
        for index in changes.indices.dropFirst() {
            let previous = changes[index - 1]
            if index - start == maxRunLength || changes[index].replica != previous.replica
                || changes[index].id.counter != previous.lastID.counter + 1 {
                runs.append(changes[start..<index])
                start = index
            }
        }
        if start < changes.endIndex { runs.append(changes[start...]) }
        return runs
    }

    /// Whether a run is short enough for one row (`maxRunLength`).
    public static func fitsOneRow(_ run: RunBounds) -> Bool {
        run.count <= maxRunLength
    }

    /// A document's changes with `seq` above `seq` (and at most `last`),
    /// in log order, and the `seq` of the last row read (nil if none).
    public static func changes(document: String, after seq: Int64, through last: Int64 = .max,
                               _ db: DatabaseConnection) throws -> (changes: [Change], lastSeq: Int64?) {
        let rows = try db.query(
            sql: "SELECT seq, \(dataBytes) FROM changes WHERE document = \(number(ofDocument: 1)) AND seq > ?2 AND seq <= ?3 ORDER BY seq",
            arguments: [.text(document), .integer(seq), .integer(last)])
        return (try rows.flatMap { row in try decode(row, document: document) }, try rows.last?.int64(0))
    }

    /// How many changes a document's log holds, read from each row's
    /// bundle header (`ChangeEncoding.changeCount`) without decoding the
    /// changes. A row's counters do not tell: they span its changes'
    /// operations, and a change has one or more.
    public static func changeCount(document: String, _ db: DatabaseConnection) throws -> Int {
        let rows = try db.query(sql: "SELECT seq, \(dataBytes) FROM changes WHERE document = \(number(ofDocument: 1))",
                                arguments: [.text(document)])
        return try rows.reduce(0) { count, row in
            try count + readBundle(ofRow: row, document: document) { try ChangeEncoding.changeCount(of: $0, limits: .unlimited) }
        }
    }

    /// The highest `seq` any row of the log was ever given (SQLite's
    /// AUTOINCREMENT record), 0 before the first: unlike `max(seq)`, it never
    /// goes down when compaction deletes the newest rows, so a row above it
    /// is one written after it was read.
    public static func highestSeq(_ db: DatabaseConnection) throws -> Int64 {
        try db.highestAutoincrementedID(of: "changes")
    }

    /// The rows with `seq` in `range`, in log order, each with its document
    /// and its changes, or why they do not decode (a damaged row is no
    /// reason to hide the others).
    public static func rows(in range: ClosedRange<Int64>, _ db: DatabaseConnection)
        throws -> [(seq: Int64, document: String, changes: Result<[Change], any Error>)] {
        let rows = try db.query(
            sql: """
                SELECT c.seq, \(dataBytes), d.id FROM changes c JOIN documents d ON d.number = c.document
                WHERE c.seq BETWEEN ? AND ? ORDER BY c.seq
                """,
            arguments: [.integer(range.lowerBound), .integer(range.upperBound)])
        return try rows.map { row in
            let document = try row.text(2)
            let changes = Result { try decode(row, document: document) }
            return (try row.int64(0), document, changes)
        }
    }

    /// A document's logged changes that `version` lacks, in log order, at
    /// most `limit` of them.
    public static func changes(document: String, since version: VersionVector, limit: Int = .max,
                               _ db: DatabaseConnection) throws -> [Change] {
        // Filtering in SQL: a peer that is nearly up to date costs a scan of
        // the index, not a read and decode of the whole log. Each row has at
        // least one wanted change, so `limit` rows are enough.
        let replicas = version.replicas
        let known = replicas.isEmpty ? "0" : "CASE replica " + String(repeating: "WHEN ? THEN ? ", count: replicas.count) + "ELSE 0 END"
        let rows = try db.query(
            sql: """
                SELECT seq, \(dataBytes) FROM changes WHERE document = \(number(ofDocument: 1)) AND last_counter > \(known)
                ORDER BY seq LIMIT ?
                """,
            arguments: [.text(document)] + replicas.flatMap { [.replica($0), .unsigned(version[$0])] } + [.integer(Int64(limit))])
        var changes: [Change] = []
        for row in rows {
            changes += try decode(row, document: document).filter { !version.contains($0.lastID) }.prefix(limit - changes.count)
        }
        return changes
    }

    /// The first of `changes` that clashes with a logged change: same
    /// replica and overlapping counters, but not the same change. Such a
    /// change means a replica id was used twice. A change whose counters
    /// compaction removed from the log cannot be checked and passes.
    public static func firstConflict(among changes: some Sequence<Change>, document: String, _ db: DatabaseConnection) throws -> Change? {
        for change in changes {
            let rows = try db.query(
                sql: """
                    SELECT seq, \(dataBytes) FROM changes
                    WHERE document = \(number(ofDocument: 1)) AND replica = ?2 AND first_counter <= ?3 AND last_counter >= ?4
                    """,
                arguments: [.text(document), .replica(change.replica), .unsigned(change.lastID.counter), .unsigned(change.id.counter)])
            for row in rows {
                let overlapping = try decode(row, document: document)
                    .filter { $0.id.counter <= change.lastID.counter && $0.lastID.counter >= change.id.counter }
                if overlapping.contains(where: { $0 != change }) { return change }
            }
        }
        return nil
    }

    /// The informational time of a document's newest change, nil if its
    /// log holds none. The newest is the one whose last operation has the
    /// greatest Lamport stamp, a function of the changes alone, so stores holding the same
    /// changes agree whatever the wall clocks did; the greatest time is
    /// not, as a row holds only its last change's time. That change is the
    /// last of whatever run holds it (a replica's Lamport values only grow).
    public static func newestChangeTime(document: String, _ db: DatabaseConnection) throws -> Int64? {
        let rows = try db.query(sql: "SELECT time FROM changes WHERE seq = (\(newestRow))", arguments: [.text(document)])
        return try rows.first?.int64(0)
    }

    /// The `seq` of the row holding the newest change of document `?1`: by
    /// last Lamport value, then replica id compared unsigned, as the core orders
    /// stamps (a replica id stored below 0 is above every one at or above 0).
    static let newestRow = """
        SELECT seq FROM changes WHERE document = \(number(ofDocument: 1))
        ORDER BY last_lamport DESC, replica < 0 DESC, replica DESC LIMIT 1
        """

    /// The local changes `peer` has not acknowledged, per document, in log
    /// order; with no peer named, those no peer has acknowledged.
    public static func outbox(peer: String?, _ db: DatabaseConnection) throws -> [(document: String, changes: [Change])] {
        let rows = try db.query(
            sql: """
                SELECT c.seq, \(dataBytes), d.id, coalesce(a.counter, 0) FROM changes c
                JOIN documents d ON d.number = c.document
                LEFT JOIN (\(PeerAcknowledgements.counters(peer: peer))) a
                    ON a.document_id = d.id AND a.replica = c.replica
                WHERE c.is_local = 1 AND c.last_counter > coalesce(a.counter, 0)
                ORDER BY c.document, c.seq
                """,
            arguments: peer.map { [.text($0)] } ?? [])
        var outbox: [(document: String, changes: [Change])] = []
        for row in rows {
            let document = try row.text(2)
            let acknowledged = try row.unsigned(3)
            let changes = try decode(row, document: document).filter { $0.lastID.counter > acknowledged }
            if outbox.last?.document.hasSameBytes(as: document) == true { outbox[outbox.count - 1].changes += changes }
            else { outbox.append((document, changes)) }
        }
        return outbox
    }

    /// Deletes the log rows of `document` up to `seq` that nothing needs any
    /// more: remote changes, and local changes every peer that syncs this
    /// document has acknowledged. Local changes stay while no peer has
    /// acknowledged anything of the document: they have never been sent.
    /// The row of the newest change stays too: it holds the time
    /// `newestChangeTime` reads.
    public static func deleteCompacted(document: String, through seq: Int64, _ db: DatabaseConnection) throws {
        try db.execute(
            sql: """
                DELETE FROM changes WHERE document = \(number(ofDocument: 1)) AND seq <= ?2 AND seq IS NOT (\(newestRow)) AND (
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

    /// The `changes.document` of the document whose id is bound to
    /// parameter `?index`: its `documents.number`, which the log holds
    /// instead of the id (a UUID is 36 bytes, in the row and every index).
    static func number(ofDocument index: Int) -> String {
        "(SELECT number FROM documents WHERE id = ?\(index))"
    }

    /// The `data` column as `decode` reads it: bytes, whatever type a hand
    /// edit left it in (`x || y` in `sqlite3` makes TEXT of two BLOBs), so
    /// that they meet the checks of any row: damaged, a `corruptChange`
    /// naming the row's `seq`, not a type mismatch failing the whole query.
    public static let dataBytes = "CAST(data AS BLOB)"

    /// The changes of a row (`seq`, `dataBytes` first). Without decoding
    /// limits: a local edit has none, and a remote change met the caller's when it
    /// was applied; a row the defaults refuse would leave its document
    /// unloadable and the outbox failing.
    private static func decode(_ row: Row, document: String) throws -> [Change] {
        try readBundle(ofRow: row, document: document) { bundle in
            let changes = try ChangeEncoding.decode(bundle, limits: .unlimited)
            guard !changes.isEmpty else { throw DecodingError.invalid("the row holds no change") }
            return changes
        }
    }

    /// What `read` makes of the bundle a log row holds (`row` selects the
    /// row's `seq` and data first), decompressed if stored as a frame
    /// (`StoredBundle`). A `DecodingError`, from the frame or from `read`,
    /// is `StoreError.corruptChange` naming `document` and the `seq`. The
    /// sync server reads its log's rows so too.
    public static func readBundle<T>(ofRow row: Row, document: String, _ read: ([UInt8]) throws -> T) throws -> T {
        do {
            return try read(StoredBundle.bundle(row.blob(1)))
        } catch let error as DecodingError {
            throw StoreError.corruptChange(document: document, seq: try row.int64(0), reason: error.description)
        }
    }
}
