import Foundation

/// The `-wal` and `-journal` files a deleted database leaves: SQLite takes
/// any beside a file for that file's own, whichever database wrote them
/// (`Specs/storage.md`, "SQLite file").
extension Database {
    /// The `-wal` beside `file`, when that file is missing or empty and
    /// the `-wal` is not `isLeftOver`; nil otherwise. SQLite
    /// never makes a `-wal` without its file, and writes a new file's
    /// header before its first frame: this one is a deleted database's, still
    /// open in a program or left by one that was killed (`rm notes.quire`
    /// leaves it). SQLite would replay its commits over the pages of a file
    /// put there whole (a backup), and deletes it without a word when it
    /// makes a new file there, under a program that may still write it.
    static func walOfAnotherDatabase(beside file: String) -> String? {
        var status = stat()
        guard stat(file, &status) != 0 || status.st_size == 0 else { return nil }
        return walInUse(beside: file)
    }

    /// The `-wal` beside `file`, unless there is none or it `isLeftOver`:
    /// one that may hold commits, or that a program holds open.
    static func walInUse(beside file: String) -> String? {
        let wal = file + "-wal"
        return FileManager.default.fileExists(atPath: wal) && !isLeftOver(wal: wal) ? wal : nil
    }

    /// The `-journal` beside `file` when it is not empty: SQLite rolls one
    /// whose header was synced back into whatever file stands beside it.
    /// One whose header is still zeroed (never synced) would be left alone,
    /// but counts too: at worst, a refusal.
    static func journalWithContent(beside file: String) -> String? {
        var status = stat()
        let journal = file + "-journal"
        return stat(journal, &status) == 0 && status.st_size > 0 ? journal : nil
    }

    /// Why no database is made beside `logFiles`, a deleted database's, and
    /// what to do.
    static func refusal(besideLogFilesOfAnotherDatabase logFiles: [String]) -> String {
        let one = logFiles.count == 1
        return "\(logFiles.joined(separator: " and ")) \(one ? "is" : "are") beside it, of a database file that is gone "
            + "(deleted while a program had it open, or its program was killed): SQLite would take \(one ? "it" : "them") "
            + "for the new file's own. Close any program that may still have the deleted file open; then move "
            + "\(one ? "it" : "them") away, to keep what \(one ? "it holds" : "they hold"), or delete \(one ? "it" : "them"), and try again"
    }

    /// Whether `wal` is what a read-only connection leaves on closing (only
    /// a writer's last close deletes it: `quire inspect`, `merge`'s other
    /// store): empty, and no process holding a lock on its database or its
    /// `-shm`, as every connection to a WAL database does while open (read
    /// from `/proc/locks`, as a lock taken here to test would, on closing,
    /// drop this process's own SQLite locks on the file). A lock on any file
    /// of the same inode number counts: at worst, a refusal. Where
    /// `/proc/locks` cannot be read, never.
    private static func isLeftOver(wal: String) -> Bool {
        var walStatus = stat()
        guard stat(wal, &walStatus) == 0, walStatus.st_size == 0,
              let locks = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return false }
        // Lines such as `1: POSIX  ADVISORY  READ 14473 fe:00:16335285 128 128`.
        let lockedInodes = Set(locks.split(separator: "\n").compactMap { line in
            line.split(separator: " ").first { $0.filter { $0 == ":" }.count == 2 }?.split(separator: ":").last.flatMap { UInt64($0) }
        })
        let database = String(wal.dropLast("-wal".count))
        return [database, database + "-shm"].allSatisfy { file in
            var status = stat()
            return stat(file, &status) != 0 || !lockedInodes.contains(UInt64(status.st_ino))
        }
    }
}
