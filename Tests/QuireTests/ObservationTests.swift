import Dispatch
import Testing
@testable import Quire

@Suite struct ObservationTests {
    @Test func aLocalEditMakesOneEventWithWhatChanged() async throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        var events = store.events(of: id).makeAsyncIterator()

        let body = try store.edit(id) { tx in
            let body = try tx.putObject(.root, key: "body", kind: .text)
            try tx.insertText(body, at: 0, "Hi")
            try tx.put(.root, key: "pinned", .bool(true))
            return body
        }
        let event = try #require(await events.next())
        #expect(event.document == id && event.origin == .local)
        #expect(event.changeIDs == [OpID(replica: store.replicaID, counter: 1)])
        #expect(try event.versionVector == store.versionVector(id))
        #expect(event.changedObjects == [.root, body])
        #expect(event.changedKeys == [.root: ["body", "pinned"]])

        // An edit that changes nothing commits nothing, so it makes no event.
        try store.edit(id) { _ in }
        try store.edit(id) { tx in try tx.deleteText(body, at: 0, count: 1) }
        let next = try #require(await events.next())
        #expect(next.changedObjects == [body] && next.changedKeys.isEmpty)
    }

    @Test func remoteChangesMakeEventsOnceApplied() async throws {
        let laptop = try DocumentStore.inMemory(), phone = try DocumentStore.inMemory()
        let id: DocumentID = "note"
        try laptop.create(id: id)
        try phone.create(id: id)
        try laptop.edit(id) { tx in try tx.put(.root, key: "a", .int(1)) }
        try laptop.edit(id) { tx in try tx.put(.root, key: "b", .int(2)) }
        let changes = try laptop.changes(id)
        var events = phone.events(of: id).makeAsyncIterator()

        // The second change waits for the first (parked): no event until both apply.
        try phone.apply(id, [changes[1]])
        try phone.apply(id, [changes[0]])
        try phone.apply(id, changes)  // duplicates: nothing new, no event
        try phone.edit(id) { tx in try tx.put(.root, key: "c", .int(3)) }

        let remote = try #require(await events.next())
        #expect(remote.origin == .remote)
        #expect(remote.changeIDs == changes.map(\.id))
        #expect(remote.changedKeys == [.root: ["a", "b"]])
        let local = try #require(await events.next())
        #expect(local.origin == .local && local.changedKeys == [.root: ["c"]])
    }

    @Test func removingAndRestoringAnObservedDocumentSaySo() async throws {
        let store = try DocumentStore.inMemory(), other = try DocumentStore.inMemory()
        let id = try store.createDocument()
        try other.create(id: id)
        try other.edit(id) { tx in try tx.put(.root, key: "from", .string("other")) }
        var events = store.events(of: id).makeAsyncIterator()

        try store.edit(id) { tx in try tx.put(.root, key: "title", .string("Milk")) }
        try store.remove(id)
        try store.remove(id)  // no change of the mark: no event
        // A remote change to a removed document is still applied; its event says it is removed.
        try store.apply(id, other.changes(id))
        try store.restore(id)
        try store.restore(id)
        try store.edit(id) { tx in try tx.put(.root, key: "title", .string("Eggs")) }

        let edited = try #require(await events.next())
        #expect(edited.origin == .local && !edited.isRemoved && edited.changeIDs.count == 1)
        let removed = try #require(await events.next())
        #expect(removed == DocumentEvent(document: id, origin: .local, changeIDs: [], versionVector: edited.versionVector,
                                         changedObjects: [], changedKeys: [:], isRemoved: true))
        let remote = try #require(await events.next())
        #expect(remote.origin == .remote && remote.isRemoved && remote.changedKeys == [.root: ["from"]])
        let restored = try #require(await events.next())
        #expect(restored.origin == .local && !restored.isRemoved && restored.changeIDs.isEmpty)
        #expect(restored.versionVector == remote.versionVector)
        let editedAgain = try #require(await events.next())
        #expect(!editedAgain.isRemoved && editedAgain.changedKeys == [.root: ["title"]])
    }

    @Test func everyObserverGetsEveryEventOfWhatItWatches() async throws {
        let store = try DocumentStore.inMemory()
        let first = try store.createDocument(), second = try store.createDocument()
        var a = store.events(of: first).makeAsyncIterator()
        var b = store.events(of: first).makeAsyncIterator()
        var all = store.allEvents().makeAsyncIterator()

        try store.edit(second) { tx in try tx.put(.root, key: "x", .int(1)) }
        try store.edit(first) { tx in try tx.put(.root, key: "y", .int(2)) }

        #expect(await a.next()?.changedKeys == [.root: ["y"]])
        #expect(await b.next()?.changedKeys == [.root: ["y"]])
        #expect(await all.next()?.document == second)
        #expect(await all.next()?.document == first)
    }

    @Test func endingTheStreamRemovesTheObserver() async throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        let started = AsyncStream<Void>.makeStream()
        let task = Task {
            var count = 0
            started.continuation.yield()
            for await _ in store.events(of: id) { count += 1 }
            return count
        }
        var ready = started.stream.makeAsyncIterator()
        await ready.next()
        while store.observers.count == 0 { await Task.yield() }
        task.cancel()
        _ = await task.value
        while store.observers.count != 0 { await Task.yield() }  // a leak would hang here
        try store.edit(id) { tx in try tx.put(.root, key: "k", .int(1)) }

        // A stream released without ever being iterated goes too.
        do { _ = store.allEvents() }
        #expect(store.observers.count == 0)
    }

    @Test func releasingTheStoreEndsItsStreams() async throws {
        var store: DocumentStore? = try DocumentStore.inMemory()
        let id = try store!.createDocument()
        let events = store!.events(of: id)
        try store!.edit(id) { tx in try tx.put(.root, key: "k", .int(1)) }
        store = nil
        var received = 0
        for await _ in events { received += 1 }  // would hang if the stream stayed open
        #expect(received == 1)
    }

    @Test func aStreamAskedForAfterCloseEndsAtOnce() async throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        try store.close()
        // A view opened after its store was closed must not wait for ever.
        for events in [store.events(of: id), store.allEvents()] {
            let ended = await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    for await _ in events {}
                    return !Task.isCancelled
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(60))
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            #expect(ended)
        }
        #expect(store.observers.count == 0)
    }

    @Test func editsFromManyThreadsMakeOneEventEach() async throws {
        let store = try DocumentStore.inMemory()
        let ids = try (0..<4).map { _ in try store.createDocument() }
        var events = store.allEvents().makeAsyncIterator()
        let editsPerThread = 25

        DispatchQueue.concurrentPerform(iterations: ids.count * 2) { thread in
            // Two threads per document: their edits interleave and group-commit.
            for edit in 0..<editsPerThread {
                try! store.edit(ids[thread % ids.count]) { tx in try tx.put(.root, key: "t\(thread)", .int(Int64(edit))) }
            }
        }
        var seen: [DocumentID: [UInt64]] = [:]
        for _ in 0..<(ids.count * 2 * editsPerThread) {
            let event = try #require(await events.next())
            #expect(event.changeIDs.count == 1)
            seen[event.document, default: []].append(event.changeIDs[0].counter)
        }
        // Each document's changes, each exactly once, in commit order.
        for id in ids { #expect(seen[id] == Array(1...UInt64(2 * editsPerThread))) }
    }
}
