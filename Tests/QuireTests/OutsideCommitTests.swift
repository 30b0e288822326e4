import Foundation
import QuireTestSupport
import Testing
@testable import Quire

/// Events for what others commit to a store's file (`checkForOutsideCommits`,
/// `watchOutsideCommits`): here another `DocumentStore` on the file; the
/// `quire` process is in quireTests' `OutsideCommitCommandTests`.
@Suite struct OutsideCommitTests {
    /// A store on a new file with a note whose body is "base", and a second
    /// store on the same file.
    func withTwoStores(onWarning: @escaping @Sendable (String) -> Void = DocumentStore.printWarning,
                       _ body: (_ path: String, _ first: DocumentStore, _ second: DocumentStore, _ id: DocumentID,
                                _ text: ObjectID) async throws -> Void) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", id: DocumentID = "note"
            let first = try DocumentStore(path: path, onWarning: onWarning)
            try first.create(id: id)
            let text = try first.edit(id) { tx in
                let text = try tx.putObject(.root, key: "body", kind: .text)
                try tx.insertText(text, at: 0, "base")
                return text
            }
            try await body(path, first, try DocumentStore(path: path), id, text)
        }
    }

    @Test func anotherStoresEditMakesOneOutsideEvent() async throws {
        try await withTwoStores { _, first, second, id, text in
            #expect(try first.read(id) { try $0.text(text) } == "base")  // cached
            var events = first.events(of: id).makeAsyncIterator()
            #expect(try first.checkForOutsideCommits().isEmpty)

            try second.edit(id) { tx in try tx.insertText(text, at: 4, " two") }
            try second.edit(id) { tx in try tx.put(.root, key: "pinned", .bool(true)) }
            let found = try first.checkForOutsideCommits()
            let secondsChanges = try second.changes(id).suffix(2)
            #expect(found == [DocumentEvent(
                document: id, origin: .outside, changeIDs: secondsChanges.map(\.id), versionVector: try second.versionVector(id),
                changedObjects: [text, .root], changedKeys: [.root: ["pinned"]])])
            #expect(await events.next() == found.first)
            // The cached copy was brought up to date by the look, not by the read.
            #expect(try first.cache[id]?.document.versionVector == second.versionVector(id))
            #expect(try first.read(id) { try $0.text(text) } == "base two")

            // Found once; this store's own edit is local only, never outside.
            #expect(try first.checkForOutsideCommits().isEmpty)
            try first.edit(id) { tx in try tx.insertText(text, at: 0, ">") }
            #expect(try first.checkForOutsideCommits().isEmpty)
            #expect(await events.next()?.origin == .local)
        }
    }

    /// Another store's removal or restore logs no change, yet this store's
    /// look finds it: an `outside` event with no changes, saying whether
    /// the document is removed, and the cached copy knows it.
    @Test func anotherStoresRemovalAndRestoreMakeOutsideEvents() async throws {
        try await withTwoStores { _, first, second, id, text in
            _ = try first.read(id) { try $0.text(text) }  // cached while not removed
            var events = first.events(of: id).makeAsyncIterator()
            let removal = DocumentEvent(document: id, origin: .outside, changeIDs: [], versionVector: try second.versionVector(id),
                                        changedObjects: [], changedKeys: [:], isRemoved: true)

            try second.remove(id)
            #expect(try first.checkForOutsideCommits() == [removal])
            #expect(await events.next() == removal)
            #expect(throws: StoreError.documentRemoved(id.rawValue)) { try first.edit(id) { tx in try tx.insertText(text, at: 0, "<") } }
            // Removing it again leaves the mark as it was: no event, as on the store that removes.
            try second.remove(id)
            #expect(try first.checkForOutsideCommits().isEmpty)

            try second.restore(id)
            var restoral = removal
            restoral.isRemoved = false
            #expect(try first.checkForOutsideCommits() == [restoral])
            #expect(await events.next() == restoral)
            try first.edit(id) { tx in try tx.insertText(text, at: 0, "<") }
            #expect(await events.next()?.origin == .local)
        }
    }

    /// A removal and changes found by one look make one event, which holds
    /// the changes and says the document is removed.
    @Test func anOutsideRemovalAndChangesInOneLookMakeOneEvent() async throws {
        try await withTwoStores { _, first, second, id, _ in
            let remote = try DocumentStore.inMemory()
            try remote.create(id: id)
            try remote.edit(id) { tx in try tx.put(.root, key: "from", .string("remote")) }
            try second.remove(id)
            try second.apply(id, remote.changes(id))
            let found = try first.checkForOutsideCommits()
            #expect(found.map(\.changeIDs) == [try remote.changes(id).map(\.id)])
            #expect(found.first?.isRemoved == true)
        }
    }

    /// Another store on the file drops its copy of a note (`discardCopy`,
    /// `quire sync --take-theirs` beside an app): this store's look finds
    /// the drop, which deletes the note's rows and logs nothing. The event
    /// names every object and key of the copy this store had loaded, with
    /// the version the file holds: empty while the peer's copy has not come
    /// (a read then finds no note), the peer's once it has (with its
    /// changes, and a read shows it, not the dropped copy). The dropping
    /// store's own drop is no outside event to it. (Nothing in the file
    /// recorded a drop: no event at all, or, the peer's copy applied, one
    /// naming only the keys its changes touched, not `body` and `items`.)
    @Test(arguments: [false, true])
    func anotherStoresDropOfACopyMakesAnOutsideEvent(peersCopyCame: Bool) async throws {
        try await withTwoStores { _, first, second, id, text in
            let items = try first.edit(id) { tx in
                let items = try tx.putObject(.root, key: "items", kind: .map)
                try tx.put(items, key: "milk", .int(2))
                return items
            }
            #expect(try first.read(id) { try $0.text(text) } == "base")  // cached
            #expect(try second.checkForOutsideCommits().count == 1)  // the edit above
            let events = first.events(of: id)
            let peer = try DocumentStore.inMemory()
            try peer.create(id: id)
            try peer.edit(id) { tx in try tx.put(.root, key: "from", .string("peer")) }

            try second.discardCopy(of: id, resyncingWith: "server")
            if peersCopyCame {
                try second.create(id: id)
                try second.apply(id, peer.changes(id))
            }
            let found = try first.checkForOutsideCommits()
            let dropped = DocumentEvent(
                document: id, origin: .outside, changeIDs: peersCopyCame ? try peer.changes(id).map(\.id) : [],
                versionVector: peersCopyCame ? try peer.versionVector(id) : [:], changedObjects: [.root, text, items],
                changedKeys: [.root: peersCopyCame ? ["body", "items", "from"] : ["body", "items"], items: ["milk"]])
            #expect(found == [dropped])
            #expect(await nextElement(of: events) == dropped)
            if peersCopyCame {
                #expect(try first.read(id) { try $0.get(.root, key: "from") } == .scalar(.string("peer")))
                #expect(try first.read(id) { try $0.get(.root, key: "body") } == nil)
            } else {
                #expect(throws: StoreError.noSuchDocument(id.rawValue)) { try first.read(id) { _ in } }
            }
            #expect(try first.checkForOutsideCommits().isEmpty)
            #expect(try second.checkForOutsideCommits().isEmpty)
        }
    }

    /// This store removes a document right after another store removed
    /// another: the other's removal is still found, once, and this store's
    /// own makes only its `local` event.
    @Test func anOutsideRemovalBeforeAnOwnOneIsStillFoundOnce() async throws {
        try await withTwoStores { _, first, second, id, _ in
            let other: DocumentID = "other"
            try first.create(id: other)
            var events = first.allEvents().makeAsyncIterator()
            try second.remove(other)
            try first.remove(id)
            #expect(await events.next().map { [$0.document: $0.origin] } == [id: .local])
            #expect(try first.checkForOutsideCommits().map { [$0.document: $0.isRemoved] } == [[other: true]])
            #expect(try first.checkForOutsideCommits().isEmpty)
            try first.restore(id)
            #expect(try first.checkForOutsideCommits().isEmpty)
        }
    }

    /// This store edits the document right after another store did: the
    /// edit reloads it, and the other store's change is still reported,
    /// once, and this store's never.
    @Test func anOutsideCommitBeforeAnOwnOneIsStillFoundOnce() async throws {
        try await withTwoStores { _, first, second, id, text in
            _ = try first.read(id) { _ in }
            try second.edit(id) { tx in try tx.insertText(text, at: 0, "a") }
            try first.edit(id) { tx in try tx.insertText(text, at: 0, "b") }
            try second.edit(id) { tx in try tx.insertText(text, at: 0, "c") }
            try first.edit(id) { tx in try tx.insertText(text, at: 0, "d") }

            let found = try first.checkForOutsideCommits()
            let all = try first.changes(id).map(\.id)
            #expect(found.map(\.document) == [id])
            #expect(found.first?.changeIDs == [all[1], all[3]])
            #expect(try first.checkForOutsideCommits().isEmpty)
        }
    }

    /// The other store compacts the document after changing it, before this
    /// one looks: the changes it deleted cannot be listed, so the event
    /// names every object of the document, and the version it has.
    @Test func anOutsideCompactionStillMakesAnEvent() async throws {
        try await withTwoStores { _, first, second, id, text in
            _ = try first.read(id) { _ in }
            var remote = Document(replica: ReplicaID(0xFEED))
            try remote.apply(second.changes(id))
            // Applied one at a time: a row each.
            try remote.transact { tx in try tx.insertText(text, at: 4, " remote") }
            try second.apply(id, remote.changes(since: second.versionVector(id)))
            try remote.transact { tx in try tx.put(.root, key: "title", .string("T")) }
            try second.apply(id, remote.changes(since: second.versionVector(id)))
            try second.compact(id, keepHistory: false)
            let rows = try first.database.query(sql: "SELECT count(*) FROM changes")[0].int64(0)
            #expect(rows == 2)  // the local first edit and the newest change: the other remote one is gone

            let found = try first.checkForOutsideCommits()
            #expect(found.count == 1)
            let event = try #require(found.first)
            #expect(event.origin == .outside)
            #expect(try event.versionVector == second.versionVector(id))
            #expect(event.changeIDs == [try remote.changes(since: VersionVector()).last!.id])
            #expect(event.changedObjects == [.root, text] && event.changedKeys == [.root: ["body", "title"]])
            #expect(try first.read(id) { try $0.text(text) } == "base remote")

            // A compaction that adds nothing is no commit.
            try second.compact(id, keepHistory: false)
            #expect(try first.checkForOutsideCommits().isEmpty)
        }
    }

    /// A row another process logged that does not decode is reported, and
    /// the other documents' events still come.
    @Test func aDamagedOutsideRowIsReported() async throws {
        let warnings = WarningLog()
        try await withTwoStores(onWarning: warnings.handler) { _, first, second, id, text in
            try second.create(id: "other")
            try second.edit("other") { tx in try tx.put(.root, key: "k", .int(1)) }
            try second.edit(id) { tx in try tx.insertText(text, at: 0, "x") }
            let damaged = try second.database.query(sql: "SELECT max(seq) FROM changes")[0].int64(0)
            try second.database.execute(sql: "UPDATE changes SET data = x'00' WHERE seq = ?", arguments: [.integer(damaged)])

            let found = try first.checkForOutsideCommits()
            #expect(found.map(\.document) == ["other", id])
            #expect(found.first?.changedKeys == [.root: ["k"]])
            // Nothing of the damaged change can be named; reading the note says why.
            #expect(found.last?.changeIDs == [] && found.last?.changedObjects == [])
            #expect(warnings.all.contains { $0.contains("change \(damaged) of document note is corrupt") })
            #expect(throws: StoreError.self) { try first.read(id) { _ in } }
            #expect(try first.read("other") { try $0.get(.root, key: "k") } == .scalar(.int(1)))
        }
    }

    @Test func theWatchDeliversWithoutACall() async throws {
        try await withTwoStores { _, first, second, id, text in
            first.watchOutsideCommits(every: 0.01)
            let events = first.events(of: id)
            try second.edit(id) { tx in try tx.insertText(text, at: 0, "watched ") }

            let event = await nextElement(of: events)
            #expect(event?.origin == .outside)
            #expect(try event?.changeIDs == [second.changes(id).last!.id])
            // Found by the watch: nothing is left for a call.
            #expect(try first.checkForOutsideCommits().isEmpty)
        }
    }

    /// With no stream open the watch looks at nothing: what the other store
    /// wrote is still there for a call to find. (A watch that looked anyway
    /// would have found it many times over meanwhile.)
    @Test func theWatchLooksOnlyWhileSomeoneObserves() async throws {
        try await withTwoStores { _, first, second, id, text in
            first.watchOutsideCommits(every: 0.001)
            try second.edit(id) { tx in try tx.insertText(text, at: 0, "unwatched ") }
            try await Task.sleep(for: .milliseconds(200))
            #expect(try first.checkForOutsideCommits().count == 1)
        }
    }

    /// Threads edit through a watched store while another store edits the
    /// same documents: group commits, the watch's looks and retries after
    /// the other store's writes interleave, and still each commit is in
    /// exactly one event of the right origin.
    @Test func threadsAndTheWatchReportEachCommitOnce() async throws {
        try await withTwoStores { _, first, second, _, _ in
            let ids = try (0..<3).map { index -> DocumentID in
                let id = DocumentID(rawValue: "doc-\(index)")!
                try first.create(id: id)
                return id
            }
            first.watchOutsideCommits(every: 0.001)
            let events = first.allEvents()
            let stores = [first, first, first, second]
            #expect(await runOnThreadsAsync(stores.count) { thread in
                for edit in 0..<15 {
                    try! stores[thread].edit(ids[(thread + edit) % ids.count]) { tx in
                        try tx.put(.root, key: "t\(thread)", .int(Int64(edit)))
                    }
                }
            })
            try first.checkForOutsideCommits()
            try first.close()
            var outside = 0, own = 0
            for await event in events { if event.origin == .outside { outside += event.changeIDs.count } else { own += event.changeIDs.count } }
            #expect(outside == 15 && own == 45)
        }
    }

    @Test func closingOrReleasingTheStoreStopsTheWatch() async throws {
        try await withTwoStores { path, first, _, _, _ in
            first.watchOutsideCommits(every: 0.01)
            let events = first.allEvents()
            #expect(first.outsideWatch.isRunning)
            try first.close()
            #expect(!first.outsideWatch.isRunning)
            for await _ in events {}  // ended by close
            first.watchOutsideCommits(every: 0.01)
            #expect(!first.outsideWatch.isRunning)

            var released: DocumentStore? = try DocumentStore(path: path)
            let watch = released!.outsideWatch
            released!.watchOutsideCommits(every: 0.01)
            _ = released!.allEvents()
            try released!.stopWatchingOutsideCommits()
            #expect(!watch.isRunning)
            released!.watchOutsideCommits(every: 0.01)
            #expect(watch.isRunning)
            released = nil
            // Its thread ends on its own; the test hangs if it never does.
            while watch.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        }
    }

    /// Two stores on one file commit at random (edits, and remote changes
    /// applied), each looking for outside commits at random: each sees as
    /// outside exactly the other's commits, once each, and its own only as
    /// local or remote.
    @Test(arguments: 0..<UInt64(fuzzSeedCount(default: 3)))
    func eachStoreSeesEveryCommitOfTheOtherOnce(seed: UInt64) async throws {
        try await withTwoStores { _, first, second, _, _ in
            var rng = SeededGenerator(seed: seed)
            let stores = [first, second]
            let streams = stores.map { $0.allEvents() }
            let ids = try (0..<3).map { index -> DocumentID in
                let id = DocumentID(rawValue: "doc-\(index)")!
                try first.create(id: id)
                try first.edit(id) { tx in try RandomEdits.setUp(&tx) }
                return id
            }
            var remotes = ids.indices.map { Document(replica: ReplicaID(0xFEED + UInt64($0))) }
            var returned: [[DocumentEvent]] = [[], []]
            for _ in 0..<40 {
                let side = Int.random(in: 0...1, using: &rng), doc = Int.random(in: 0..<ids.count, using: &rng)
                switch Int.random(in: 0..<5, using: &rng) {
                case 0:
                    returned[side] += try stores[side].checkForOutsideCommits()
                case 1:
                    let before = remotes[doc].versionVector
                    try remotes[doc].transact { tx in try tx.put(.root, key: "r", .int(Int64(rng.next() % 100))) }
                    try stores[side].apply(ids[doc], remotes[doc].changes(since: before))
                default:
                    try stores[side].edit(ids[doc]) { tx in try RandomEdits.edit(&tx, using: &rng) }
                }
            }
            for side in 0...1 { returned[side] += try stores[side].checkForOutsideCommits() }
            // Every commit made while the streams were open, by document (a
            // change's id is only unique in its document).
            let everyChange = try ids.flatMap { id in try first.changes(id).map { "\(id) \($0.id)" } }.sorted()
            for store in stores { try store.close() }  // ends the streams

            func changes(_ events: [DocumentEvent]) -> [String] {
                events.flatMap { event in event.changeIDs.map { "\(event.document) \($0)" } }
            }
            var outside: [[String]] = [], own: [[String]] = []
            for side in 0...1 {
                var events: [DocumentEvent] = []
                for await event in streams[side] { events.append(event) }
                #expect(events.filter { $0.origin == .outside } == returned[side], "seed \(seed)")
                outside.append(changes(events.filter { $0.origin == .outside }))
                own.append(changes(events.filter { $0.origin != .outside }))
            }
            for side in 0...1 {
                #expect(outside[side].sorted() == own[1 - side].sorted(), "seed \(seed)")
                #expect((outside[side] + own[side]).sorted() == everyChange, "seed \(seed)")
            }
        }
    }
}
