import Foundation
import Quire

/// What every command runs with: the store path, the environment, and
/// where output goes.
struct Context {
    /// The store file the command works on.
    let storePath: String
    let environment: [String: String]
    let output = Output()

    static let storeOption = Option(
        name: "--store", values: ["PATH"],
        help: "The store file (default: $QUIRE_STORE, else $XDG_DATA_HOME/quire/notes.quire, else ~/.local/share/quire/notes.quire).")

    /// `$QUIRE_STORE`, else `$XDG_DATA_HOME/quire/notes.quire`, else
    /// `~/.local/share/quire/notes.quire` (the XDG default data directory).
    static func defaultStorePath(environment: [String: String]) -> String {
        if let path = environment["QUIRE_STORE"], !path.isEmpty { return path }
        if let data = environment["XDG_DATA_HOME"], !data.isEmpty { return data + "/quire/notes.quire" }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + "/.local/share/quire/notes.quire"
    }

    /// Opens the existing store for reading and writing.
    func openStore() throws -> DocumentStore {
        try Self.open(storePath, readOnly: false, missingAdvice: "run `quire init` to create it, or pass --store PATH")
    }

    /// Opens a store file; a missing or unreadable file is a failure that
    /// says what to do.
    static func open(_ path: String, readOnly: Bool, missingAdvice: String) throws -> DocumentStore {
        guard !isMissingOrEmpty(path) else {
            throw CLIError.failure("no store at \(path): \(missingAdvice)")
        }
        try refuseDirectory(path)
        // SQLite would call it a damaged database; another program's SQLite
        // database is refused by DocumentStore (StoreError.notAStore).
        if let kind = notADatabase(path) {
            throw CLIError.failure("\(path) is \(kind); give the path of a store file")
        }
        do {
            return try DocumentStore(path: path, readOnly: readOnly)
        } catch let error as DatabaseError {
            throw CLIError.failure(storeFailureMessage(error, path: path))
        } catch let error as StoreError {
            // Another program's file names itself and what to give instead.
            if case .notAStore = error { throw CLIError.failure(error.description) }
            // Only read (merge's other store): said as a user upgrading meets it.
            if case let .unsupportedSchema(found, expected) = error, found < expected, found > 0 {
                throw CLIError.failure("cannot read the store \(path): an older version of Quire wrote it (store schema \(found); this one reads \(expected)), "
                    + "and it is only read here, which cannot upgrade it: open it once with this version "
                    + "(`\(ShellWords.command("quire", "--store", path, "status"))`), which upgrades it for good (older versions of Quire cannot open it then), and try again")
            }
            // A schema this program does not read: the file is sound, and
            // the error says what it needs, which `inspect` cannot add to.
            throw CLIError.failure("cannot open the store \(path): \(error)")
        } catch {
            throw CLIError.failure("cannot open the store \(path): \(error); `\(ShellWords.command("quire", "inspect", path))` reports what is wrong with the file")
        }
    }

    /// What to do about a note the store at `path` holds damaged
    /// (`StoreError.damagedDocument`), which the other notes are not:
    /// `Specs/storage.md`, "Damaged stores".
    static func damagedNoteAdvice(path: String) -> String {
        "`\(ShellWords.command("quire", "inspect", path))` reports the damage; a backup or a peer's store holding the note whole can give it back: "
            + "`quire --store NEW init`, `quire --store NEW merge BACKUP`, then `\(ShellWords.command("quire", "--store", "NEW", "merge", path))` (its other notes), and use NEW"
    }

    /// SQLite's failure on the store file at `path`, said so that whoever
    /// keeps the notes can act on it: the file, what is wrong and what to
    /// do, then SQLite's report on a line of its own.
    static func storeFailureMessage(_ error: DatabaseError, path: String) -> String {
        let plainly = switch error.fileProblem {
        case .damaged:
            "the store \(path) is damaged; `\(ShellWords.command("quire", "inspect", path))` reports what is wrong with the file"
        case .readOnly:
            "the store \(path) is read-only, nothing was saved; check that you may write to the file and to its directory, and that its disk is not mounted read-only"
        case .diskFull:
            "the disk of the store \(path) is full, nothing was saved; make room on it and try again"
        case .busy:
            "the store \(path) is busy: another process kept it locked for \(Database.busyTimeout / 1000) s, nothing was saved; try again once it is done"
        case nil:
            "cannot use the store \(path); try again, and if it fails again, `\(ShellWords.command("quire", "inspect", path))` reports whether the file is damaged"
        }
        return plainly + "\nSQLite's report: \(error)"
    }
}

extension Context {
    /// What the file at `path` is when it is no SQLite database at all
    /// (`notes.md` given as --store), for an error naming it, so that it is
    /// not called a damaged store; nil when it starts as one, or cannot be
    /// read (opening it says why).
    static func notADatabase(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        let header = try? handle.read(upToCount: 16)
        try? handle.close()
        guard header == Data("SQLite format 3\0".utf8) else {
            return "not a Quire store: it does not start as every SQLite database does (another kind of file, or a store whose first bytes are damaged: `\(ShellWords.command("quire", "inspect", path))` tells)"
        }
        return nil
    }

    /// Where `bytes`, which are not UTF-8, first break its rules, as a
    /// person finds the spot in an editor: "byte N (0xXX) on line L", N
    /// counting from 1. A file that is UTF-8 but for one character (an "é"
    /// typed in a Latin-1 terminal) is then mended in a moment.
    static func firstNonUTF8Byte(in bytes: Data) -> String {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var (offset, line) = (0, 1)
        while case .valid(let scalar) = parser.parseScalar(from: &iterator) {
            if scalar.elementsEqual([0x0A]) { line += 1 }
            offset += scalar.count
        }
        let byte = bytes[bytes.startIndex + offset]
        return "byte \(offset + 1) (0x\(String(byte, radix: 16, uppercase: true))) on line \(line)"
    }

    /// The bytes of the file at `path`. Read through a descriptor, so that
    /// a pipe or a device reads too (`/dev/stdin`, a shell's `<(command)`,
    /// `/dev/null`), which `FileManager.contents(atPath:)` does not.
    /// Throws `cannot read NAME: WHY` (NAME: `path`, or what the caller
    /// calls it, "the tokens file PATH"), WHY as the system says it: no
    /// such file, permission denied, a folder.
    static func contents(of path: String, called name: String? = nil) throws -> Data {
        func failure(_ why: String) -> CLIError { CLIError.failure("cannot read \(name ?? path): \(why)") }
        let descriptor = Foundation.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure(String(cString: strerror(errno)).lowercased()) }
        let file = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        // A folder opens; only its read fails, with nothing worth saying.
        var info = stat()
        if fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { throw failure("it is a folder, not a file") }
        do { return try file.readToEnd() ?? Data() } catch { throw failure("\(error)") }
    }

    /// Whether there is no file at `path`, an empty one, or a SQLite
    /// database holding nothing: SQLite would quietly make a store of it,
    /// but it holds none (made by `: > FILE`, or by a program stopped
    /// before writing; a `quire init` killed after SQLite wrote the header
    /// of a WAL file, before the store's tables were committed, leaves a
    /// database without a table), so it is no store either. A symbolic
    /// link is the file it names.
    static func isMissingOrEmpty(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return true }
        guard info.st_mode & S_IFMT == S_IFREG else { return false }
        // A database holding nothing is its header page: at most 64 KiB.
        return info.st_size == 0 || (info.st_size <= 65_536 && Database.peek(atPath: path, StoreSchema.holdsNothing) == true)
    }

    /// A failure when `path` is a directory, which SQLite and Foundation
    /// report as a missing or unreadable file.
    static func refuseDirectory(_ path: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw CLIError.failure("\(path) is a directory; give the path of a file in it, such as \((path as NSString).appendingPathComponent("notes.quire"))")
        }
    }
}

extension Context {
    /// The peer whose acknowledgements say what is pending (`status`) and
    /// acknowledged (`log`): the URL of the server `quire sync` last synced
    /// with. Nil when the store has synced with no server: then a local
    /// change is pending until any peer acknowledges it (a store synced with
    /// `quire sync --via`, or served by `quire serve --stdio`), as it has then
    /// left this machine; before any sync, every local change is pending.
    var serverPeer: String? {
        let database = try? Database(path: storePath, readOnly: true)
        defer { database?.close() }
        let peer = try? database?.read { db in try SyncState.mostRecentPeer(prefix: "http", db) }
        return peer ?? nil
    }

    /// Whose acknowledgements `status` counts pending changes against, as
    /// its text names them: the server `serverPeer` names, else any peer's.
    static func pendingCountedAgainst(_ serverPeer: String?) -> String {
        serverPeer.map { "the server \($0)" } ?? "any peer"
    }
}

extension Context {
    /// The version of a document `peer` has acknowledged, read from the
    /// store's `peer_acknowledgements` table (Specs/storage.md).
    func acknowledgedVersion(peer: String?, id: DocumentID) throws -> VersionVector {
        let database = try Database(path: storePath, readOnly: true)
        defer { database.close() }
        return try database.read { db in try PeerAcknowledgements.version(peer: peer, document: id.rawValue, db) }
    }
}

extension DocumentStore {
    /// How many local changes `peer` (nil: any peer) has not acknowledged. Counting them
    /// decodes them, so a damaged one leaves the count unknown (the error),
    /// not the rest of a command's report.
    func pendingCount(peer: String?) -> Result<Int, any Error> {
        Result { try outbox(peer: peer).values.reduce(0) { $0 + $1.count } }
    }
}
