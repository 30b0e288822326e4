import Foundation
import QuireTestSupport
import Synchronization
import Testing
@testable import Quire

/// `store.async`: the store's calls from the main actor and from tasks, run
/// on the threads kept for store calls, with the synchronous calls' results and errors.
@Suite struct AsyncStoreTests {
    struct Note: Codable, Equatable { var title: String; var tags: [String] }

    struct Refused: Error, Equatable {}

    /// Every call gives what its synchronous call gives, and fails with the
    /// same error, the store left as it was.
    @Test func resultsAndErrorsAreTheSynchronousCalls() async throws {
        try await withTemporaryDirectory { directory in
            let store = try DocumentStore(path: directory + "/notes.quire")
            let id = try await store.async.createDocument { tx in try tx.write(Note(title: "Milk", tags: []), into: .root) }
            try await store.async.create(id: "groceries")
            let title = try await store.async.edit(id) { tx in
                try tx.write(Note(title: "Oat milk", tags: ["food"]), into: .root)
                return try tx.document.read(Note.self, from: .root).title
            }
            #expect(title == "Oat milk")
            #expect(try await store.async.read(id) { doc in try doc.read(Note.self, from: .root) } == Note(title: "Oat milk", tags: ["food"]))
            #expect(try await store.async.read(id) { $0.versionVector } == store.read(id) { $0.versionVector })
            #expect(try await store.async.documents() == store.documents())
            #expect(try await store.async.documents().map(\.id) == [id, "groceries"].sorted())
            #expect(try await store.async.versionVector(id) == store.versionVector(id))
            #expect(try await store.async.changes(id) == store.changes(id))
            #expect(try await store.async.changes(id).count == 2)
            #expect(try await store.async.outbox(peer: "server") == store.outbox(peer: "server"))
            #expect(try await store.async.outbox(peer: nil)[id]?.count == 2)
            #expect(try await store.async.lastChangeTime(id) == store.lastChangeTime(id))
            try await store.async.acknowledge(peer: "server", id: id, version: store.versionVector(id))
            #expect(try await store.async.outbox(peer: "server").isEmpty)
            // No peer named: what no peer holds, nothing once "server" holds it.
            #expect(try await store.async.outbox(peer: nil).isEmpty)
            try await store.async.snapshot(id)
            try await store.async.compact(id, keepHistory: true)
            #expect(try await store.async.checkForOutsideCommits().isEmpty)

            let copy = try DocumentStore.inMemory()
            try copy.create(id: id)
            #expect(try await copy.async.apply(id, store.changes(id)) == 2)
            #expect(try copy.read(id) { try $0.read(Note.self, from: .root) } == Note(title: "Oat milk", tags: ["food"]))

            try await store.async.remove("groceries")
            #expect(try await store.async.documents(includeRemoved: true) == store.documents(includeRemoved: true))
            let before = try store.versionVector(id)
            let failures: [(String, () throws -> Void, () async throws -> Void)] = [
                ("a missing document", { _ = try store.read("missing") { $0.versionVector } },
                 { _ = try await store.async.read("missing") { $0.versionVector } }),
                ("a taken id", { try store.create(id: id) }, { try await store.async.create(id: id) }),
                ("a removed document", { try store.edit("groceries") { tx in try tx.put(.root, key: "k", .int(1)) } },
                 { try await store.async.edit("groceries") { tx in try tx.put(.root, key: "k", .int(1)) } }),
                ("a body that throws", { try store.edit(id) { tx in try tx.put(.root, key: "k", .int(1)); throw Refused() } },
                 { try await store.async.edit(id) { tx in try tx.put(.root, key: "k", .int(1)); throw Refused() } }),
                ("a call from inside a body", { try store.edit(id) { _ in _ = try store.read(id) { $0 } } },
                 { try await store.async.edit(id) { _ in _ = try store.read(id) { $0 } } }),
            ]
            for (what, synchronous, asynchronous) in failures {
                let expected = try #require(Self.error { try synchronous() }, "\(what)")
                let thrown = try #require(await Self.error { try await asynchronous() }, "\(what)")
                #expect(type(of: thrown) == type(of: expected), "\(what)")
                #expect("\(thrown)" == "\(expected)", "\(what)")
            }
            #expect(try store.versionVector(id) == before)
            #expect(try await store.async.read(id) { doc in try doc.get(.root, key: "k") } == nil)
            try await store.async.restore("groceries")
            #expect(try await store.async.documents().count == 2)

            try await store.async.close()
            await #expect(throws: DatabaseError.self) { try await store.async.documents() }
        }
    }

    /// A store opened and backed up from a task, whose open
    /// (an upgrade, a vacuum) and backup (the whole file) block: the calls
    /// give what the synchronous ones give, errors too, nothing written.
    @Test func openingAndBackingUpRunOffTheCallersThread() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await DocumentStore.open(path: directory + "/notes.quire")
            let id = try await store.async.createDocument { tx in try tx.write(Note(title: "Milk", tags: []), into: .root) }
            try await store.async.backup(to: directory + "/backup.quire")
            let backup = try await DocumentStore.open(path: directory + "/backup.quire", readOnly: true)
            #expect(try backup.read(id) { try $0.read(Note.self, from: .root) } == Note(title: "Milk", tags: []))
            #expect(backup.replicaID == store.replicaID)  // read-only: no new id minted

            let expected = try #require(Self.error { try store.backup(to: directory + "/backup.quire") })
            let thrown = try #require(await Self.error { try await store.async.backup(to: directory + "/backup.quire") })
            #expect("\(thrown)" == "\(expected)")
            try Data("not a store".utf8).write(to: URL(fileURLWithPath: directory + "/text.quire"))
            let notOpened = try #require(await Self.error { _ = try await DocumentStore.open(path: directory + "/text.quire") })
            #expect("\(notOpened)" == "\(try #require(Self.error { _ = try DocumentStore(path: directory + "/text.quire") }))")
            #expect(try String(contentsOfFile: directory + "/text.quire", encoding: .utf8) == "not a store")
        }
    }

    /// The main actor goes on (and another call of the store completes)
    /// while an edit's commit waits for the lock another process holds.
    @MainActor @Test func theMainActorRunsWhileACommitWaitsForAnotherProcesssLock() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/notes.quire"
            let store = try DocumentStore(path: path)
            store.writerLockTimeout = 3600
            let id = try store.createDocument()
            let other = try store.createDocument { tx in try tx.put(.root, key: "title", .string("Other")) }
            let otherProcess = try #require(LockFile(beside: path))
            #expect(otherProcess.lock(exclusive: true, within: 0))

            let ended = Mutex(false)
            let edit = Task {
                defer { ended.withLock { $0 = true } }
                try await store.async.edit(id) { tx in try tx.put(.root, key: "title", .string("Milk")) }
            }
            // Run on the main actor, so only while nothing blocks it. No
            // deadline: on a loaded machine the edit may take minutes to reach
            // its commit (a 60 s one failed so); it cannot end without the lock.
            while !store.condition.withLock({ store.isWriting }) && !ended.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(1)) }
            #expect(store.condition.withLock { store.isWriting }, "the main actor never ran while the commit waited")
            let title = try await store.async.read(other) { doc in try doc.get(.root, key: "title") }
            #expect(title == .scalar(.string("Other")))
            otherProcess.unlock()
            try await edit.value
            #expect(try await store.async.read(id) { doc in try doc.get(.root, key: "title") } == .scalar(.string("Milk")))
        }
    }

    /// A call's work runs on a thread kept for store calls, neither on the main
    /// thread nor on the thread of the task that awaits it (a thread of
    /// Swift's cooperative pool, which a wait for a lock or a disk sync
    /// would hold up).
    @MainActor @Test func callsRunOnAThreadOfTheStores() async throws {
        let store = try DocumentStore.inMemory()
        let id = try await store.async.createDocument()
        #expect(try await store.async.read(id) { _ in !Thread.isMainThread })
        let threads = try await Task.detached {
            let caller = Self.currentThread()
            return (caller, try await store.async.edit(id) { _ in Self.currentThread() })
        }.value
        #expect(threads.0 != threads.1)
    }

    /// Calls awaited one after another run on one thread, though each is on
    /// another store (a sync into a new store each time): a thread started
    /// each time gets fresh memory, which the kernel supplies a page fault
    /// at a time. The stores' threads here are a pool of the test's own, so
    /// that other tests' calls do not take them, whose threads wait an hour
    /// for the next call, so that none ends while other tests hold up this
    /// one's task.
    @Test func callsAwaitedInTurnOnSeveralStoresShareOneThread() async throws {
        let threads = StoreThreads(idleSeconds: 3600)
        let stores = (0..<3).map { _ in CallThreads(threads: threads) }
        var ran: Set<ObjectIdentifier> = []
        for call in 0..<300 {
            ran.insert(try await stores[call % stores.count].run { Self.currentThread() })
        }
        #expect(ran.count == 1)
        #expect(threads.threadsStarted == 1)
    }

    /// The thread running this: `Thread.current` is not to be read in an async function.
    private static func currentThread() -> ObjectIdentifier { ObjectIdentifier(Thread.current) }

    /// A call whose task is cancelled before it starts does nothing: its
    /// body never runs and nothing is committed.
    @Test func aCallCancelledBeforeItStartsDoesNothing() async throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        let ran = Flag()
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await store.async.edit(id) { tx in
                ran.raise()
                try tx.put(.root, key: "k", .int(1))
            }
        }
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(!ran.isRaised, "the cancelled call ran")
        #expect(try store.versionVector(id).isEmpty)
    }

    /// A call that waits for a thread (all of the store's are busy) and is
    /// cancelled returns at once, while they are still busy, and never runs.
    @Test func aCallCancelledWhileItWaitsForAThreadNeverRuns() async throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        // A read held open keeps the store locked, so every call that starts waits.
        let (reading, readDone) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        Thread.detachNewThread {
            try! store.read(id) { _ in
                reading.signal()
                readDone.wait()
            }
        }
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                reading.wait()
                continuation.resume()
            }
        }
        let blocked = (0..<CallThreads.limit).map { _ in Task { try await store.async.versionVector(id) } }
        #expect(await eventually { store.callThreads.counts == (CallThreads.limit, 0) })
        let ran = Flag()
        let waiting = Task {
            try await store.async.edit(id) { tx in
                ran.raise()
                try tx.put(.root, key: "k", .int(1))
            }
        }
        #expect(await eventually { store.callThreads.counts.waiting == 1 })
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(store.callThreads.counts == (CallThreads.limit, 1), "the threads were freed before the cancelled call returned")

        readDone.signal()
        for task in blocked { #expect(try await task.value.isEmpty) }
        #expect(await eventually { store.callThreads.counts == (0, 0) })
        #expect(!ran.isRaised, "the cancelled call ran")
        #expect(try store.versionVector(id).isEmpty)
    }

    /// A call that has started ends as it would have, though its task is
    /// cancelled meanwhile, and returns its result: the edit is committed.
    @Test func aStartedCallEndsThoughItsTaskIsCancelled() async throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        let (started, goOn) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let edit = Task {
            try await store.async.edit(id) { tx in
                started.signal()
                goOn.wait()
                try tx.put(.root, key: "k", .int(1))
                return "committed"
            }
        }
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                started.wait()
                continuation.resume()
            }
        }
        edit.cancel()
        goOn.signal()
        #expect(try await edit.value == "committed")
        #expect(try store.read(id) { doc in try doc.get(.root, key: "k") } == .scalar(.int(1)))
        #expect(try store.changes(id).count == 1)
    }

    /// Edits from many tasks at once, more than the store has threads, on a
    /// few documents: every one is committed, once.
    @Test func manyConcurrentEditsFromSeparateTasksAllLand() async throws {
        try await withTemporaryDirectory { directory in
            let store = try DocumentStore(path: directory + "/notes.quire")
            var ids: [DocumentID] = []
            for _ in 0..<8 { ids.append(try await store.async.createDocument { tx in _ = try tx.putObject(.root, key: "count", kind: .counter) }) }
            let edits = 400
            try await withThrowingTaskGroup(of: Void.self) { group in
                for edit in 0..<edits {
                    let id = ids[edit % ids.count]
                    group.addTask {
                        try await store.async.edit(id) { tx in
                            guard case .object(_, let counter)? = try tx.document.get(.root, key: "count") else { throw Refused() }
                            try tx.increment(counter, by: 1)
                        }
                    }
                }
                try await group.waitForAll()
            }
            var total = 0
            for id in ids {
                let count = try await store.async.read(id) { doc -> Int64 in
                    guard case .object(_, let counter)? = try doc.get(.root, key: "count") else { throw Refused() }
                    return try doc.counter(counter)
                }
                #expect(count == Int64(edits / ids.count))
                #expect(try await store.async.changes(id).count == 1 + edits / ids.count)
                total += Int(count)
            }
            #expect(total == edits)
            // And as the file holds them.
            let reopened = try DocumentStore(path: directory + "/notes.quire")
            #expect(try ids.map { try reopened.changes($0).count }.reduce(0, +) == ids.count + edits)
        }
    }

    /// The calls one task awaits in turn commit in that order.
    @Test func editsAwaitedInTurnCommitInCallOrder() async throws {
        let store = try DocumentStore.inMemory()
        let first = try await store.async.createDocument(), second = try await store.async.createDocument()
        var expected: [String] = []
        for round in 0..<20 {
            let id = round.isMultiple(of: 3) ? first : second
            try await store.async.edit(id) { tx in try tx.put(.root, key: "round", .int(Int64(round))) }
            expected.append(id.rawValue)
        }
        let logged = try store.database.query(sql: "SELECT d.id FROM changes c JOIN documents d ON d.number = c.document ORDER BY c.seq").map { try $0.text(0) }
        #expect(logged == expected)
        #expect(try await store.async.read(second) { doc in try doc.get(.root, key: "round") } == .scalar(.int(19)))
    }

    /// Raised by a body that must not run.
    final class Flag: Sendable {
        private let raised = Atomic(false)
        var isRaised: Bool { raised.load(ordering: .sequentiallyConsistent) }
        func raise() { raised.store(true, ordering: .sequentiallyConsistent) }
    }

    private static func error(_ body: () throws -> Void) -> (any Error)? {
        do { try body() } catch { return error }
        return nil
    }

    private static func error(_ body: () async throws -> Void) async -> (any Error)? {
        do { try await body() } catch { return error }
        return nil
    }

    /// Waits until `condition` holds, looking every millisecond; false if it
    /// still does not after a minute, far longer than any wait here takes.
    private func eventually(isolation: isolated (any Actor)? = #isolation, _ condition: () -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(60)
        while !condition() {
            guard Date() < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }
}
