import Foundation
import QuireTestSupport
import Synchronization
import Testing
@testable import Quire

/// Two stores open on one file, as two `quire` processes are (a sync while
/// a note is edited in another terminal): each sees what the other wrote
/// before it edits, applies or snapshots, and nothing either wrote is lost.
@Suite struct SharedFileTests {
    /// A store on `path` and the text of document `id`, which it creates.
    func makeShared(_ path: String, _ id: DocumentID) throws -> (DocumentStore, ObjectID) {
        let store = try DocumentStore(path: path)
        try store.create(id: id)
        let body = try store.edit(id) { tx in
            let body = try tx.putObject(.root, key: "body", kind: .text)
            try tx.insertText(body, at: 0, "base")
            return body
        }
        return (store, body)
    }

    /// The text as each of `stores` reads it, then as a store opened afresh
    /// on `path` does (what the next process would see).
    func texts(_ stores: [DocumentStore], path: String, _ id: DocumentID, _ body: ObjectID) throws -> [String] {
        try (stores + [DocumentStore(path: path)]).map { store in try store.read(id) { try $0.text(body) } }
    }

    @Test func editsFromBothStoresFollowOneAnother() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", id: DocumentID = "note"
            let (first, body) = try makeShared(path, id)
            let second = try DocumentStore(path: path)
            #expect(try second.read(id) { try $0.text(body) } == "base")  // now cached by the second

            try first.edit(id) { tx in try tx.insertText(body, at: 4, " one") }
            try second.edit(id) { tx in try tx.insertText(body, at: tx.document.text(body).count, " two") }
            try first.edit(id) { tx in try tx.insertText(body, at: tx.document.text(body).count, " three") }

            #expect(try texts([first, second], path: path, id, body) == Array(repeating: "base one two three", count: 3))
        }
    }

    /// A creation unless the store holds a document like it (`note new
    /// --request-id`) looks in the transaction that would create it: one
    /// the other store (another process) made after the call began is the
    /// answer, and nothing more is saved. Looked at before that
    /// transaction, both were kept. Threads of one store racing (some in
    /// one batch of commits) make one too.
    @Test func aCreationUnlessTheStoreHoldsOneLikeItGivesWayToOneMadeMeanwhile() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire"
            let first = try DocumentStore(path: path), second = try DocumentStore(path: path)
            let isStandup: @Sendable (DocumentID) -> Bool = { $0.rawValue.hasPrefix("standup") }
            let outcome = try first.createDocument(id: "standup-1", unlessStoreHolds: isStandup) { tx in
                let other = try second.createDocument(id: "standup-2", unlessStoreHolds: isStandup) { tx in
                    try tx.put(.root, key: "by", .string("second"))
                }
                #expect(other.id == "standup-2" && other.isNew)
                try tx.put(.root, key: "by", .string("first"))
            }
            #expect(outcome.id == "standup-2" && !outcome.isNew)
            for store in [first, second, try DocumentStore(path: path)] {
                #expect(try store.documents().map(\.id) == ["standup-2"])
                #expect(try store.read("standup-2") { try $0.get(.root, key: "by") } == .scalar(.string("second")))
            }

            let outcomes = Mutex<[(id: DocumentID, isNew: Bool)]>([])
            #expect(runOnThreads(8) { thread in
                let store = thread.isMultiple(of: 2) ? first : second
                let made = try? store.createDocument(id: DocumentID(rawValue: "retro-\(thread)")!,
                                                     unlessStoreHolds: { $0.rawValue.hasPrefix("retro") }) { _ in }
                outcomes.withLock { $0.append(made ?? ("failed", false)) }
            })
            let retros = try first.documents().map(\.id).filter { $0.rawValue.hasPrefix("retro") }
            #expect(retros.count == 1)
            #expect(outcomes.withLock { $0.map(\.id) } == Array(repeating: retros[0], count: 8))
            #expect(outcomes.withLock { $0.filter(\.isNew).count } == 1)
        }
    }

    @Test func aSnapshotOfTheOtherStoreKeepsAnEditItHadNotSeen() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", id: DocumentID = "note"
            let (editor, body) = try makeShared(path, id)
            // The syncing store snapshots after every change.
            let syncing = try DocumentStore(path: path, snapshotInterval: 1)
            var remote = Document(replica: ReplicaID(0xFEED))
            try remote.apply(syncing.changes(id))

            try editor.edit(id) { tx in try tx.insertText(body, at: 0, "edited ") }
            try remote.transact { tx in try tx.insertText(body, at: 4, " (remote)") }
            try syncing.apply(id, remote.changes(since: syncing.read(id) { $0.versionVector }))
            try syncing.compact(id, keepHistory: false)

            #expect(try texts([syncing], path: path, id, body) == ["edited base (remote)", "edited base (remote)"])
        }
    }

    /// An edit whose document the other store wrote after this one took it
    /// runs again on what was written. Raced on every try but the last, it
    /// is still saved: the last try holds the lock file exclusive, so the
    /// other store can no longer commit in between.
    @Test(arguments: [1, DocumentStore.commitAttempts - 1])
    func anEditRacedByTheOtherStoreRunsAgainOnWhatItWrote(racedTries: Int) throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", id: DocumentID = "note"
            let (first, body) = try makeShared(path, id)
            let second = try DocumentStore(path: path)
            var runs = 0
            try first.edit(id) { tx in
                runs += 1
                // The other store commits after this edit took the document.
                if runs <= racedTries { try second.edit(id) { tx in try tx.insertText(body, at: 4, "!") } }
                try tx.insertText(body, at: 0, "<")
            }
            #expect(runs == racedTries + 1)
            let expected = "<base" + String(repeating: "!", count: racedTries)
            #expect(try texts([first], path: path, id, body) == [expected, expected])
        }
    }

    /// The raced try before the last is written by another thread's batch,
    /// and the last try then waits for a further batch to be written: a
    /// read meanwhile loads the document, and the other store writes it
    /// again before the last try takes the lock file. The last try must
    /// work on what the file holds once it has the lock, not on that copy:
    /// with it, it was raced once more and failed with `changedElsewhere`,
    /// though holding the lock file exclusive, and the edit was lost.
    @Test func theLastTryWorksOnWhatTheFileHoldsOnceItHasTheLock() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", id: DocumentID = "note"
            let (first, body) = try makeShared(path, id)
            let second = try DocumentStore(path: path)
            nonisolated(unsafe) var runs = 0
            nonisolated(unsafe) var outcome: Result<Void, any Error>?
            let edited = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                outcome = Result {
                    try first.edit(id) { tx in
                        runs += 1
                        if runs < DocumentStore.commitAttempts {
                            try second.edit(id) { tx in try tx.insertText(body, at: 4, "!") }
                            // Another thread's batch is being written: this try's commit waits in the queue.
                            if runs == DocumentStore.commitAttempts - 1 { first.isWriting = true }
                        }
                        try tx.insertText(body, at: 0, "<")
                    }
                }
                edited.signal()
            }
            func when(_ condition: () -> Bool) {
                while !first.condition.withLock(condition) { Thread.sleep(forTimeInterval: 0.001) }
            }
            // The other thread writes the batch holding the raced try, then starts another.
            when { !first.queue.isEmpty }
            first.condition.withLock {
                first.isWriting = false
                first.writeQueuedBatch()
                first.isWriting = true
            }
            // The last try waits for that batch; a read meanwhile caches the document.
            when { first.outcomes.isEmpty }
            #expect(try first.read(id) { try $0.text(body) } == "base!!")
            try second.edit(id) { tx in try tx.insertText(body, at: 4, "!") }
            first.condition.withLock {
                first.isWriting = false
                first.condition.broadcast()
            }
            edited.wait()

            #expect(throws: Never.self) { try outcome?.get() }
            #expect(runs == DocumentStore.commitAttempts)
            #expect(try texts([first, second], path: path, id, body) == Array(repeating: "<base!!!", count: 3))
        }
    }

    /// Two raced calls of this store reach their last tries at once. The
    /// second must wait for the first to end and take the lock file itself:
    /// run while the first held it, it went on without it once the first
    /// let it go, the other store wrote its document in between, and it
    /// failed with `changedElsewhere`, its edit lost.
    @Test func aLastTryWaitsForAnotherThreadsToEndAndTakesTheLockItself() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", id: DocumentID = "note"
            let (first, _) = try makeShared(path, id)
            let second = try DocumentStore(path: path)
            // Another thread's last try holds the lock file (only the mark: the
            // other store's racing commits must not wait for the file).
            first.condition.withLock { first.holdsWriterLock = true }
            // Set with `first.condition` held.
            nonisolated(unsafe) var (editRuns, pretendsBatch, otherEnded) = (0, false, false)
            nonisolated(unsafe) var outcome: Result<Void, any Error>?
            let edited = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                outcome = Result {
                    try first.edit(id) { tx in
                        editRuns += 1
                        if editRuns < DocumentStore.commitAttempts {
                            try second.edit(id) { tx in try tx.put(.root, key: "race \(editRuns)", .bool(true)) }
                        } else if !otherEnded {
                            // Run beside the other last try: its commit waits for another thread's batch meanwhile.
                            (first.isWriting, pretendsBatch) = (true, true)
                        }
                        try tx.put(.root, key: "edit", .bool(true))
                    }
                }
                edited.signal()
            }
            // The edit's raced tries are over: its last try waits for the other's, or runs.
            while !first.condition.withLock({
                editRuns == DocumentStore.commitAttempts - 1 && first.outcomes.isEmpty && !first.isWriting || pretendsBatch
            }) {
                Thread.sleep(forTimeInterval: 0.001)
            }
            // The other last try ends, and the other store writes the document.
            first.condition.withLock {
                (first.holdsWriterLock, otherEnded) = (false, true)
                first.condition.broadcast()
            }
            try second.edit(id) { tx in try tx.put(.root, key: "race 3", .bool(true)) }
            first.condition.withLock {
                if pretendsBatch { first.isWriting = false }
                first.condition.broadcast()
            }
            edited.wait()

            #expect(throws: Never.self) { try outcome?.get() }
            let keys = ["body", "edit", "race 1", "race 2", "race 3"]
            #expect(try [first, second, DocumentStore(path: path)].map { try $0.read(id) { try $0.keys(.root) } } == [keys, keys, keys])
        }
    }

    /// An apply of several documents, one of which the other store wrote, is
    /// written all at once when it runs again, and counts every change.
    @Test func anApplyRacedOnOneOfItsDocumentsRunsAgainWhole() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire"
            let (syncing, _) = try makeShared(path, "a")
            try syncing.create(id: "b")
            let editor = try DocumentStore(path: path)
            let remote = try DocumentStore.inMemory()
            var bundles: [(id: DocumentID, bundles: [[UInt8]])] = []
            for id: DocumentID in ["a", "b"] {
                try remote.create(id: id)
                try remote.apply(id, syncing.changes(id))
                try remote.edit(id) { tx in try tx.put(.root, key: "remote", .bool(true)) }
                bundles.append((id, [try ChangeEncoding.encode(remote.changes(id, since: syncing.versionVector(id)))]))
            }

            try editor.edit("b") { tx in try tx.put(.root, key: "editor", .bool(true)) }
            #expect(try syncing.apply(bundles: bundles) == 2)
            #expect(try syncing.read("b") { try $0.keys(.root) } == ["editor", "remote"])
        }
    }

    /// Another process holding the file's write lock without committing (a
    /// stopped one, a long transaction): an edit waits the busy timeout, then
    /// fails with an error that says what happened and what to do, and
    /// nothing of it is saved, in the file or in memory.
    @Test func anEditBehindALockHeldTooLongFailsSayingSoAndSavesNothing() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", id: DocumentID = "note"
            let (store, body) = try makeShared(path, id)
            let holder = try Database(path: path)
            try holder.execute(sql: "BEGIN IMMEDIATE")
            let error = try #require(throws: DatabaseError.self) {
                try store.edit(id) { tx in try tx.insertText(body, at: 0, "lost ") }
            }
            try holder.execute(sql: "ROLLBACK")
            holder.close()
            #expect(error.fileProblem == .busy)
            #expect("\(error)".contains("try again once it is done") && "\(error)".contains(path))
            #expect(try texts([store], path: path, id, body) == ["base", "base"])
            try store.edit(id) { tx in try tx.insertText(body, at: 0, "kept ") }
            #expect(try texts([store], path: path, id, body) == ["kept base", "kept base"])
        }
    }

    /// A removal made while a batch of this store waits in its write for
    /// another process's lock: the batch commits first, so its event comes
    /// first. (The removal wrote as soon as the batch let the file go, and
    /// sent its event before the batch's thread had the store's lock back.)
    @Test func aRemovalMadeWhileABatchIsWrittenHasItsEventAfterTheBatchs() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", id: DocumentID = "note", removed: DocumentID = "removed"
            let (store, body) = try makeShared(path, id)
            try store.create(id: removed)
            var events = store.allEvents().makeAsyncIterator()
            try Self.removeWhileABatchIsWritten(store, path: path, removed) { try store.edit(id) { tx in try tx.insertText(body, at: 0, "<") } }

            let first = try #require(await events.next()), second = try #require(await events.next())
            #expect([first.document, second.document] == [id, removed])
            #expect(first.changedObjects == [body] && second.isRemoved && second.changeIDs.isEmpty)
        }
    }

    /// Runs `edit` on a thread until its batch waits for the file's write
    /// lock, held here as another process would, then `store.remove(removed)`
    /// on another, and lets the file go once the removal waits too.
    private static func removeWhileABatchIsWritten(_ store: DocumentStore, path: String, _ removed: DocumentID,
                                                   edit: @escaping @Sendable () throws -> Void) throws {
        let holder = try Database(path: path)
        try holder.execute(sql: "BEGIN IMMEDIATE")
        let done = DispatchSemaphore(value: 0)
        let outcomes = Mutex<[Result<Void, any Error>]>([])
        let calls: [@Sendable () throws -> Void] = [edit, { try store.remove(removed) }]
        for call in calls {
            Thread.detachNewThread {
                let outcome = Result { try call() }
                outcomes.withLock { $0.append(outcome) }
                done.signal()
            }
            while !store.condition.withLock({ store.isWriting }) { Thread.sleep(forTimeInterval: 0.001) }
        }
        // Time for the removal to reach its wait (for the file, or for the batch); it cannot end before.
        Thread.sleep(forTimeInterval: 0.2)
        try holder.execute(sql: "ROLLBACK")
        holder.close()
        done.wait()
        done.wait()
        try outcomes.withLock { try $0.forEach { try $0.get() } }
    }

    @Test func aRemovalByTheOtherStoreIsSeen() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", id: DocumentID = "note"
            let (first, body) = try makeShared(path, id)
            try DocumentStore(path: path).remove(id)
            #expect(throws: StoreError.documentRemoved(id.rawValue)) {
                try first.edit(id) { tx in try tx.insertText(body, at: 0, "<") }
            }
        }
    }

    @Test func aRestoreByTheOtherStoreIsSeen() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", id: DocumentID = "note"
            let (first, body) = try makeShared(path, id)
            try first.remove(id)
            try DocumentStore(path: path).restore(id)
            try first.edit(id) { tx in try tx.insertText(body, at: 0, "<") }
            #expect(try texts([first], path: path, id, body) == ["<base", "<base"])
        }
    }

    /// The other store applies a remote change and compacts it out of the
    /// log: this store's copy, loaded before, has no log row past it and
    /// must still be reloaded, or its next snapshot, the newest, would lack
    /// the remote change (which the version table says the store holds).
    @Test func aCompactionByTheOtherStoreOfRowsThisCopyLacksIsSeen() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", id: DocumentID = "note"
            let (first, body) = try makeShared(path, id)
            let second = try DocumentStore(path: path)
            var remote = Document(replica: ReplicaID(0xFEED))
            try remote.apply(second.changes(id))
            try remote.transact { tx in try tx.insertText(body, at: 4, " remote") }
            try second.apply(id, remote.changes(since: second.read(id) { $0.versionVector }))
            try second.compact(id, keepHistory: false)

            #expect(try first.read(id) { try $0.text(body) } == "base remote")
            try first.edit(id) { tx in try tx.insertText(body, at: 0, "<") }
            try first.snapshot(id)
            #expect(try texts([first, second], path: path, id, body) == Array(repeating: "<base remote", count: 3))
        }
    }

    /// As above, but this store's next call on the document is a snapshot
    /// or a compaction, which take the cached copy without reading the
    /// file first. The remote change is older (a lower Lamport stamp) than
    /// this store's last edit, so no row past the copy's is left after the
    /// other store's compaction. The copy was taken for current: a
    /// compaction here lowered `log_start_seq` to it and deleted the other
    /// store's snapshot, the only copy of the remote change; two snapshots
    /// here pruned that snapshot and left the document unloadable.
    @Test(arguments: [false, true])
    func aSnapshotOrCompactionAfterTheOtherStoreCompactedRowsThisCopyLacksKeepsThem(compacting: Bool) throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", id: DocumentID = "note"
            let (first, body) = try makeShared(path, id)
            let second = try DocumentStore(path: path)
            var remote = Document(replica: ReplicaID(0xFEED))
            try remote.apply(first.changes(id))
            try remote.transact { tx in try tx.insertText(body, at: 0, "R") }
            for _ in 0..<3 { try first.edit(id) { tx in try tx.insertText(body, at: tx.document.text(body).count, "!") } }
            try second.apply(id, remote.changes(since: second.read(id) { $0.versionVector }))
            try second.compact(id, keepHistory: false)

            if compacting {
                try first.compact(id, keepHistory: false)
            } else {
                try first.snapshot(id)
                try first.snapshot(id)
            }
            #expect(try texts([first, second], path: path, id, body) == Array(repeating: "Rbase!!!", count: 3))
        }
    }

    /// The other store parks a remote change that waits for another; this
    /// store, whose copy was loaded before, then applies that other change:
    /// the parked one is applied and logged with it, not left parked though
    /// ready (applied in memory by the next load but never logged, and
    /// dropped from the file by the next apply).
    @Test func aChangeTheOtherStoreParkedIsAppliedWithWhatItWaitsFor() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", id: DocumentID = "note"
            let (first, body) = try makeShared(path, id)
            let second = try DocumentStore(path: path)
            var remote = Document(replica: ReplicaID(0xFEED))
            try remote.apply(second.changes(id))
            let base = remote.versionVector
            try remote.transact { tx in try tx.insertText(body, at: 4, " one") }
            let afterOne = remote.versionVector
            try remote.transact { tx in try tx.insertText(body, at: 8, " two") }
            let one = try remote.changes(since: base).filter { afterOne.contains($0.lastID) }
            let two = try remote.changes(since: afterOne)

            #expect(try second.apply(id, two) == 0)  // parked: it waits for `one`
            #expect(try first.apply(id, one) == 2)
            #expect(try first.read(id) { try $0.text(body) } == "base one two")
            #expect(try first.changes(id).filter { $0.replica == ReplicaID(0xFEED) }.count == 2)
            #expect(try first.database.query(sql: "SELECT count(*) FROM parked_changes")[0].int64(0) == 0)
            #expect(try texts([first, second], path: path, id, body) == Array(repeating: "base one two", count: 3))
        }
    }

    /// The other store creates a document that an apply here is bringing,
    /// after the apply found it missing: the apply runs again on the
    /// document the file now lists instead of failing on its row.
    @Test func aDocumentTheOtherStoreCreatesDuringAnApplyIsAppliedTo() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", id: DocumentID = "note"
            let syncing = try DocumentStore(path: path)
            let source = try DocumentStore.inMemory()
            try source.create(id: id)
            try source.edit(id) { tx in try tx.put(.root, key: "title", .string("remote")) }
            let bundle = try ChangeEncoding.encode(source.changes(id))

            // Holding the lock file keeps the apply's batch waiting, the
            // document found missing, until the other store has created it.
            let lock = try #require(LockFile(beside: path))
            #expect(lock.lock(exclusive: true, within: 0))
            let applied = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var outcome: Result<Int, any Error>?
            Thread.detachNewThread {
                outcome = Result { try syncing.apply(bundles: [(id, [bundle])]) }
                applied.signal()
            }
            while !syncing.condition.withLock({ syncing.isWriting }) { Thread.sleep(forTimeInterval: 0.001) }
            let other = try DocumentStore(path: path)
            try other.create(id: id)
            lock.unlock()
            applied.wait()

            #expect(try outcome?.get() == 1)
            #expect(try [syncing, other].map { try $0.state(id) } == [source.state(id), source.state(id)])
        }
    }

    /// Opening a store that needs no migration and is no copy, and reading
    /// it, take no write lock: another process writing for longer than the
    /// busy timeout (a long sync) keeps no one from opening and reading.
    @Test func aStoreOpensAndReadsWhileAnotherProcessWrites() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", id: DocumentID = "note"
            let (_, body) = try makeShared(path, id)
            let writer = try Database(path: path)
            try writer.write { _ in
                let reader = try DocumentStore(path: path)
                #expect(try reader.read(id) { try $0.text(body) } == "base")
            }
        }
    }
}
