import CSQLite
import Foundation
import QuireTestSupport
import Testing
@testable import Quire
import QuireStore

@Suite struct DocumentStoreTests {
    struct Oops: Error {}

    @Test func createListEditReadRemoveRestore() throws {
        let store = try DocumentStore.inMemory()
        let named: DocumentID = "groceries"
        try store.create(id: named)
        let generated = try store.createDocument()
        #expect(throws: StoreError.documentExists("groceries")) { try store.create(id: named) }
        #expect(try Set(store.documents().map(\.id)) == [named, generated])

        try store.edit(named) { tx in try tx.put(.root, key: "title", .string("Milk")) }
        #expect(try store.read(named) { try $0.get(.root, key: "title") } == .scalar(.string("Milk")))

        try store.remove(named)
        #expect(try store.documents().map(\.id) == [generated])
        #expect(try store.documents(includeRemoved: true).count == 2)
        #expect(throws: StoreError.documentRemoved("groceries")) {
            try store.edit(named) { tx in try tx.put(.root, key: "title", .string("Eggs")) }
        }
        try store.restore(named)
        try store.edit(named) { tx in try tx.put(.root, key: "title", .string("Eggs")) }
        #expect(try store.read(named) { $0.changeCount } == 2)
        #expect(throws: StoreError.noSuchDocument("nope")) { try store.read("nope") { _ in } }
    }

    /// A document made with its first change under a client-made id (`note
    /// new --request-id` keeps its key in one); an id the store holds is
    /// refused, and nothing of the call is saved.
    @Test func aDocumentIsMadeWithItsFirstChangeUnderAClientMadeID() throws {
        let store = try DocumentStore.inMemory()
        #expect(try store.createDocument(id: "groceries") { tx in try tx.put(.root, key: "title", .string("Milk")) } == "groceries")
        #expect(throws: StoreError.documentExists("groceries")) {
            try store.createDocument(id: "groceries") { tx in try tx.put(.root, key: "title", .string("Eggs")) }
        }
        #expect(try store.read("groceries") { try $0.get(.root, key: "title") } == .scalar(.string("Milk")))
        #expect(try store.read("groceries") { $0.changeCount } == 1)
        #expect(try store.documents().map(\.id) == ["groceries"])
    }

    /// An id gone stale (a document of another store, a typo) is no
    /// document without changes: every call taking an id says so.
    @Test func aDocumentTheStoreDoesNotListHasNoLastChangeTime() throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        #expect(try store.lastChangeTime(id) == nil)
        #expect(throws: StoreError.noSuchDocument("groceries")) { try store.lastChangeTime("groceries") }
    }

    @Test func anEditTimeOutOfRangeIsRecordedAsTheNearestOneInRange() throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        try store.edit(id, time: Date(timeIntervalSince1970: 1e300)) { tx in try tx.put(.root, key: "a", .int(1)) }
        #expect(try store.lastChangeTime(id) == Date(timeIntervalSince1970: Double(Int64.max) / 1000))
        try store.edit(id, time: Date(timeIntervalSince1970: 1_700_000_000)) { tx in try tx.put(.root, key: "a", .int(2)) }
        try store.edit(id, time: Date(timeIntervalSince1970: -.infinity)) { tx in try tx.put(.root, key: "a", .int(3)) }
        #expect(try store.changes(id).map(\.time) == [.max, 1_700_000_000_000, .min])
    }

    /// A replica whose clock went back between two edits: the store that
    /// made them logs a row each, a peer that caught up logs them as one
    /// row holding the last one's time. Both hold the same changes, so the
    /// time `note list` shows, that of the newest change (the greatest
    /// Lamport stamp), is the same in both, and stays after compaction.
    /// Two syncs with one server at once may end in either order.
    @Test func aSyncCursorNeverGoesBackInOneLog() throws {
        let store = try DocumentStore.inMemory()
        try store.recordSyncProgress(peer: "server", acknowledged: [:], cursor: SyncCursor(logID: 1, seq: 10))
        try store.recordSyncProgress(peer: "server", acknowledged: [:], cursor: SyncCursor(logID: 1, seq: 5))
        #expect(try store.syncCursor(peer: "server") == SyncCursor(logID: 1, seq: 10))
        // Another log's, or after a reset, it is what the server said.
        try store.recordSyncProgress(peer: "server", acknowledged: [:], cursor: SyncCursor(logID: 2, seq: 3))
        #expect(try store.syncCursor(peer: "server") == SyncCursor(logID: 2, seq: 3))
        try store.forgetSyncState(peer: "server")
        try store.recordSyncProgress(peer: "server", acknowledged: [:], cursor: SyncCursor(logID: 2, seq: 1))
        #expect(try store.syncCursor(peer: "server") == SyncCursor(logID: 2, seq: 1))
    }

    @Test func theLastChangeTimeIsTheSameInStoresHoldingTheSameChanges() throws {
        let editor = try DocumentStore.inMemory(), peer = try DocumentStore.inMemory()
        let id = try editor.createDocument()
        try editor.edit(id, time: Date(timeIntervalSince1970: 2_000)) { tx in try tx.put(.root, key: "a", .int(1)) }
        try editor.edit(id, time: Date(timeIntervalSince1970: 1_000)) { tx in try tx.put(.root, key: "a", .int(2)) }
        try peer.apply(bundles: [(id, [ChangeEncoding.encode(editor.changes(id))])])
        #expect(try peer.database.query(sql: "SELECT count(*) FROM changes")[0].int64(0) == 1)

        let newest = Date(timeIntervalSince1970: 1_000)
        #expect(try [editor, peer].map { try $0.lastChangeTime(id) } == [newest, newest])
        try peer.compact(id, keepHistory: false)
        #expect(try peer.lastChangeTime(id) == newest)
    }

    @Test func generatedIDsAreUUIDv7InCreationOrder() {
        let first = DocumentID.generate(now: Date(timeIntervalSince1970: 1_700_000_000))
        let second = DocumentID.generate(now: Date(timeIntervalSince1970: 1_700_000_001))
        #expect(first < second)
        #expect(first.rawValue.count == 36)
        #expect(Array(first.rawValue)[14] == "7")
        // A time the id's 48 bits cannot hold is the nearest one they can.
        #expect(DocumentID.generate(now: Date(timeIntervalSince1970: 1e300)).rawValue.hasPrefix("ffffffff-ffff-7"))
        #expect(DocumentID.generate(now: .distantPast).rawValue.hasPrefix("00000000-0000-7"))
    }

    /// A row holds at most `ChangeLog.maxRunLength` changes
    /// (`Specs/storage.md`): one writer's longer run, received at once, is
    /// stored in rows of that many, and reads back whole.
    @Test func aRunLongerThanARowHoldsIsStoredInSeveralRows() throws {
        let writer = ReplicaID(7), count = UInt64(ChangeLog.maxRunLength) + 1
        let changes = (1...count).map { counter in
            let previous = counter == 1 ? [] : [OpID(replica: writer, counter: counter - 1)]
            return Change(id: OpID(replica: writer, counter: counter), lamport: counter, parents: previous,
                          operations: [.put(object: .root, key: "k", value: .scalar(.int(Int64(counter))), pred: previous)])
        }
        let store = try DocumentStore.inMemory()
        try store.create(id: "long")
        #expect(try store.apply("long", changes) == changes.count)
        let rows = try store.database.query(sql: "SELECT first_counter, last_counter FROM changes ORDER BY seq")
        #expect(try rows.map { [try $0.unsigned(0), try $0.unsigned(1)] } == [[1, count - 1], [count, count]])
        #expect(try store.changes("long") == changes)
    }

    /// A row of several of the store's own changes (received back, say from
    /// a copy of the store) that a peer has acknowledged in part: the outbox,
    /// and so `quire status`'s pending count, holds only the changes after
    /// the acknowledged counter.
    @Test func theOutboxLeavesOutTheAcknowledgedChangesOfARow() throws {
        let store = try DocumentStore.inMemory()
        var copy = Document(replica: store.replicaID)
        for value in 1...5 { try copy.transact { tx in try tx.put(.root, key: "k", .int(Int64(value))) } }
        let made = try copy.allChanges()
        try store.apply(bundles: [("n", [ChangeEncoding.encode(made)])])
        #expect(try store.database.query(sql: "SELECT count(*) FROM changes WHERE is_local = 1")[0].int64(0) == 1)
        #expect(try store.outbox(peer: "p") == ["n": made])
        try store.acknowledge(peer: "p", id: "n", version: [store.replicaID: 3])
        #expect(try store.outbox(peer: "p") == ["n": Array(made.suffix(2))])
    }

    /// A store holding changes 1 to 3 of document "n" and 1 of "m", its
    /// own, and those four changes in that order.
    func storeWithChangesToTwoDocuments() throws -> (DocumentStore, [Change]) {
        let store = try DocumentStore.inMemory()
        try store.create(id: "n")
        try store.create(id: "m")
        var made: [Change] = []
        for (id, value) in [("n", 1), ("n", 2), ("n", 3), ("m", 1)] as [(DocumentID, Int64)] {
            try store.edit(id) { tx in try tx.put(.root, key: "k", .int(value)) }
            made += try store.changes(id).suffix(1)
        }
        return (store, made)
    }

    /// With no peer named, the outbox and the acknowledged version are what
    /// no peer, and any peer, has acknowledged (`quire status` and `log`
    /// without a server): the highest counter of each replica among the
    /// peers, not one peer's, nor those of another document.
    @Test func theOutboxOfNoPeerNamedHoldsWhatNoPeerHasAcknowledged() throws {
        let (store, made) = try storeWithChangesToTwoDocuments()
        #expect(try store.outbox(peer: nil) == ["n": Array(made.prefix(3)), "m": [made[3]]])
        try store.acknowledge(peer: "a", id: "n", version: [store.replicaID: 2])
        try store.acknowledge(peer: "b", id: "n", version: [store.replicaID: 1])
        try store.acknowledge(peer: "b", id: "m", version: [store.replicaID: 1])
        #expect(try store.outbox(peer: nil) == ["n": [made[2]]])
        #expect(try store.outbox(peer: "b") == ["n": Array(made[1...2])])
        #expect(try store.acknowledgedVersion(peer: nil, id: "n") == [store.replicaID: 2])
        #expect(try store.acknowledgedVersion(peer: "b", id: "n") == [store.replicaID: 1])
        // Refusals: one peer's, or with no peer named every peer's, each naming its peer.
        try store.rejectChanges([made[2]], of: "n", peer: "b", status: 413, reason: "too large")
        try store.rejectChanges([made[3]], of: "m", peer: "a", status: 403, reason: "read-only")
        #expect(try store.rejectedChanges(peer: "b").map(\.peer) == ["b"])
        #expect(try store.rejectedChanges(peer: nil).map { "\($0.peer) \($0.document) \($0.status)" } == ["a m 403", "b n 413"])
    }

    /// Two names of one peer merged (`quire sync` spelling a server's URL
    /// one way): the highest acknowledgement of each, the refusals of both,
    /// the further cursor in one log, the newer one across logs; the old
    /// name keeps nothing.
    @Test func mergingTwoNamesOfOnePeerLosesNothing() throws {
        let (store, made) = try storeWithChangesToTwoDocuments()
        try store.acknowledge(peer: "old", id: "n", version: [store.replicaID: 2])
        try store.acknowledge(peer: "new", id: "n", version: [store.replicaID: 1])
        try store.acknowledge(peer: "old", id: "m", version: [store.replicaID: 1])
        try store.rejectChanges([made[2]], of: "n", peer: "old", status: 403, reason: "read-only")
        try store.setSyncCursor(SyncCursor(logID: 7, seq: 40), peer: "old")
        try store.setSyncCursor(SyncCursor(logID: 7, seq: 30), peer: "new")
        usleep(5_000)  // synced later, by the store's millisecond clock
        try store.setSyncCursor(SyncCursor(logID: 8, seq: 5), peer: "other log")
        try store.mergeSyncState(of: "old", into: "new")
        #expect(try store.syncPeers() == ["new", "other log"])
        #expect(try store.acknowledgedVersions(peer: "new") == ["n": [store.replicaID: 2], "m": [store.replicaID: 1]])
        #expect(try store.rejectedChanges(peer: nil).map { "\($0.peer) \($0.document) \($0.status)" } == ["new n 403"])
        #expect(try store.syncCursor(peer: "new") == SyncCursor(logID: 7, seq: 40))
        // Another log: the one synced with last is the server's now.
        try store.mergeSyncState(of: "other log", into: "new")
        #expect(try store.syncCursor(peer: "new") == SyncCursor(logID: 8, seq: 5))
        #expect(try store.syncPeers() == ["new"])
    }

    /// Ids that differ only in Unicode normalization ("é" as one scalar, or
    /// "e" and a combining accent: two writers' systems may make either)
    /// are two documents, in the store's file and in every lookup: a peer
    /// sending one while the store holds the other adds a document.
    @Test func idsThatDifferOnlyInNormalizationAreTwoDocuments() throws {
        let composed = DocumentID(rawValue: "caf\u{E9}")!, decomposed = DocumentID(rawValue: "cafe\u{301}")!
        #expect(composed != decomposed)
        let store = try DocumentStore.inMemory(), other = try DocumentStore.inMemory()
        try store.create(id: composed)
        try store.edit(composed) { tx in try tx.put(.root, key: "k", .int(1)) }
        try other.create(id: decomposed)
        try other.edit(decomposed) { tx in try tx.put(.root, key: "k", .int(2)) }
        try store.apply(bundles: [(decomposed, [ChangeEncoding.encode(other.changes(decomposed))])])
        #expect(try store.documents().map(\.id) == [decomposed, composed])  // byte order, as the file sorts them
        #expect(try store.versionVectors() == [composed: [store.replicaID: 1], decomposed: [other.replicaID: 1]])
        #expect(try store.read(composed) { try $0.get(.root, key: "k") } == .scalar(.int(1)))
        try store.edit(decomposed) { tx in try tx.put(.root, key: "mine", .int(3)) }
        #expect(try store.outbox(peer: "p").mapValues(\.count) == [composed: 1, decomposed: 1])
        try store.acknowledge(peer: "p", id: composed, version: [store.replicaID: 1])
        #expect(try store.acknowledgedVersions(peer: "p") == [composed: [store.replicaID: 1]])
    }

    /// A remote change whose Lamport value lies more than `maxLamportLead`
    /// beyond the document's highest is refused, by `apply` and by
    /// `apply(bundles:)` (a bundle taken whole too), and nothing of its
    /// batch is kept: taken near 2^62, it would leave the document's later
    /// edits no Lamport value to take.
    @Test func aRemoteChangeFarAheadInLamportValueIsRefused() throws {
        let store = try DocumentStore.inMemory()
        try store.create(id: "n")
        try store.edit("n") { tx in try tx.put(.root, key: "k", .int(1)) }
        let farAhead = Change(id: OpID(replica: ReplicaID(7), counter: 1), lamport: Document.lamportLimit - 3,
                              parents: [OpID(replica: store.replicaID, counter: 1)],
                              operations: [.put(object: .root, key: "k", value: .scalar(.int(2)), pred: [])])
        let refusal = DocumentError.invalidChange(farAhead.id, reason: "its Lamport value \(Document.lamportLimit - 3) lies more than "
            + "\(DocumentStore.maxLamportLead) beyond the highest before it, 1")
        #expect(throws: refusal) { try store.apply("n", [farAhead]) }
        #expect(throws: RefusedChanges(document: "n", reason: .inapplicable(refusal))) {
            try store.apply(bundles: [("n", [ChangeEncoding.encode([farAhead])])])
        }
        // A catch-up long enough to be kept as it came, for a document the store lacks.
        let start = DocumentStore.maxLamportLead + 1
        let catchUp = (1...40).map { counter in
            Change(id: OpID(replica: ReplicaID(7), counter: counter), lamport: start + counter - 1,
                   parents: counter == 1 ? [] : [OpID(replica: ReplicaID(7), counter: counter - 1)],
                   operations: [.put(object: .root, key: "k", value: .scalar(.int(Int64(counter))),
                                     pred: counter == 1 ? [] : [OpID(replica: ReplicaID(7), counter: counter - 1)])])
        }
        #expect(throws: RefusedChanges(document: "new", reason: .inapplicable(.invalidChange(catchUp[0].id,
            reason: "its Lamport value \(start) lies more than \(DocumentStore.maxLamportLead) beyond the highest before it, 0")))) {
            try store.apply(bundles: [("new", [ChangeEncoding.encode(catchUp)])])
        }
        #expect(try store.versionVectors() == ["n": [store.replicaID: 1]])
        try store.edit("n") { tx in try tx.put(.root, key: "k", .int(3)) }
    }

    /// The Lamport lead is measured from the highest value before each
    /// change, its batch's earlier changes counted: a history another
    /// store took in steps, each change the whole lead beyond the one
    /// before, is taken alike as one list, one bundle (kept as it came)
    /// and a bundle a change; one climbing a step further is refused
    /// alike, at the same change, with the same error.
    @Test func aHistoryIsTakenOrRefusedAlikeInOneBatchOrInSteps() throws {
        let lead = DocumentStore.maxLamportLead
        /// Stores given `history` in steps, as one list, as one bundle and as a bundle a change.
        func stores() throws -> (steps: DocumentStore, list: DocumentStore, bundle: DocumentStore, bundles: DocumentStore) {
            let made = try (DocumentStore.inMemory(), DocumentStore.inMemory(), DocumentStore.inMemory(), DocumentStore.inMemory())
            for store in [made.0, made.1] { try store.create(id: "n") }
            return made
        }

        let climbing = climbingHistory(count: 40, from: lead, climbingBy: lead)
        let taking = try stores()
        for change in climbing { try taking.steps.apply("n", [change]) }
        try taking.list.apply("n", climbing)
        try taking.bundle.apply(bundles: [("n", [ChangeEncoding.encode(climbing)])])
        try taking.bundles.apply(bundles: [("n", climbing.map { ChangeEncoding.encode([$0]) })])
        for store in [taking.steps, taking.list, taking.bundle, taking.bundles] {
            #expect(try store.versionVectors() == ["n": [ReplicaID(7): 40]])
        }

        let tooSteep = climbingHistory(count: 40, from: lead, climbingBy: lead + 1)
        let refusal = DocumentError.invalidChange(tooSteep[1].id, reason: "its Lamport value \(2 * lead + 1) lies more than \(lead) "
            + "beyond the highest before it, \(lead)")
        let refusing = try stores()
        try refusing.steps.apply("n", [tooSteep[0]])
        #expect(throws: refusal) { try refusing.steps.apply("n", [tooSteep[1]]) }
        #expect(throws: refusal) { try refusing.list.apply("n", tooSteep) }
        #expect(throws: RefusedChanges(document: "n", reason: .inapplicable(refusal))) {
            try refusing.bundle.apply(bundles: [("n", [ChangeEncoding.encode(tooSteep)])])
        }
        #expect(throws: RefusedChanges(document: "n", reason: .inapplicable(refusal))) {
            try refusing.bundles.apply(bundles: [("n", tooSteep.map { ChangeEncoding.encode([$0]) })])
        }
        #expect(try refusing.steps.versionVectors() == ["n": [ReplicaID(7): 1]])
        #expect(try refusing.list.versionVectors() == ["n": [:]])
        #expect(try refusing.bundle.versionVectors().isEmpty && refusing.bundles.versionVectors().isEmpty)
    }

    /// A history sent before what it depends on: its first change waits,
    /// and counts for the next as it does within one batch, also once the
    /// document is loaded again (its waiting change read back from
    /// `parked_changes`), so steps take what one batch takes. (The second
    /// step was refused: measured from the document's highest without the
    /// waiting change, review138's "Left".)
    @Test func aChangeLeftWaitingCountsForLaterBatchesAsWithinOne() throws {
        let (missing, history) = historyBeforeItsDependency(lead: DocumentStore.maxLamportLead)
        let steps = try DocumentStore.inMemory(), oneBatch = try DocumentStore.inMemory()
        for store in [steps, oneBatch] { try store.create(id: "n") }
        try steps.apply("n", [history[0]])
        steps.cache.removeAll()
        try steps.apply("n", [history[1]])
        try oneBatch.apply("n", history)
        for store in [steps, oneBatch] {
            try store.apply("n", [missing])
            #expect(try store.versionVectors() == ["n": [ReplicaID(7): 2, ReplicaID(8): 1]])
        }
    }

    /// A document whose copy loads (from its snapshot) but whose log row a
    /// duplicate is checked against cannot be read is left out by
    /// `applyEach` as damaged, and the others saved. (The whole call
    /// failed: only taking the document was counted as its damage.)
    @Test func applyEachLeavesOutADocumentWhoseLogRowCannotBeReadWhenCheckingADuplicate() throws {
        let store = try DocumentStore.inMemory()
        func put(_ replica: UInt64) -> Change {
            Change(id: OpID(replica: ReplicaID(replica), counter: 1), lamport: 1, parents: [],
                   operations: [.put(object: .root, key: "k", value: .scalar(.int(1)), pred: [])])
        }
        try store.create(id: "n")
        try store.apply("n", [put(7)])
        try store.snapshot("n")
        try store.database.write { db in try db.execute(sql: "UPDATE changes SET data = x'00' WHERE replica = 7") }
        store.cache.removeAll()
        let (applied, refused) = try store.applyEach(bundles: [("n", [ChangeEncoding.encode([put(7)])]), ("ok", [ChangeEncoding.encode([put(8)])])])
        #expect(applied.mapValues(\.count) == ["ok": 1])
        #expect(refused.map(\.id) == ["n"] && refused.allSatisfy { $0.error.isDamage(ofDocument: "n") }, "\(refused)")
        #expect(try store.versionVector("ok") == [ReplicaID(8): 1])
    }

    @Test func editsSurviveReopening() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let id: DocumentID = "note"
            let replica: ReplicaID
            do {
                let store = try DocumentStore(path: path, snapshotInterval: 3)
                replica = store.replicaID
                try store.create(id: id)
                for index in 0..<10 {
                    try store.edit(id) { tx in try tx.put(.root, key: "k\(index)", .int(Int64(index))) }
                }
            }
            let reopened = try DocumentStore(path: path)
            #expect(reopened.replicaID == replica)
            #expect(try reopened.read(id) { try $0.keys(.root).count } == 10)
            try reopened.edit(id) { tx in try tx.put(.root, key: "k10", .int(10)) }
            #expect(try reopened.read(id) { $0.versionVector[replica] } == 11)
        }
    }

    @Test func aChangeGivesItsWritersTimeAsADate() throws {
        let store = try DocumentStore.inMemory()
        try store.create(id: "note")
        let written = Date(timeIntervalSince1970: 1_700_000_000.123)
        try store.edit("note", time: written) { tx in try tx.put(.root, key: "title", .string("Plan")) }
        #expect(try store.changes("note").last?.date == written)
        // No time recorded (0) is no date, not 1 January 1970.
        let untimed = Change(id: OpID(replica: store.replicaID, counter: 1), lamport: 1, parents: [], operations: [])
        #expect(untimed.date == nil)
    }

    @Test func aClosedStoreInMemorySaysItsContentsAreGone() throws {
        let store = try DocumentStore.inMemory()
        try store.create(id: "note")
        try store.close()
        let refused = #expect(throws: DatabaseError.self) { try store.read("note") { _ in } }
        #expect(refused?.isAfterClose == true)
        #expect(refused?.description == "the store in memory is closed (close() was called): what it held went with it")
    }

    @Test func aClosedStoreHasWrittenEverythingAndRefusesLaterCalls() async throws {
        let events = try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let store = try DocumentStore(path: path)
            try store.create(id: "note")
            let events = store.events(of: "note")
            #expect(throws: StoreError.nestedCall) { try store.read("note") { _ in try store.close() } }
            try store.edit("note") { tx in try tx.put(.root, key: "title", .string("Groceries")) }
            try store.close()
            try store.close()
            let refused = #expect(throws: DatabaseError.self) { try store.read("note") { _ in } }
            // Said as a call made too late, not as SQLite's "misuse of the database API", a bug's words.
            #expect(refused?.isAfterClose == true)
            #expect(refused?.localizedDescription == "the store at \(path) is closed (close() was called): open it again to use it")
            let alsoRefused = #expect(throws: DatabaseError.self) { try store.createDocument() }
            #expect(alsoRefused?.isAfterClose == true)
            let reopened = try DocumentStore(path: path)
            #expect(try reopened.read("note") { try $0.get(.root, key: "title") } == .scalar(.string("Groceries")))
            return events
        }
        // The one edit's event came, then the stream ended.
        var received = 0
        for await _ in events { received += 1 }
        #expect(received == 1)
    }

    @Test func aThrowingEditSavesNothing() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let store = try DocumentStore(path: path, snapshotInterval: 2)
            let id = try store.createDocument()
            for index in 0..<5 { try store.edit(id) { tx in try tx.put(.root, key: "k\(index)", .int(1)) } }
            let before = try store.state(id)
            #expect(throws: Oops.self) {
                try store.edit(id) { tx in
                    try tx.put(.root, key: "half", .int(1))
                    throw Oops()
                }
            }
            #expect(try store.state(id) == before)
            #expect(try DocumentStore(path: path).state(id) == before)
        }
    }

    /// A document created with its first change is saved with it or not
    /// at all: when the body throws, and when the commit fails (here a
    /// trigger refuses the change's row, as a full disk would fail it).
    @Test func aDocumentCreatedWithItsFirstChangeIsSavedWholeOrNotAtAll() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let store = try DocumentStore(path: path)
            #expect(throws: Oops.self) {
                try store.createDocument { tx in
                    try tx.put(.root, key: "title", .string("half"))
                    throw Oops()
                }
            }
            try store.database.execute(sql: "CREATE TRIGGER refuse BEFORE INSERT ON changes BEGIN SELECT RAISE(ABORT, 'refused'); END")
            #expect(throws: DatabaseError.self) {
                try store.createDocument { tx in try tx.put(.root, key: "title", .string("refused")) }
            }
            #expect(try store.documents(includeRemoved: true).isEmpty)

            try store.database.execute(sql: "DROP TRIGGER refuse")
            let id = try store.createDocument { tx in try tx.put(.root, key: "title", .string("kept")) }
            let reopened = try DocumentStore(path: path)
            #expect(try reopened.documents().map(\.id) == [id])
            #expect(try reopened.read(id) { try $0.get(.root, key: "title") } == .scalar(.string("kept")))
            #expect(try reopened.changes(id).count == 1)
        }
    }

    @Test func applyIsAllOrNothing() throws {
        let source = try DocumentStore.inMemory()
        let target = try DocumentStore.inMemory()
        let id: DocumentID = "shared"
        try source.create(id: id)
        try target.create(id: id)
        for index in 0..<3 { try source.edit(id) { tx in try tx.put(.root, key: "k\(index)", .int(1)) } }
        var changes = try source.changes(id)
        // A change that edits an object nobody created: invalid.
        let bogus = Change(id: OpID(replica: ReplicaID(99), counter: 1), lamport: 1, parents: [],
                           operations: [.increment(object: ObjectID(OpID(replica: ReplicaID(5), counter: 5)), delta: 1)])
        changes.append(bogus)
        #expect(throws: DocumentError.self) { try target.apply(id, changes) }
        #expect(try target.read(id) { $0.versionVector.isEmpty })
        #expect(try target.changes(id).isEmpty)

        changes.removeLast()
        #expect(try target.apply(id, changes) == 3)
        #expect(try target.state(id) == source.state(id))
        #expect(try target.apply(id, changes) == 0)  // duplicates are no-ops
    }

    @Test func bundlesOfSeveralDocumentsApplyTogetherOrNotAtAll() throws {
        let source = try DocumentStore.inMemory()
        for id: DocumentID in ["a", "b"] {
            try source.create(id: id)
            for index in 0..<3 { try source.edit(id) { tx in try tx.put(.root, key: "k\(index)", .int(1)) } }
        }
        let bundles = try ["a", "b"].map { (id: DocumentID) in (id, [ChangeEncoding.encode(try source.changes(id))]) }
        let target = try DocumentStore.inMemory()
        // An invalid change for "b", found after "a" applied in memory: "a"
        // is neither created nor changed.
        let bogus = Change(id: OpID(replica: ReplicaID(99), counter: 1), lamport: 1, parents: [],
                           operations: [.increment(object: ObjectID(OpID(replica: ReplicaID(5), counter: 5)), delta: 1)])
        #expect { try target.apply(bundles: [bundles[0], ("b", [ChangeEncoding.encode([bogus])])]) } throws: { error in
            (error as? RefusedChanges)?.document == "b"
        }
        #expect(try target.documents().isEmpty)
        #expect(throws: StoreError.self) { try target.read("a") { _ in } }

        #expect(try target.apply(bundles: bundles) == 6)
        #expect(try target.documents().map(\.id) == ["a", "b"])
        for id: DocumentID in ["a", "b"] { #expect(try target.state(id) == source.state(id)) }
        #expect(try target.apply(bundles: bundles) == 0)  // duplicates are no-ops
    }

    /// Of several documents' bundles, one that is not a bundle fails the
    /// call with an error naming its document, keeping the decoder's case;
    /// the others' good bundles are not saved, even in part (all or
    /// nothing), and apply whole when given again without it.
    @Test func aBadBundleAmongSeveralDocumentsNamesItsDocumentAndSavesNothing() throws {
        let source = try DocumentStore.inMemory()
        for id: DocumentID in ["a", "c"] {
            try source.create(id: id)
            for index in 0..<3 { try source.edit(id) { tx in try tx.put(.root, key: "k\(index)", .int(1)) } }
        }
        let target = try DocumentStore.inMemory()
        try target.apply(bundles: [("a", [ChangeEncoding.encode(Array(try source.changes("a").prefix(1)))])])
        let before = try target.state("a")
        let good = try ["a", "c"].map { (id: DocumentID) in (id: id, bundles: [ChangeEncoding.encode(try source.changes(id))]) }

        let refusal = RefusedChanges(document: "b", reason: .undecodable(.badMagic(expected: "a Quire change bundle")))
        #expect(throws: refusal) { try target.apply(bundles: [good[0], ("b", [[1, 2, 3]]), good[1]]) }
        #expect(refusal.description == "the changes given for document b were refused: not a Quire change bundle (wrong magic number)")
        #expect(try target.documents().map(\.id) == ["a"])
        #expect(try target.state("a") == before)
        #expect(try target.changes("a").count == 1)

        #expect(try target.apply(bundles: good) == 5)
        for id: DocumentID in ["a", "c"] { #expect(try target.state(id) == source.state(id)) }
    }

    /// A page of a sync holds many documents, one possibly listed twice:
    /// each is created once and gets every bundle listed for it.
    @Test func aBatchOfManyDocumentsAppliesEachOnceWithEveryBundle() throws {
        let source = try DocumentStore.inMemory()
        var bundles: [(id: DocumentID, bundles: [[UInt8]])] = []
        for index in 0..<1_000 {
            let id = DocumentID(rawValue: "d\(index)")!
            try source.create(id: id)
            try source.edit(id) { tx in try tx.put(.root, key: "k", .int(Int64(index))) }
            bundles.append((id, [ChangeEncoding.encode(try source.changes(id))]))
        }
        try source.edit("d7") { tx in try tx.put(.root, key: "more", .int(1)) }
        bundles.append(("d7", [ChangeEncoding.encode([try source.changes("d7").last!])]))
        let target = try DocumentStore.inMemory()
        #expect(try target.apply(bundles: bundles) == 1_001)
        #expect(try target.documents().count == 1_000)
        #expect(try target.versionVectors() == source.versionVectors())
    }

    /// Past `cachedDocuments`, a store drops the loaded documents used
    /// longest ago, a read counting as a use; one dropped reads as before.
    @Test func theDocumentsUsedLongestAgoLeaveMemoryFirst() throws {
        let store = try DocumentStore.inMemory(cachedDocuments: 4)
        let ids: [DocumentID] = ["a", "b", "c", "d", "e"]
        for id in ids {
            try store.create(id: id)
            try store.edit(id) { tx in try tx.put(.root, key: "k", .string(id.rawValue)) }
        }
        store.cache.removeAll()
        for id in ids.prefix(4) { _ = try store.read(id) { _ in } }
        _ = try store.read("a") { _ in }
        _ = try store.read("e") { _ in }
        #expect(store.cache.count == 2 && store.cache["a"] != nil && store.cache["e"] != nil)
        for id in ids { #expect(try store.read(id) { try $0.get(.root, key: "k") } == .scalar(.string(id.rawValue))) }
    }

    /// A cache size an app takes from a setting may be zero or negative:
    /// the store then keeps no document in memory (a negative one trapped).
    @Test(arguments: [0, -1]) func aStoreWithNoCacheLoadsEachDocumentWhenUsed(cachedDocuments: Int) throws {
        let store = try DocumentStore.inMemory(cachedDocuments: cachedDocuments)
        let id = try store.createDocument { tx in try tx.put(.root, key: "k", .string("kept")) }
        try store.edit(id) { tx in try tx.put(.root, key: "l", .string("too")) }
        #expect(store.cache.count == 0)
        #expect(try store.read(id) { try $0.keys(.root) } == ["k", "l"])
    }

    /// A path that names another program's SQLite file (an app's own
    /// database, a sync server's log) was opened as a store: switched to
    /// WAL, given the store's tables and a replica. It is refused, as it was.
    @Test(arguments: [["bookmarks"], ["server", "log", "parked"]]) func anotherProgramsDatabaseIsRefusedAndLeftAsItWas(tables: [String]) throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/app.sqlite"
            var handle: OpaquePointer?
            #expect(sqlite3_open(path, &handle) == SQLITE_OK)
            for table in tables { #expect(sqlite3_exec(handle, "CREATE TABLE \(table)(x)", nil, nil, nil) == SQLITE_OK) }
            sqlite3_close(handle)
            let before = try Data(contentsOf: URL(fileURLWithPath: path))

            let kind = tables.count == 1 ? "a SQLite database but not a Quire store"
                : "a sync server's log (the store of `quire serve`), not a notes store"
            for readOnly in [false, true] {
                #expect(throws: StoreError.notAStore(path: path, kind: kind)) { try DocumentStore(path: path, readOnly: readOnly) }
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["app.sqlite"])
        }
    }

    @Test func creatingADocumentAnApplyIsCreatingWaitsForIt() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let store = try DocumentStore(path: path)
            let source = try DocumentStore.inMemory()
            try source.create(id: "shared")
            try source.edit("shared") { tx in try tx.put(.root, key: "k", .int(1)) }
            let bundle = try ChangeEncoding.encode(source.changes("shared"))

            // A lock another process holds keeps the apply's batch waiting
            // (up to the lock's timeout) with the document taken and the
            // store unlocked: `create` runs meanwhile.
            let otherProcess = try #require(LockFile(beside: path))
            #expect(otherProcess.lock(exclusive: true, within: 0))
            let applied = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var applyError: (any Error)?
            Thread.detachNewThread {
                do { try store.apply(bundles: [("shared", [bundle])]) } catch { applyError = error }
                applied.signal()
            }
            while !store.condition.withLock({ store.isWriting }) { Thread.sleep(forTimeInterval: 0.001) }

            #expect(throws: StoreError.documentExists("shared")) { try store.create(id: "shared") }
            otherProcess.unlock()
            applied.wait()
            #expect(applyError == nil)
            #expect(try store.state("shared") == source.state("shared"))
        }
    }

    /// A catch-up bundle (one run, all new) is applied without being
    /// decoded into changes, yet logged as one row of the bytes that came
    /// with the run's bounds, observed change by change, and reloaded. A
    /// bundle of two replicas is logged a row per run.
    @Test func aCatchUpBundleIsLoggedAsItCame() async throws {
        let source = try DocumentStore.inMemory()
        try source.create(id: "typed")
        try source.create(id: "mixed")
        let peer = try DocumentStore.inMemory()
        try peer.create(id: "mixed")
        for index in 0..<40 {
            try source.edit("typed", time: Date(timeIntervalSince1970: Double(index))) { tx in try tx.put(.root, key: "k", .int(Int64(index))) }
            try (index.isMultiple(of: 2) ? source : peer).edit("mixed") { tx in try tx.put(.root, key: "k\(index)", .int(1)) }
            try peer.apply("mixed", source.changes("mixed", since: peer.versionVector("mixed")))
            try source.apply("mixed", peer.changes("mixed", since: source.versionVector("mixed")))
        }
        let typed = try source.changes("typed"), mixed = try source.changes("mixed")
        let bundles: [(id: DocumentID, bundles: [[UInt8]])] = [("typed", [ChangeEncoding.encode(typed)]), ("mixed", [ChangeEncoding.encode(mixed)])]

        let target = try DocumentStore.inMemory()
        var events = target.allEvents().makeAsyncIterator()
        #expect(try target.apply(bundles: bundles) == 80)
        let first = try #require(await events.next()), second = try #require(await events.next())
        #expect([first.document: first.changeIDs, second.document: second.changeIDs] == ["typed": typed.map(\.id), "mixed": mixed.map(\.id)])
        let rows = try target.database.query(
            sql: """
                SELECT replica, first_counter, last_counter, first_lamport, last_lamport, time, data
                FROM changes WHERE document = (SELECT number FROM documents WHERE id = 'typed')
                """)
        #expect(rows.count == 1)
        let row = try #require(rows.first)
        #expect(try row.replica(0) == source.replicaID)
        #expect(try [row.unsigned(1), row.unsigned(2), row.unsigned(3), row.unsigned(4)]
                == [typed[0].id.counter, typed[39].lastID.counter, typed[0].lamport, typed[39].lastLamport])
        #expect(try row.int64(5) == 39_000)
        #expect(try row.blob(6) == bundles[0].bundles[0])
        #expect(try target.database.query(sql: "SELECT count(*) FROM changes WHERE document = (SELECT number FROM documents WHERE id = 'mixed')")[0].int64(0) == 40)

        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            #expect(try DocumentStore(path: path).apply(bundles: bundles) == 80)
            let reopened = try DocumentStore(path: path)
            for id: DocumentID in ["typed", "mixed"] {
                #expect(try reopened.state(id) == source.state(id))
                #expect(try reopened.changes(id) == source.changes(id))
            }
        }
    }

    @Test func aChangeClashingWithOneInTheLogIsRefusedAfterASnapshotLoad() throws {
        try withTemporaryDirectory { directory in
            let source = try DocumentStore.inMemory()
            let id: DocumentID = "doc"
            try source.create(id: id)
            try source.edit(id) { tx in try tx.put(.root, key: "title", .string("real")) }
            let genuine = try source.changes(id)[0]
            var forged = genuine
            forged.operations = [.put(object: .root, key: "title", value: .scalar(.string("forged")), pred: [])]

            let path = directory + "/store.quire"
            do {
                let target = try DocumentStore(path: path, snapshotInterval: 1)
                try target.create(id: id)
                try target.apply(id, [genuine])
            }
            // Loaded from the snapshot: the in-memory history no longer holds `genuine`.
            let target = try DocumentStore(path: path)
            #expect(try target.read(id) { $0.changeCount == 0 })
            #expect(throws: DocumentError.conflictingChange(genuine.id)) { try target.apply(id, [forged]) }
            #expect(try target.apply(id, [genuine]) == 0)
            #expect(try target.state(id) == source.state(id))
        }
    }

    @Test func parkedChangesSurviveARestart() throws {
        try withTemporaryDirectory { directory in
            let source = try DocumentStore.inMemory()
            let id: DocumentID = "doc"
            try source.create(id: id)
            for index in 0..<3 { try source.edit(id) { tx in try tx.put(.root, key: "k\(index)", .int(1)) } }
            let changes = try source.changes(id)
            let path = directory + "/store.quire"
            do {
                let target = try DocumentStore(path: path)
                try target.create(id: id)
                #expect(try target.apply(id, Array(changes[1...])) == 0)
                #expect(try target.read(id) { $0.pendingCount } == 2)
            }
            let target = try DocumentStore(path: path)
            #expect(try target.read(id) { $0.pendingCount } == 2)
            #expect(try target.apply(id, [changes[0]]) == 3)
            #expect(try target.state(id) == source.state(id))
            let parkedRows = try target.database.query(sql: "SELECT count(*) FROM parked_changes")[0].int64(0)
            #expect(parkedRows == 0)
        }
    }

    /// A change made on a copy of a document read from the store (under the
    /// store's own replica id) and handed back through `apply` is the
    /// store's own: the outbox offers it, in the order applied with the
    /// peer's changes around it, and a reopened store still does.
    @Test func ownChangesHandedBackThroughApplyAreInTheOutbox() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let store = try DocumentStore(path: path)
            let id = try store.createDocument()
            try store.edit(id) { tx in try tx.put(.root, key: "a", .int(1)) }
            try store.acknowledge(peer: "server", id: id, version: store.read(id) { $0.versionVector })
            var copy = try store.read(id) { $0 }
            let before = copy.versionVector
            var peer = Document(replica: ReplicaID(0xBEEF))
            try peer.apply(store.changes(id))
            try peer.transact { tx in try tx.put(.root, key: "p", .int(2)) }
            try copy.apply(peer.changes(since: copy.versionVector))
            try copy.transact { tx in try tx.put(.root, key: "b", .int(3)) }
            try store.apply(id, copy.changes(since: before))
            let offered = try store.outbox(peer: "server")[id] ?? []
            #expect(offered.map(\.replica) == [store.replicaID])
            #expect(offered.first?.operations == [.put(object: .root, key: "b", value: .scalar(.int(3)), pred: [])])
            #expect(try DocumentStore(path: path).outbox(peer: "server")[id]?.count == 1)
        }
    }

    /// A parked change the document now refuses (one of the store's own
    /// replica that came early, parked before such changes were refused) is
    /// left out of a load, not a reason to lose the whole document.
    @Test func aParkedChangeTheDocumentRefusesIsLeftOutOfALoad() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let id: DocumentID = "doc"
            do {
                let store = try DocumentStore(path: path)
                try store.create(id: id)
                try store.edit(id) { tx in try tx.put(.root, key: "kept", .int(1)) }
                var ahead = try store.read(id) { $0 }
                try ahead.transact { tx in try tx.put(.root, key: "a", .int(2)) }
                try ahead.transact { tx in try tx.put(.root, key: "b", .int(3)) }
                let early = try #require(try ahead.changes(since: store.read(id) { $0.versionVector }).last)
                try store.database.write { db in try ParkedChanges.park([early], document: id.rawValue, db) }
            }
            let reopened = try DocumentStore(path: path)
            #expect(try reopened.read(id) { try $0.get(.root, key: "kept") } == .scalar(.int(1)))
            #expect(try reopened.read(id) { $0.pendingCount } == 0)
        }
    }

    /// A parked row that no longer decodes is left out of a load, as a
    /// damaged snapshot is skipped: with a warning naming it.
    @Test func aDamagedParkedChangeIsLeftOutOfALoadWithAWarning() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let id: DocumentID = "doc"
            let author = ReplicaID(0xA)
            do {
                let store = try DocumentStore(path: path)
                try store.create(id: id)
                try store.edit(id) { tx in try tx.put(.root, key: "kept", .int(1)) }
                var ahead = Document(replica: author)
                try ahead.transact { tx in try tx.put(.root, key: "a", .int(2)) }
                try ahead.transact { tx in try tx.put(.root, key: "b", .int(3)) }
                try store.apply(id, [try #require(try ahead.allChanges().last)])
                try store.database.execute(sql: "UPDATE parked_changes SET data = X'00'")
            }
            let warnings = WarningLog()
            let reopened = try DocumentStore(path: path, onWarning: warnings.handler)
            #expect(try reopened.read(id) { try $0.get(.root, key: "kept") } == .scalar(.int(1)))
            #expect(try reopened.read(id) { $0.pendingCount } == 0)
            #expect(warnings.all.count == 1)
            #expect(warnings.all.first?.contains("parked change 2@\(author) is damaged") == true)
        }
    }

    @Test func outboxListsWhatAPeerHasNotAcknowledged() throws {
        let store = try DocumentStore.inMemory()
        let a = try store.createDocument(), b = try store.createDocument()
        for index in 0..<3 {
            try store.edit(a) { tx in try tx.put(.root, key: "k\(index)", .int(1)) }
            try store.edit(b) { tx in try tx.put(.root, key: "k\(index)", .int(1)) }
        }
        #expect(try store.outbox(peer: "server").mapValues(\.count) == [a: 3, b: 3])
        let version = try store.read(a) { $0.versionVector }
        try store.acknowledge(peer: "server", id: a, version: version)
        #expect(try store.outbox(peer: "server").mapValues(\.count) == [b: 3])
        #expect(try store.outbox(peer: "laptop").mapValues(\.count) == [a: 3, b: 3])
        // A document the store does not hold cannot be acknowledged: the error
        // names it (before, SQLite's foreign key failure came through), and
        // a document made with its id later has its changes in the outbox.
        let later = DocumentID.generate()
        #expect(throws: StoreError.noSuchDocument(later.rawValue)) {
            try store.acknowledge(peer: "server", id: later, version: version)
        }
        try store.create(id: later)
        try store.edit(later) { tx in try tx.put(.root, key: "k", .int(1)) }
        #expect(try store.outbox(peer: "server")[later]?.count == 1)
        // Remote changes are never in the outbox.
        let other = try DocumentStore.inMemory()
        try other.create(id: a)
        try other.apply(a, store.changes(a))
        #expect(try other.outbox(peer: "server").isEmpty)

        // A refusal is recorded; one for a document the store lacks is named as such.
        try store.rejectChanges(store.changes(b).prefix(1).map { $0 }, of: b, peer: "server", status: 400, reason: "no")
        #expect(try store.rejectedChanges(peer: "server").map(\.document) == [b.rawValue])
        let unknown = DocumentID(rawValue: "nowhere")!
        #expect(throws: StoreError.noSuchDocument("nowhere")) {
            try store.rejectChanges(store.changes(b), of: unknown, peer: "server", status: 400, reason: "no")
        }
    }

    @Test func changesSinceAVersion() throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        for index in 0..<4 { try store.edit(id) { tx in try tx.put(.root, key: "k\(index)", .int(1)) } }
        let all = try store.changes(id)
        #expect(all.count == 4)
        let version: VersionVector = [store.replicaID: 2]
        #expect(try store.changes(id, since: version) == Array(all[2...]))
        #expect(try store.changes(id, limit: 3) == Array(all[..<3]))
        #expect(try store.changes(id, limit: 0).isEmpty)
        #expect(try store.changes(id, limit: -1).isEmpty)
    }

    @Test func compactionKeepsUnsentChangesAndHistoryOnRequest() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let store = try DocumentStore(path: path)
            let id = try store.createDocument()
            for index in 0..<6 { try store.edit(id) { tx in try tx.put(.root, key: "k\(index)", .int(1)) } }
            let state = try store.state(id)

            try store.compact(id, keepHistory: true)
            #expect(try store.changes(id).count == 6)

            // Nothing acknowledged: every local change is still unsent and stays.
            try store.compact(id, keepHistory: false)
            #expect(try store.changes(id).count == 6)

            let acknowledged: VersionVector = [store.replicaID: 4]
            try store.acknowledge(peer: "server", id: id, version: acknowledged)
            try store.compact(id, keepHistory: false)
            // Every acknowledged change is gone, the one at the acknowledged counter too.
            #expect(try store.database.query(sql: "SELECT last_counter FROM changes ORDER BY seq").map { try $0.unsigned(0) } == [5, 6])
            #expect(try store.outbox(peer: "server")[id]?.count == 2)
            #expect(try store.changes(id, since: acknowledged).count == 2)
            #expect(throws: StoreError.historyCompacted(id.rawValue)) { try store.changes(id) }

            let reopened = try DocumentStore(path: path)
            #expect(try reopened.state(id) == state)
            try reopened.edit(id) { tx in try tx.put(.root, key: "after", .int(1)) }
            #expect(try reopened.read(id) { $0.versionVector[reopened.replicaID] } == 7)
        }
    }

    @Test func anEditBeyondTheDecodingLimitsLoadsAgain() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let store = try DocumentStore(path: path)
            let id = try store.createDocument()
            // A run of more elements than `DecodingLimits.default` lets a peer
            // send in one operation, then one delete of nearly all of it.
            let length = DecodingLimits.default.maxOperationWidth + 1
            let body = try store.edit(id) { tx in
                let body = try tx.putObject(.root, key: "body", kind: .text)
                try tx.insertText(body, at: 0, String(repeating: "a", count: length + 1))
                return body
            }
            try store.snapshot(id)
            try store.edit(id) { tx in try tx.deleteText(body, at: 1, count: length) }

            let warnings = WarningLog()
            let reopened = try DocumentStore(path: path, onWarning: warnings.handler)
            #expect(try reopened.read(id) { try $0.text(body) } == "a")
            #expect(try reopened.outbox(peer: "server")[id]?.count == 2)
            #expect(warnings.all.isEmpty)
        }
    }

    @Test func aNestedCallIsAnErrorNotADeadlock() throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        #expect(throws: StoreError.nestedCall) {
            try store.edit(id) { tx in
                try tx.put(.root, key: "a", .int(1))
                try store.read(id) { _ in }
            }
        }
        #expect(try store.changes(id).isEmpty)
    }

    @Test func usableFromSeveralThreads() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let store = try DocumentStore(path: path, snapshotInterval: 7)
            let shared = try store.createDocument()
            let own = try (0..<4).map { _ in try store.createDocument() }
            // Threads edit one shared document and one each of their own at
            // the same time, so commits of several documents share batches.
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for index in 0..<25 {
                    try! store.edit(shared) { tx in try tx.put(.root, key: "t\(thread)-\(index)", .int(1)) }
                    try! store.edit(own[thread]) { tx in try tx.put(.root, key: "k\(index)", .int(1)) }
                    _ = try! store.read(shared) { try $0.keys(.root).count }
                }
            }
            let reopened = try DocumentStore(path: path)
            #expect(try reopened.read(shared) { try $0.keys(.root).count } == 100)
            #expect(try reopened.changes(shared).count == 100)
            for id in own { #expect(try reopened.changes(id).count == 25) }
        }
    }
}
