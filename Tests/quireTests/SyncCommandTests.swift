import Foundation
import Quire
import QuireCore
import QuireStore
import QuireSync
import QuireTestSupport
import Testing

/// `quire serve` and `quire sync` end to end, with the real binary.
@Suite(.serialized) struct SyncCommandTests {
    /// Starts `quire --store PATH serve --listen 127.0.0.1:PORT`; returns
    /// the process and the port it printed.
    /// `errors`: a file for its standard error, else it is dropped.
    func startServer(_ runner: QuireRunner, port: Int = 0, tokens: String? = nil, rateLimit: String = "1000", options: [String] = [],
                     errors: String? = nil) throws -> (Process, Int) {
        let process = Process()
        process.executableURL = QuireRunner.binaryURL
        process.arguments = ["--store", runner.directory + "/server.db", "serve", "--listen", "127.0.0.1:\(port)", "--rate-limit", rateLimit]
            + (tokens.map { ["--tokens", $0] } ?? []) + options
        let output = Pipe()
        process.standardOutput = output
        if let errors {
            _ = FileManager.default.createFile(atPath: errors, contents: nil)
            process.standardError = FileHandle(forWritingAtPath: errors)
        } else {
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
        let text = firstLine(of: output)
        guard let bound = Int(text.split(separator: ":").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") else {
            throw CocoaError(.fileReadUnknown, userInfo: [NSDebugDescriptionErrorKey: "no port in \"\(text)\""])
        }
        return (process, bound)
    }

    /// Starts a server whose tokens file holds `tokens`, runs `body` with its URL, and stops it.
    func withTokenServer(_ runner: QuireRunner, tokens: String, _ body: (String) throws -> Void) throws {
        let path = runner.directory + "/tokens.txt"
        try tokens.write(toFile: path, atomically: true, encoding: .utf8)
        let (server, port) = try startServer(runner, tokens: path)
        defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
        try body("http://127.0.0.1:\(port)")
    }

    /// Syncs the runner's store with a server of its directory's server.db,
    /// stops it, runs `damage` on the file's path, and starts the server on
    /// it again, on the same port: the server, its URL and the file holding
    /// its standard error.
    func serverRestartedAfter(_ runner: QuireRunner, damage: (String) throws -> Void) throws -> (server: Process, url: String, errors: String) {
        let (first, port) = try startServer(runner)
        let url = "http://127.0.0.1:\(port)"
        do {
            defer { kill(first.processIdentifier, SIGKILL); first.waitUntilExit() }
            try runner.ok(["sync", url])
        }
        try damage(runner.directory + "/server.db")
        let errors = runner.directory + "/server.err"
        let (server, _) = try startServer(runner, port: port, errors: errors)
        return (server, url, errors)
    }

    /// Makes a store at `path` holding one note, `first`, and syncs it with
    /// the server at `url` using `token`.
    func makeStoreWithSyncedNote(_ runner: QuireRunner, at path: String, url: String, token: String) throws {
        try runner.ok(["init"], store: path)
        try runner.ok(["note", "new", "--title", "first"], store: path)
        try runner.ok(["sync", url, "--token", token], store: path)
    }

    /// The first line a process writes to `pipe` (what `serve` prints once
    /// it listens), or what came before the pipe ended.
    func firstLine(of pipe: Pipe) -> String {
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = pipe.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            line += chunk
        }
        return String(decoding: line, as: UTF8.self)
    }

    /// One server is one peer however its URL is spelled (a trailing `/`,
    /// `/v1/sync` spelled out, the scheme in capitals): one cursor and one
    /// set of acknowledgements, under the URL spelled one way. A store
    /// that synced before under another spelling keeps what it knew: the
    /// next sync moves it to that one name.
    @Test func oneServerIsOnePeerHoweverItsURLIsSpelled() throws {
        try withServer { runner, url in
            try runner.ok(["init"])
            try runner.ok(["note", "new", "--title", "first"])
            for spelling in [url + "/", url + "/v1/sync", "HTTP" + url.dropFirst("http".count), url] {
                let synced = try #require(try runner.run(["sync", spelling, "--json"]).json() as? [String: Any])
                #expect(synced["peer"] as? String == url)
                #expect(synced["sent"] as? Int == (spelling == url + "/" ? 1 : 0))
            }
            // As a store synced by a quire before this holds it: everything under the URL as given.
            let older = url + "/"
            do {
                let store = try DocumentStore(path: runner.store)
                try store.mergeSyncState(of: url, into: older)
                #expect(try store.syncPeers() == [older])
            }
            let status = try runner.run(["status", "--json"]).json() as? [String: Any]
            #expect(status?["pending"] as? Int == 0)
            try runner.ok(["note", "new", "--title", "second"])
            let synced = try #require(try runner.run(["sync", url, "--json"]).json() as? [String: Any])
            #expect(synced["sent"] as? Int == 1)
            let store = try DocumentStore(path: runner.store)
            #expect(try store.syncPeers() == [url])
            #expect(try store.acknowledgedVersions(peer: url) == store.versionVectors())
        }
    }

    /// The address printed is one a URL takes, IPv6 in brackets.
    @Test func anIPv6ServerPrintsItsAddressAsAURLTakesIt() throws {
        try withRunner { runner in
            let server = Process()
            server.executableURL = QuireRunner.binaryURL
            server.arguments = ["--store", runner.directory + "/server.db", "serve", "--listen", "[::1]:0"]
            let output = Pipe()
            server.standardOutput = output
            server.standardError = FileHandle.nullDevice
            try server.run()
            defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
            let text = firstLine(of: output)
            try #require(!text.isEmpty, "the server did not start on IPv6 loopback")
            #expect(text.hasPrefix("listening on [::1]:"))
            let port = try #require(text.split(separator: ":").last.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) })
            #expect(URL(string: "http://[::1]:\(port)")?.port == port)
        }
    }

    /// A port already taken is an error that leaves no new server file behind.
    @Test func aServerThatCannotListenCreatesNoFile() throws {
        try withRunner { runner in
            let (server, port) = try startServer(runner)
            defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
            let path = runner.directory + "/second.db"
            let result = try runner.run(["serve", "--listen", "127.0.0.1:\(port)"], store: path)
            #expect(result.status == 1)
            #expect(result.stderr.contains("127.0.0.1:\(port)"))
            let left = try FileManager.default.contentsOfDirectory(atPath: runner.directory).filter { $0.hasPrefix("second.db") }
            #expect(left.isEmpty)
        }
    }

    /// Runs `body` with `quire serve` running at `url`, and two stores made:
    /// the runner's and `writer`.
    private func withServerAndWriter(_ body: (_ runner: QuireRunner, _ url: String, _ writer: String) throws -> Void) throws {
        try withServer { runner, url in
            let writer = runner.directory + "/writer.quire"
            try runner.ok(["init"])
            try runner.ok(["init"], store: writer)
            try body(runner, url, writer)
        }
    }

    /// Runs `body` with a runner and the URL of a server serving a store
    /// of its directory, stopped after.
    private func withServer(_ body: (_ runner: QuireRunner, _ url: String) throws -> Void) throws {
        try withRunner { runner in
            let (server, port) = try startServer(runner)
            defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
            try body(runner, "http://127.0.0.1:\(port)")
        }
    }

    /// Gives the store at `path` another copy of note `id`'s first change
    /// (or, with `last`, its last) in the store at `writer` (its `time`
    /// changed: review137's forged answer), with the acknowledgement of it
    /// from `url`, as that answer left it; returns it.
    @discardableResult
    private func giveAForgedCopy(of note: String, last: Bool = false, from writer: String, to path: String,
                                 acknowledgedBy url: String) throws -> Change {
        let id = try #require(DocumentID(rawValue: note))
        let source = try DocumentStore(path: writer, readOnly: true)
        let changes = try source.changes(id)
        var forged = try #require(last ? changes.last : changes.first)
        try source.close()
        forged.time += 1
        let store = try DocumentStore(path: path)
        _ = try store.apply(bundles: [(id, [ChangeEncoding.encode([forged])])])
        _ = try store.recordSyncProgress(peer: url, acknowledged: [id: try store.versionVector(id)], cursor: nil)
        try store.close()
        return forged
    }

    /// A note whose first change this store holds with other content than
    /// the server (a forged answer gave it its copy, and its acknowledgement:
    /// review137) used to fail every sync with the server, all notes. Now
    /// the other notes sync both ways, and the note is named with what to
    /// do (exit 1, `notAppliedNotes`), its copy here as it was, sync after sync.
    @Test func aNoteClashingWithTheServersCopyIsLeftOutAndTheOthersSync() throws {
        try withServerAndWriter { runner, url, writer in
            let todo = try runner.ok(["note", "new", "--title", "todo"]).trimmingCharacters(in: .newlines)
            try runner.ok(["sync", url])
            let groceries = try runner.ok(["note", "new", "--title", "groceries"], store: writer).trimmingCharacters(in: .newlines)
            try runner.ok(["note", "new", "--title", "recipes"], store: writer)
            try runner.ok(["sync", url], store: writer)
            let forged = try giveAForgedCopy(of: groceries, from: writer, to: runner.store, acknowledgedBy: url)
            try runner.ok(["note", "edit", todo, "--title", "todo, edited"])

            for _ in 1...2 {
                let result = try runner.run(["sync", url, "--json"])
                #expect(result.status == 1, "\(result.stderr)")
                let json = try #require(try result.json() as? [String: Any])
                #expect(json["notAppliedNotes"] as? [[String: String]] == [["id": groceries, "title": "groceries"]], "\(json)")
                #expect(json["pending"] as? Int == 0)
                #expect(result.stderr.contains("""
                    error: sync with \(url) left out 1 note(s) whose changes from the server this store refuses, nothing of them \
                    taken; the other notes synced:
                      note \(groceries) (groceries): change \(forged.id) was already applied with different content
                    """), "\(result.stderr)")
                #expect(result.stderr.contains("`quire sync \(url) --take-theirs ID`"))
            }
            let titles = try #require(try runner.run(["note", "list", "--json"]).json() as? [[String: Any]]).compactMap { $0["title"] as? String }
            #expect(Set(titles) == ["todo, edited", "groceries", "recipes"])
            try runner.ok(["sync", url], store: writer)
            #expect((try runner.run(["note", "show", todo, "--json"], store: writer).json() as? [String: Any])?["title"] as? String == "todo, edited")
        }
    }

    /// A note whose changes come in a format a newer Quire writes (version
    /// 6 here, sealed by hand, in an answer served raw): it is left out,
    /// named with the format version, and the advice is to upgrade quire
    /// here; not `--take-theirs`, which would take a copy this store cannot
    /// read (`Specs/sync.md`, "Mixed versions of Quire").
    @Test func aNoteInANewerFormatIsLeftOutWithAdviceToUpgrade() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            var document = Document(replica: ReplicaID(7))
            try document.transact { tx in try tx.put(.root, key: "title", .string("from a newer Quire")) }
            let magic = Array("QCHG".utf8)
            let written = try Envelope.open(try document.encodeChanges(), magic: magic, name: "a change bundle", versions: 1...5)
            let newer = Envelope.seal(magic: magic, version: 6, body: Array(written.body.remainingBytes))
            let answer = SyncMessage.response(SyncResponse(cursor: SyncCursor(logID: 1, seq: 1), documents: [
                SyncDocument(id: "newer", version: document.versionVector, bundles: [newer]),
            ])).encoded()
            let server = try RawAnswerServer(head: "HTTP/1.1 200 OK\r\nContent-Type: application/x-quire-sync\r\n"
                + "Content-Length: \(answer.count)\r\nConnection: close\r\n\r\n", chunk: answer, repeats: 1)
            defer { server.stop() }
            let url = "http://127.0.0.1:\(server.port)"

            let result = try runner.run(["sync", url])
            #expect(result.status == 1, "\(result.stderr)")
            #expect(result.stderr.contains("""
                error: sync with \(url) left out 1 note(s) whose changes from the server this store refuses, nothing of them taken; \
                the other notes synced:
                  note newer (not in this store): format version 6 is not supported by this version of Quire
                this store's copy of it is untouched, and every sync with \(url) leaves it out until quire is upgraded on this \
                machine: the server sent changes in a format that a newer version of Quire writes, which the first sync after the \
                upgrade takes; until then
                """), "\(result.stderr)")
            #expect(!result.stderr.contains("--take-theirs"))
        }
    }

    /// Makes a note of each of `titles` (body "milk") at `writer`, synced
    /// through `url`, and gives `runner`'s store, which synced note "todo"
    /// first (its cursor then passes a row, and the next syncs name only the
    /// notes they change), a forged copy of each (`giveAForgedCopy`): the
    /// next sync refuses them. Returns their ids, in the order of `titles`.
    private func clashingNotes(_ titles: [String], _ runner: QuireRunner, _ url: String, _ writer: String) throws -> [String] {
        try runner.ok(["note", "new", "--title", "todo"])
        try runner.ok(["sync", url])
        let ids = try titles.map { try runner.ok(["note", "new", "--title", $0, "--body", "milk"], store: writer).trimmingCharacters(in: .newlines) }
        try runner.ok(["sync", url], store: writer)
        for id in ids { try giveAForgedCopy(of: id, from: writer, to: runner.store, acknowledgedBy: url) }
        return ids
    }

    /// `clashingNotes` of one note, "groceries".
    private func clashingGroceries(_ runner: QuireRunner, _ url: String, _ writer: String) throws -> String {
        try clashingNotes(["groceries"], runner, url, writer)[0]
    }

    /// The way out of a refused note, end to end: `--take-theirs` keeps
    /// this store's copy as a new note ("TITLE (this machine's copy, DATE)",
    /// its body), takes the server's, and the sync exits 0; the note then
    /// syncs both ways. A note this store lacks, or an empty id, is refused
    /// before anything changes.
    @Test func takingTheServersCopyOfARefusedNoteKeepsThisOneAsANewNote() throws {
        try withServerAndWriter { runner, url, writer in
            let groceries = try clashingGroceries(runner, url, writer)
            let refused = try runner.run(["sync", url])
            #expect(refused.status == 1 && refused.stderr.contains("`quire sync \(url) --take-theirs ID`"), "\(refused.stderr)")

            #expect(try runner.run(["sync", url, "--take-theirs", ""]).status == 64)
            let unknown = try runner.run(["sync", url, "--take-theirs", "nosuchnote"])
            #expect(unknown.status == 1 && unknown.stderr.contains("no note matches \"nosuchnote\""), "\(unknown.stderr)")

            let taken = try runner.run(["sync", url, "--take-theirs", groceries, "--json"])
            #expect(taken.status == 0, "\(taken.stderr)")
            let json = try #require(try taken.json() as? [String: Any])
            let took = try #require(json["tookTheirs"] as? [String: Any], "\(json)")
            #expect(took["id"] as? String == groceries && took["title"] as? String == "groceries")
            // The list of every note taken holds the same one object.
            let listed = try #require(json["tookTheirsNotes"] as? [[String: Any]], "\(json)")
            #expect(listed.count == 1 && NSDictionary(dictionary: listed[0]) == NSDictionary(dictionary: took), "\(listed)")
            let copy = try #require(took["copy"] as? [String: String])
            #expect((json["notAppliedNotes"] as? [Any])?.isEmpty == true)
            #expect(taken.stderr.contains("kept this store's copy of note \(groceries) as note \(copy["id"] ?? "")"), "\(taken.stderr)")
            let kept = try #require(try runner.run(["note", "show", copy["id"] ?? "", "--json"]).json() as? [String: Any])
            let keptTitle = try #require(kept["title"] as? String)
            #expect(keptTitle == copy["title"] && keptTitle.hasPrefix("groceries (this machine's copy, 20") && keptTitle.hasSuffix(")"))
            #expect(kept["body"] as? String == "milk")

            // The note syncs again, both ways; the kept copy reaches the writer.
            try runner.ok(["note", "edit", groceries, "--body", "milk, bread"], store: writer)
            try runner.ok(["sync", url], store: writer)
            try runner.ok(["sync", url])
            #expect((try runner.run(["note", "show", groceries, "--json"]).json() as? [String: Any])?["body"] as? String == "milk, bread")
            try runner.ok(["note", "edit", groceries, "--title", "groceries, edited"])
            try runner.ok(["sync", url])
            try runner.ok(["sync", url], store: writer)
            let titles = try #require(try runner.run(["note", "list", "--json"], store: writer).json() as? [[String: Any]]).compactMap { $0["title"] as? String }
            #expect(Set(titles) == ["todo", "groceries, edited", keptTitle])
        }
    }

    /// The replica ids the store at `path` has ever written under
    /// (`local_replicas`): one more for each id `--take-theirs` mints.
    private func replicaIDsEverUsed(_ path: String) throws -> Set<ReplicaID> {
        let database = try Database(path: path)
        defer { database.close() }
        return try database.read { db in try ReplicaIdentity.all(db) }
    }

    /// `--take-theirs` given once for each of several refused notes: one
    /// run keeps this store's copy of each as a new note and takes the
    /// server's (one replica id minted for all), and its one sync brings
    /// every one: it exits 0, and the next sync refuses nothing and brings
    /// nothing. `--json` lists the notes in `tookTheirsNotes`, in the order
    /// given, with no `tookTheirs` (one note's key); standard error has a
    /// line a note. (A second `--take-theirs` was a usage error: N notes
    /// took N runs, each minting an id and syncing from the start of the
    /// server's log.)
    @Test func takingTheServersCopiesOfSeveralNotesTakesOneRun() throws {
        try withServerAndWriter { runner, url, writer in
            let notes = try clashingNotes(["groceries", "recipes"], runner, url, writer)
            let refused = try runner.run(["sync", url])
            #expect(refused.status == 1, "\(refused.stderr)")
            #expect(refused.stderr.contains("`quire sync \(url) --take-theirs ID` (`--take-theirs` once for each note: one run takes them all)"),
                    "\(refused.stderr)")
            let replicasBefore = try replicaIDsEverUsed(runner.store)

            // Given in the other order: the lists follow it.
            let taken = try runner.run(["sync", url, "--take-theirs", notes[1], "--take-theirs", notes[0], "--json"])
            #expect(taken.status == 0, "\(taken.stderr)")
            let json = try #require(try taken.json() as? [String: Any])
            #expect(json["tookTheirs"] == nil && (json["notAppliedNotes"] as? [Any])?.isEmpty == true, "\(json)")
            let took = try #require(json["tookTheirsNotes"] as? [[String: Any]], "\(json)")
            #expect(took.map { $0["id"] as? String } == [notes[1], notes[0]] && took.map { $0["title"] as? String } == ["recipes", "groceries"])
            let copies = took.compactMap { $0["copy"] as? [String: String] }
            #expect(copies.count == 2 && copies[0]["title"]?.hasPrefix("recipes (this machine's copy, 20") == true
                    && copies[1]["title"]?.hasPrefix("groceries (this machine's copy, 20") == true, "\(copies)")
            let keptLines = taken.stderr.split(separator: "\n").filter { $0.hasPrefix("kept this store's copy of note ") }
            #expect(keptLines.count == 2, "\(taken.stderr)")
            for (line, (note, copy)) in zip(keptLines, zip([notes[1], notes[0]], copies)) {
                #expect(line.hasPrefix("kept this store's copy of note \(note) as note \(copy["id"] ?? "") (\(copy["title"] ?? ""))"), "\(line)")
            }
            #expect(try replicaIDsEverUsed(runner.store).subtracting(replicasBefore).count == 1)
            for copy in copies {
                #expect((try runner.run(["note", "show", copy["id"] ?? "", "--json"]).json() as? [String: Any])?["body"] as? String == "milk")
            }

            let next = try runner.run(["sync", url, "--json"])
            #expect(next.status == 0, "\(next.stderr)")
            let nextJSON = try #require(try next.json() as? [String: Any])
            #expect(nextJSON["received"] as? Int == 0 && (nextJSON["notAppliedNotes"] as? [Any])?.isEmpty == true, "\(nextJSON)")
            #expect(nextJSON["tookTheirsNotes"] == nil)
        }
    }

    /// Notes given to `--take-theirs` are replaced all or none: one whose
    /// copy cannot be kept (its changes here are damaged) fails the run
    /// before anything changes: no copy kept, no note dropped, no version,
    /// replica id, cursor, acknowledgement or refusal changed. The error
    /// says what to do (since review203; it gave the store's error and how
    /// to get a damaged note back, not that the others can be taken): the
    /// command that takes the others without it, then how to get it back;
    /// given alone, the latter. The others then taken in that command get
    /// a text line each, in the order given.
    @Test func notesGivenToTakeTheirsAreReplacedAllOrNone() throws {
        try withServerAndWriter { runner, url, writer in
            let notes = try clashingNotes(["groceries", "recipes", "trip"], runner, url, writer)
            try runner.damageTheChanges(ofNote: notes[2])
            struct State: Equatable {
                var versions: [DocumentID: VersionVector], replicas: Set<ReplicaID>, rewinds: Int64, cursor: SyncCursor?
                var acknowledged: [DocumentID: VersionVector], refused: Set<DocumentID>, replaced: [DocumentID: DocumentID]
            }
            func state() throws -> State {
                let store = try DocumentStore(path: runner.store, readOnly: true)
                defer { try? store.close() }
                return State(versions: try store.versionVectors(), replicas: try replicaIDsEverUsed(runner.store), rewinds: try store.cursorRewinds(),
                             cursor: try store.syncCursor(peer: url), acknowledged: try store.acknowledgedVersions(peer: url),
                             refused: try store.refusedDocuments(peer: url), replaced: try store.replacedCopies())
            }
            // Refused by a sync first, as a person meets them.
            #expect(try runner.run(["sync", url]).status == 1)
            let before = try state()
            #expect(before.refused == Set(notes[0...1].map { DocumentID(rawValue: $0)! }), "\(before)")
            let advice = "for the note that cannot be read, `quire inspect \(runner.store)` reports the damage; "

            let failed = try runner.run(["sync", url, "--take-theirs", notes[0], "--take-theirs", notes[2], "--take-theirs", notes[1]])
            #expect(failed.status == 1 && failed.stderr.hasPrefix("error: change ") && failed.stderr.contains(" of document \(notes[2]) is corrupt: "),
                    "\(failed.stderr)")
            #expect(failed.stderr.contains("; nothing was written: none of the 3 notes given to --take-theirs was replaced, as this store cannot "
                + "read note \(notes[2]) to keep its copy as a new note; to take the others, run `quire sync \(url) --take-theirs \(notes[0]) "
                + "--take-theirs \(notes[1])` (without it); " + advice), "\(failed.stderr)")
            #expect(!failed.stderr.contains("kept this store's copy") && failed.stdout.isEmpty, "\(failed.stderr)")
            #expect(try state() == before)
            let alone = try runner.run(["sync", url, "--take-theirs", notes[2]])
            #expect(alone.status == 1 && alone.stderr.contains("; nothing was written: the note was not replaced, as this store cannot read "
                + "note \(notes[2]) to keep its copy as a new note; " + advice), "\(alone.stderr)")
            #expect(try state() == before)

            // The two that can be kept, in one run: the command the error gave.
            let taken = try runner.run(["sync", url, "--take-theirs", notes[0], "--take-theirs", notes[1]])
            #expect(taken.status == 0, "\(taken.stderr)")
            let took = taken.stdout.split(separator: "\n").filter { $0.hasPrefix("took the server's copy of note ") }
            #expect(took.count == 2, "\(taken.stdout)")
            for (line, (note, title)) in zip(took, [(notes[0], "groceries"), (notes[1], "recipes")]) {
                #expect(line.hasPrefix("took the server's copy of note \(note) (\(title)); this store's copy is kept as note "), "\(line)")
            }
            let next = try #require(try runner.run(["sync", url, "--json"]).json() as? [String: Any])
            let stillRefused = try #require(next["notAppliedNotes"] as? [[String: Any]], "\(next)").compactMap { $0["id"] as? String }
            #expect(!stillRefused.contains(notes[0]) && !stillRefused.contains(notes[1]), "\(next)")
        }
    }

    /// A damaged page of the store met by `--take-theirs` (review215) gave
    /// the error of any store file SQLite fails on (`the store PATH is
    /// damaged; quire inspect ...`), which said neither that nothing was
    /// written nor what to do about the notes. Now, as for a note whose
    /// changes do not decode, nothing is written (the file is as it was)
    /// and the error names the damaged page, then: with a note given whose
    /// rows the page holds, the command that takes the others and how to
    /// get that one back; with the notes reading whole, and the page one
    /// that dropping them writes through (the log's last, where the copies
    /// kept go), how to take them in a new store of the notes that read,
    /// which works. SQLite's report ends it, on a line of its own.
    @Test func aDamagedPageMetByTakeTheirsChangesNothingAndSaysWhatToDo() throws {
        try withRunner { runner in
            try runner.storeOfTwentyNotes()
            let notes = try #require(try runner.run(["note", "list", "--json"]).json() as? [[String: Any]]).compactMap { $0["id"] as? String }
            // A change the peer refused, which --retry-rejected forgets: only once nothing else fails.
            let writer = try DocumentStore(path: runner.store)
            let first = try #require(notes.first.flatMap(DocumentID.init(rawValue:)))
            try writer.rejectChanges(writer.changes(first), of: first, peer: "via:true", status: 403, reason: "read-only")
            try writer.close()
            try zeroLeafPage(of: "changes", in: runner.store, last: true)
            let store = try DocumentStore(path: runner.store, readOnly: true)
            let unreadable = Set(notes.filter { id in (try? store.read(DocumentID(rawValue: id)!) { _ in }) == nil })
            try store.close()
            let damaged = try #require(unreadable.first), whole = try #require(notes.first { !unreadable.contains($0) })
            func file() throws -> Data { try Data(contentsOf: URL(fileURLWithPath: runner.store)) }
            let before = try file()
            let damage = "error: the store \(runner.store) has a damaged page; nothing was written: "
            let report = "\nSQLite's report: the database file is corrupt"

            let both = try runner.run(["sync", "--via", "true", "--retry-rejected", "--take-theirs", damaged, "--take-theirs", whole])
            #expect(both.status == 1 && both.stderr.hasPrefix(damage + "none of the 2 notes given to --take-theirs was replaced, as this "
                + "store cannot read note \(damaged) to keep its copy as a new note; to take the others, run `quire sync --via true "
                + "--take-theirs \(whole)` (without it); for the note that cannot be read, `quire inspect \(runner.store)` reports the damage; "),
                "\(both.stderr)")
            #expect(both.stderr.contains(report) && !both.stderr.contains("kept this store's copy"), "\(both.stderr)")
            #expect(try file() == before)

            let alone = try runner.run(["sync", "--via", "true", "--take-theirs", whole])
            #expect(alone.status == 1 && alone.stderr.hasPrefix(damage + "the note was not replaced: this store can read it, but dropping "
                + "its copy meets the damage; `quire inspect \(runner.store)` reports what is wrong with the file; to take the peer's copy, "
                + "copy the notes that can be read into a new store NEW and take it there: `quire --store NEW init`, `quire --store NEW "
                + "merge \(runner.store)`, then `quire --store NEW sync --via true --take-theirs \(whole)`, and use NEW" + report),
                "\(alone.stderr)")
            #expect(try file() == before)

            // The way out: a new store of the notes that read keeps its copy and drops it (the peer, `true`, then sends nothing).
            let new = runner.directory + "/new.quire"
            try runner.ok(["init"], store: new)
            #expect(try runner.run(["merge", runner.store], store: new).status == 1)
            let taken = try runner.run(["sync", "--via", "true", "--take-theirs", whole], store: new)
            #expect(taken.stderr.contains("kept this store's copy of note \(whole) as note "), "\(taken.stderr)")
        }
    }

    /// A note given twice to `--take-theirs` is a usage error naming it,
    /// whether by the same text (found before the store is opened) or by
    /// two prefixes of it; a note this store lacks among several exits 1 as
    /// for one. None changes anything.
    @Test func aNoteGivenTwiceToTakeTheirsIsAUsageError() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            let id = try runner.ok(["note", "new", "--title", "groceries"]).trimmingCharacters(in: .newlines)
            let url = "http://127.0.0.1:9", prefix = String(id.prefix(6))
            let replicas = try replicaIDsEverUsed(runner.store)

            let same = try runner.run(["sync", url, "--take-theirs", id, "--take-theirs", id])
            #expect(same.status == 64 && same.stderr.hasPrefix("error: --take-theirs \(id) is given twice; give each note once\n"), "\(same.stderr)")
            let noStore = try runner.run(["sync", url, "--take-theirs", "x", "--take-theirs", "x"], store: runner.directory + "/missing.quire")
            #expect(noStore.status == 64 && noStore.stderr.hasPrefix("error: --take-theirs x is given twice"), "\(noStore.stderr)")
            let prefixes = try runner.run(["sync", url, "--take-theirs", prefix, "--take-theirs", id])
            #expect(prefixes.status == 64, "\(prefixes.stderr)")
            #expect(prefixes.stderr.hasPrefix("error: --take-theirs \(prefix) and --take-theirs \(id) name the same note, \(id); give each note once\n"),
                    "\(prefixes.stderr)")
            let unknown = try runner.run(["sync", url, "--take-theirs", id, "--take-theirs", "nosuchnote"])
            #expect(unknown.status == 1 && unknown.stderr.contains("no note matches \"nosuchnote\""), "\(unknown.stderr)")

            let titles = try #require(try runner.run(["note", "list", "--json"]).json() as? [[String: Any]]).compactMap { $0["title"] as? String }
            #expect(try titles == ["groceries"] && replicaIDsEverUsed(runner.store) == replicas)
        }
    }

    /// Taking the server's copy of a note removed here keeps this store's
    /// copy removed, as the note was, and says so with the command that
    /// brings it back: else a person looks for it in `note list` in vain.
    @Test func takingTheServersCopyOfARemovedNoteSaysItsCopyIsKeptRemoved() throws {
        try withServerAndWriter { runner, url, writer in
            let groceries = try clashingGroceries(runner, url, writer)
            try runner.ok(["note", "rm", groceries])

            let taken = try runner.run(["sync", url, "--take-theirs", groceries, "--json"])
            #expect(taken.status == 0, "\(taken.stderr)")
            let took = try #require((try taken.json() as? [String: Any])?["tookTheirs"] as? [String: Any])
            let copy = try #require((took["copy"] as? [String: String])?["id"])
            #expect(taken.stderr.contains("removed as the note was: `quire note restore \(copy)` brings it back"), "\(taken.stderr)")
            let listed = try runner.ok(["note", "list"]), all = try runner.ok(["note", "list", "--all"])
            #expect(all.contains("(this machine's copy, 20") && !listed.contains("(this machine's copy"), "\(all)")
            try runner.ok(["note", "restore", copy])
            #expect((try runner.run(["note", "show", copy, "--json"]).json() as? [String: Any])?["body"] as? String == "milk")
        }
    }

    /// The note whose copy `--take-theirs` replaced is listed as what it
    /// is, not as new (the person had it before): `quire show` (no version
    /// of it before is left to diff from), saying that this store's copy
    /// was replaced and which note keeps it; `--json` has it not new, with
    /// no version before. (It was `quire show ID  # groceries (new)`.)
    @Test func aNoteWhoseCopyWasTakenIsListedAsReplacedNotNew() throws {
        try withServerAndWriter { runner, url, writer in
            let groceries = try clashingGroceries(runner, url, writer)
            let taken = try runner.run(["sync", url, "--take-theirs", groceries])
            #expect(taken.status == 0, "\(taken.stderr)")
            let listed = try #require(broughtNotes(in: taken.stdout, by: "sync"), "\(taken.stdout)")
            let line = try #require(listed.notes.first { $0.isShow(of: groceries) }, "\(taken.stdout)")
            let keptAs = "groceries (this store's copy replaced, kept as note "
            #expect(line.comment.hasPrefix(keptAs) && line.comment.hasSuffix(")"), "\(line.comment)")
            let copy = String(line.comment.dropFirst(keptAs.count).dropLast())
            #expect(copy.count >= 4 && taken.stderr.contains("as note \(copy)"), "\(taken.stderr)")
            #expect(try runner.ok(["note", "show", copy]).contains("milk"))
        }
        try withServerAndWriter { runner, url, writer in
            let groceries = try clashingGroceries(runner, url, writer)
            let json = try #require(try runner.run(["sync", url, "--take-theirs", groceries, "--json"]).json() as? [String: Any])
            let notes = try #require(json["changedNotes"] as? [[String: Any]], "\(json)")
            let note = try #require(notes.first { $0["id"] as? String == groceries }, "\(notes)")
            #expect(note["new"] as? Bool == false && note["versionBefore"] is NSNull && note["title"] as? String == "groceries", "\(note)")
        }
    }

    /// A `--take-theirs` sync that fails before the other side's copy
    /// comes has dropped this store's copy all the same; the next sync,
    /// or a merge, that brings it lists the note as replaced (with the note
    /// keeping the dropped copy), not as new: the person had it; so does a
    /// merge's dry run. (It said `(new)`: only the run that dropped the
    /// copy knew it was replaced.)
    @Test(arguments: ["sync", "merge"])
    func aNoteAFailedTakeTheirsSyncDroppedIsListedAsReplacedByTheNextSync(bringer: String) throws {
        try withRunner { runner in
            let laptop = runner.directory + "/laptop.quire", down = runner.directory + "/down"
            try runner.ok(["init"], store: laptop)
            let id = try runner.ok(["note", "new", "--title", "Groceries", "--body", "milk"], store: laptop).trimmingCharacters(in: .newlines)
            // One peer command (one peer name), which fails while `down` exists.
            let peer = "test ! -e '\(down)' && '\(QuireRunner.binaryURL.path)' --store '\(laptop)' serve --stdio"
            try runner.ok(["init"])
            try runner.ok(["sync", "--via", peer])
            #expect(FileManager.default.createFile(atPath: down, contents: nil))
            let failed = try runner.run(["sync", "--via", peer, "--take-theirs", id])
            #expect(failed.status == 1 && failed.stderr.contains("could not reach the peer"), "\(failed.stderr)")
            let keptPrefix = "kept this store's copy of note \(id) as note "
            let kept = try #require(failed.stderr.range(of: keptPrefix).map { String(failed.stderr[$0.upperBound...].prefix { $0 != " " }) },
                                    "\(failed.stderr)")
            try FileManager.default.removeItem(atPath: down)
            if bringer == "merge" {
                // A dry run says it as the merge will. (It said new.)
                let planned = try #require(try runner.run(["merge", laptop, "--dry-run", "--json"]).json() as? [String: Any])
                let note = try #require((planned["documents"] as? [[String: Any]])?.first { $0["id"] as? String == id }, "\(planned)")
                #expect(note["new"] as? Bool == false, "\(note)")
                #expect(!(try runner.ok(["merge", laptop, "--dry-run"])).contains("(1 new)"))
            }

            let next = try runner.ok(bringer == "sync" ? ["sync", "--via", peer] : ["merge", laptop])
            let listed = try #require(broughtNotes(in: next, by: bringer), "\(next)")
            let line = try #require(listed.notes.first { $0.isShow(of: id) }, "\(next)")
            let replaced = "Groceries (this store's copy replaced, kept as note "
            #expect(line.comment.hasPrefix(replaced) && line.comment.hasSuffix(")"), "\(next)")
            #expect(kept.hasPrefix(line.comment.dropFirst(replaced.count).dropLast()), "\(next)")
            // The line runs: the copy that came, at the version it came to.
            #expect(try runner.ok(line.arguments).hasSuffix("\nversion  \(line.arguments[3])\n\nmilk\n"), "\(next)")
            #expect(try runner.ok(["note", "show", kept]).contains("milk"))
        }
    }

    /// `note new --request-id` run again after `--take-theirs` gave the
    /// store a new replica id finds the note the first run made, under
    /// the old id (the store's own still): it made a second note.
    @Test func aRequestMadeBeforeTakingTheServersCopyIsFoundAfter() throws {
        try withServerAndWriter { runner, url, writer in
            let groceries = try clashingGroceries(runner, url, writer)
            let standup = ["note", "new", "--title", "Standup", "--request-id", "standup-2026-12-07"]
            let made = try runner.ok(standup)
            func replica() throws -> String? { try #require(try runner.run(["status", "--json"]).json() as? [String: Any])["replica"] as? String }
            let before = try replica()
            try runner.ok(["sync", url, "--take-theirs", groceries])
            #expect(try replica() != before)
            #expect(try runner.ok(standup) == made)
            let standups = try #require(try runner.run(["note", "list", "--json"]).json() as? [[String: Any]]).filter { $0["title"] as? String == "Standup" }
            #expect(standups.count == 1, "\(standups)")
            // A new key is made under the new id, and found again.
            let retro = ["note", "new", "--title", "Retro", "--request-id", "retro-2026-12-07"]
            #expect(try runner.ok(retro) == runner.ok(retro))
        }
    }

    /// A sync that fails after applying a page (the peer's command ends
    /// after its first answer, before the round stating what this store
    /// took) lists the notes it changed on standard output, as a sync that
    /// ends does (`--json`: `changedNotes`, with `received`), and says on
    /// standard error that those changes stay applied; it exits 1, and
    /// they are in the store. (It printed the error alone.)
    @Test func aSyncThatFailsAfterApplyingAPageListsWhatItBrought() throws {
        try withRunner { runner in
            for json in [false, true] {
                // A laptop of its own each time: the failed second round's push reaches it.
                let laptop = runner.directory + "/laptop-\(json).quire", store = runner.directory + "/here-\(json).quire"
                try runner.ok(["init"], store: laptop)
                let trip = try runner.ok(["note", "new", "--title", "Trip", "--body", "Rome"], store: laptop).trimmingCharacters(in: .newlines)
                try runner.ok(["init"], store: store)
                try runner.ok(["note", "new", "--title", "here"], store: store)
                // The laptop's store served for one answer, after that to the statement of the bundle versions
                // this build reads: their frames (a 4-byte little-endian length, then the message) pass, then the pipe ends.
                let length = runner.directory + "/frame-length"
                let oneAnswer = "'\(QuireRunner.binaryURL.path)' --store '\(laptop)' serve --stdio 2>/dev/null | for frame in statement answer; do "
                    + "dd bs=1 count=4 of='\(length)' 2>/dev/null; cat '\(length)'; set -- $(od -An -tu1 '\(length)'); "
                    + "head -c $(($1 + $2 * 256 + $3 * 65536 + $4 * 16777216)); done"
                let result = try runner.run(["sync", "--via", oneAnswer] + (json ? ["--json"] : []), store: store)
                #expect(result.status == 1)
                #expect(result.stderr.contains("error: sync with via:\(oneAnswer) failed: could not reach the peer: "), "\(result.stderr)")
                #expect(result.stderr.hasSuffix("\n1 change received before that stays applied (standard output lists the notes)\n"
                    + "1 local change not acknowledged by the peer stays pending\n"), "\(result.stderr)")
                if json {
                    let output = try #require(try result.json() as? [String: Any], "\(result.stdout)")
                    #expect(output["received"] as? Int == 1 && output["pending"] as? Int == 1 && output["historyCompacted"] as? Bool == false)
                    let notes = try #require(output["changedNotes"] as? [[String: Any]])
                    #expect(notes.count == 1 && notes.first?["id"] as? String == trip && notes.first?["new"] as? Bool == true, "\(notes)")
                } else {
                    let listed = try #require(broughtNotes(in: result.stdout, by: "sync"), "\(result.stdout)")
                    #expect(listed.notes.count == 1 && listed.notes.first?.comment == "Trip (new)", "\(result.stdout)")
                    #expect(listed.notes.first?.isShow(of: trip) == true, "\(result.stdout)")
                }
                #expect(try runner.ok(["note", "show", trip], store: store).contains("Rome"))
            }
        }
    }

    /// After `--take-theirs`, this store's next edit of the note is made
    /// under a new replica id (`quire status` shows it, in every later
    /// process): not under the id of the local edit it dropped, which the
    /// server lacked and a peer (the laptop, synced with `--via`) held.
    /// The laptop, the server's writer and this store then converge on the
    /// note, each sync refusing nothing; the kept copy is as this store had
    /// it. (The laptop's sync refused the note: this store's new edit took
    /// the dropped one's id again, with other content.)
    @Test func afterTakingTheServersCopyANotesNewEditsReachAPeerThatHadTheDroppedOnes() throws {
        try withServerAndWriter { runner, url, writer in
            let laptop = runner.directory + "/laptop.quire"
            try runner.ok(["init"], store: laptop)
            let viaLaptop = "'\(QuireRunner.binaryURL.path)' --store '\(laptop)' serve --stdio"
            func replica(_ store: String? = nil) throws -> String? {
                (try runner.run(["status", "--json"], store: store).json() as? [String: Any])?["replica"] as? String
            }
            func note(_ id: String, in store: String? = nil) throws -> [String: Any] {
                try #require(try runner.run(["note", "show", id, "--json"], store: store).json() as? [String: Any])
            }
            let groceries = try runner.ok(["note", "new", "--title", "groceries", "--body", "milk"], store: writer)
                .trimmingCharacters(in: .newlines)
            try runner.ok(["sync", url], store: writer)
            try runner.ok(["sync", url])
            // This store's edit, which the laptop gets and the server not.
            try runner.ok(["note", "edit", groceries, "--body", "milk, eggs"])
            try runner.ok(["sync", "--via", viaLaptop])
            // The clash: the writer's next change, a forged copy of which this store holds.
            try runner.ok(["note", "edit", groceries, "--title", "groceries, edited"], store: writer)
            try runner.ok(["sync", url], store: writer)
            try giveAForgedCopy(of: groceries, last: true, from: writer, to: runner.store, acknowledgedBy: url)
            #expect(try runner.run(["sync", url]).status == 1)
            let old = try replica()

            let taken = try #require(try runner.run(["sync", url, "--take-theirs", groceries, "--json"]).json() as? [String: Any])
            let copy = try #require((taken["tookTheirs"] as? [String: Any])?["copy"] as? [String: String])
            let renewed = try replica()
            #expect(renewed != nil && renewed != old)
            #expect(try note(groceries)["body"] as? String == "milk")
            try runner.ok(["note", "edit", groceries, "--body", "milk, jam"])
            try runner.ok(["sync", url])
            #expect(try replica() == renewed)

            // Every sync refuses nothing (exit 0), and all three hold the same note.
            try runner.ok(["sync", url], store: laptop)
            try runner.ok(["sync", "--via", viaLaptop])
            for store in [runner.store, laptop, writer, runner.store, laptop, writer] { try runner.ok(["sync", url], store: store) }
            let here = try note(groceries)
            #expect(here["title"] as? String == "groceries, edited")
            for store in [laptop, writer] {
                let there = try note(groceries, in: store)
                #expect(there["title"] as? String == here["title"] as? String && there["body"] as? String == here["body"] as? String,
                        "\(there) \(here)")
            }
            // The kept copy is this store's copy as it was, here and, synced, on the laptop.
            for store in [runner.store, laptop] {
                let kept = try note(copy["id"] ?? "", in: store)
                #expect(kept["title"] as? String == copy["title"] && kept["body"] as? String == "milk, eggs", "\(kept)")
                #expect(copy["title"]?.hasPrefix("groceries, edited (this machine's copy, 20") == true)
            }
        }
    }

    /// A damaged page of the server's own log (review104), end to end: the
    /// server opens and says so on its standard error; a new client gets
    /// every note but those whose rows the page held, is told which (exit
    /// 1, `damagedOnPeerNotes`), and edits of the other notes go both ways.
    @Test func aDamagedPageOfTheServersLogCostsTheClientsOnlyItsNotes() throws {
        try withRunner { runner in
            try runner.storeOfTwentyNotes()
            let (server, url, serverErrors) = try serverRestartedAfter(runner) { path in try zeroLeafPage(of: "log", in: path) }
            defer { kill(server.processIdentifier, SIGKILL) }

            let other = runner.directory + "/other.quire"
            try runner.ok(["init"], store: other)
            let first = try runner.run(["sync", url, "--json"], store: other)
            #expect(first.status == 1, "\(first.stderr)")
            let damaged = try #require((try first.json() as? [String: Any])?["damagedOnPeerNotes"] as? [[String: Any]]).compactMap { $0["id"] as? String }
            #expect(!damaged.isEmpty && damaged.count < 20)
            #expect(first.stderr.contains("HTTP 422: document \(damaged[0]) is damaged in the answering store"), "\(first.stderr)")
            let received = try #require(try runner.run(["note", "list", "--json"], store: other).json() as? [[String: Any]])
            #expect(received.count == 20 - damaged.count)

            // An edit each way, of notes the page did not hold.
            let healthy = try #require(received.compactMap { $0["id"] as? String }.first)
            try runner.ok(["note", "edit", healthy, "--title", "edited on the other store"], store: other)
            _ = try runner.run(["sync", url], store: other)
            try runner.ok(["note", "new", "--title", "new on the first store", "--body", "x"])
            #expect(try runner.run(["sync", url]).status == 0)
            _ = try runner.run(["sync", url], store: other)
            let titles = try [runner.store, other].map { store in
                Set(try #require(try runner.run(["note", "list", "--json"], store: store).json() as? [[String: Any]]).compactMap { $0["title"] as? String })
            }
            for store in titles { #expect(store.isSuperset(of: ["edited on the other store", "new on the first store"])) }
            #expect(titles[0].count == 21)

            let logged = try String(contentsOfFile: serverErrors, encoding: .utf8)
            #expect(logged.contains("the server store \(runner.directory)/server.db is damaged"), "\(logged)")
            #expect(logged.contains("stop the server, keep \(runner.directory)/server.db aside and start the server on a new file"))
        }
    }

    /// A damaged page of the server's parked changes (those waiting for
    /// their dependencies), its log sound: the server told its operator the
    /// log was damaged and salvaged it row by row (the parked rows were read
    /// with the log). Now it names the parked changes, and serves the log
    /// whole: a new client gets every note.
    @Test func aDamagedPageOfTheServersParkedChangesIsNamedAndTheLogServedWhole() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            for index in 0..<3 { try runner.ok(["note", "new", "--title", "note \(index)"]) }
            let serverPath = runner.directory + "/server.db"
            let (server, url, serverErrors) = try serverRestartedAfter(runner) { path in
                try parkChangesOfManyDocuments(in: path)
                try zeroLeafPage(of: "parked", in: path)
            }
            defer { kill(server.processIdentifier, SIGKILL) }

            let other = runner.directory + "/other.quire"
            try runner.ok(["init"], store: other)
            try runner.ok(["sync", url], store: other)
            #expect(try #require(try runner.run(["note", "list", "--json"], store: other).json() as? [[String: Any]]).count == 3)
            let logged = try String(contentsOfFile: serverErrors, encoding: .utf8)
            #expect(logged.contains("quire http: the server store \(serverPath) is damaged: its changes waiting for their dependencies "
                + "(table parked) cannot all be read: "), "\(logged)")
            #expect(!logged.contains("it serves what it can still read"), "\(logged)")
        }
    }

    /// Writes into the server store at `path` thirty documents' changes
    /// waiting for their dependencies, as a push of each one's second change
    /// alone leaves them; their bodies zstd cannot shrink much, so that the
    /// rows span several pages.
    func parkChangesOfManyDocuments(in path: String) throws {
        var random = SeededGenerator(seed: 7)
        let database = try Database(path: path)
        defer { database.close() }
        try database.write { db in
            for index in 0..<30 {
                var writer = Document(replica: ReplicaID(UInt64(index + 100)))
                let body = try writer.transact { tx in try tx.putObject(.root, key: "body", kind: .text) }
                try writer.transact { tx in
                    try tx.insertText(body, at: 0, String((0..<1500).map { _ in Character(UnicodeScalar(UInt8(97 + random.next() % 26))) }))
                }
                let waiting = try writer.changes(since: VersionVector())[1]
                try db.execute(sql: "INSERT INTO parked(document_id, replica, first_counter, data) VALUES (?, ?, ?, ?)",
                               arguments: [.text("parked-\(index)"), .replica(waiting.replica), .unsigned(waiting.id.counter),
                                           .blob(StoredBundle.stored(ChangeEncoding.encode([waiting])))])
            }
        }
    }

    @Test func threeStoresConvergeThroughAServerKilledMidSync() throws {
        try withRunner { runner in
            var (server, port) = try startServer(runner)
            defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
            let url = "http://127.0.0.1:\(port)"
            let stores = (0..<3).map { runner.directory + "/store\($0).quire" }
            for (index, store) in stores.enumerated() {
                try runner.ok(["init"], store: store)
                for note in 0..<(index == 0 ? 40 : 3) {
                    try runner.ok(["note", "new", "--title", "note \(index)-\(note)", "--body", "body"], store: store)
                }
            }
            // Kill the server while the big store syncs; its sync fails and keeps everything pending.
            let syncing = Process()
            syncing.executableURL = QuireRunner.binaryURL
            syncing.arguments = ["--store", stores[0], "sync", url]
            syncing.standardOutput = FileHandle.nullDevice
            syncing.standardError = FileHandle.nullDevice
            try syncing.run()
            usleep(30_000)
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
            syncing.waitUntilExit()
            (server, port) = try startServer(runner, port: port)

            for store in [stores[2], stores[0], stores[1], stores[2], stores[0]] {
                try runner.ok(["sync", url], store: store)
            }
            let lists = try stores.map { try runner.ok(["note", "list"], store: $0) }
            #expect(lists[0].split(separator: "\n").count == 1 + 46)
            #expect(Set(lists).count == 1)
            for store in stores {
                let status = try JSONSerialization.jsonObject(with: Data(runner.ok(["status", "--json"], store: store).utf8)) as? [String: Any]
                #expect(status?["pending"] as? Int == 0)
            }
        }
    }

    /// Each try that gets no answer is said as it fails (a server that
    /// does not answer at all holds a sync five times --timeout, minutes
    /// with the default, which printed nothing until the end).
    @Test func anUnreachableServerExitsNonZeroAndKeepsChangesPending() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            try runner.ok(["note", "new", "--title", "offline", "--body", "x"])
            let result = try runner.run(["sync", "http://127.0.0.1:1"], environment: ["QUIRE_TOKEN": "t"])
            #expect(result.status == 1)
            #expect(result.stderr.contains("could not reach the server"))
            #expect(result.stderr.contains("1 local change not acknowledged by the server stays pending"))
            let retries = result.stderr.split(separator: "\n").filter { $0.hasPrefix("try ") }
            #expect(retries.count == 4, "\(result.stderr)")
            for (index, line) in retries.enumerated() {
                #expect(line.hasPrefix("try \(index + 1) of 5 failed: POST http://127.0.0.1:1/v1/sync: connection refused"), "\(line)")
                #expect(line.hasSuffix(" s") && line.contains("; trying again in "), "\(line)")
            }
        }
    }

    /// A token that may only read sends nothing and refuses nothing: the
    /// sync says so and exits 1, the changes stay pending, and a token that
    /// may write sends them without --retry-rejected. With nothing to send,
    /// such a sync is a plain pull, exit 0.
    @Test func aReadOnlyTokenLeavesTheChangesPendingForAWriter() throws {
        try withRunner { runner in
            try withTokenServer(runner, tokens: "reader ro\nwriter rw\n") { url in
                try runner.ok(["init"])
                #expect(try runner.run(["sync", url, "--token", "reader"]).status == 0)
                try runner.ok(["note", "new", "--title", "T"])
                let readOnly = try runner.run(["sync", url, "--token", "reader"])
                #expect(readOnly.status == 1)
                #expect(readOnly.stdout.hasPrefix("synced with \(url): sent 0, received 0 changes") && readOnly.stdout.hasSuffix("; 1 pending\n"))
                #expect(readOnly.stderr.hasSuffix("error: \(url) lets this token read but not write (this token is read-only): "
                    + "1 local change was not sent and stays pending, none refused; sync with a token that may write to send them\n"),
                    "\(readOnly.stderr)")
                let json = try #require(try runner.run(["sync", url, "--token", "reader", "--json"]).json() as? [String: Any])
                #expect(json["readOnly"] as? Bool == true && json["rejected"] as? Int == 0 && json["pending"] as? Int == 1)
                let status = try #require(try runner.run(["status", "--json"]).json() as? [String: Any])
                #expect(status["pending"] as? Int == 1)
                #expect(try runner.ok(["status"]).contains("1 local change not acknowledged by the server \(url)\n"))

                let written = try runner.run(["sync", url, "--token", "writer"])
                #expect(written.status == 0)
                #expect(written.stdout.contains(": sent 1,") && written.stdout.hasSuffix("; 0 pending\n"), "\(written.stdout)")
                let after = try #require(try runner.run(["sync", url, "--token", "reader", "--json"]).json() as? [String: Any])
                #expect(after["readOnly"] as? Bool == false && after["pending"] as? Int == 0)
            }
        }
    }

    /// A token the server does not hold said only "HTTP 401: unknown
    /// token": now also what to do, and the note stays pending.
    @Test func aWrongTokenSaysWhichTokenToGive() throws {
        try withRunner { runner in
            try withTokenServer(runner, tokens: "laptop rw\n") { url in
                try runner.ok(["init"])
                try runner.ok(["note", "new", "--title", "T"])
                let refused = try runner.run(["sync", url, "--token", "lapton"])
                #expect(refused.status == 1)
                #expect(refused.stderr.hasSuffix("error: sync with \(url) failed: the server refused: HTTP 401: unknown token; "
                    + "give a token the server's --tokens file holds, with --token TOKEN or $QUIRE_TOKEN\n1 local change not acknowledged by the server stays pending\n"),
                    "\(refused.stderr)")
                #expect(try runner.run(["sync", url, "--token", "laptop"]).stdout.contains(": sent 1,"))
            }
        }
    }

    /// The server logs each refused token, naming the client and not the
    /// token, so that its operator sees a device with a stale one; a device
    /// retrying is counted, not logged again and again (`OperatorLog`).
    @Test func serveLogsARefusedTokenOncePerRun() throws {
        try withRunner { runner in
            let tokens = runner.directory + "/tokens.txt"
            try "laptop rw\n".write(toFile: tokens, atomically: true, encoding: .utf8)
            let errors = runner.directory + "/serve.err"
            let (server, port) = try startServer(runner, tokens: tokens, errors: errors)
            defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
            try runner.ok(["init"])
            for _ in 0..<3 { #expect(try runner.run(["sync", "http://127.0.0.1:\(port)", "--token", "stale-phone-token"]).status == 1) }
            let unsigned = "POST /v1/sync HTTP/1.1\r\nHost: quire\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
            #expect(try rawExchange(port: UInt16(port), unsigned, from: "127.0.0.3").hasPrefix("HTTP/1.1 401"))
            // Each refusal is logged before it is answered, so it is written by now.
            let log = try String(contentsOfFile: errors, encoding: .utf8)
            #expect(log.split(separator: "\n").filter { $0.hasPrefix("quire http: ") } == [
                "quire http: refused a sync from 127.0.0.1: its token is not in the tokens file",
                "quire http: (the line before came 2 more times)",
                "quire http: refused a sync from 127.0.0.3: it gave no token",
            ], "\(log)")
            #expect(!log.contains("stale"))
        }
    }

    /// A change refused for its own sake (its replica id is another
    /// token's: a note relayed from a store that syncs with another token)
    /// waits for --retry-rejected: a later sync that does not offer it says
    /// so, and counts it in --json's `rejected`, as status does.
    @Test func aChangeRefusedBeforeIsSaidToWaitForRetryRejected() throws {
        try withRunner { runner in
            try withTokenServer(runner, tokens: "writer rw\nother rw\n") { url in
                let laptop = runner.directory + "/laptop.quire"
                try makeStoreWithSyncedNote(runner, at: laptop, url: url, token: "writer")  // the laptop's replica is now the writer token's
                try runner.ok(["note", "new", "--title", "second"], store: laptop)
                try runner.ok(["init"])
                try runner.ok(["sync", "--via", "'\(QuireRunner.binaryURL.path)' --store '\(laptop)' serve --stdio"])

                let refused = try runner.run(["sync", url, "--token", "other"])
                #expect(refused.status == 1)
                #expect(refused.stderr.contains("error: the server refused 1 change(s)"), "\(refused.stderr)")
                let later = try runner.run(["sync", url, "--token", "other"])
                #expect(later.status == 0)
                #expect(later.stdout.hasSuffix("1 change(s) the server refused before, and the later changes that build on them, "
                    + "wait for `quire sync --retry-rejected` (quire status lists the refused ones)\n"), "\(later.stdout)")
                let json = try #require(try runner.run(["sync", url, "--token", "other", "--json"]).json() as? [String: Any])
                #expect(json["rejected"] as? Int == 1 && json["readOnly"] as? Bool == false)

                // Once its writer has sent it, the refusal is forgotten.
                try runner.ok(["sync", url, "--token", "writer"], store: laptop)
                let after = try #require(try runner.run(["sync", url, "--token", "other", "--json"]).json() as? [String: Any])
                #expect(after["rejected"] as? Int == 0 && after["pending"] as? Int == 0)
            }
        }
    }

    /// Each round's progress line gives the totals so far, and says so: a
    /// pull then a push read `round 1: sent 0, received 9` and `round 2:
    /// sent 1, received 9`, as if 18 changes had come in.
    @Test func eachRoundsProgressLineSaysItsCountsAreTotals() throws {
        try withRunner { runner in
            let laptop = runner.directory + "/laptop.quire"
            try runner.ok(["init"], store: laptop)
            try runner.ok(["note", "new", "--title", "on the laptop"], store: laptop)
            try runner.ok(["init"])
            try runner.ok(["note", "new", "--title", "on the phone"])
            let result = try runner.run(["sync", "--via", "'\(QuireRunner.binaryURL.path)' --store '\(laptop)' serve --stdio"])
            #expect(result.status == 0)
            #expect(result.stdout.contains(": sent 1, received 1 change in 2 round trips;"), "\(result.stdout)")
            #expect(result.stderr == "round 1, so far: sent 0, received 1\nround 2, so far: sent 1, received 1\n", "\(result.stderr)")
        }
    }

    /// A sync names each note it changed, as `merge` does: the `quire diff
    /// ID --from VERSION --to VERSION` that shows what it brought (the
    /// note's versions here before and right after the sync, which only the
    /// sync knew), or for a note new here `quire show ID`; `--json` in
    /// `changedNotes`, with `merge`'s keys.
    @Test func aSyncNamesEachNoteItChangedWithTheVersionToDiffFrom() throws {
        try withServer { runner, url in
            let laptop = runner.directory + "/laptop.quire"
            func newNote(_ arguments: [String]) throws -> String {
                try runner.ok(["note", "new"] + arguments, store: laptop).trimmingCharacters(in: .newlines)
            }
            try runner.ok(["init"], store: laptop)
            let groceries = try newNote(["--title", "Groceries", "--body", "milk"])
            let trip = try newNote(["--title", "Trip"])
            try runner.ok(["sync", url], store: laptop)
            try runner.ok(["init"])

            // Notes new here: shown whole, said to be new.
            let first = try runner.ok(["sync", url])
            let new = try #require(broughtNotes(in: first, by: "sync"), "\(first)")
            #expect(new.notes.map(\.comment).sorted() == ["Groceries (new)", "Trip (new)"] && new.more == nil, "\(first)")
            let showGroceries = try #require(new.notes.first { $0.comment == "Groceries (new)" })
            #expect(showGroceries.isShow(of: groceries), "\(first)")
            #expect(try runner.ok(showGroceries.arguments).contains("milk"))

            // Offline on both: the laptop appends and makes a note; this store inserts.
            try runner.ok(["note", "edit", groceries, "--append", " and eggs"], store: laptop)
            let later = try newNote(["--title", "Later"])
            try runner.ok(["sync", url], store: laptop)
            try runner.ok(["note", "edit", groceries, "--insert", "0", "Buy "])
            let before = try runner.ok(["vv", groceries]).trimmingCharacters(in: .newlines)
            let second = try runner.ok(["sync", url])
            let after = try runner.ok(["vv", groceries]).trimmingCharacters(in: .newlines)
            let listed = try #require(broughtNotes(in: second, by: "sync"), "\(second)")
            #expect(listed.notes.count == 2 && listed.more == nil, "\(second)")
            let diffGroceries = try #require(listed.notes.first { $0.comment == "Groceries" }, "\(second)").arguments
            #expect(diffGroceries.count == 6 && diffGroceries[0] == "diff" && groceries.hasPrefix(diffGroceries[1])
                    && diffGroceries[2] == "--from" && diffGroceries[3] == before && diffGroceries[4] == "--to" && diffGroceries[5] == after,
                    "\(second)")
            #expect(listed.notes.contains { $0.comment == "Later (new)" && $0.isShow(of: later) },
                    "\(second)")
            // Exactly what the laptop wrote, not this store's own edit.
            let diff = try runner.ok(diffGroceries)
            #expect(diff.hasSuffix("\n\nbody @8 +\" and eggs\"\n"), "\(diff)")

            // A sync that changed nothing names nothing.
            let third = try runner.ok(["sync", url])
            #expect(broughtNotes(in: third, by: "sync") == nil && !third.contains("quire "), "\(third)")

            try runner.ok(["note", "edit", trip, "--title", "Trip to Rome"], store: laptop)
            try runner.ok(["sync", url], store: laptop)
            let tripBefore = try runner.ok(["vv", trip]).trimmingCharacters(in: .newlines)
            let json = try #require(try runner.run(["sync", url, "--json"]).json() as? [String: Any])
            let tripAfter = try runner.ok(["vv", trip]).trimmingCharacters(in: .newlines)
            #expect(json["received"] as? Int == 1 && json["sent"] as? Int == 0)
            let notes = try #require(json["changedNotes"] as? [[String: Any]])
            #expect(notes.count == 1 && notes.allSatisfy {
                Set($0.keys) == ["id", "title", "new", "removed", "incoming", "versionBefore", "versionAfter"]
            }, "\(notes)")
            #expect(notes.first?["id"] as? String == trip && notes.first?["title"] as? String == "Trip to Rome"
                    && notes.first?["new"] as? Bool == false && notes.first?["removed"] as? Bool == false
                    && notes.first?["incoming"] as? Int == 1 && notes.first?["versionBefore"] as? String == tripBefore
                    && notes.first?["versionAfter"] as? String == tripAfter && tripAfter != tripBefore, "\(notes)")
        }
    }

    /// The `quire show` a sync or merge lists for a note new here shows it
    /// at its version right after the changes came (`--at`), as the listed
    /// diff goes `--to` it, so that an edit made here since is not shown as
    /// brought. (It showed the current note.)
    @Test(arguments: ["sync", "merge"])
    func theListedShowOfANewNoteShowsWhatCameNotAnEditMadeAfter(bringer: String) throws {
        try withRunner { runner in
            let laptop = runner.directory + "/laptop.quire"
            try runner.ok(["init"], store: laptop)
            let id = try runner.ok(["note", "new", "--title", "Groceries", "--body", "milk"], store: laptop).trimmingCharacters(in: .newlines)
            try runner.ok(["init"])
            let brought = try runner.ok(bringer == "sync" ? ["sync", "--via", "'\(QuireRunner.binaryURL.path)' --store '\(laptop)' serve --stdio"]
                                                          : ["merge", laptop])
            let after = try runner.ok(["vv", id]).trimmingCharacters(in: .newlines)
            try runner.ok(["note", "edit", id, "--append", " and eggs"])
            let listed = try #require(broughtNotes(in: brought, by: bringer), "\(brought)")
            let line = try #require(listed.notes.first, "\(brought)")
            #expect(listed.notes.count == 1 && line.isShow(of: id, at: after) && line.comment == "Groceries (new)", "\(brought)")
            let shown = try runner.ok(line.arguments)
            #expect(shown.hasSuffix("\nversion  \(after)\n\nmilk\n"), "\(shown)")
        }
    }

    /// The `quire diff` a sync lists for a note goes to the note's version
    /// right after the sync's changes, so that an edit made here after the
    /// sync is not shown as brought (it went to the current version);
    /// `--json`'s `versionAfter` is that version.
    @Test func theListedDiffShowsWhatTheSyncBroughtNotAnEditMadeAfter() throws {
        try withRunner { runner in
            let laptop = runner.directory + "/laptop.quire"
            try runner.ok(["init"], store: laptop)
            let id = try runner.ok(["note", "new", "--title", "Groceries", "--body", "milk"], store: laptop).trimmingCharacters(in: .newlines)
            let peer = "'\(QuireRunner.binaryURL.path)' --store '\(laptop)' serve --stdio"
            try runner.ok(["init"])
            try runner.ok(["sync", "--via", peer])
            try runner.ok(["note", "edit", id, "--append", " and eggs"], store: laptop)
            let synced = try runner.ok(["sync", "--via", peer])
            let after = try runner.ok(["vv", id]).trimmingCharacters(in: .newlines)
            try runner.ok(["note", "edit", id, "--insert", "0", "Buy "])
            let listed = try #require(broughtNotes(in: synced, by: "sync"), "\(synced)")
            let command = try #require(listed.notes.first, "\(synced)").arguments
            #expect(listed.notes.count == 1 && command.count == 6 && command[4] == "--to" && command[5] == after, "\(synced)")
            let diff = try runner.ok(command)
            #expect(diff.hasSuffix("\n\nbody @4 +\" and eggs\"\n"), "\(diff)")

            try runner.ok(["note", "edit", id, "--append", " and bread"], store: laptop)
            let json = try #require(try runner.run(["sync", "--via", peer, "--json"]).json() as? [String: Any])
            let version = try runner.ok(["vv", id]).trimmingCharacters(in: .newlines)
            try runner.ok(["note", "edit", id, "--append", "!"])
            let note = try #require((json["changedNotes"] as? [[String: Any]])?.first, "\(json)")
            #expect(note["versionAfter"] as? String == version, "\(note)")
        }
    }

    /// A sync of many notes lists the first few (in id order) and counts
    /// the rest, through a peer as through a server; `--json` lists them
    /// all, a new note with no version before.
    @Test func aSyncOfManyNotesListsTheFirstAndCountsTheRest() throws {
        try withRunner { runner in
            let laptop = runner.directory + "/laptop.quire"
            try runner.ok(["init"], store: laptop)
            let ids = try (0..<23).map { index in
                try runner.ok(["note", "new", "--title", "note \(index)"], store: laptop).trimmingCharacters(in: .newlines)
            }.sorted()
            let peer = "'\(QuireRunner.binaryURL.path)' --store '\(laptop)' serve --stdio"
            try runner.ok(["init"])
            let synced = try runner.ok(["sync", "--via", peer])
            let listed = try #require(broughtNotes(in: synced, by: "sync"), "\(synced)")
            #expect(listed.notes.count == 20 && listed.more == "  ... and 3 more (`--json` lists them all)", "\(synced)")
            #expect(zip(listed.notes, ids).allSatisfy { note, id in note.isShow(of: id) }, "\(synced)")

            let other = runner.directory + "/other.quire"
            try runner.ok(["init"], store: other)
            let json = try #require(try runner.run(["sync", "--via", peer, "--json"], store: other).json() as? [String: Any])
            let notes = try #require(json["changedNotes"] as? [[String: Any]])
            #expect(notes.compactMap { $0["id"] as? String } == ids)
            #expect(notes.allSatisfy { $0["new"] as? Bool == true && $0["versionBefore"] is NSNull && $0["incoming"] as? Int == 1 }, "\(notes)")
            let again = try #require(try runner.run(["sync", "--via", peer, "--json"], store: other).json() as? [String: Any])
            #expect((again["changedNotes"] as? [Any])?.isEmpty == true)
        }
    }

    /// The day of a person with three machines: the laptop writes offline,
    /// the phone gets its note through a pipe and syncs with the server
    /// first, with its own token. The laptop's own sync, with its token,
    /// then sends its new note: it used to be refused for good (403
    /// `replica R belongs to another token`), the phone's push having bound
    /// the laptop's replica id to the phone's token.
    @Test func aNoteRelayedBeforeItsWriterSyncedLeavesTheWriterFreeToSync() throws {
        try withRunner { runner in
            try withTokenServer(runner, tokens: "laptop rw\nphone rw\n") { url in
                let laptop = runner.directory + "/laptop.quire"
                try runner.ok(["init"], store: laptop)
                try runner.ok(["note", "new", "--title", "written offline"], store: laptop)
                try runner.ok(["init"])
                try runner.ok(["sync", "--via", "'\(QuireRunner.binaryURL.path)' --store '\(laptop)' serve --stdio"])
                try runner.ok(["sync", url, "--token", "phone"])

                try runner.ok(["note", "new", "--title", "written later"], store: laptop)
                let synced = try runner.run(["sync", url, "--token", "laptop", "--json"], store: laptop)
                #expect(synced.status == 0, "\(synced.stderr)")
                let json = try #require(try synced.json() as? [String: Any])
                #expect(json["rejected"] as? Int == 0 && json["pending"] as? Int == 0 && json["sent"] as? Int == 1)
            }
        }
    }

    /// A note its writer relays through another store (of the same token:
    /// another token's relay of it is refused, as its replica is bound) to
    /// the server before syncing with the server itself: the server holds
    /// it, so the writer's `sent` is 0 (it was the note's changes: the
    /// writer's acknowledgements do not cover them, and the answer told
    /// only the versions after the push).
    @Test func aNoteTheServerGotThroughARelayIsNotCountedAsSentAgain() throws {
        try withRunner { runner in
            try withTokenServer(runner, tokens: "home rw\n") { url in
                let laptop = runner.directory + "/laptop.quire"
                try runner.ok(["init"], store: laptop)
                try runner.ok(["note", "new", "--title", "first"], store: laptop)
                try runner.ok(["sync", url, "--token", "home"], store: laptop)
                try runner.ok(["note", "new", "--title", "written offline"], store: laptop)
                try runner.ok(["init"])
                try runner.ok(["sync", "--via", "'\(QuireRunner.binaryURL.path)' --store '\(laptop)' serve --stdio"])
                let relayed = try #require(try runner.run(["sync", url, "--token", "home", "--json"]).json() as? [String: Any])
                #expect((relayed["sent"] as? Int ?? 0) > 0)

                let synced = try runner.run(["sync", url, "--token", "home", "--json"], store: laptop)
                #expect(synced.status == 0, "\(synced.stderr)")
                let json = try #require(try synced.json() as? [String: Any])
                #expect(json["sent"] as? Int == 0 && json["pending"] as? Int == 0)
            }
        }
    }

    /// A note outside what a scoped token may read is named as not synced
    /// (exit 0: such a token may be meant for some notes only), not left
    /// silently pending.
    @Test func aNoteOutsideTheTokensDocumentsIsSaidNotToSync() throws {
        try withRunner { runner in
            try withTokenServer(runner, tokens: "shared rw shared-notebook\n") { url in
                try runner.ok(["init"])
                let id = try runner.ok(["note", "new", "--title", "Private"]).trimmingCharacters(in: .newlines)
                for _ in 0..<2 {
                    let result = try runner.run(["sync", url, "--token", "shared"])
                    #expect(result.status == 0)
                    #expect(result.stdout.hasSuffix("; 1 pending\n"))
                    #expect(result.stderr.hasSuffix("note: 1 note(s) with changes \(url) lacks are outside what this token may read and write, "
                        + "and were not synced; their changes stay pending:\n  \(id)\n"))
                }
                let json = try #require(try runner.run(["sync", url, "--token", "shared", "--json"]).json() as? [String: Any])
                #expect(json["outOfScope"] as? Int == 1 && json["pending"] as? Int == 1)
            }
        }
    }

    /// So is one made after a sync that stored a cursor past the start of
    /// the log (the server holds another token's notes): the next sync
    /// pushes it at once, and the server refuses it as outside the token's
    /// notes. (It was rejected: exit 1, and `--retry-rejected` to send it.)
    @Test func aNoteMadeAfterASyncOutsideTheTokensDocumentsIsSaidNotToSync() throws {
        try withRunner { runner in
            try withTokenServer(runner, tokens: "owner rw\nshared rw shared-notebook\n") { url in
                try makeStoreWithSyncedNote(runner, at: runner.directory + "/owner.quire", url: url, token: "owner")
                try runner.ok(["init"])
                try runner.ok(["sync", url, "--token", "shared"])
                let id = try runner.ok(["note", "new", "--title", "Private"]).trimmingCharacters(in: .newlines)
                for _ in 0..<2 {
                    let result = try runner.run(["sync", url, "--token", "shared", "--json"])
                    #expect(result.status == 0, "\(result.stderr)")
                    let json = try #require(try result.json() as? [String: Any])
                    #expect(json["outOfScope"] as? Int == 1 && json["rejected"] as? Int == 0 && json["pending"] as? Int == 1)
                    #expect(result.stderr.hasSuffix("note: 1 note(s) with changes \(url) lacks are outside what this token may read and write, "
                        + "and were not synced; their changes stay pending:\n  \(id)\n"), "\(result.stderr)")
                }
            }
        }
    }

    /// A server's refusal is quoted in the error: its escape sequences
    /// (retitling the terminal, clearing it) are shown, not obeyed.
    @Test func aServersRefusalPrintsHarmlessly() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            try runner.ok(["note", "new", "--title", "T"])
            let server = Process()
            server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            server.arguments = ["python3", "-c", """
                import http.server
                class Refuse(http.server.BaseHTTPRequestHandler):
                    def do_POST(self):
                        self.rfile.read(int(self.headers.get('Content-Length', 0)))
                        body = b'go away \\x1b]0;pwned\\x07\\x1b[2J'
                        self.send_response(403)
                        self.send_header('Content-Type', 'text/plain')
                        self.send_header('Content-Length', str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                    def log_message(self, *arguments): pass
                server = http.server.HTTPServer(('127.0.0.1', 0), Refuse)
                print(server.server_address[1], flush=True)
                server.serve_forever()
                """]
            let output = Pipe()
            server.standardOutput = output
            try server.run()
            defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
            let port = try #require(Int(firstLine(of: output).trimmingCharacters(in: .whitespacesAndNewlines)))
            let result = try runner.run(["sync", "http://127.0.0.1:\(port)"])
            #expect(result.status == 1)
            #expect(result.stderr.contains("go away ^[]0;pwned^G^[[2J"))
            #expect(!result.stderr.contains("\u{1B}"))
        }
    }

    @Test func serveRefusesANotesStoreForItsLog() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            let result = try runner.run(["serve", "--listen", "127.0.0.1:0"])
            #expect(result.status == 1)
            #expect(result.stderr == "error: \(runner.store) is a notes store; the server keeps its own log: give serve a --store of its own, such as server.quire\n")
            #expect(try runner.ok(["status", "--json"]).contains("\"documents\": 0"))
        }
    }

    /// A sync server's log given where a notes store belongs is named as such.
    @Test func aServersLogIsNotTakenForAStore() throws {
        try withRunner { runner in
            let (server, _) = try startServer(runner)
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
            let log = runner.directory + "/server.db"
            let kind = "\(log) is a sync server's log (the store of `quire serve`), not a notes store"
            let inspected = try runner.run(["inspect", log])
            #expect(inspected.status == 1 && inspected.stderr == "error: \(kind)\n")
            let listed = try runner.run(["note", "list"], store: log)
            #expect(listed.status == 1 && listed.stderr == "error: \(kind); give the path of a store file\n")
        }
    }

    /// A client may hold only `--connections-per-address` connections (here
    /// one, stalled halfway through its headers); others still sync. The
    /// log names the refused client, once for a run of refusals.
    @Test func serveLimitsConnectionsPerAddress() throws {
        try withRunner { runner in
            let wrong = try runner.run(["serve", "--listen", "127.0.0.1:0", "--connections-per-address", "many"])
            #expect(wrong.status == 64)
            #expect(wrong.stderr.hasPrefix("error: --connections-per-address must be a whole number of 0 or more, not \"many\"\n"))

            let errors = runner.directory + "/serve.err"
            let (server, port) = try startServer(runner, options: ["--connections-per-address", "1"], errors: errors)
            defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
            let stalled = try rawConnection(port: UInt16(port), from: "127.0.0.2")
            defer { close(stalled) }
            _ = Array("GET / HTTP/1.1\r\nHo".utf8).withUnsafeBytes { send(stalled, $0.baseAddress, $0.count, 0) }
            let request = "GET / HTTP/1.1\r\nHost: quire\r\nConnection: close\r\n\r\n"
            #expect(try rawExchange(port: UInt16(port), request, from: "127.0.0.2") == "")
            #expect(try rawExchange(port: UInt16(port), request, from: "127.0.0.2") == "")
            try runner.ok(["init"])
            try runner.ok(["note", "new", "--title", "reaches the server"])
            #expect(try runner.ok(["sync", "http://127.0.0.1:\(port)", "--json"]).contains("\"sent\": 1"))
            // The refusal is logged before the connection is closed, so it is written by now.
            let lines = try String(contentsOfFile: errors, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("quire http: ") }
            #expect(lines == ["quire http: refused a connection from 127.0.0.2 unanswered: it holds 1 connection, as many as one address may"])
        }
    }

    /// `--request-deadline` closes a connection whose request has not
    /// arrived whole in time, however it trickles (libmicrohttpd's own
    /// timeout counts only idle time).
    @Test func serveClosesARequestNotCompleteByTheDeadline() throws {
        try withRunner { runner in
            for (value, error) in [("soon", "must be a whole number of 0 or more, not \"soon\""),
                                   ("86401", "must be at most 86400 seconds (0 for no limit), not \"86401\"")] {
                let wrong = try runner.run(["serve", "--listen", "127.0.0.1:0", "--request-deadline", value])
                #expect(wrong.status == 64)
                #expect(wrong.stderr.hasPrefix("error: --request-deadline \(error)\n"))
            }
            let stdio = try runner.run(["serve", "--stdio", "--request-deadline", "5"])
            #expect(stdio.status == 64 && stdio.stderr.hasPrefix("error: --stdio and --request-deadline exclude each other\n"))

            let (server, port) = try startServer(runner, options: ["--request-deadline", "1"])
            defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
            // Reads give up after 30 s: far past this deadline, and short of
            // the default one (60 s), so a read that ends with the connection
            // closed (0) is this deadline's doing.
            let stalled = try rawConnection(port: UInt16(port), from: "127.0.0.2", timeout: 30)
            defer { close(stalled) }
            var ended = false
            for piece in ["GET / HTTP/1.1\r\n", "Ho", "st", ": q", "uire", "\r\n", "X: 1\r\n"] {
                _ = Array(piece.utf8).withUnsafeBytes { send(stalled, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                var byte: UInt8 = 0
                var poller = pollfd(fd: stalled, events: Int16(POLLIN), revents: 0)
                // Half a second between pieces: never idle long enough for the idle timeout.
                if poll(&poller, 1, 500) > 0 { ended = recv(stalled, &byte, 1, 0) == 0; if ended { break } }
            }
            if !ended {
                var byte: UInt8 = 0
                ended = recv(stalled, &byte, 1, 0) == 0
            }
            #expect(ended)
        }
    }

    /// libmicrohttpd logged a line for each connection a client closed
    /// early, and another for one the deadline closed, naming no client.
    /// Routine closes are now silent, and the deadline's close is one line
    /// that names the client.
    @Test func serveLogsOneLineForAClosedConnectionNamingItsClient() throws {
        try withRunner { runner in
            let errors = runner.directory + "/serve.err"
            let (server, port) = try startServer(runner, options: ["--request-deadline", "1"], errors: errors)
            defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
            // Gone at once; gone within its headers; gone within its body.
            for request in ["", "GET / HTTP/1.1\r\nHo", "POST /v1/sync HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc"] {
                let socket = try rawConnection(port: UInt16(port), from: "127.0.0.1")
                _ = Array(request.utf8).withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(socket)
            }
            // Half a request left there: the deadline closes it (reads give up after 30 s).
            let stalled = try rawConnection(port: UInt16(port), from: "127.0.0.2", timeout: 30)
            defer { close(stalled) }
            _ = Array("GET / HTTP/1.1\r\nHo".utf8).withUnsafeBytes { send(stalled, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var byte: UInt8 = 0
            #expect(recv(stalled, &byte, 1, 0) == 0)
            // A request answered after them all, so that whatever they logged is written by now.
            let answer = try rawExchange(port: UInt16(port), "GET /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 404"))
            // The deadline's line is written just after its close, so it may trail the
            // answer on a loaded machine: waited for, up to 10 s.
            func lines() throws -> [Substring] {
                try String(contentsOfFile: errors, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("quire http: ") }
            }
            let waitEnd = ContinuousClock.now + .seconds(10)
            while try lines().isEmpty && ContinuousClock.now < waitEnd { usleep(10_000) }
            #expect(try lines() == ["quire http: closed the connection from 127.0.0.2: its request was not complete within 1 s"])
        }
    }

    /// A newcomer to a full server is answered 503 with `Retry-After`
    /// (`HTTPServer`); `quire sync` waits that long between its tries, says
    /// so, and names the server's reason once they run out.
    @Test func syncReportsABusyServerOnceItsTriesRunOut() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            let reason = "the server is busy: all 64 connections are in use; try again"
            let busy = try RawAnswerServer(
                head: "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\nContent-Length: \(reason.utf8.count)\r\nConnection: close\r\n\r\n",
                chunk: Array(reason.utf8), repeats: 1)
            defer { busy.stop() }
            let result = try runner.run(["sync", "http://127.0.0.1:\(busy.port)", "--timeout", "10"])
            #expect(result.status == 1)
            #expect(result.stderr.contains("try 1 of 5 failed: HTTP 503: \(reason); trying again in 1.0 s"))
            #expect(result.stderr.contains("HTTP 503 (gave up after retries): \(reason)"))
        }
    }

    @Test func serveStdioRefusesTheHTTPOptions() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            let result = try runner.run(["serve", "--stdio", "--tokens", "tokens.txt"])
            #expect(result.status == 64)
            #expect(result.stderr.hasPrefix("error: --stdio and --tokens exclude each other\nusage: quire serve"))
        }
    }

    /// A client that closed its end before the answer ends the session
    /// with an error saying so, not the process by SIGPIPE.
    @Test func serveStdioToAClientGoneIsAnErrorNotASignal() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            // Standard output a pipe nobody reads, SIGPIPE as a shell leaves it.
            let goneReader = ["python3", "-c", "import os, signal, sys; r, w = os.pipe(); os.close(r); os.dup2(w, 1); "
                + "signal.signal(signal.SIGPIPE, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"]
            let request = Data([5, 0, 0, 0]) + Data("hello".utf8)
            let result = try runner.run(["serve", "--stdio"], input: request, launcher: goneReader)
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("error: the sync session on standard input ended: "))
        }
    }

    /// `--timeout` bounds a stdio session's stalls; the HTTP server has its own.
    @Test func serveTakesATimeoutWithStdioOnly() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            let listening = try runner.run(["serve", "--listen", "127.0.0.1:0", "--timeout", "5"])
            #expect(listening.status == 64)
            #expect(listening.stderr.hasPrefix("error: --timeout is for --stdio\nusage: quire serve"))
            let zero = try runner.run(["serve", "--stdio", "--timeout", "0"])
            #expect(zero.status == 64)
            #expect(zero.stderr.hasPrefix("error: --timeout must be 1 second or more\nusage: quire serve"))
            // Past a day, the session's clock (nanoseconds in 64 bits) overflowed at its first request: the peer trapped.
            let huge = try runner.run(["serve", "--stdio", "--timeout", "99999999999999999"])
            #expect(huge.status == 64)
            #expect(huge.stderr.hasPrefix("error: --timeout must be at most 86400 seconds (a day), not \"99999999999999999\"\nusage: quire serve"))
        }
    }

    /// A client that goes silent without closing the pipe held `serve
    /// --stdio`, and its store, for ever: the session now ends, exit 0
    /// with a line on standard error, once no request has begun for
    /// `--idle-timeout` seconds.
    @Test func serveStdioEndsWhenNoRequestComesForTheIdleTimeout() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            // quire's standard input a pipe whose writing end quire holds itself: open, and silent for ever.
            let silentInput = ["python3", "-c", "import os, sys; r, w = os.pipe(); os.dup2(r, 0); os.set_inheritable(w, True); "
                + "os.execv(sys.argv[1], sys.argv[1:])"]
            let result = try runner.run(["serve", "--stdio", "--idle-timeout", "1"], launcher: silentInput)
            #expect(result.status == 0)
            #expect(result.stderr == "no request came for 1 s (--idle-timeout): the sync session on standard input ends\n")
            let zero = try runner.run(["serve", "--stdio", "--idle-timeout", "0"])
            #expect(zero.status == 64)
            #expect(zero.stderr.hasPrefix("error: --idle-timeout must be 1 second or more\nusage: quire serve"))
            let listening = try runner.run(["serve", "--listen", "127.0.0.1:0", "--idle-timeout", "5"], store: runner.directory + "/server.db")
            #expect(listening.status == 64)
            #expect(listening.stderr.hasPrefix("error: --idle-timeout is for --stdio\nusage: quire serve"))
        }
    }

    /// A host name is no address to listen on: said as a usage error, before
    /// the server's log is made (the failed start left an empty log behind).
    @Test func serveRefusesAHostNameBeforeMakingItsLog() throws {
        try withRunner { runner in
            let log = runner.directory + "/server.quire"
            let result = try runner.run(["serve", "--listen", "localhost:0"], store: log)
            #expect(result.status == 64)
            #expect(result.stderr.hasPrefix("error: --listen needs a numeric IPv4 or IPv6 address, such as 127.0.0.1:8080, not \"localhost:0\"\nusage: quire serve"))
            #expect(!FileManager.default.fileExists(atPath: log))
        }
    }

    /// A peer refuses pushes as a server does (recorded as rejected under
    /// `via:COMMAND`), so --retry-rejected is one of --via's options too;
    /// so is --take-theirs, a peer's copy being as good as a server's,
    /// which may be given once for each of several notes.
    @Test func syncHelpGivesEachFormItsOptions() throws {
        try withRunner { runner in
            let help = try runner.ok(["sync", "--help"])
            #expect(help.contains("USAGE: quire sync URL [--token TOKEN] [--wait SECONDS] [--timeout SECONDS] [--retry-rejected] [--take-theirs NOTE]... [--json]\n"))
            #expect(help.contains("       quire sync --via COMMAND [--timeout SECONDS] [--retry-rejected] [--take-theirs NOTE]... [--json]\n"))
            #expect(help.contains("May be repeated: every note given is replaced at once, then one sync brings them all."), "\(help)")
        }
    }

    @Test func syncViaRefusesAToken() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            let result = try runner.run(["sync", "--via", "true", "--token", "s3cret"])
            #expect(result.status == 64)
            #expect(result.stderr.hasPrefix("error: --via and --token exclude each other\nusage: quire sync"))
            let waiting = try runner.run(["sync", "--via", "true", "--wait", "5"])
            #expect(waiting.status == 64)
            #expect(waiting.stderr.hasPrefix("error: --wait is for a server; a peer run by --via answers at once\nusage: quire sync"))
        }
    }

    /// Usage errors come before the store is looked for: whether or not it
    /// is there, a wrong command line exits 64. A right one with no store
    /// fails before the peer's command runs (it could be an ssh session).
    @Test func syncTellsUsageErrorsBeforeLookingForTheStore() throws {
        try withRunner { runner in
            let missing = runner.directory + "/missing.quire"
            let bare = try runner.run(["sync"], store: missing)
            #expect(bare.stderr.hasPrefix("error: sync needs a server URL or --via COMMAND\nusage: quire sync"), "\(bare.stderr)")
            for arguments in [["sync"], ["sync", "http://x", "--via", "y"], ["sync", "--via", "y", "--token", "t"],
                              ["sync", "--via", "y", "--wait", "5"], ["sync", "ftp://x"], ["sync", "http://x", "--wait", "soon"]] {
                let result = try runner.run(arguments, store: missing)
                #expect(result.status == 64, "quire \(arguments) exited \(result.status)")
                #expect(result.stderr.contains("usage: quire sync"), "quire \(arguments)")
            }
            // What a person most likely meant: the address `serve --listen`
            // printed, without http://; the other machine's store file.
            let address = try runner.run(["sync", "127.0.0.1:8080"], store: missing)
            #expect(address.stderr.hasPrefix("error: \"127.0.0.1:8080\" is not an http:// or https:// URL; "
                + "a server's URL starts with its scheme: `quire sync http://127.0.0.1:8080`\nusage: quire sync"), "\(address.stderr)")
            let other = runner.directory + "/desktop.quire"
            #expect(FileManager.default.createFile(atPath: other, contents: nil))
            let file = try runner.run(["sync", other], store: missing)
            #expect(file.stderr.hasPrefix("error: \"\(other)\" is not an http:// or https:// URL; \(other) is a file: "
                + "`quire sync --via 'quire --store \(other) serve --stdio'` syncs with the store there, or `quire merge \(other)` merges it in\n"),
                    "\(file.stderr)")
            #expect(try runner.run(["sync", "ftp://x"], store: missing).stderr.hasPrefix("error: \"ftp://x\" is not an http:// or https:// URL\n"))
            let marker = runner.directory + "/ran"
            let result = try runner.run(["sync", "--via", "touch '\(marker)'"], store: missing)
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("error: no store at \(missing): "))
            #expect(!FileManager.default.fileExists(atPath: marker))
        }
    }

    /// The commands `sync` advises for a file given as the URL, whose path
    /// holds an apostrophe, double quotes, a space, `$` and a backslash:
    /// read back by a shell, each is the words it stands for, the `--via`
    /// command's own words too. (The `--via` command was put in single
    /// quotes as it was, so the apostrophe ended them: the line did not run.)
    @Test func theCommandsSyncAdvisesReadBackThroughAShellAsTheyStand() throws {
        try withRunner { runner in
            let other = runner.directory + "/it's the \"desk\" $HOME \\ top.quire"
            #expect(FileManager.default.createFile(atPath: other, contents: nil))
            let result = try runner.run(["sync", other], store: runner.directory + "/missing.quire")
            #expect(result.status == 64, "\(result.stderr)")
            let advice = result.stderr.components(separatedBy: " is a file: `").dropFirst().first ?? ""
            let sync = advice.components(separatedBy: "` syncs with the store there, or `")
            #expect(sync.count == 2, "\(result.stderr)")
            let words = try shellWords(sync[0])
            #expect(words.count == 4 && words.prefix(3) == ["quire", "sync", "--via"], "\(words)")
            #expect(try shellWords(words.last ?? "") == ["quire", "--store", other, "serve", "--stdio"], "\(result.stderr)")
            let merge = sync.last?.components(separatedBy: "` merges it in").first ?? ""
            #expect(try shellWords(merge) == ["quire", "merge", other], "\(result.stderr)")
        }
    }

    /// Seconds past what the clocks they go to can count (nanoseconds in 64
    /// bits) crashed the tool, and so did a rate whose burst (twice it)
    /// overflowed; a rate of 0 was taken for 1 a second. The seconds and
    /// the 0 are usage errors now, and a huge rate serves.
    @Test func hugeNumbersAndARateOfZeroAreNoCrashes() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            try runner.ok(["note", "new", "--title", "here"])
            let huge = "9223372036854775807"
            for arguments in [["sync", "--via", "cat", "--timeout", huge], ["sync", "http://127.0.0.1:1", "--timeout", huge],
                              ["sync", "http://127.0.0.1:1", "--wait", huge], ["sync", "http://127.0.0.1:1", "--wait", "86401"]] {
                let result = try runner.run(arguments)
                #expect(result.status == 64, "quire \(arguments) exited \(result.status)")
                let (option, value) = (arguments[arguments.count - 2], arguments[arguments.count - 1])
                #expect(result.stderr.hasPrefix("error: \(option) must be at most 86400 seconds (a day), not \"\(value)\"\nusage: quire sync"),
                        "\(result.stderr.prefix(300))")
            }
            let zero = try runner.run(["serve", "--listen", "127.0.0.1:0", "--rate-limit", "0"], store: runner.directory + "/server.db")
            #expect(zero.status == 64)
            #expect(zero.stderr.hasPrefix("error: --rate-limit must be 1 or more requests a second, not \"0\"\nusage: quire serve"))
            let (server, port) = try startServer(runner, rateLimit: huge)
            defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
            #expect(try runner.ok(["sync", "http://127.0.0.1:\(port)", "--wait", "1", "--json"]).contains("\"sent\": 1"))
        }
    }

    /// A peer command that never answers fails the sync after --timeout
    /// seconds, and is stopped (the sync's output then ends with it).
    @Test func syncViaASilentCommandTimesOut() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            try runner.ok(["note", "new", "--title", "here"])
            let result = try runner.run(["sync", "--via", "sleep 600", "--timeout", "1"])
            #expect(result.status == 1)
            #expect(result.stderr.hasSuffix("""
                error: sync with via:sleep 600 failed: could not reach the peer: the command "sleep 600" failed: nothing came through for 1 s
                1 local change not acknowledged by the peer stays pending

                """))
            #expect(try runner.run(["sync", "--via", "true", "--timeout", "0"]).status == 64)
        }
    }

    /// Through a pipe, a peer answers in the newest change bundle version
    /// both sides read. This build's client states the versions it reads
    /// before its first request, and this build's peer states its own and
    /// answers in version 5. A peer before review202 refuses the statement
    /// as a message of a kind it does not know, with the very answer every
    /// peer before gives (played here by one that reads the statement and
    /// answers so, then serves as this build does a client that states
    /// nothing), and answers in version 3: the sync goes as before.
    @Test func syncViaAPeerAnswersInTheNewestBundleVersionBothRead() throws {
        try withRunner { runner in
            let laptop = runner.directory + "/laptop.quire"
            try runner.ok(["init"], store: laptop)
            let trip = try runner.ok(["note", "new", "--title", "Trip", "--body", "Rome"], store: laptop).trimmingCharacters(in: .newlines)
            let serve = "'\(QuireRunner.binaryURL.path)' --store '\(laptop)' serve --stdio"
            let refusal = SyncMessage.failure(SyncFailure(status: 400, "malformed sync message: invalid data: unknown message kind")).encoded()
            let refusalFile = runner.directory + "/refusal", length = runner.directory + "/frame-length"
            try Data([UInt8(refusal.count), 0, 0, 0] + refusal).write(to: URL(fileURLWithPath: refusalFile))
            let refused = try SyncMessage.decode(refusal)
            let older = "{ dd bs=1 count=4 of='\(length)' 2>/dev/null; set -- $(od -An -tu1 '\(length)'); "
                + "head -c $(($1 + $2 * 256 + $3 * 65536 + $4 * 16777216)) >/dev/null; cat '\(refusalFile)'; exec \(serve); }"
            for (peer, stated, version) in [(serve, true, 5), (older, false, 3)] as [(String, Bool, UInt64)] {
                let store = runner.directory + "/here-\(version).quire", answers = runner.directory + "/answers-\(version)"
                try runner.ok(["init"], store: store)
                try runner.ok(["sync", "--via", "\(peer) | tee '\(answers)'"], store: store)
                #expect(try runner.ok(["note", "show", trip], store: store).contains("Rome"))

                // The answers as they came: a 4-byte little-endian length, then the message, each.
                var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: answers)))[...]
                var messages: [SyncMessage] = []
                while bytes.count >= 4 {
                    let count = bytes.prefix(4).reversed().reduce(0) { $0 << 8 | Int($1) }
                    messages.append(try SyncMessage.decode(Array(bytes.dropFirst(4).prefix(count))))
                    bytes = bytes.dropFirst(4 + count)
                }
                #expect(messages.first == (stated ? .bundleVersions(Set(ChangeEncoding.readVersions)) : refused), "\(messages)")
                guard messages.count > 1, case .response(let response) = messages[1] else { Issue.record("\(messages)"); continue }
                let versions = response.documents.flatMap(\.bundles).map { UInt64($0[4]) }
                #expect(!versions.isEmpty && versions.allSatisfy { $0 == version }, "\(version): \(versions)")
            }
        }
    }

    /// A command that answers with something other than sync messages is
    /// told apart from one that ends without answering, whether it ends
    /// before the request is written or after.
    @Test func syncViaACommandAnsweringGarbageSaysSo() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            try runner.ok(["note", "new", "--title", "here"])
            for command in ["echo garbage", "head -c 4 >/dev/null; echo garbage"] {
                let result = try runner.run(["sync", "--via", command])
                #expect(result.status == 1)
                #expect(result.stderr.hasPrefix("error: sync with via:\(command) failed: the peer broke the sync protocol: "
                    + "the command \"\(command)\" answered with something that is not a sync message ("), "\(command): \(result.stderr)")
                #expect(result.stderr.hasSuffix(")\n1 local change not acknowledged by the peer stays pending\n"))
            }
            let silent = try runner.run(["sync", "--via", "true"])
            #expect(silent.status == 1)
            #expect(silent.stderr.hasPrefix("error: sync with via:true failed: could not reach the peer: the command \"true\" ended without answering (exit status 0)\n"))
        }
    }

    /// What the peer command writes to its standard error reaches ours
    /// marked as the peer's and with its escapes shown: a peer (or a host
    /// ssh reaches) cannot clear, retitle or colour the user's terminal.
    @Test func syncViaShowsThePeersStandardErrorMarkedAndWithItsEscapesShown() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            let command = "printf '\\033]0;owned\\007\\033[2J\\033[31mbad\\033[0m news\\n' >&2; exit 1"
            let result = try runner.run(["sync", "--via", command])
            #expect(result.status == 1)
            #expect(!result.stderr.contains("\u{1B}"))
            #expect(result.stderr.contains("peer: ^[]0;owned^G^[[2J^[[31mbad^[[0m news\n"))
            #expect(result.stderr.contains("its standard error ended with:\n  ^[]0;owned^G^[[2J^[[31mbad^[[0m news\n"))
        }
    }

    @Test func serveNamesATokensFileItCannotRead() throws {
        try withRunner { runner in
            let missing = runner.directory + "/tokens.txt"
            let result = try runner.run(["serve", "--listen", "127.0.0.1:0", "--tokens", missing], store: runner.directory + "/server.db")
            #expect(result.status == 1)
            #expect(result.stderr == "error: cannot read the tokens file \(missing): no such file or directory\n")
            // A pipe is read (here, with a line that is not a token's).
            let piped = try runner.run(["serve", "--listen", "127.0.0.1:0", "--tokens", "/dev/stdin"],
                                       store: runner.directory + "/server.db", input: Data("s3cret world\n".utf8))
            #expect(piped.status == 1)
            #expect(piped.stderr == "error: cannot use the tokens file /dev/stdin: tokens file, line 1: the mode must be rw or ro, not \"world\"\n")
        }
    }

    @Test func peersSyncThroughAStdioCommand() throws {
        try withRunner { runner in
            let other = runner.directory + "/other.quire"
            try runner.ok(["init"])
            try runner.ok(["init"], store: other)
            try runner.ok(["note", "new", "--title", "here", "--body", "x"])
            try runner.ok(["note", "new", "--title", "there", "--body", "y"], store: other)
            let command = "'\(QuireRunner.binaryURL.path)' --store '\(other)' serve --stdio"
            try runner.ok(["sync", "--via", command])
            #expect(try runner.ok(["note", "list"]) == runner.ok(["note", "list"], store: other))
        }
    }

    /// Two stores synced only through a pipe (no server): each one's changes
    /// that the other now holds are no longer pending, in `status` and in
    /// `log` (they stayed pending for ever, counted against a server never
    /// synced with). The store that runs `sync --via` has its changes
    /// acknowledged by the peer's answer, the served store by what the
    /// client's request states holding: a sync that brought changes from
    /// the peer ends with a round that states them.
    @Test func aPipeSyncLeavesNothingPendingOnEitherStore() throws {
        try withRunner { runner in
            let other = runner.directory + "/other.quire"
            try runner.ok(["init"])
            try runner.ok(["init"], store: other)
            let here = try runner.ok(["note", "new", "--title", "here", "--body", "x"]).trimmingCharacters(in: .newlines)
            let there = try runner.ok(["note", "new", "--title", "there", "--body", "y"], store: other).trimmingCharacters(in: .newlines)
            try runner.ok(["note", "edit", there, "--append", "z"], store: other)
            func pending(_ store: String) throws -> Int? {
                try #require(try runner.run(["status", "--json"], store: store).json() as? [String: Any])["pending"] as? Int
            }
            func acknowledged(_ id: String, _ store: String) throws -> [Bool] {
                try #require(try runner.run(["log", id, "--json"], store: store).json() as? [[String: Any]]).map { $0["acknowledged"] as? Bool == true }
            }
            #expect(try pending(runner.store) == 1 && pending(other) == 2)
            #expect(try runner.ok(["status"]).contains("1 local change not acknowledged by any peer"))

            let command = "'\(QuireRunner.binaryURL.path)' --store '\(other)' serve --stdio"
            // The summary line, then the notes it brought.
            #expect(try runner.ok(["sync", "--via", command]).contains("; 0 pending\nWhat the sync brought"))
            #expect(try pending(runner.store) == 0 && pending(other) == 0)
            #expect(try runner.ok(["status"]).contains("0 local changes not acknowledged by any peer"))
            #expect(try acknowledged(here, runner.store) == [true] && acknowledged(there, other) == [true, true])

            // A change made since is pending again, on its store only.
            try runner.ok(["note", "edit", here, "--append", "!"])
            #expect(try pending(runner.store) == 1 && pending(other) == 0)
            #expect(try acknowledged(here, runner.store) == [false, true])
            try runner.ok(["sync", "--via", command])
            #expect(try pending(runner.store) == 0 && pending(other) == 0)

            // Changes of the served store alone: pulled, then stated as held.
            try runner.ok(["note", "edit", there, "--append", "?"], store: other)
            #expect(try pending(other) == 1)
            let pulled = try #require(try runner.run(["sync", "--via", command, "--json"]).json() as? [String: Any])
            #expect(pulled["received"] as? Int == 1 && pulled["sent"] as? Int == 0 && pulled["rounds"] as? Int == 2)
            #expect(try pending(other) == 0 && acknowledged(there, other) == [true, true, true])
        }
    }

    /// A failed sync counts the local changes its peer has not acknowledged;
    /// `status`, those no peer has (with no server synced with): a `--via`
    /// command mistyped, a peer never synced with, said "2 local changes
    /// stay pending" where `status` said 0, though both were synced. The
    /// line says what it counts, and status's count when it differs.
    @Test func aFailedSyncSaysWhatItCountsAsPendingAndWhatStatusCounts() throws {
        try withRunner { runner in
            let other = runner.directory + "/other.quire"
            for store in [runner.store, other] { try runner.ok(["init"], store: store) }
            for title in ["one", "two"] { try runner.ok(["note", "new", "--title", title]) }
            try runner.ok(["sync", "--via", "'\(QuireRunner.binaryURL.path)' --store '\(other)' serve --stdio"])
            let mistyped = try runner.run(["sync", "--via", "quire-test-no-such-command --store '\(other)' serve --stdio"])
            #expect(mistyped.status == 1)
            #expect(mistyped.stderr.hasSuffix("\n2 local changes not acknowledged by the peer stay pending "
                + "(`quire status` counts 0: those not acknowledged by any peer)\n"), "\(mistyped.stderr)")
            #expect(try runner.ok(["status"]).contains("0 local changes not acknowledged by any peer\n"))
        }
    }

    /// A sync that ends well gives `quire status`'s pending count too when
    /// that one counts against another peer and differs, as a failed
    /// sync's pending line does: synced through a peer, after a server
    /// that lacks a note. (It said `0 pending` where status said 1.)
    @Test func aSyncThatEndsWellSaysWhatStatusCountsWhenItDiffers() throws {
        try withServer { runner, url in
            let other = runner.directory + "/other.quire"
            for store in [runner.store, other] { try runner.ok(["init"], store: store) }
            try runner.ok(["note", "new", "--title", "one"])
            try runner.ok(["sync", url])
            try runner.ok(["note", "new", "--title", "two"])
            let synced = try runner.ok(["sync", "--via", "'\(QuireRunner.binaryURL.path)' --store '\(other)' serve --stdio"])
            let line = try #require(synced.split(separator: "\n").first, "\(synced)")
            #expect(line.hasPrefix("synced with via:") && line.hasSuffix("; 0 pending (`quire status` counts 1: those not acknowledged by the server \(url))"),
                    "\(synced)")
            #expect(try runner.ok(["status"]).contains("1 local change not acknowledged by the server \(url)"))
            // Counted alike, it says nothing more.
            #expect(try runner.ok(["sync", url]).split(separator: "\n").first?.hasSuffix("; 0 pending") == true)
        }
    }

    /// A `--via` command that serves this very store (its path mistyped)
    /// is an error, and leaves the local changes pending: it used to end
    /// `synced ...; 0 pending`, and `status` said every note had left the
    /// machine when none had.
    @Test func aPipeSyncWithThisStoreItselfSaysSoAndLeavesChangesPending() throws {
        try withRunner { runner in
            try runner.ok(["init"])
            try runner.ok(["note", "new", "--title", "only here", "--body", "x"])
            let command = "'\(QuireRunner.binaryURL.path)' --store '\(runner.store)' serve --stdio"
            let result = try runner.run(["sync", "--via", command])
            #expect(result.status == 1)
            #expect(result.stderr.contains("could not reach the peer: it answered from this store itself (replica "))
            #expect(result.stderr.hasSuffix("1 local change not acknowledged by the peer stays pending\n"))
            let status = try #require(try runner.run(["status", "--json"]).json() as? [String: Any])
            #expect(status["pending"] as? Int == 1)
        }
    }

    /// Two stores syncing through one served store (`serve --stdio`), which
    /// keeps what all its clients hold under one name, `clients`: each
    /// side's `status` and `log` stay honest. The served store's change
    /// that one client pulled has left it (not pending, acknowledged),
    /// though the other client lacks it; each client's own change counts
    /// as acknowledged once the served store holds it, and not before;
    /// an older client's request (holding less) takes back nothing. In the
    /// served store's `log`, a client's change is acknowledged (a client,
    /// its writer, holds it), where it used to say `no` for every change
    /// of another replica.
    @Test func twoClientsOfOneServedStoreEachReportHonestly() throws {
        try withRunner { runner in
            let hub = runner.directory + "/hub.quire", phone = runner.directory + "/phone.quire"
            for store in [runner.store, hub, phone] { try runner.ok(["init"], store: store) }
            func pending(_ store: String) throws -> Int? {
                try #require(try runner.run(["status", "--json"], store: store).json() as? [String: Any])["pending"] as? Int
            }
            func acknowledged(_ id: String, _ store: String) throws -> [Bool] {
                try #require(try runner.run(["log", id, "--json"], store: store).json() as? [[String: Any]]).map { $0["acknowledged"] as? Bool == true }
            }
            func newNote(_ title: String, _ store: String) throws -> String {
                try runner.ok(["note", "new", "--title", title], store: store).trimmingCharacters(in: .newlines)
            }
            let command = "'\(QuireRunner.binaryURL.path)' --store '\(hub)' serve --stdio"
            let shared = try newNote("shared", hub), laptopNote = try newNote("laptop", runner.store), phoneNote = try newNote("phone", phone)

            try runner.ok(["sync", "--via", command])
            #expect(try [pending(hub), pending(runner.store), pending(phone)] == [0, 0, 1])
            #expect(try acknowledged(shared, hub) == [true] && acknowledged(laptopNote, runner.store) == [true])
            #expect(try acknowledged(laptopNote, hub) == [true])
            #expect(try acknowledged(phoneNote, phone) == [false])

            // The hub edits its note; the laptop pulls it, the phone not yet.
            try runner.ok(["note", "edit", shared, "--append", " (hub)"], store: hub)
            #expect(try pending(hub) == 1 && acknowledged(shared, hub) == [false, true])
            try runner.ok(["sync", "--via", command])
            #expect(try pending(hub) == 0 && acknowledged(shared, hub) == [true, true])

            // The phone, behind on the hub's note, states less of it: nothing is taken back.
            try runner.ok(["sync", "--via", command], store: phone)
            #expect(try [pending(hub), pending(runner.store), pending(phone)] == [0, 0, 0])
            #expect(try acknowledged(phoneNote, phone) == [true] && acknowledged(shared, hub) == [true, true])
            #expect(try acknowledged(phoneNote, hub) == [true] && acknowledged(laptopNote, hub) == [true])
            // What the phone pushed the laptop gets from the hub, which holds it.
            try runner.ok(["sync", "--via", command])
            #expect(try acknowledged(phoneNote, runner.store) == [true] && acknowledged(laptopNote, phone) == [true])
            let notes = try [runner.store, hub, phone].map { store in try runner.ok(["note", "list", "--json"], store: store) }
            #expect(Set(notes).count == 1)
        }
    }

    /// A client of a served store compacted past what it lacks (the laptop's
    /// edits of one note of three relayed by the hub, compacted away without
    /// history) syncs the other two both ways and is told which note it
    /// could not sync and what to do: exit 1, the note in
    /// `historyCompactedNotes`, and that note's own change stays pending.
    /// Once it holds the laptop's edits (it synced with the laptop, as the
    /// advice says), its next sync with the hub is whole.
    @Test func aClientBehindACompactedServedStoreSyncsTheOtherNotesAndIsToldWhatHappened() throws {
        try withRunner { runner in
            let hub = runner.directory + "/hub.quire", phone = runner.directory + "/phone.quire"
            for store in [runner.store, hub, phone] { try runner.ok(["init"], store: store) }
            let command = "'\(QuireRunner.binaryURL.path)' --store '\(hub)' serve --stdio"
            func newNote(_ title: String) throws -> String {
                try runner.ok(["note", "new", "--title", title], store: hub).trimmingCharacters(in: .newlines)
            }
            func body(_ id: String, _ store: String) throws -> String? {
                try #require(try runner.run(["note", "show", id, "--json"], store: store).json() as? [String: Any])["body"] as? String
            }
            let id = try newNote("shared"), phoneEdits = try newNote("phone edits"), hubEdits = try newNote("hub edits")
            try runner.ok(["sync", "--via", command], store: phone)
            let synced = try #require(try runner.run(["sync", "--via", command, "--json"]).json() as? [String: Any])
            #expect(synced["historyCompacted"] as? Bool == false && (synced["historyCompactedNotes"] as? [Any])?.isEmpty == true)
            // Two syncs: two rows of the hub's log, the newest of which compaction keeps.
            for text in [" one", " two"] {
                try runner.ok(["note", "edit", id, "--append", text])
                try runner.ok(["sync", "--via", command])
            }
            try DocumentStore(path: hub).compact(try #require(DocumentID(rawValue: id)), keepHistory: false)
            try runner.ok(["note", "edit", id, "--pin"], store: phone)
            try runner.ok(["note", "edit", phoneEdits, "--append", " (phone)"], store: phone)
            try runner.ok(["note", "edit", hubEdits, "--append", " (hub)"], store: hub)
            let before = try runner.ok(["note", "show", id, "--json"], store: phone)

            let result = try runner.run(["sync", "--via", command, "--json"], store: phone)
            #expect(result.status == 1)
            let json = try #require(try result.json() as? [String: Any])
            #expect(json["historyCompacted"] as? Bool == true && json["pending"] as? Int == 1)
            #expect(json["historyCompactedNotes"] as? [[String: String]] == [["id": id, "title": "shared"]])
            // After the rounds' progress, the first saying what became of the note.
            #expect(result.stderr.hasPrefix("the peer no longer holds changes of document \(id) that this store lacks (the history of "
                + "document \(id) asked for was compacted away): syncing the other documents without it\n"))
            #expect(result.stderr.hasSuffix("""

                error: sync with via:\(command) left out 1 note(s), whose changes this store lacks the peer no longer holds; the other \
                notes synced:
                  note \(id) (shared): the peer no longer holds changes this store lacks (status 410: the history of document \(id) \
                asked for was compacted away): no sync with it can bring them, now or later
                sync this store with one that still holds those changes (the store that wrote them), or start again from a copy of \
                the peer's store, which lacks the local changes pending here; a store served to others keeps them when compacted with \
                keepHistory; until then, the local changes of this note stay pending
                1 local change not acknowledged by the peer stays pending

                """))
            #expect(try runner.ok(["note", "show", id, "--json"], store: phone) == before)
            #expect(try body(phoneEdits, hub)?.hasSuffix(" (phone)") == true && body(hubEdits, phone)?.hasSuffix(" (hub)") == true)

            // The advice: the laptop wrote what the hub compacted away.
            try runner.ok(["sync", "--via", "'\(QuireRunner.binaryURL.path)' --store '\(runner.store)' serve --stdio"], store: phone)
            let whole = try #require(try runner.run(["sync", "--via", command, "--json"], store: phone).json() as? [String: Any])
            #expect(whole["historyCompacted"] as? Bool == false && whole["pending"] as? Int == 0)
            #expect(try body(id, phone)?.hasSuffix(" one two") == true)
        }
    }

    /// A served store with one damaged note (its log rows fail their
    /// checks) used to fail a client's whole sync (500, nothing synced).
    /// Now the client syncs the other note both ways and is told which note
    /// was left out, and the served side says why on its standard error
    /// (shown `peer: `): exit 1, the note in `damagedOnPeerNotes`, its own
    /// change pending and its copy as it was.
    @Test func aClientOfAServedStoreWithADamagedNoteSyncsTheOtherNotesAndIsToldWhich() throws {
        try withRunner { runner in
            let phone = runner.directory + "/phone.quire"
            try runner.ok(["init"])
            try runner.ok(["init"], store: phone)
            let damaged = try runner.ok(["note", "new", "--title", "first"]).trimmingCharacters(in: .newlines)
            let whole = try runner.ok(["note", "new", "--title", "second"]).trimmingCharacters(in: .newlines)
            let command = "'\(QuireRunner.binaryURL.path)' --store '\(runner.store)' serve --stdio"
            try runner.ok(["sync", "--via", command], store: phone)
            for id in [damaged, whole] { try runner.ok(["note", "edit", id, "--append", " (phone)"], store: phone) }
            try runner.damageTheChanges(ofNote: damaged)
            let before = try runner.ok(["note", "show", damaged, "--json"], store: phone)

            let result = try runner.run(["sync", "--via", command, "--json"], store: phone)
            #expect(result.status == 1)
            let json = try #require(try result.json() as? [String: Any])
            #expect(json["damagedOnPeerNotes"] as? [[String: String]] == [["id": damaged, "title": "first"]] && json["pending"] as? Int == 1)
            #expect(json["historyCompactedNotes"] as? [Any] != nil && json["damaged"] as? Int == 0)
            #expect(result.stderr.contains("peer: document \(damaged) is damaged in this store and was left out of a client's sync"))
            #expect(result.stderr.hasSuffix("""

                error: sync with via:\(command) left out 1 note(s) damaged in the peer's store, nothing of them sent or taken; the other \
                notes synced:
                  note \(damaged) (first): the peer refused (status 422): document \(damaged) is damaged in the answering store and \
                cannot be read there: nothing of it was sent or taken
                this store's copy of it is untouched, and its local changes stay pending until the peer's store is repaired (there, \
                `quire inspect` names the damage); a store that synced the note holds its changes meanwhile
                1 local change not acknowledged by the peer stays pending

                """))
            #expect(try runner.ok(["note", "show", damaged, "--json"], store: phone) == before)
            let shown = try #require(try runner.run(["note", "show", whole, "--json"]).json() as? [String: Any])
            #expect((shown["body"] as? String)?.hasSuffix(" (phone)") == true)
        }
    }
}
