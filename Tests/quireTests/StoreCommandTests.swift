import Foundation
import Quire
import Testing

/// `init`, `status`, `--help`, `--version` and the exit codes of the command line itself.
@Suite struct StoreCommandTests {
    @Test func initThenStatus() throws {
        try withRunner { quire in
            let created = try quire.ok(["init"])
            #expect(created.hasPrefix("Initialized an empty Quire store in \(quire.store) (replica "))
            let status = try #require(try quire.run(["status", "--json"]).json() as? [String: Any])
            #expect(status["documents"] as? Int == 0)
            #expect(status["pending"] as? Int == 0)
            #expect((status["replica"] as? String)?.count == 16)
            #expect(try quire.run(["init"]).status == 1)
        }
    }

    /// `backup DEST` writes a store that opens with every note and takes a
    /// new replica id; it never replaces a file unless told to.
    @Test func backupWritesANewStoreAndReplacesOnlyWithForce() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "Groceries"]).trimmingCharacters(in: .whitespacesAndNewlines)
            let backup = quire.directory + "/backup.quire"
            #expect(try quire.ok(["backup", backup]).hasPrefix("Backed up \(quire.store) to \(backup) ("))
            #expect(try quire.ok(["note", "show", id], store: backup).contains("Groceries"))
            let replica = { (store: String) in try #require(try quire.run(["status", "--json"], store: store).json() as? [String: Any])["replica"] as? String }
            #expect(try replica(backup) != replica(quire.store))

            let again = try quire.run(["backup", backup])
            #expect(again.status == 1)
            #expect(again.stderr == "error: cannot back up to \(backup): a file is there already; give a new path, or pass --force to replace it\n")
            try quire.ok(["backup", backup, "--force"])
            #expect(try quire.run(["backup"]).status == 64)
            #expect(try quire.run(["backup", quire.store, "--force"]).stderr.hasPrefix("error: cannot back up to \(quire.store): it is the store itself"))
        }
    }

    /// A store with a damaged page cannot be copied whole (SQLite's copy
    /// reads every page): `backup` failed with SQLite's error alone. It
    /// writes nothing, changes nothing of the store, and says how to save
    /// the notes still readable, which works.
    @Test func backupOfADamagedStoreSaysHowToSaveTheReadableNotes() throws {
        try withRunner { quire in
            try quire.storeWithADamagedPage()
            let before = try Data(contentsOf: URL(fileURLWithPath: quire.store))
            let copy = quire.directory + "/copy.quire"
            let result = try quire.run(["backup", copy])
            #expect(result.status == 1)
            #expect(result.stderr.contains("a page of it is damaged, so no whole copy can be made. `quire inspect \(quire.store)` names the notes "
                + "that cannot be read; `quire --store \(copy) init`, then `quire --store \(copy) merge \(quire.store)` copies every other note"),
                "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: copy))
            #expect(try Data(contentsOf: URL(fileURLWithPath: quire.store)) == before)
            try quire.ok(["init"], store: copy)
            #expect(try quire.run(["merge", quire.store], store: copy).status == 1)
            let saved = (try quire.run(["note", "list", "--json"], store: copy).json() as? [Any])?.count ?? 0
            #expect(saved > 0 && saved < 20)
        }
    }

    /// `rm gone.quire` under a program that holds it leaves its `-wal`,
    /// which that program writes on into: `backup` to that path, and `init`
    /// there, refuse, naming the file, and change nothing.
    @Test func backupAndInitRefuseTheWalOfADeletedStoreStillOpen() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let gone = quire.directory + "/gone.quire"
            let holder = try DocumentStore(path: gone)
            try holder.create(id: "gone")
            unlink(gone)
            let wal = try Data(contentsOf: URL(fileURLWithPath: gone + "-wal"))
            for refused in [try quire.run(["backup", gone]), try quire.run(["init"], store: gone)] {
                #expect(refused.status == 1)
                #expect(refused.stderr.contains("\(gone)-wal is beside it, of a database file that is gone"), "\(refused.stderr)")
            }
            #expect(!FileManager.default.fileExists(atPath: gone))
            #expect(try Data(contentsOf: URL(fileURLWithPath: gone + "-wal")) == wal)
            #expect(try holder.documents().map(\.id) == ["gone"])
        }
    }

    /// A `quire init` killed while committing leaves a hot `-journal`
    /// beside its file. `backup DEST --force` over that file said it was
    /// backed up, and the copy's first open rolled the journal back into
    /// it: an empty file where the notes were. Refused now, naming the
    /// `-journal`; deleted, as the refusal says, the backup is whole.
    @Test func backupForceRefusesAFileBesideAJournal() throws {
        try withRunner { quire in
            try quire.writeWhatAKilledInitLeaves(withHotJournal: true)
            let source = quire.directory + "/source.quire"
            try quire.ok(["init"], store: source)
            try quire.ok(["note", "new", "--title", "Kept"], store: source)
            let file = try Data(contentsOf: URL(fileURLWithPath: quire.store))
            let journal = try Data(contentsOf: URL(fileURLWithPath: quire.store + "-journal"))

            let refused = try quire.run(["backup", quire.store, "--force"], store: source)
            #expect(refused.status == 1)
            #expect(refused.stderr.hasPrefix("error: cannot back up to \(quire.store): \(quire.store)-journal is beside it"), "\(refused.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: quire.store)) == file)
            #expect(try Data(contentsOf: URL(fileURLWithPath: quire.store + "-journal")) == journal)

            unlink(quire.store + "-journal")
            try quire.ok(["backup", quire.store, "--force"], store: source)
            #expect(try quire.ok(["note", "list"]).contains("Kept"))
        }
    }

    @Test func initSaysWhyItCannotCreateTheStore() throws {
        try withRunner { quire in
            let file = quire.directory + "/file"
            try Data().write(to: URL(fileURLWithPath: file))
            let result = try quire.run(["init"], store: file + "/notes/notes.quire")
            #expect(result.status == 1)
            #expect(result.stderr == "error: cannot create the directory \(file)/notes for the store; check that every part of it is a directory you may write to\n")
        }
    }

    /// SQLite says only "unable to open database file (SQLite code 14)"
    /// when it may not make a file: `init` there named no folder, `backup`
    /// there named its temporary file and blamed the store. Both name the
    /// folder and what to do (`serve`'s own log, the folder), and make
    /// nothing there.
    @Test func initAndBackupInAFolderThatMayNotBeWrittenSaySo() throws {
        try withRunner { quire in
            let (shared, mine) = (quire.directory + "/shared", quire.directory + "/mine")
            try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o555])
            defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: shared) }
            try FileManager.default.createDirectory(atPath: mine, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o777])
            let launcher = QuireRunner.withoutRootsPermissions
            let refusedInit = try quire.run(["init"], store: shared + "/notes.quire", launcher: launcher)
            #expect(refusedInit.status == 1)
            #expect(refusedInit.stderr == "error: cannot create the store \(shared)/notes.quire: its folder \(shared) is not one you may write to "
                + "(Permission denied); pass --store with a path in a folder you may write to, or make that folder writable\n")

            #expect(try quire.run(["init"], store: mine + "/notes.quire", launcher: launcher).status == 0)
            let refusedBackup = try quire.run(["backup", shared + "/backup.quire"], store: mine + "/notes.quire", launcher: launcher)
            #expect(refusedBackup.status == 1)
            #expect(refusedBackup.stderr == "error: cannot back up to \(shared)/backup.quire: its folder \(shared) is not one you may write to "
                + "(Permission denied); give a path in a folder you may write to, or make that folder writable\n")
            // A server's log, made by SQLite itself, names the folder too.
            let refusedServe = try quire.run(["serve", "--listen", "127.0.0.1:0"], store: shared + "/server.quire", launcher: launcher)
            #expect(refusedServe.status == 1)
            #expect(refusedServe.stderr.contains("cannot open the server store \(shared)/server.quire: the database file cannot be opened: "
                + "its folder \(shared) is not one you may write to (Permission denied)"), "\(refusedServe.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: shared).isEmpty)
        }
    }

    /// A backup into a folder that is not there (a USB stick not mounted)
    /// names the folder and says what to do, and makes nothing.
    @Test func backupIntoAMissingFolderSaysWhatToDo() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let stick = quire.directory + "/usb"
            let result = try quire.run(["backup", stick + "/notes.quire"])
            #expect(result.status == 1)
            #expect(result.stderr == "error: cannot back up to \(stick)/notes.quire: its folder \(stick) does not exist; "
                + "make that folder first, or give a path in a folder that exists\n")
            #expect(!FileManager.default.fileExists(atPath: stick))
        }
    }

    @Test func backupUnderAFileSaysItIsAFile() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let file = quire.directory + "/notes.txt"
            try #require(FileManager.default.createFile(atPath: file, contents: Data("kept".utf8)))
            let result = try quire.run(["backup", file + "/notes.quire"])
            #expect(result.status == 1)
            #expect(result.stderr == "error: cannot back up to \(file)/notes.quire: \(file) is a file, not a folder; give a path in a folder\n")
            #expect(try String(contentsOfFile: file, encoding: .utf8) == "kept")
        }
    }

    @Test func missingStoreSaysToRunInit() throws {
        try withRunner { quire in
            let result = try quire.run(["status"])
            #expect(result.status == 1)
            #expect(result.stderr == "error: no store at \(quire.store): run `quire init` to create it, or pass --store PATH\n")
        }
    }

    /// An empty file holds no store: every command but init says so, as for
    /// a missing one, and leaves it empty; init makes a store of it.
    @Test func anEmptyFileIsNoStoreButInitMakesOne() throws {
        try withRunner { quire in
            try #require(FileManager.default.createFile(atPath: quire.store, contents: Data()))
            for arguments in [["status"], ["note", "list"], ["note", "new", "--title", "T"], ["sync", "http://127.0.0.1:1"]] {
                let result = try quire.run(arguments)
                #expect(result.status == 1, "quire \(arguments) exited \(result.status)")
                #expect(result.stderr == "error: no store at \(quire.store): run `quire init` to create it, or pass --store PATH\n", "quire \(arguments)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: quire.directory) == ["notes.quire"])
            #expect(try Data(contentsOf: URL(fileURLWithPath: quire.store)).isEmpty)
            #expect(try quire.ok(["init"]).hasPrefix("Initialized an empty Quire store in \(quire.store)"))
            #expect(try quire.run(["status", "--json"]).json() is [String: Any])
        }
    }

    /// `quire init` killed after SQLite wrote the file's header (switching
    /// it to WAL) but before the store's tables were committed leaves a
    /// database holding nothing; killed while committing that switch, a
    /// header and a hot journal whose rollback empties the file (the bytes
    /// are those of such a kill). Running init again made no store of
    /// either: it said that a store already existed there, while it held none.
    @Test(arguments: [false, true]) func aDatabaseAKilledInitLeftIsNoStoreAndInitMakesOne(withHotJournal: Bool) throws {
        try withRunner { quire in
            try quire.writeWhatAKilledInitLeaves(withHotJournal: withHotJournal)
            try #require(try Data(contentsOf: URL(fileURLWithPath: quire.store)).starts(with: Data("SQLite format 3\0".utf8)))
            let listed = try quire.run(["note", "list"])
            #expect(listed.status == 1)
            #expect(listed.stderr == "error: no store at \(quire.store): run `quire init` to create it, or pass --store PATH\n")
            #expect(try quire.ok(["init"]).hasPrefix("Initialized an empty Quire store in \(quire.store)"))
            try quire.ok(["note", "new", "--title", "T"])
            #expect(try quire.ok(["note", "list"]).contains("T"))
        }
    }

    @Test func anotherProgramsDatabaseIsRefusedAndLeftAsItWas() throws {
        try withRunner { quire in
            let path = quire.directory + "/other.sqlite"
            let database = try Database(path: path)
            try database.write { db in try db.execute(sql: "CREATE TABLE bookmarks(url TEXT)") }
            database.close()
            let before = try Data(contentsOf: URL(fileURLWithPath: path))

            let refused = try quire.run(["status"], store: path)
            #expect(refused.status == 1)
            #expect(refused.stderr == "error: \(path) is a SQLite database but not a Quire store; give the path of a store file\n")
            try quire.ok(["init"])
            #expect(try quire.run(["merge", path]).stderr == refused.stderr)
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        }
    }

    /// A file that is no SQLite database (notes.md given as --store) was
    /// called a damaged store, and init said a store already exists there.
    /// Both say what it is now, and leave it as it was.
    @Test func aFileThatIsNoDatabaseIsNotCalledAStore() throws {
        try withRunner { quire in
            let path = quire.directory + "/notes.md"
            try Data("# My notes\n".utf8).write(to: URL(fileURLWithPath: path))
            let kind = "\(path) is not a Quire store: it does not start as every SQLite database does (another kind of file, "
                + "or a store whose first bytes are damaged: `quire inspect \(path)` tells)"
            let refused = try quire.run(["status"], store: path)
            #expect(refused.status == 1)
            #expect(refused.stderr == "error: \(kind); give the path of a store file\n")
            let initialized = try quire.run(["init"], store: path)
            #expect(initialized.status == 1)
            #expect(initialized.stderr == "error: \(kind); init makes a store only of a missing or empty file: pass --store PATH for a new one\n")
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "# My notes\n")
        }
    }

    /// A store a newer Quire wrote is refused as such, to use and as the
    /// other store of a merge, and left as it is: it is not damaged, and
    /// trying again will not help.
    @Test func aStoreFromANewerQuireIsRefusedAsSuch() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let database = try Database(path: quire.store)
            try database.execute(sql: "PRAGMA user_version = \(StoreSchema.latestVersion + 1)")
            database.close()
            let before = try Data(contentsOf: URL(fileURLWithPath: quire.store))
            let refusal = "error: cannot open the store \(quire.store): the store's schema version is \(StoreSchema.latestVersion + 1), "
                + "newer than this program's \(StoreSchema.latestVersion): it was written by a newer version of Quire, which is needed to open it\n"

            let used = try quire.run(["status"])
            #expect(used.status == 1)
            #expect(used.stderr == refusal)
            let other = quire.directory + "/other.quire"
            try quire.ok(["init"], store: other)
            let merged = try quire.run(["merge", quire.store], store: other)
            #expect(merged.status == 1)
            #expect(merged.stderr == refusal)
            #expect(try Data(contentsOf: URL(fileURLWithPath: quire.store)) == before)
        }
    }

    /// A store another process keeps locked past the busy timeout is
    /// named busy, not possibly damaged; nothing is saved.
    @Test func aStoreLockedByAnotherProcessIsReportedBusy() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let writer = try Database(path: quire.store)
            let result = try writer.write { _ in try quire.run(["note", "new", "--title", "Waiting"]) }
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix(
                "error: the store \(quire.store) is busy: another process kept it locked for 5 s, nothing was saved; try again once it is done\n"))
            #expect(try quire.ok(["note", "list", "--json"]) == "[]\n")
        }
    }

    /// A merge that cannot save everything saves nothing: no note merged
    /// before the failure, and no note created empty (here a trigger
    /// refuses the changes of the second new note, as a full disk would).
    @Test func aMergeThatFailsSavesNothing() throws {
        try withRunner { quire in
            let other = quire.directory + "/other.quire"
            try quire.ok(["init"], store: other)
            try quire.ok(["note", "new", "--title", "First"], store: other)
            let second = try quire.ok(["note", "new", "--title", "Second"], store: other).trimmingCharacters(in: .newlines)
            try quire.ok(["init"])
            let database = try Database(path: quire.store)
            try database.execute(sql: """
                CREATE TRIGGER refuse BEFORE INSERT ON changes WHEN NEW.document = (SELECT number FROM documents WHERE id = '\(second)')
                BEGIN SELECT RAISE(ABORT, 'refused'); END
                """)
            database.close()

            #expect(try quire.run(["merge", other]).status == 1)
            #expect(try quire.ok(["note", "list", "--all", "--json"]) == "[]\n")
            #expect(try quire.ok(["status", "--json"]).contains("\"documents\": 0,"))
        }
    }

    /// A damaged change hides neither the other notes from `note list` nor
    /// the rest of `status`; both name the damage and exit 1.
    @Test func aDamagedNoteLeavesTheOthersListed() throws {
        try withRunner { quire in
            let damaged = try quire.storeWithADamagedNote().damaged

            let listed = try quire.run(["note", "list"])
            #expect(listed.status == 1)
            #expect(listed.stdout.contains("second") && !listed.stdout.contains("first"))
            #expect(listed.stderr.hasPrefix("error: note \(damaged) cannot be read: change 1 of document \(damaged) is corrupt"))
            #expect(listed.stderr.hasSuffix("error: 1 note could not be read and is not listed\n"))
            let json = try quire.run(["note", "list", "--json"])
            #expect(json.status == 1)
            #expect((try json.json() as? [[String: Any]])?.map { $0["title"] as? String } == ["second"])

            let status = try quire.run(["status", "--json"])
            #expect(status.status == 1)
            let fields = try #require(try status.json() as? [String: Any])
            #expect(fields["documents"] as? Int == 2 && fields["pending"] is NSNull)
            #expect(status.stderr.contains("`quire inspect \(quire.store)` reports the damage"))
        }
    }

    /// Every command on a damaged note says what to do, and one that would
    /// write writes nothing; the other notes stay readable and editable.
    @Test func aDamagedNoteSaysWhatToDoAndNothingIsWritten() throws {
        try withRunner { quire in
            let (damaged, whole) = try quire.storeWithADamagedNote()
            func rows() throws -> Int64 {
                let database = try Database(path: quire.store, readOnly: true)
                defer { database.close() }
                return try database.read { try $0.query(sql: "SELECT count(*) FROM changes")[0].int64(0) }
            }
            let before = try rows()
            let advice = "nothing was written, and the store's other notes are not affected; " + "`quire inspect \(quire.store)` reports the damage; "
                + "a backup or a peer's store holding the note whole can give it back: `quire --store NEW init`, `quire --store NEW merge BACKUP`, "
                + "then `quire --store NEW merge \(quire.store)` (its other notes), and use NEW\n"
            for arguments in [["note", "show", damaged], ["log", damaged], ["blame", damaged], ["note", "edit", damaged, "--append", "x"],
                              ["note", "rm", damaged]] {
                let result = try quire.run(arguments)
                #expect(result.status == 1, "quire \(arguments)")
                #expect(result.stderr.hasPrefix("error: change 1 of document \(damaged) is corrupt: "), "quire \(arguments): \(result.stderr)")
                #expect(result.stderr.hasSuffix(advice), "quire \(arguments): \(result.stderr)")
            }
            #expect(try rows() == before)
            try quire.ok(["note", "edit", whole, "--append", " more"])
            #expect(try quire.ok(["note", "show", whole]).contains("second"))
            #expect(try rows() == before + 1)
        }
    }

    @Test func aDirectoryIsNotTakenForAStore() throws {
        try withRunner { quire in
            let refusal = "error: \(quire.directory) is a directory; give the path of a file in it, such as \(quire.directory)/notes.quire\n"
            for arguments in [["init"], ["status"], ["note", "list"], ["inspect", quire.directory]] {
                let result = try quire.run(arguments, store: quire.directory)
                #expect(result.status == 1, "quire \(arguments) exited \(result.status)")
                #expect(result.stderr == refusal, "quire \(arguments)")
            }
        }
    }

    @Test func usageErrorsExit64WithTheUsage() throws {
        try withRunner { quire in
            let unknownOption = try quire.run(["status", "--bogus"])
            #expect(unknownOption.status == 64)
            #expect(unknownOption.stderr == "error: unknown option \"--bogus\"\nusage: quire status [--json]\nSee 'quire status --help'.\n")
            #expect(try quire.run(["frobnicate"]).status == 64)
            #expect(try quire.run([]).status == 64)
            #expect(try quire.run(["status", "extra"]).status == 64)
            // --store is an option like the others: once, and with a value.
            let twice = try quire.run(["status", "--store", quire.directory + "/other.quire"])
            #expect(twice.status == 64)
            #expect(twice.stderr.hasPrefix("error: --store may be given only once\nusage: quire status"))
            let empty = try quire.run(["init"], store: "")
            #expect(empty.status == 64)
            #expect(empty.stderr.hasPrefix("error: --store needs a path, not an empty word\n"))
            // A flag takes no value: `--json=false` is a mistake, not a request for JSON (or for text).
            let valued = try quire.run(["status", "--json=false"])
            #expect(valued.status == 64 && valued.stdout.isEmpty)
            #expect(valued.stderr.hasPrefix("error: --json does not take \"=value\"\nusage: quire status"))
        }
    }

    @Test func helpAndVersion() throws {
        try withRunner { quire in
            #expect(try quire.ok(["--version"]) == "quire 0.1.0\n")
            let help = try quire.ok(["status", "--help"])
            #expect(help.hasPrefix("OVERVIEW: "))
            #expect(help.contains("USAGE: quire status [--json]"))
            #expect(help.contains("EXAMPLES:"))
            // `quire help COMMAND...` is the command's --help.
            #expect(try quire.ok(["help", "status"]) == help)
            #expect(try quire.ok(["help", "note", "new"]) == (try quire.ok(["note", "new", "--help"])))
            #expect(try quire.ok(["help"]) == (try quire.ok(["--help"])))
            let root = try quire.ok(["--help"])
            #expect(root.contains("\n  help [COMMAND [SUBCOMMAND]]  Show a command's help, as COMMAND [SUBCOMMAND] --help does.\n"), "\(root)")
            // The exit codes a script tells outcomes by, said where a newcomer looks (they were in Specs/cli.md only).
            #expect(root.hasSuffix("\n\nEXIT STATUS:\n  0      Success.\n  1      Failure: standard error says what went wrong and what to do. "
                + "A command that could do part of its work (sync, merge, compact, note list) does it, says what it left out, and exits so.\n"
                + "  64     Usage error: the command line is wrong (standard error adds the command's usage); nothing was done.\n"
                + "  128+N  `quire note edit` ended by signal N once the editor had exited; the file the editor left is kept, its path printed.\n"),
                    "\(root)")
            #expect(try quire.run(["status", "--frob"]).status == 64 && quire.run(["note", "show", "ffff"]).status == 1)
            // init's usage names --store, and its options now say what it is; `show`'s examples start without --at.
            #expect(try quire.ok(["init", "--help"]).contains("\nOPTIONS:\n  --store PATH  The store file (default: $QUIRE_STORE, "))
            #expect(try quire.ok(["show", "--help"]).contains("\nEXAMPLES:\n  quire show 0190f1c2\n"))
            let unknown = try quire.run(["help", "note", "nope"])
            #expect(unknown.status == 64 && unknown.stdout.isEmpty)
            #expect(unknown.stderr.hasPrefix("error: help: no command \"quire note nope\"\nusage: quire note"), "\(unknown.stderr)")
            // `help` is a command too: its own --help, and --store anywhere on the line, as for any other.
            #expect(try quire.ok(["help", "--help"]) == (try quire.ok(["--help"])))
            #expect(try quire.ok(["help", "log", "--help"]) == (try quire.ok(["log", "--help"])))
            // The runner gives --store before `help`: one after it is taken as an option too, and refused as the second.
            let secondStore = try quire.run(["help", "log", "--store", "elsewhere.quire"])
            #expect(secondStore.status == 64 && secondStore.stderr.hasPrefix("error: --store may be given only once\nusage: quire log"))
            let option = try quire.run(["help", "log", "--json"])
            #expect(option.status == 64 && option.stdout.isEmpty)
            #expect(option.stderr.hasPrefix("error: help: unknown option \"--json\"\nusage: quire log"), "\(option.stderr)")
            // They are flags: a value is a usage error naming the option, not a request for help.
            for arguments in [["--help=3"], ["status", "--help=3"], ["--version=3"]] {
                let result = try quire.run(arguments)
                #expect(result.status == 64, "quire \(arguments) exited \(result.status)")
                let option = arguments.last!.prefix { $0 != "=" }
                #expect(result.stderr.hasPrefix("error: \(option) does not take \"=value\"\nusage: quire"), "quire \(arguments)")
            }
        }
    }
}
