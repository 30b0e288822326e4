import Foundation

/// An advisory lock (`flock`) on a file beside the store, `PATH-lock`,
/// that lets the last try of an edit raced by other processes run alone.
///
/// Correctness never rests on it: a commit checks inside its SQLite
/// transaction that no other process logged the document since it was
/// read (`DocumentStore.writeQueuedBatch`). The lock only guarantees
/// progress. Every batch commit takes it shared; a call whose first tries
/// were raced takes it exclusive for its last try, from reading the document
/// to its commit, so no other process commits in between. A lock that is
/// not granted within `timeout` is done without (a stopped process may hold it).
final class WriterLock: @unchecked Sendable {
    // @unchecked: `descriptor` never changes; flock is safe from any thread.
    private let descriptor: Int32

    static let timeout: TimeInterval = Double(Database.busyTimeout) / 1000

    /// Opens (creating if needed) the lock file of the store at `storePath`;
    /// nil if it cannot, and then the store goes without.
    init?(storePath: String) {
        let descriptor = open(storePath + "-lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Takes the lock, shared or exclusive (replacing any this store
    /// holds); false if it was not granted within `timeout`.
    func lock(exclusive: Bool) -> Bool {
        let deadline = Date().addingTimeInterval(Self.timeout)
        while flock(descriptor, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, Date() < deadline else { return false }
            usleep(1_000)
        }
        return true
    }

    func unlock() { flock(descriptor, LOCK_UN) }
}
