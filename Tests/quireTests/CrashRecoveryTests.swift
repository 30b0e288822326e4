import Foundation
import Quire
import QuireTestSupport
import Testing

/// The real `quire` binary is killed with SIGKILL at seeded random moments
/// while it creates a store, writes notes, syncs (over HTTP, over a pipe, as
/// the client, the server or the peer; with the receiver writing a
/// snapshot) or merges; then the stores are checked as a person
/// with notes on several machines relies on them: each opens, `inspect`
/// finds no damage, every note committed before the kill is there once with
/// all its content, and running the interrupted sync again converges the
/// stores to the same notes. A few seeds per scenario here; more with
/// `QUIRE_CRASH_SEEDS=50 swift test --filter CrashRecovery` (README.md).
@Suite(.serialized) struct CrashRecoveryTests {
    static let seeds = seedCount(default: 1, variable: "QUIRE_CRASH_SEEDS")

    /// `note new` and `note edit --append`, killed at random: what exited 0
    /// is there; what was killed is there whole or not at all.
    @Test func notesWrittenWhileKilledAreWholeOrAbsent() throws {
        for seed in 1...Self.seeds {
            try withRunner { quire in
                var rng = SeededGenerator(seed: UInt64(seed))
                try quire.ok(["init"])
                var expected: [String: String] = [:]  // title -> body
                for step in 0..<5 {
                    let appending = !expected.isEmpty && Bool.random(using: &rng)
                    let text = try randomBody(&rng, in: quire, name: "body-\(step)")
                    if appending, let title = expected.keys.sorted().randomElement(using: &rng) {
                        let id = try noteID(titled: title, in: quire.store, quire)
                        let outcome = try runKilled(quire, ["note", "edit", id, "--append", text.contents], within: 250_000, &rng)
                        let body = try notes(in: quire.store, quire)[title]?.body
                        if outcome == .exited {
                            expected[title]! += text.contents
                        } else if body == expected[title]! + text.contents {
                            expected[title]! += text.contents
                        }
                        let whole = body == expected[title]
                        #expect(whole, "seed \(seed) step \(step): the body of \(title) (\(body?.count ?? 0) characters) is neither as before nor with the whole append")
                    } else {
                        let title = "note \(step)"
                        let outcome = try runKilled(quire, ["note", "new", "--title", title, "--body-file", text.path], within: 250_000, &rng)
                        let body = try notes(in: quire.store, quire)[title]?.body
                        if outcome == .exited || body != nil { expected[title] = text.contents }
                        let whole = body == expected[title]
                        #expect(whole, "seed \(seed) step \(step): a new note killed while written is there in part (\(body?.count ?? 0) of \(text.contents.count) characters)")
                    }
                    try expectIntact(quire.store, holding: expected, quire, "seed \(seed) step \(step)")
                }
            }
        }
    }

    /// `quire init` killed at random: run again, it makes the store (or
    /// says one is there, when the kill came after the store's tables were
    /// committed), and the store takes notes.
    @Test func anInitKilledAtRandomIsSimplyRunAgain() throws {
        for seed in 1...Self.seeds {
            try withRunner { quire in
                var rng = SeededGenerator(seed: UInt64(seed) &+ 5000)
                for attempt in 0..<4 {
                    let store = quire.directory + "/store-\(attempt).quire"
                    try runKilled(quire, ["init"], store: store, within: 150_000, &rng)
                    let madeTheStore = Database.peek(atPath: store, StoreSchema.holdsStore) == true
                    let again = try quire.run(["init"], store: store)
                    if madeTheStore {
                        #expect(again.stderr.hasPrefix("error: a store already exists at "), "seed \(seed): \(again.stderr)")
                    } else {
                        #expect(again.status == 0, "seed \(seed): init after a killed init that made no store: \(again.stderr)")
                    }
                    try quire.ok(["note", "new", "--title", "T", "--body", "after"], store: store)
                    try expectIntact(store, holding: ["T": "after"], quire, "seed \(seed) attempt \(attempt)")
                }
            }
        }
    }

    /// `quire sync URL` killed at random while it pushes and pulls; run
    /// again, both stores end with every note of either.
    @Test func anHTTPSyncKilledAtRandomConvergesWhenRunAgain() throws {
        for seed in 1...Self.seeds {
            try withRunner { quire in
                var rng = SeededGenerator(seed: UInt64(seed) &+ 1000)
                let (laptop, phone) = (quire.directory + "/laptop.quire", quire.directory + "/phone.quire")
                let expected = try writeNotes(laptop: laptop, phone: phone, quire, &rng)
                var (server, port) = try SyncCommandTests().startServer(quire)
                defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
                let url = "http://127.0.0.1:\(port)"
                try quire.ok(["sync", url], store: phone)
                // The client killed, then (on odd seeds) the server too, each with a sync under way.
                try runKilled(quire, ["sync", url], store: laptop, within: 1_000_000, &rng)
                if seed % 2 == 1 {
                    let syncing = try start(quire, ["sync", url], store: phone)
                    usleep(UInt32.random(in: 0...600_000, using: &rng))
                    kill(server.processIdentifier, SIGKILL)
                    server.waitUntilExit()
                    (server, port) = try SyncCommandTests().startServer(quire, port: port)
                    syncing.waitUntilExit()  // its retries reach the new server, or it gives up
                }
                for store in [laptop, phone] { try expectIntact(store, holding: nil, quire, "seed \(seed), killed") }
                for store in [laptop, phone, laptop] { try quire.ok(["sync", url], store: store) }
                try expectConverged([laptop, phone], holding: expected, quire, "seed \(seed)")
            }
        }
    }

    /// `quire sync --via` killed at random, or the `quire serve --stdio`
    /// peer it runs; run again, both stores end with every note of either.
    @Test func aPipeSyncKilledAtRandomConvergesWhenRunAgain() throws {
        for seed in 1...Self.seeds {
            try withRunner { quire in
                var rng = SeededGenerator(seed: UInt64(seed) &+ 2000)
                let (laptop, phone) = (quire.directory + "/laptop.quire", quire.directory + "/phone.quire")
                let expected = try writeNotes(laptop: laptop, phone: phone, quire, &rng)
                let pidFile = quire.directory + "/peer.pid"
                let peer = "echo $$ > '\(pidFile)'; exec '\(QuireRunner.binaryURL.path)' --store '\(phone)' serve --stdio"
                let syncing = try start(quire, ["sync", "--via", peer], store: laptop)
                usleep(UInt32.random(in: 0...1_000_000, using: &rng))
                let peerPID = (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
                if seed % 2 == 0, let peerPID {
                    kill(peerPID, SIGKILL)
                } else {
                    kill(syncing.processIdentifier, SIGKILL)
                    if let peerPID { kill(peerPID, SIGKILL) }  // as a dropped ssh connection would end it
                }
                syncing.waitUntilExit()
                for store in [laptop, phone] { try expectIntact(store, holding: nil, quire, "seed \(seed), killed") }
                try quire.ok(["sync", "--via", peer], store: laptop)
                try expectConverged([laptop, phone], holding: expected, quire, "seed \(seed)")
            }
        }
    }

    /// A note of more than a thousand changes makes the receiving store
    /// write a snapshot while it applies them: the sync is killed around it.
    @Test func aSyncKilledWhileTheReceiverSnapshotsConvergesWhenRunAgain() throws {
        for seed in 1...Self.seeds {
            try withRunner { quire in
                var rng = SeededGenerator(seed: UInt64(seed) &+ 3000)
                let (laptop, phone) = (quire.directory + "/laptop.quire", quire.directory + "/phone.quire")
                try quire.ok(["init"], store: laptop)
                try quire.ok(["init"], store: phone)
                let id = try quire.ok(["note", "new", "--title", "long", "--body", ""], store: laptop).trimmingCharacters(in: .newlines)
                let body = try typeManyChanges(into: try #require(DocumentID(rawValue: id)), of: laptop, count: 1_200)
                let syncing = try start(quire, ["sync", "--via", "'\(QuireRunner.binaryURL.path)' --store '\(laptop)' serve --stdio"], store: phone)
                usleep(UInt32.random(in: 0...1_500_000, using: &rng))
                kill(syncing.processIdentifier, SIGKILL)
                syncing.waitUntilExit()
                try expectIntact(phone, holding: nil, quire, "seed \(seed), killed")
                try quire.ok(["sync", "--via", "'\(QuireRunner.binaryURL.path)' --store '\(laptop)' serve --stdio"], store: phone)
                try expectConverged([laptop, phone], holding: ["long": body], quire, "seed \(seed)")
            }
        }
    }

    /// `quire merge` killed at random: it commits all the other store's
    /// notes or none, and a merge run again takes them all. A kill at
    /// random all but never lands between two commits of one merge, were
    /// it to commit note by note (they are a few milliseconds of a run of
    /// hundreds), so first a merge into a copy of the store meets a write
    /// that fails at its second new note, where such a kill would stop it:
    /// it must leave the copy as it was.
    @Test func aMergeKilledAtRandomIsAllOrNothing() throws {
        for seed in 1...Self.seeds {
            try withRunner { quire in
                var rng = SeededGenerator(seed: UInt64(seed) &+ 4000)
                let (laptop, phone) = (quire.directory + "/laptop.quire", quire.directory + "/phone.quire")
                let expected = try writeNotes(laptop: laptop, phone: phone, quire, &rng)
                let before = try notes(in: phone, quire)

                let failing = try copyFailingAtItsSecondNewNote(phone, quire)
                let failed = try quire.run(["merge", laptop], store: failing)
                #expect(failed.status == 1 && failed.stderr.contains(Self.secondNoteFailure), "seed \(seed): \(failed.stderr)")
                let afterFailure = try notes(in: failing, quire)
                #expect(afterFailure == before, "seed \(seed): a merge that failed at its second note kept \(afterFailure.keys.sorted())")

                try runKilled(quire, ["merge", laptop], store: phone, within: 800_000, &rng)
                let after = try notes(in: phone, quire)
                let allOrNothing = after == before || after.mapValues(\.body) == expected
                #expect(allOrNothing, "seed \(seed): a killed merge left part of its notes: \(after.keys.sorted())")
                try expectIntact(phone, holding: nil, quire, "seed \(seed), killed")
                try quire.ok(["merge", laptop], store: phone)
                try quire.ok(["merge", phone], store: laptop)
                try expectConverged([laptop, phone], holding: expected, quire, "seed \(seed)")
            }
        }
    }

    // MARK: - Stores and their notes

    static let secondNoteFailure = "a write failing at the second new note"

    /// A copy of `store` (closed, so its file holds it all) whose notes
    /// table refuses a row once it holds one more than now, failing the
    /// write with `secondNoteFailure`.
    func copyFailingAtItsSecondNewNote(_ store: String, _ quire: QuireRunner) throws -> String {
        let copy = quire.directory + "/failing-copy.quire"
        try FileManager.default.copyItem(atPath: store, toPath: copy)
        let database = try Database(path: copy)
        defer { database.close() }
        try database.write { db in
            let count = try db.query(sql: "SELECT count(*) FROM documents")[0].int64(0)
            try db.execute(sql: """
                CREATE TRIGGER fail_at_second_new_note BEFORE INSERT ON documents WHEN (SELECT count(*) FROM documents) > \(count)
                BEGIN SELECT RAISE(ABORT, '\(Self.secondNoteFailure)'); END
                """)
        }
        return copy
    }

    /// What `note list --all --json` says of a note.
    struct ListedNote: Equatable {
        let id: String, body: String, json: NSDictionary
    }

    /// The notes of `store` by title. Fails when a title is there twice
    /// (every title this suite writes is written once).
    func notes(in store: String, _ quire: QuireRunner, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: ListedNote] {
        let listed = try quire.run(["note", "list", "--all", "--json"], store: store)
        try #require(listed.status == 0, "note list failed on \(store): \(listed.stderr)", sourceLocation: sourceLocation)
        let array = try #require(try listed.json() as? [[String: Any]], sourceLocation: sourceLocation)
        var byTitle: [String: ListedNote] = [:]
        for object in array {
            let title = try #require(object["title"] as? String, sourceLocation: sourceLocation)
            let note = ListedNote(id: try #require(object["id"] as? String), body: try #require(object["body"] as? String),
                                  json: NSDictionary(dictionary: object))
            try #require(byTitle.updateValue(note, forKey: title) == nil, "\(title) is in \(store) twice", sourceLocation: sourceLocation)
        }
        return byTitle
    }

    func noteID(titled title: String, in store: String, _ quire: QuireRunner) throws -> String {
        try #require(try notes(in: store, quire)[title]).id
    }

    /// The store opens, `inspect` finds nothing damaged, no note is there
    /// twice and (when given) the notes are exactly `expected`, title to body.
    func expectIntact(_ store: String, holding expected: [String: String]?, _ quire: QuireRunner, _ context: String,
                      sourceLocation: SourceLocation = #_sourceLocation) throws {
        let inspected = try quire.run(["inspect", store, "--json"])
        #expect(inspected.status == 0, "\(context): inspect \(store) failed: \(inspected.stderr)", sourceLocation: sourceLocation)
        let damage = (try? inspected.json() as? [String: Any])?["damage"] as? [String]
        #expect(damage == [], "\(context): \(store) is damaged: \(damage ?? [])", sourceLocation: sourceLocation)
        let held = try notes(in: store, quire, sourceLocation: sourceLocation)
        #expect(Set(held.values.map(\.id)).count == held.count, "\(context): an id is there twice", sourceLocation: sourceLocation)
        if let expected {
            // Compared apart from the #expect so that a failure prints the titles that differ, not every body.
            let differing = Set(held.keys).union(expected.keys).filter { held[$0]?.body != expected[$0] }.sorted()
            #expect(differing.isEmpty, "\(context): the notes of \(store) are not those committed: \(differing)", sourceLocation: sourceLocation)
        }
    }

    /// Every store is intact, holds `expected`, and all hold the same notes
    /// (ids, fields, update times), version vectors, and nothing pending.
    func expectConverged(_ stores: [String], holding expected: [String: String], _ quire: QuireRunner, _ context: String,
                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        var listings: [[String: ListedNote]] = []
        var versions: [[String: String]] = []
        for store in stores {
            try expectIntact(store, holding: expected, quire, context, sourceLocation: sourceLocation)
            let held = try notes(in: store, quire)
            listings.append(held)
            versions.append(try held.mapValues { try quire.ok(["vv", $0.id], store: store) })
        }
        let sameNotes = listings.allSatisfy { $0 == listings[0] }, sameVersions = versions.allSatisfy { $0 == versions[0] }
        #expect(sameNotes, "\(context): the stores hold different notes", sourceLocation: sourceLocation)
        #expect(sameVersions, "\(context): the stores hold different versions: \(versions)", sourceLocation: sourceLocation)
    }

    /// A laptop with notes of bodies up to 40 KB, and a phone with
    /// notes of its own, each made by `quire note new`; returns title to body.
    func writeNotes(laptop: String, phone: String, _ quire: QuireRunner, _ rng: inout SeededGenerator) throws -> [String: String] {
        var expected: [String: String] = [:]
        for (store, count) in [(laptop, 4), (phone, 2)] {
            try quire.ok(["init"], store: store)
            for index in 0..<count {
                let title = "\(store.hasSuffix("laptop.quire") ? "laptop" : "phone") \(index)"
                let body = try randomBody(&rng, in: quire, name: "body")
                try quire.ok(["note", "new", "--title", title, "--body-file", body.path], store: store)
                expected[title] = body.contents
            }
        }
        return expected
    }

    /// `count` changes to the body of note `id`, one character each, made
    /// in a scratch store and applied to `path` in one commit (fast: one
    /// disk sync); returns the body.
    func typeManyChanges(into id: DocumentID, of path: String, count: Int) throws -> String {
        let store = try DocumentStore(path: path)
        let scratch = try DocumentStore.inMemory()
        try scratch.create(id: id)
        _ = try scratch.apply(id, try store.changes(id))
        for index in 0..<count {
            try scratch.edit(id) { tx in
                guard case .object(.text, let body)? = try tx.document.get(.root, key: "body") else { return }
                try tx.insertText(body, at: index, String(UnicodeScalar(UInt8(ascii: "a") + UInt8(index % 26))))
            }
        }
        _ = try store.apply(id, try scratch.changes(id))
        return try store.read(id) { doc in
            guard case .object(.text, let body)? = try doc.get(.root, key: "body") else { return "" }
            return try doc.text(body)
        }
    }

    /// Text of up to 40 KB in a file of the runner's directory.
    func randomBody(_ rng: inout SeededGenerator, in quire: QuireRunner, name: String) throws -> (path: String, contents: String) {
        let lines = (0..<Int.random(in: 0...600, using: &rng)).map { line in
            "\(line) " + String((0..<60).map { _ in "abcdefghij klmnopqrstuvwxyz.é中😀".randomElement(using: &rng)! })
        }
        let contents = lines.joined(separator: "\n")
        let path = quire.directory + "/\(name).txt"
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        return (path, contents)
    }

    // MARK: - Processes

    /// `quire --store STORE ARGUMENTS` started, its output dropped.
    func start(_ quire: QuireRunner, _ arguments: [String], store: String? = nil) throws -> Process {
        let process = Process()
        process.executableURL = QuireRunner.binaryURL
        process.arguments = ["--store", store ?? quire.store] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    enum Outcome { case exited, killed }

    /// Runs `quire ARGUMENTS` and kills it with SIGKILL after a random time
    /// of up to `window` microseconds (about what the command takes here)
    /// unless it exited first, with success, by then.
    @discardableResult
    func runKilled(_ quire: QuireRunner, _ arguments: [String], store: String? = nil, within window: UInt32,
                   _ rng: inout SeededGenerator, sourceLocation: SourceLocation = #_sourceLocation) throws -> Outcome {
        let process = try start(quire, arguments, store: store)
        usleep(UInt32.random(in: 0...window, using: &rng))
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        if process.terminationReason == .uncaughtSignal { return .killed }
        #expect(process.terminationStatus == 0, "quire \(arguments.joined(separator: " ")) failed", sourceLocation: sourceLocation)
        return .exited
    }
}
