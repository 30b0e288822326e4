/// How much of a database file its free pages take: pages that deleted
/// rows left, which later writes reuse but which keep the file at its
/// largest size (the file is not in `auto_vacuum` mode). Package-only,
/// as the vacuum: a store vacuums itself, and `quire inspect` shows it.
package struct FreeSpace: Sendable, Equatable {
    /// The database's size, `page_count × page_size`: the file's once its
    /// `-wal` is checkpointed.
    package let fileBytes: Int64
    /// The free pages' bytes, `freelist_count × page_size`.
    package let freeBytes: Int64

    /// Read from the database `db` reads, as committed.
    package init(of db: DatabaseConnection) throws {
        let row = try db.query(sql: "SELECT p.page_count, f.freelist_count, s.page_size FROM pragma_page_count p, pragma_freelist_count f, pragma_page_size s")[0]
        let pageSize = try row.int64(2)
        fileBytes = try row.int64(0) * pageSize
        freeBytes = try row.int64(1) * pageSize
    }

    /// The share of the file that is free, 0 to 1.
    package var freeShare: Double { fileBytes == 0 ? 0 : Double(freeBytes) / Double(fileBytes) }

    /// Whether `Database.vacuumIfMostlyFree` vacuums a file like this: a
    /// quarter of it free, and at least 1 MiB (below that a user gains
    /// nothing worth a rewrite), while what is used is at most 32 MiB. A
    /// vacuum holds the write lock while it copies the used pages (5.6 MB
    /// in 0.3 s on a host at load 12), and another process's write fails
    /// with `SQLITE_BUSY` after waiting `Database.busyTimeout` (5 s)
    /// without a commit: a larger file gives its space back only through
    /// `backup`.
    package var isWorthVacuuming: Bool {
        freeShare >= 0.25 && freeBytes >= 1 << 20 && fileBytes - freeBytes <= 32 << 20
    }
}

extension Database {
    /// The file's size and free pages, as committed.
    package func freeSpace() throws -> FreeSpace {
        try read { db in try FreeSpace(of: db) }
    }

    /// Vacuums the file when its free pages are worth it
    /// (`FreeSpace.isWorthVacuuming`); true if it did. Cheap when not: it
    /// reads two numbers from the file's first page. Best effort, as
    /// `vacuum()`.
    @discardableResult
    package func vacuumIfMostlyFree() -> Bool {
        guard let space = try? freeSpace(), space.isWorthVacuuming else { return false }
        return (try? vacuum()) != nil
    }

    /// Writes the file again without its free pages (SQLite's `VACUUM`),
    /// then checkpoints, so that the file itself shrinks now unless another
    /// connection still reads an older state (the next checkpoint then does
    /// it).
    ///
    /// A vacuum needs free disk about twice what the file uses (the copy
    /// it makes in the temporary directory, then the `-wal`) and the write
    /// lock, which it waits for as any write does; one that fails (the
    /// `DatabaseError` thrown) or is killed leaves the file as it was. The
    /// store's own vacuums are best effort (`try?`): not an error for the
    /// operation that asked for them. Call it outside any transaction.
    package func vacuum() throws {
        try execute(sql: "VACUUM")
        // PASSIVE: waits for no reader; what they still read stays in the `-wal`.
        _ = try? query(sql: "PRAGMA wal_checkpoint(PASSIVE)")
    }
}
