import CSQLite
import Foundation

extension Database {
    /// Writes a copy of the database to a new file at `destination`: one
    /// snapshot of it, what was committed when the copy began, whatever
    /// other connections and processes commit meanwhile (SQLite's `VACUUM
    /// INTO`, which also leaves out free pages). A plain copy of the file
    /// while it is open misses the commits still in its `-wal`, and can
    /// catch a checkpoint halfway.
    ///
    /// The copy is made under a temporary name beside `destination`, given
    /// to `prepare` in a write transaction, synced to disk and only then
    /// renamed to `destination`: a copy stopped halfway (a full disk, a
    /// kill) never stands at `destination`, and a file replaced there stays
    /// whole until the rename. What a backup to the same destination killed
    /// on this machine left under such a name (its process gone) is deleted
    /// first. This connection is busy for the whole copy.
    ///
    /// - Parameter replacing: replace a file at `destination`; without it,
    ///   one there is `StoreError.backupDestinationExists`.
    /// - Throws: `StoreError.backupRefused` for a destination that is this
    ///   file, a folder, in a missing folder, a database that may be open
    ///   (a `-wal` beside it) or a file beside a `-journal` that is not
    ///   empty, or no file but a deleted database's `-wal` or such a
    ///   `-journal` beside it; a `DatabaseError` when SQLite or the
    ///   file system fails. Nothing is left at `destination` then.
    public func backup(to destination: String, replacing: Bool, prepare: (DatabaseConnection) throws -> Void) throws {
        // Absolute: SQLite would read a name beginning with "file:" as a URI.
        let target = URL(fileURLWithPath: destination).path
        try refuseBackup(to: target, named: destination, replacing: replacing)
        let partialPrefix = Self.partialPrefix(of: target)
        Self.removePartialsOfEndedBackups(named: partialPrefix)
        let temporary = partialPrefix + "\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try execute(sql: "VACUUM INTO ?", arguments: [.text(temporary)])
            let copy = try Database(path: temporary)
            try copy.write(prepare)
            // The last connection's close checkpoints the copy's `-wal` into
            // it and deletes the `-wal`: the file alone is the whole copy.
            copy.close()
            // SQLite does not sync what VACUUM INTO writes.
            try Self.sync(temporary)
            try refuseBackup(to: target, named: destination, replacing: replacing)
            guard rename(temporary, target) == 0 else { throw Self.fileSystemError("cannot rename \(temporary) to \(target)", file: target) }
            try Self.sync((target as NSString).deletingLastPathComponent)
        } catch {
            for suffix in ["", "-wal", "-shm"] { unlink(temporary + suffix) }
            throw error
        }
    }

    /// The start of the temporary names of backups to `target` made on this
    /// machine, which the process id follows: the host, so that a backup to
    /// a shared folder never takes another machine's for one that ended.
    private static func partialPrefix(of target: String) -> String {
        var host = [CChar](repeating: 0, count: 256)
        // Up to its NUL, if any: a name as long as the buffer has none.
        let name = gethostname(&host, host.count) == 0
            ? String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "localhost"
        return target + ".partial-\(name)-"
    }

    /// Deletes the temporary files (with their `-wal` and `-shm`) whose
    /// path starts with `prefix` (`partialPrefix(of:)`) and whose process no
    /// longer runs: a backup killed halfway leaves one as big as the store.
    /// A running backup's, or one whose process id a new process took, stays.
    private static func removePartialsOfEndedBackups(named prefix: String) {
        let folder = (prefix as NSString).deletingLastPathComponent
        let start = (prefix as NSString).lastPathComponent
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        for name in names where name.hasPrefix(start) {
            guard let process = pid_t(name.dropFirst(start.count).prefix { $0 != "-" }),
                  kill(process, 0) != 0, errno == ESRCH else { continue }
            unlink(folder + "/" + name)
        }
    }

    /// Throws unless a backup may be written at `target` (`destination` as
    /// the caller gave it, for the error).
    private func refuseBackup(to target: String, named destination: String, replacing: Bool) throws {
        let folder = (target as NSString).deletingLastPathComponent
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder) else {
            throw StoreError.backupRefused(path: destination, reason: "its folder \(folder) does not exist; make that folder first, or give a path in a folder that exists")
        }
        // A path mistyped after a file's name (`notes.quire/backup`).
        guard isFolder.boolValue else {
            throw StoreError.backupRefused(path: destination, reason: "\(folder) is a file, not a folder; give a path in a folder")
        }
        if let reason = Self.whyNoFileCanBeMade(in: folder) {
            throw StoreError.backupRefused(path: destination, reason: "\(reason); give a path in a folder you may write to, or make that folder writable")
        }
        var found = stat(), this = stat()
        guard stat(target, &found) == 0 else {
            // Renamed here, the copy would take a deleted database's `-wal`
            // or hot `-journal` for its own, which an empty file does not.
            // Beside `target` itself: the rename replaces a link there.
            let logFiles = [Self.walOfAnotherDatabase(beside: target), Self.journalWithContent(beside: target)].compactMap { $0 }
            guard logFiles.isEmpty else {
                throw StoreError.backupRefused(path: destination, reason: Self.refusal(besideLogFilesOfAnotherDatabase: logFiles))
            }
            return
        }
        if found.st_mode & S_IFMT == S_IFDIR {
            throw StoreError.backupRefused(path: destination, reason: "it is a folder; give the path of a file in it")
        }
        if stat(Self.file(namedBy: path), &this) == 0, this.st_dev == found.st_dev, this.st_ino == found.st_ino {
            throw StoreError.backupRefused(path: destination, reason: "it is the store itself; give the path of another file")
        }
        guard replacing else { throw StoreError.backupDestinationExists(destination) }
        // Replaced under a program that has it open, the file would take
        // that program's `-wal`, commits of another database, for its own.
        let file = Self.file(namedBy: target)
        if Self.walInUse(beside: file) != nil {
            throw StoreError.backupRefused(path: destination, reason: "a -wal file is beside it, so a program may have it open as a store; "
                + "close that program (closing checkpoints and deletes the -wal), or give another path")
        }
        // The same for the file's hot journal, which a killed `quire init`
        // leaves too: rolled back into the copy, it would empty it.
        if let journal = Self.journalWithContent(beside: file) {
            throw StoreError.backupRefused(path: destination, reason: "\(journal) is beside it, the unfinished transaction of a program that "
                + "is writing the file or was stopped while it did (a killed `quire init` leaves one): SQLite would roll it back into the copy. "
                + "Close any program that may have the file open; then delete the -journal, which belongs to the file replaced, or give another path")
        }
    }

    /// Syncs the file or folder at `path` to disk.
    private static func sync(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw fileSystemError("cannot open \(path) to sync it", file: path) }
        defer { Foundation.close(descriptor) }
        guard fsync(descriptor) == 0 else { throw fileSystemError("cannot sync \(path) to disk", file: path) }
    }

    /// The failure of a file system call that set `errno`, as SQLite's I/O errors are.
    private static func fileSystemError(_ what: String, file: String) -> DatabaseError {
        DatabaseError(extendedCode: SQLITE_IOERR, message: "\(what): \(String(cString: strerror(errno)))", file: file)
    }
}
