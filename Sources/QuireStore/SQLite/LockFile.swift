import Foundation

/// An advisory lock (`flock`) on a file beside a database, `PATH-lock`.
/// SQLite's own locks last a transaction; this one lasts as long as its
/// holder wants: the document store's raced last try
/// (`DocumentStore.writerLock`), a sync server's whole run (`ServerLog`).
/// Closing it, when this object goes, lets the lock go.
public final class LockFile: @unchecked Sendable {
    // @unchecked: `descriptor` never changes; flock is safe from any thread.
    private let descriptor: Int32

    /// Opens (creating if needed) the lock file of the database at
    /// `databasePath`, beside the file a symbolic link names (where SQLite
    /// keeps its `-wal` and `-shm`), so that every path to one file shares
    /// one lock; nil if it cannot, and then its holder goes without.
    public init?(beside databasePath: String) {
        let descriptor = open(Database.file(namedBy: databasePath) + "-lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Takes the lock, shared or exclusive (replacing any this holds),
    /// trying for up to `timeout` seconds (0: once); false if it was not
    /// granted by then.
    public func lock(exclusive: Bool, within timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while flock(descriptor, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, Date() < deadline else { return false }
            usleep(1_000)
        }
        return true
    }

    public func unlock() { flock(descriptor, LOCK_UN) }
}
