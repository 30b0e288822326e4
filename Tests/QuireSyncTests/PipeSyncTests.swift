import Foundation
import Synchronization
import QuireTestSupport
import Quire
import QuireStore
@testable import QuireSync
import Testing

/// Peer-to-peer sync through a pipe (`quire serve --stdio`) at scale, and
/// what a hostile or broken peer on the other end of the pipe can do.
// Serialized: several of the tests block a thread that runs tasks.
@Suite(.serialized) struct PipeSyncTests {
    /// A push of many documents to a peer costs one transaction (one disk
    /// sync), not one per document, and one more recording that its
    /// writer holds them (`quire log` there says so).
    @Test func aPeerAppliesAPushOfManyDocumentsInOneTransaction() async throws {
        try await withTemporaryDirectory { directory in
            let writer = try DocumentStore.inMemory()
            for index in 0..<40 {
                let id = DocumentID(rawValue: "note-\(index)")!
                try writer.create(id: id)
                try write(writer, id, "k", Int64(index))
            }
            let path = directory + "/peer.quire"
            let peer = try DocumentStore(path: path)
            let before = committedTransactions(inLogOf: path)
            let report = try await SyncClient(store: writer, peer: "via:peer", transport: FaultyTransport.sound(PeerSyncService(store: peer))).sync()
            #expect(report.sent == 40)
            #expect(committedTransactions(inLogOf: path) - before == 2)
            #expect(try peer.acknowledgedVersions(peer: PeerSyncService.clientsPeer) == writer.versionVectors())
            #expect(try peer.versionVectors() == writer.versionVectors())
        }
    }

    /// A peer run by a command is no server, and its refusals carry the
    /// protocol's statuses, not HTTP's: the errors say so.
    @Test func errorsFromAPeerNameThePeer() throws {
        let transport = try StdioSyncTransport(command: "cat >/dev/null")
        defer { transport.close() }
        let tooLarge = SyncError.refused(SyncFailure(status: 413, "the request is larger than 67108864 bytes"))
        #expect(tooLarge.description(otherSide: transport.otherSide) == "the peer refused (status 413): the request is larger than 67108864 bytes")
        #expect(SyncError.unreachable("it ended").description(otherSide: transport.otherSide) == "could not reach the peer: it ended")
        #expect(tooLarge.description == "the server refused: HTTP 413: the request is larger than 67108864 bytes")
        #expect(HTTPSyncTransport(server: URL(string: "http://127.0.0.1:1")!, token: nil).otherSide == .server)
    }

    /// What an app shows of a failed sync, `localizedDescription`, names
    /// the side the sync went to: the errors of a transport the app wrote
    /// (which cannot know to say "peer") and the client's own say "the
    /// peer" for a peer. (`StdioSyncTransport`'s own: `closingTheTransportEndsAnExchangeInProgress`.)
    @Test func aSyncsErrorsNameTheSideItWentTo() async throws {
        let store = try DocumentStore.inMemory()
        let id = DocumentID(rawValue: "note")!
        try store.create(id: id)
        try write(store, id, "k", 1)
        struct RefusingPeer: SyncTransport {
            var otherSide: SyncOtherSide { .peer }
            func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
                throw .refused(SyncFailure(status: 401, "no"))
            }
        }
        var shown: String?
        do { try await SyncClient(store: store, peer: "p", transport: RefusingPeer()).sync() } catch { shown = error.localizedDescription }
        #expect(shown == "the peer refused (status 401): no")
        struct Gibberish: SyncTransport {
            var otherSide: SyncOtherSide { .peer }
            func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] { [1, 2, 3] }
        }
        shown = nil
        do { try await SyncClient(store: store, peer: "p", transport: Gibberish()).sync() } catch { shown = error.localizedDescription }
        #expect(shown?.hasPrefix("the peer broke the sync protocol: ") == true)
    }

    /// A refused document of a push leaves nothing (not even an empty
    /// document), the others are stored, and the answer names it.
    @Test func aPeerRefusingOneDocumentOfAPushStoresTheOthers() async throws {
        let writer = try DocumentStore.inMemory()
        for id: DocumentID in ["a", "c"] {
            try writer.create(id: id)
            try write(writer, id, "k", 1)
        }
        let unknownObject = ObjectID(OpID(replica: ReplicaID(9), counter: 4))
        let invalid = Change(id: OpID(replica: ReplicaID(7), counter: 1), lamport: 1, parents: [],
                             operations: [.put(object: unknownObject, key: "k", value: .scalar(.int(1)), pred: [])])
        let request = SyncRequest(cursor: nil, documents: [
            SyncDocument(id: "a", version: [:], changes: try writer.changes("a")),
            SyncDocument(id: "b", version: [:], changes: [invalid]),
            SyncDocument(id: "c", version: [:], changes: try writer.changes("c")),
        ])
        let peer = try DocumentStore.inMemory()
        let answer = await PeerSyncService(store: peer).respond(toMessage: SyncMessage.request(request).encoded(), access: .unrestricted)
        #expect(try SyncMessage.decode(answer) == .failure(SyncFailure(status: 400, "a change of document b does not apply: "
            + "change 1@0000000000000007 is invalid: it edits object 4@0000000000000009, which does not exist")))
        #expect(try peer.versionVectors() == writer.versionVectors())
    }

    /// `sent` counts the changes the peer lacked: what a peer holds may
    /// have grown since it last answered (another store synced with it,
    /// under another name), and a change it got that way is neither sent
    /// again nor counted.
    @Test func changesAPeerGotThroughAnotherStoreAreNotCountedAsSent() async throws {
        let alice = try DocumentStore.inMemory(), bob = try DocumentStore.inMemory()
        try alice.create(id: "old")
        try write(alice, "old", "k", 1)
        let aliceToBob = SyncClient(store: alice, peer: "via:bob", transport: FaultyTransport.sound(PeerSyncService(store: bob)))
        #expect(try await aliceToBob.sync().sent == 1)
        // A new note and an edit of one bob acknowledged, which bob then pulls under another name.
        try alice.create(id: "new")
        try write(alice, "new", "k", 1)
        try write(alice, "old", "k", 2)
        let pulled = try await SyncClient(store: bob, peer: "via:alice", transport: FaultyTransport.sound(PeerSyncService(store: alice))).sync()
        #expect(pulled.received == 2)
        let recorder = RecordingTransport(inner: FaultyTransport.sound(PeerSyncService(store: bob)))
        let report = try await SyncClient(store: alice, peer: "via:bob", transport: recorder).sync()
        #expect(report.sent == 0)
        #expect(recorder.requests.allSatisfy { $0.documents.allSatisfy(\.bundles.isEmpty) })
        try write(alice, "new", "k", 2)
        #expect(try await aliceToBob.sync().sent == 1)
    }

    /// A store served to clients over a pipe has no log but its own, so
    /// compacting it without history leaves it unable to send a client a
    /// compacted change that client lacks: here the laptop's changes to n,
    /// relayed through the hub to the phone. Compaction drops other
    /// replicas' changes whatever any peer acknowledged, so naming each
    /// client apart (they share `PeerSyncService.clientsPeer`) would not
    /// keep them (Specs/storage.md, "Compaction"). The hub refuses the
    /// phone's request with a 410 naming n; the phone goes on without n,
    /// stating the ranges below and above it: the other notes sync both
    /// ways, the report names n, and n's own change stays pending (it used
    /// to end the whole sync, nothing synced).
    @Test func aServedStoreCompactedPastWhatAClientLacksSyncsTheOtherNotes() async throws {
        let (hub, _, phone) = try await compactedHubAndBehindPhone(compacting: ["n"], besides: ["a", "z"])
        let recorder = RecordingTransport(inner: FaultyTransport.sound(PeerSyncService(store: hub)))
        let report = try await SyncClient(store: phone, peer: "via:hub", transport: recorder).sync()
        #expect(report.historyCompacted == ["n": .historyCompacted(document: "n")])
        #expect(report.historyCompacted["n"].map { SyncError.refused($0).description(otherSide: .peer) } == "the peer no longer "
            + "holds changes this store lacks (status 410: the history of document n asked for was compacted away): no sync with "
            + "it can bring them, now or later")
        try expectSyncedBothWays(hub, phone, as: "via:hub", ["a", "z"])
        try expectLeftAsItWas(phone, hub, as: "via:hub", ["n"])
        // Stated once, refused once.
        #expect(recorder.requests.filter { $0.documents.contains { $0.id == "n" } }.count == 1)
        // What the phone pulls in the range below n, the hub learns it holds
        // from a later request stating that range (not the one above n).
        try write(hub, "a", "hub", 3)
        #expect(try await SyncClient(store: phone, peer: "via:hub", transport: recorder).sync().received == 1)
        #expect(try hub.acknowledgedVersions(peer: PeerSyncService.clientsPeer)["a"] == hub.versionVectors()["a"])
    }

    /// Two compacted notes: one refused round each, both named, the notes
    /// between and around them synced; served over HTTP, where each 410 is
    /// taken at once, not retried as a 500 was (five tries).
    /// (`quire serve`'s own log is never compacted.)
    @Test func twoCompactedNotesOfAStoreServedOverHTTPAreEachRefusedOnceAndNamed() async throws {
        let (hub, _, phone) = try await compactedHubAndBehindPhone(compacting: ["m", "n"], besides: ["a", "m2", "z"])
        let served = PeerSyncService(store: hub), refusals = Counter()
        let report = try await withServer(handler: { request in
            let answer = await served.respond(toMessage: request.body, access: .unrestricted)
            if case .failure(let failure)? = try? SyncMessage.decode(answer) {
                _ = refusals.next()
                return .text(failure.status, failure.message)
            }
            return .bytes(200, answer, contentType: "application/x-quire-sync")
        }) { server in
            let transport = HTTPSyncTransport(server: url(server, ""), token: nil, retryPolicy: SleepRecorder().policy(maxAttempts: 5))
            return try await SyncClient(store: phone, peer: "hub", transport: transport).sync()
        }
        #expect(refusals.count == 2)
        #expect(report.historyCompacted == ["m": .historyCompacted(document: "m"), "n": .historyCompacted(document: "n")])
        try expectSyncedBothWays(hub, phone, as: "hub", ["a", "m2", "z"])
        try expectLeftAsItWas(phone, hub, as: "hub", ["m", "n"])
    }

    /// Following the advice: the phone syncs with the laptop, which wrote
    /// the changes the hub compacted away, and its next sync with the hub
    /// is whole: n's pending change goes, nothing is left out.
    @Test func aClientThatGotWhatTheServedStoreCompactedAwaySyncsWholeWithIt() async throws {
        let (hub, laptop, phone) = try await compactedHubAndBehindPhone(compacting: ["n"], besides: ["a"])
        let toHub = SyncClient(store: phone, peer: "via:hub", transport: FaultyTransport.sound(PeerSyncService(store: hub)))
        #expect(try await toHub.sync().historyCompacted.keys.sorted() == ["n"])
        try await SyncClient(store: phone, peer: "via:laptop", transport: FaultyTransport.sound(PeerSyncService(store: laptop))).sync()
        #expect(try value(phone, "n", "laptop") == .scalar(.int(3)))
        let report = try await toHub.sync()
        #expect(report.historyCompacted.isEmpty && report.sent == 1)
        #expect(try phone.outbox(peer: "via:hub").isEmpty && value(hub, "n", "phone") == .scalar(.int(1)))
    }

    /// A 410 naming a document already left out, or one outside the
    /// request's range (a broken peer's), ends the sync as every 410 did.
    @Test func aRefusalAsCompactedNamingADocumentOutsideTheRequestEndsTheSync() async throws {
        let store = try DocumentStore.inMemory()
        try store.create(id: "a")
        try write(store, "a", "k", 1)
        struct RefusingPeer: SyncTransport {
            var otherSide: SyncOtherSide { .peer }
            func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
                SyncMessage.failure(.historyCompacted(document: "a")).encoded()
            }
        }
        var failure: SyncError?
        do throws(SyncError) { try await SyncClient(store: store, peer: "p", transport: RefusingPeer()).sync() } catch { failure = error }
        // Refused for a, then again for a, which the ranges leave out: not taken twice.
        #expect(failure?.isHistoryCompacted == true)
    }

    /// A served store with one damaged note (its changes fail their checks)
    /// failed every client's whole sync with 500: nothing of the other notes
    /// went either way. It now refuses the request naming the note (422,
    /// `SyncFailure.documentDamaged`), saying why on its own side, and the
    /// client leaves the note out and syncs the others around it: the phone,
    /// which pushes to it and lacks the hub's edit of it, and a new tablet,
    /// which lacks it all. Nothing of it goes either way; the phone's copy
    /// stays as it was, its change pending.
    @Test func aServedStoreWithADamagedNoteSyncsTheOtherNotes() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/hub.quire", notes: [DocumentID] = ["a", "n", "z"]
            let phone = try DocumentStore.inMemory()
            do {
                let hub = try DocumentStore(path: path)
                for id in notes {
                    try hub.create(id: id)
                    try write(hub, id, "hub", 1)
                }
                try await SyncClient(store: phone, peer: "via:hub", transport: FaultyTransport.sound(PeerSyncService(store: hub))).sync()
                for id in notes { try write(hub, id, "hub", 2) }
                try hub.close()
            }
            try damageTheRows(of: "n", inFileAt: path)
            let hub = try DocumentStore(path: path)
            for id in notes { try write(phone, id, "phone", 1) }
            let told = Mutex<[String]>([])
            var served = PeerSyncService(store: hub)
            served.onDamagedDocument = { line in told.withLock { $0.append(line) } }
            let report = try await SyncClient(store: phone, peer: "via:hub", transport: FaultyTransport.sound(served)).sync()
            #expect(report.damagedOnPeer == ["n": .documentDamaged("n")])
            #expect(report.damagedOnPeer["n"].map { SyncError.refused($0).description(otherSide: .peer) } == "the peer refused "
                + "(status 422): document n is damaged in the answering store and cannot be read there: nothing of it was sent or taken")
            for id: DocumentID in ["a", "z"] {
                #expect(try value(phone, id, "hub") == .scalar(.int(2)) && value(hub, id, "phone") == .scalar(.int(1)))
            }
            #expect(try value(phone, "n", "hub") == .scalar(.int(1)) && value(phone, "n", "phone") == .scalar(.int(1)))
            #expect(try Set(phone.outbox(peer: "via:hub").keys) == ["n"])
            #expect(told.withLock { $0.first?.hasPrefix("document n is damaged in this store and was left out of a client's sync") } == true)
            let tablet = try DocumentStore.inMemory()
            let pulled = try await SyncClient(store: tablet, peer: "via:hub", transport: FaultyTransport.sound(served)).sync()
            #expect(pulled.damagedOnPeer.keys.sorted() == ["n"])
            #expect(try tablet.versionVectors().keys.sorted() == ["a", "z"])
        }
    }

    /// The same over HTTP from `quire serve`'s own log (`ServerLog`): a
    /// damaged row of one note was sent as stored, and every client lacking
    /// it refused the page holding it as not decoding, sync after sync,
    /// the other notes with it; a push to that note failed with 500, tried
    /// five times. Now both are refused at once naming the note, and the
    /// other notes sync both ways.
    @Test func aServerLogWithADamagedNoteSyncsTheOtherNotesOverHTTP() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/server.quire"
            let alice = try DocumentStore.inMemory(), phone = try DocumentStore.inMemory()
            let retries = SleepRecorder()
            @discardableResult func sync(_ store: DocumentStore, _ log: ServerLog) async throws -> SyncClient.Report {
                try await withServer(handler: SyncServer(log: log, tokens: nil).handle) { server in
                    let transport = HTTPSyncTransport(server: url(server, ""), token: nil, retryPolicy: retries.policy(maxAttempts: 5))
                    return try await SyncClient(store: store, peer: "server", transport: transport).sync()
                }
            }
            do {
                let log = try ServerLog(path: path)
                try await writeThreeNotesTwice(alice: alice, phone: phone) { _ = try await sync($0, log) }
            }
            try damageTheRows(of: "n", inFileAt: path, serverLog: true)
            let log = try reopenServerLog(path)
            for id in Self.threeNotes { try write(phone, id, "phone", 1) }
            let report = try await sync(phone, log)
            #expect(report.damagedOnPeer == ["n": .documentDamaged("n")])
            try await sync(alice, log)
            for id: DocumentID in ["a", "z"] {
                #expect(try value(phone, id, "alice") == .scalar(.int(2)) && value(alice, id, "phone") == .scalar(.int(1)))
            }
            #expect(try value(phone, "n", "alice") == .scalar(.int(1)) && value(phone, "n", "phone") == .scalar(.int(1)))
            #expect(try Set(phone.outbox(peer: "server").keys) == ["n"])
            let tablet = try DocumentStore.inMemory()
            #expect(try await sync(tablet, log).damagedOnPeer.keys.sorted() == ["n"])
            #expect(try tablet.versionVectors().keys.sorted() == ["a", "z"])
            #expect(retries.recorded.isEmpty)
        }
    }

    /// A server log row damaged for a while, then repaired (the file
    /// restored): the sync that left its note out stored a cursor past the
    /// row, and a cursor stands for every row before it, so the client never
    /// pulled the note's change again. The cursor now stays where it was
    /// while a note is left out as damaged, and the next sync brings it.
    @Test func aNoteLeftOutAsDamagedOnTheServerSyncsOnceTheLogIsRepaired() async throws {
        try await withDamagedNoteOnServer { server, _, phone, repair in
            #expect(try await sync(phone, server).damagedOnPeer.keys.sorted() == ["n"])
            #expect(try value(phone, "a", "alice") == .scalar(.int(2)) && value(phone, "n", "alice") == .scalar(.int(1)))
            try repair()
            let repaired = try await sync(phone, server)
            #expect(repaired.damagedOnPeer.isEmpty && repaired.received == 1)
            #expect(try value(phone, "n", "alice") == .scalar(.int(2)))
        }
    }

    /// Within one sync, the passes after the one that left a note out as
    /// damaged on the server go on from where the pages got: the stored
    /// cursor stays behind the note's rows, but no later pass makes the
    /// server go through the log from it again, nor pulls what it brought.
    @Test func laterPassesOfASyncDoNotPullAgainWhatThePagesBroughtPastADamagedNote() async throws {
        try await withDamagedNoteOnServer { server, _, phone, _ in
            // Three changes to push one a request: three passes over the ranges around n.
            for value: Int64 in 1...3 { try write(phone, "a", "phone", value) }
            let recording = RecordingTransport(inner: FaultyTransport.sound(server))
            var client = SyncClient(store: phone, peer: "server", transport: recording)
            client.maxPushChanges = 1
            let stored = try phone.syncCursor(peer: "server")
            let report = try await client.sync()
            #expect(report.damagedOnPeer.keys.sorted() == ["n"] && report.received == 2)
            // alice's second edits of a and z, each pulled once.
            #expect(recording.responses.flatMap(\.documents).reduce(0) { $0 + $1.bundles.count } == 2)
            // The stored cursor stays; only the first pass (the refused request, then a range each side of n) pulls from it.
            #expect(try phone.syncCursor(peer: "server") == stored)
            #expect(recording.requests.count > 3 && recording.requests.filter { $0.cursor == stored }.count == 3)
            #expect(try value(phone, "z", "alice") == .scalar(.int(2)))
        }
    }

    /// The next sync, the note still damaged, states every note, so that
    /// the server leaves out what the phone holds of the others: only the
    /// new row comes, not every row since the cursor that stayed behind.
    @Test func aNoteStillDamagedOnTheServerCostsTheOthersNoRowTwice() async throws {
        try await withDamagedNoteOnServer { server, alice, phone, _ in
            try await sync(phone, server)
            try write(alice, "a", "alice", 3)
            try await sync(alice, server)
            let recording = RecordingTransport(inner: FaultyTransport.sound(server))
            let report = try await SyncClient(store: phone, peer: "server", transport: recording).sync()
            #expect(report.damagedOnPeer.keys.sorted() == ["n"] && report.received == 1)
            #expect(recording.responses.flatMap(\.documents).reduce(0) { $0 + $1.bundles.count } == 1)
            #expect(try value(phone, "a", "alice") == .scalar(.int(3)))
        }
    }

    @discardableResult
    private func sync(_ store: DocumentStore, _ server: SyncServer) async throws -> SyncClient.Report {
        try await SyncClient(store: store, peer: "server", transport: FaultyTransport.sound(server)).sync()
    }

    /// The notes of a server whose note n a test damages.
    private static let threeNotes: [DocumentID] = ["a", "n", "z"]

    /// alice creates `threeNotes` and writes each twice, syncing after each
    /// round; the phone syncs after the first.
    private func writeThreeNotesTwice(alice: DocumentStore, phone: DocumentStore,
                                      syncing sync: (DocumentStore) async throws -> Void) async throws {
        for id in Self.threeNotes {
            try alice.create(id: id)
            try write(alice, id, "alice", 1)
        }
        try await sync(alice)
        try await sync(phone)
        for id in Self.threeNotes { try write(alice, id, "alice", 2) }
        try await sync(alice)
    }

    /// A server holding the notes a, n and z, each written twice by alice,
    /// whose phone synced after the first edits; the row of alice's second
    /// edit of n is damaged, and `repair` puts it back byte for byte.
    private func withDamagedNoteOnServer(
        _ body: (_ server: SyncServer, _ alice: DocumentStore, _ phone: DocumentStore, _ repair: () throws -> Void) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/server.quire"
            let alice = try DocumentStore.inMemory(), phone = try DocumentStore.inMemory()
            let server = SyncServer(log: try ServerLog(path: path), tokens: nil)
            try await writeThreeNotesTwice(alice: alice, phone: phone) { _ = try await sync($0, server) }
            let newest = "(SELECT max(seq) FROM log WHERE document_id = 'n')"
            let database = try Database(path: path)
            defer { database.close() }
            let stored = try database.query(sql: "SELECT data FROM log WHERE seq = \(newest)")[0].blob(0)
            try database.write { db in try db.execute(sql: "UPDATE log SET data = x'00112233' WHERE seq = \(newest)") }
            try await body(server, alice, phone) {
                try database.write { db in try db.execute(sql: "UPDATE log SET data = ? WHERE seq = \(newest)", arguments: [.blob(stored)]) }
            }
        }
    }

    /// Ids compare as UTF-8 bytes: the greatest id below another is that id
    /// with its last scalar made the one before, then the greatest scalars
    /// that fit in 256 bytes; below an id ending in U+0000, its prefix.
    @Test func theGreatestIDBelowAnother() {
        let below = DocumentID(rawValue: "b")!.justBelow!
        #expect(below.rawValue.utf8.count == 256 && below.rawValue.unicodeScalars.first == "a")
        #expect(below.rawValue.unicodeScalars.dropFirst().map(\.value) == Array(repeating: 0x10FFFF, count: 63) + [0xFFFF])
        #expect(below < "b" && DocumentID(rawValue: "a\u{10FFFF}")! < below)
        #expect(DocumentID(rawValue: "a\u{0}")!.justBelow == "a" && DocumentID(rawValue: "\u{0}")!.justBelow == nil)
        #expect(DocumentID(rawValue: "\u{E000}")!.justBelow!.rawValue.unicodeScalars.first == "\u{D7FF}")
        let long = DocumentID(rawValue: String(repeating: "x", count: 256))!
        #expect(long.justBelow!.rawValue == String(repeating: "x", count: 255) + "w")
    }

    /// A hub holding the notes `compacted` and `others`, which a laptop and
    /// a phone synced; then the laptop wrote to each of `compacted` twice
    /// through the hub (two rows of its log, the newest of which compaction
    /// keeps), the hub compacted those without history, the hub wrote to
    /// each of `others` and the phone to every note.
    private func compactedHubAndBehindPhone(compacting compacted: [DocumentID], besides others: [DocumentID]) async throws
        -> (hub: DocumentStore, laptop: DocumentStore, phone: DocumentStore) {
        let hub = try DocumentStore.inMemory(), laptop = try DocumentStore.inMemory(), phone = try DocumentStore.inMemory()
        for id in compacted + others {
            try hub.create(id: id)
            try write(hub, id, "hub", 1)
        }
        func sync(_ store: DocumentStore) async throws(SyncError) {
            try await SyncClient(store: store, peer: "via:hub", transport: FaultyTransport.sound(PeerSyncService(store: hub))).sync()
        }
        try await sync(laptop)
        try await sync(phone)
        for value: Int64 in [2, 3] {
            for id in compacted { try write(laptop, id, "laptop", value) }
            try await sync(laptop)
        }
        for id in compacted { try hub.compact(id, keepHistory: false) }
        for id in others { try write(hub, id, "hub", 2) }
        for id in compacted + others { try write(phone, id, "phone", 1) }
        return (hub, laptop, phone)
    }

    /// Each side holds the other's edit of each of `ids` (`compactedHubAndBehindPhone`), none pending on the phone for `peer`.
    private func expectSyncedBothWays(_ hub: DocumentStore, _ phone: DocumentStore, as peer: String, _ ids: [DocumentID]) throws {
        for id in ids {
            #expect(try value(phone, id, "hub") == .scalar(.int(2)) && value(hub, id, "phone") == .scalar(.int(1)))
            #expect(try phone.outbox(peer: peer)[id] == nil)
        }
    }

    /// Each of `ids` is on the phone as the phone left it, its change pending for `peer` and not on the hub.
    private func expectLeftAsItWas(_ phone: DocumentStore, _ hub: DocumentStore, as peer: String, _ ids: [DocumentID]) throws {
        for id in ids {
            #expect(try value(phone, id, "laptop") == nil && value(phone, id, "phone") == .scalar(.int(1)))
            #expect(try value(hub, id, "phone") == nil)
        }
        #expect(try Set(phone.outbox(peer: peer).keys) == Set(ids))
    }
    /// Another store behind the same command (the old one replaced, or
    /// copied: a new replica id) is found by its first answer, whose cursor
    /// names its replica id, and what the old one acknowledged is
    /// forgotten, as a server's `cursor reset` makes it: a sync cut off
    /// after that answer left every change the new store lacks pending,
    /// where it used to claim them held (`quire status`: 0 pending, and
    /// `sync` said "0 local changes stay pending").
    @Test func anotherStoreBehindThePeersNameIsNotTakenToHoldWhatTheOldOneHeld() async throws {
        let writer = try DocumentStore.inMemory()
        for id: DocumentID in ["a", "b"] {
            try writer.create(id: id)
            try write(writer, id, "k", 1)
        }
        try await SyncClient(store: writer, peer: "via:p", transport: FaultyTransport.sound(PeerSyncService(store: DocumentStore.inMemory()))).sync()
        #expect(try writer.outbox(peer: "via:p").isEmpty)

        let replaced = try DocumentStore.inMemory()
        let cutOff = SyncClient(store: writer, peer: "via:p", transport: CutOffTransport(service: PeerSyncService(store: replaced), answers: 1))
        do throws(SyncError) { try await cutOff.sync() } catch {}
        #expect(try writer.outbox(peer: "via:p").mapValues(\.count) == ["a": 1, "b": 1])
        #expect(try writer.syncCursor(peer: "via:p")?.logID == replaced.replicaID.rawValue)

        let report = try await SyncClient(store: writer, peer: "via:p", transport: FaultyTransport.sound(PeerSyncService(store: replaced))).sync()
        #expect(report.sent == 2)
        #expect(try writer.outbox(peer: "via:p").isEmpty && replaced.versionVectors() == writer.versionVectors())
    }

    /// After a refused push of several documents, those the peer stored
    /// anyway (all but the refused one) are counted as sent, once.
    @Test func documentsAPeerStoredFromARefusedPushAreCountedOnce() async throws {
        let alice = try DocumentStore.inMemory(), bob = try DocumentStore.inMemory()
        for id: DocumentID in ["a", "b", "c"] {
            try alice.create(id: id)
            try write(alice, id, "k", 1)
        }
        // Replica 5 used twice in b: alice holds its change 1, making a map,
        // and its change 2, writing in it; bob holds another change 1, a
        // plain value, so alice's change 2 edits no object of his, and he
        // refuses her push of b (400).
        var twice = Document(replica: ReplicaID(5)), again = Document(replica: ReplicaID(5))
        let map = try twice.transact { tx in try tx.putObject(.root, key: "m", kind: .map) }
        try twice.transact { tx in try tx.put(map, key: "k", .int(1)) }
        try again.transact { tx in try tx.put(.root, key: "m", .int(1)) }
        try alice.apply("b", twice.changes(since: VersionVector()))
        try bob.create(id: "b")
        try bob.apply("b", again.changes(since: VersionVector()))
        let report = try await SyncClient(store: alice, peer: "via:bob", transport: FaultyTransport.sound(PeerSyncService(store: bob))).sync()
        #expect(Set(report.rejected.map(\.document)) == ["b"])
        #expect(report.sent == 2)
        #expect(try bob.versionVectors()["a"] == alice.versionVector("a") && bob.versionVectors()["c"] == alice.versionVector("c"))
    }

    /// A request too large for the other side (a peer's 413 failure
    /// message, a server's HTTP 413) is no verdict on the changes it
    /// pushed: they used to be marked rejected, a document at a time, and
    /// never offered again. The client now pushes half as many changes a
    /// request until they pass, and every change gets through.
    @Test(arguments: ["pipe", "http"])
    func aPushTooLargeForTheOtherSideIsSplitNotRejected(transport kind: String) async throws {
        let writer = try DocumentStore.inMemory()
        for id: DocumentID in ["a", "b"] {
            try writer.create(id: id)
            for index in 0..<20 { try writeRandomText(writer, id, "k\(index)", length: 200) }
        }
        let (peer, report) = try await syncWithOneLimitedTo(bytes: 2_000, kind, writer)
        #expect(report.rejected.isEmpty)
        #expect(try writer.rejectedChanges(peer: "p").isEmpty)
        #expect(report.sent == 40)
        #expect(try peer() == writer.versionVectors())
    }

    /// A server taking few documents, or few changes, a request refuses
    /// more with 413. The client used to split only what it pushed, and
    /// one change at a time still stated every document: refused, the
    /// document was left out, one a round, until the request pushed
    /// nothing and the sync failed. Over the change limit by more than one
    /// change, the request was refused as undecodable (400) and its
    /// changes rejected for good. Now the client halves what a request
    /// pushes and states (a range of documents at a time), and every
    /// change gets through, in few rounds.
    @Test(arguments: ["documents", "changes"])
    func aServerTakingFewDocumentsOrChangesARequestGetsThemAllInFewRounds(limited: String) async throws {
        let writer = try DocumentStore.inMemory()
        let ids = (0..<32).map { DocumentID(rawValue: "note-\($0)")! }
        for id in ids {
            try writer.create(id: id)
            for value: Int64 in 1...8 { try write(writer, id, "k", value) }
        }
        var configuration = SyncServer.Configuration()
        configuration.requestsPerSecond = 10_000
        if limited == "documents" { configuration.message.maxDocuments = 4 } else { configuration.log.maxChangesPerRequest = 5 }
        // Twice the requests the limit needs (the halvings land between half of it and all of it), and as many as the halvings.
        func fewRounds(changes: Int) -> Int {
            2 * (limited == "documents" ? ids.count / 4 : (changes + 4) / 5) + 8
        }
        let server = try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil, configuration: configuration)
        try await withServer(handler: server.handle) { http in
            let transport = HTTPSyncTransport(server: URL(string: "http://127.0.0.1:\(http.port)")!, token: nil, retryPolicy: .never)
            let client = SyncClient(store: writer, peer: "p", transport: transport)
            let first = try await client.sync()
            #expect(first.sent == 256 && first.rejected.isEmpty)
            #expect(first.rounds <= fewRounds(changes: 256), "\(first.rounds) rounds")
            // Again with the cursor past seq 0: the documents edited since are stated, and pushed.
            for id in ids { try write(writer, id, "k", 4) }
            let second = try await client.sync()
            #expect(second.sent == 32 && second.rejected.isEmpty)
            #expect(second.rounds <= fewRounds(changes: 32), "\(second.rounds) rounds")
            let reader = try DocumentStore.inMemory()
            try await SyncClient(store: reader, peer: "p", transport: transport).sync()
            #expect(try reader.versionVectors() == writer.versionVectors())
        }
    }

    /// A change too large for any request to the other side is left out,
    /// pending, not rejected; the other documents sync, and the sync fails
    /// saying which change was too large. Once the other side takes it, it goes.
    @Test func aChangeTooLargeForAnyRequestStaysPendingAndTheOthersSync() async throws {
        let writer = try DocumentStore.inMemory()
        for id: DocumentID in ["big", "small"] { try writer.create(id: id) }
        try writeRandomText(writer, "big", "k", length: 3_000)
        try writeRandomText(writer, "small", "k", length: 10)
        let peer = try DocumentStore.inMemory()
        let limited = SyncClient(store: writer, peer: "p", transport: LimitedTransport(service: PeerSyncService(store: peer),
                                                                                      limits: SyncMessage.Limits(maxPayloadBytes: 2_000)))
        let change = try writer.changes("big")[0].id
        var outcome: SyncError?
        do throws(SyncError) { try await limited.sync() } catch { outcome = error }
        guard case .refused(let failure)? = outcome?.kind else { Issue.record("not refused: \(String(describing: outcome))"); return }
        #expect(failure.status == 413)
        #expect(failure.message.hasPrefix("a request pushing change \(change) of document big alone was too large for it (sync message too large: "))
        #expect(failure.message.hasSuffix("); the changes stay pending, and the other documents synced"))
        #expect(try writer.rejectedChanges(peer: "p").isEmpty)
        #expect(try peer.versionVectors() == ["small": writer.versionVector("small")])
        let unlimited = SyncClient(store: writer, peer: "p", transport: FaultyTransport.sound(PeerSyncService(store: peer)))
        #expect(try await unlimited.sync().sent == 1)
        #expect(try peer.versionVectors() == writer.versionVectors())
    }

    /// Syncs `writer` with a new peer (`pipe`: a store answering as `quire
    /// serve --stdio` does, taking requests of at most `bytes` of payload)
    /// or server (`http`: bodies of at most `bytes`) under the name `p`;
    /// returns how to read the other side's versions, and the report.
    private func syncWithOneLimitedTo(bytes: Int, _ kind: String, _ writer: DocumentStore) async throws
        -> (versions: () throws -> [DocumentID: VersionVector], report: SyncClient.Report) {
        if kind == "pipe" {
            let peer = try DocumentStore.inMemory()
            let transport = LimitedTransport(service: PeerSyncService(store: peer), limits: SyncMessage.Limits(maxPayloadBytes: bytes))
            return ({ try peer.versionVectors() }, try await SyncClient(store: writer, peer: "p", transport: transport).sync())
        }
        let server = try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil)
        return try await withServer(limits: HTTPServer.Limits(maxBodyBytes: bytes), handler: server.handle) { http in
            let transport = HTTPSyncTransport(server: URL(string: "http://127.0.0.1:\(http.port)")!, token: nil, retryPolicy: .never)
            let report = try await SyncClient(store: writer, peer: "p", transport: transport).sync()
            // What the server holds, as a fresh store pulls it.
            let reader = try DocumentStore.inMemory()
            try await SyncClient(store: reader, peer: "p", transport: transport).sync()
            return ({ try reader.versionVectors() }, report)
        }
    }

    /// Writes `key` = `length` random letters, which compress little, in a new change.
    private func writeRandomText(_ store: DocumentStore, _ id: DocumentID, _ key: String, length: Int) throws {
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        try store.edit(id) { tx in try tx.put(.root, key: key, .string(String((0..<length).map { _ in letters.randomElement()! }))) }
    }

    /// A request over the frame limit is read and dropped and answered
    /// with a 413 failure naming the limit, as the HTTP server answers a
    /// body over its own; the session goes on with the next request.
    @Test func anOversizedRequestIsAnsweredWith413AndTheSessionGoesOn() async throws {
        let requests = Pipe(), answers = Pipe()
        // The client's side on a thread of its own: serving blocks one of the tasks' threads, which may be all there are.
        let client = Task { try await onThread { () throws -> [SyncMessage] in
            let oversized = StdioFraming.maxFrameBytes + 1
            var frame = [UInt8](repeating: 0, count: 4 + oversized)
            for index in 0..<4 { frame[index] = UInt8(truncatingIfNeeded: oversized >> (8 * index)) }
            try requests.fileHandleForWriting.write(contentsOf: frame)
            let refusal = try StdioFraming.read(from: answers.fileHandleForReading) ?? []
            try StdioFraming.write(SyncMessage.request(SyncRequest(cursor: nil, documents: [])).encoded(), to: requests.fileHandleForWriting)
            let answer = try StdioFraming.read(from: answers.fileHandleForReading) ?? []
            try requests.fileHandleForWriting.close()
            return try [SyncMessage.decode(refusal), SyncMessage.decode(answer)]
        } }
        do {
            try await StdioFraming.serve(PeerSyncService(store: try DocumentStore.inMemory()),
                                         input: requests.fileHandleForReading, output: answers.fileHandleForWriting)
        } catch {
            // Without an answer, or its request taken, the client would wait for ever.
            signal(SIGPIPE, SIG_IGN)
            try answers.fileHandleForWriting.close()
            try requests.fileHandleForReading.close()
            throw error
        }
        let messages = try await client.value
        #expect(messages.first == .failure(SyncFailure(status: 413, "a frame of 67108865 bytes, above the limit of 67108864 bytes (64 MiB)")))
        guard case .response = messages.last else { Issue.record("not a response: \(messages)"); return }
    }

    /// A client that stops inside a request ends the session once it has
    /// been silent for the timeout, instead of holding the peer for ever.
    @Test func aClientStoppingInsideARequestEndsTheSession() async throws {
        let requests = Pipe(), answers = Pipe()
        try requests.fileHandleForWriting.write(contentsOf: [100, 0, 0, 0, 1, 2, 3])
        await #expect(throws: StdioFraming.StreamError.silent(seconds: 0.5)) {
            try await StdioFraming.serve(PeerSyncService(store: try DocumentStore.inMemory()), input: requests.fileHandleForReading,
                                         output: answers.fileHandleForWriting, timeout: 0.5)
        }
    }

    /// A client that goes silent between requests without closing its end
    /// of the pipe ends the session once no request has begun for the idle
    /// timeout, instead of holding the peer (and its store) for ever; the
    /// requests before were answered.
    @Test func aSessionEndsWhenNoRequestBeginsForTheIdleTimeout() async throws {
        let requests = Pipe(), answers = Pipe()
        try StdioFraming.write(SyncMessage.request(SyncRequest(cursor: nil, documents: [])).encoded(), to: requests.fileHandleForWriting)
        let service = PeerSyncService(store: try DocumentStore.inMemory())
        let end = await finishing(within: 60) { () async -> StdioFraming.SessionEnd? in
            try? await StdioFraming.serve(service, input: requests.fileHandleForReading, output: answers.fileHandleForWriting, idleTimeout: 0.5)
        }
        #expect(end == .idle(seconds: 0.5))
        guard case .response = try SyncMessage.decode(StdioFraming.read(from: answers.fileHandleForReading) ?? []) else {
            Issue.record("the request before the silence was not answered")
            return
        }
        // Open until here: the session ended on the silence, not on the end of its input.
        try requests.fileHandleForWriting.close()
    }

    /// A peer that trickles its answer, a byte now and then but never
    /// silent for the timeout, fails the exchange once it falls behind
    /// the slowest pace a frame may keep.
    @Test func aPeerTricklingItsAnswerTimesOut() async throws {
        // A frame of 1,000 bytes claimed, then ten bytes a second.
        let command = "printf '\\350\\003\\000\\000'; while :; do printf x; sleep 0.1; done"
        let transport = try StdioSyncTransport(command: command, timeout: 0.5)
        defer { transport.close() }
        let outcome = await finishing(within: 60) { () async -> SyncError? in
            do throws(SyncError) { _ = try await transport.exchange(SyncMessage.request(SyncRequest(cursor: nil, documents: [])).encoded(), longPollSeconds: 0) } catch {
                return error
            }
            return nil
        }
        guard case .unreachable(let reason)? = outcome??.kind else { Issue.record("\(String(describing: outcome))"); return }
        #expect(reason.hasPrefix("the command \"\(command)\" failed: only "))
        #expect(reason.contains(" bytes of a frame of 1004 went through in "))
    }

    /// Closing the transport while an exchange waits for its answer ends
    /// the exchange at once, with an error saying so, rather than after
    /// the timeout.
    @Test func closingTheTransportEndsAnExchangeInProgress() async throws {
        // The command marks that the request reached it: closed before the
        // exchange began (a loaded host may start it late), close would wait
        // the timeout for `sleep` to end, as it should, and test nothing.
        try await withTemporaryDirectory { directory in
            let marker = directory + "/request-reached"
            let command = "head -c 1 >/dev/null; touch '\(marker)'; exec sleep 600"
            let transport = try StdioSyncTransport(command: command, timeout: 600)
            let closed = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                for _ in 0..<6_000 where !FileManager.default.fileExists(atPath: marker) { usleep(10_000) }
                transport.close()
                closed.signal()
            }
            let outcome = await finishing(within: 60) { () async -> SyncError? in
                do throws(SyncError) {
                    _ = try await transport.exchange(SyncMessage.request(SyncRequest(cursor: nil, documents: [])).encoded(), longPollSeconds: 0)
                } catch {
                    return error
                }
                return nil
            }
            #expect(outcome == .some(.unreachable("the transport to the command \"\(command)\" was closed during the sync", otherSide: .peer)))
            #expect(closed.wait(timeout: .now() + 60) == .success)
            await #expect(throws: SyncError.unreachable("the transport to the command \"\(command)\" was closed during the sync", otherSide: .peer)) {
                try await transport.exchange([], longPollSeconds: 0)
            }
        }
    }


    /// A command that fails before answering (a missing store, a typo, ssh
    /// refusing) says why in the error: its exit status and the last lines
    /// of its standard error, not only that it ended without answering.
    /// They are quoted with their escape sequences shown, not acted on, so
    /// that an app printing the error cannot have its terminal retitled or
    /// cleared by the peer; a CRLF ends a line.
    @Test(arguments: [
        ("echo 'warming up' >&2; echo 'error: no store at /missing.quire' >&2; exit 3", 3, "warming up\n  error: no store at /missing.quire"),
        ("printf '\\033]0;owned\\007\\033[2Jerror: gone\\r\\n' >&2; exit 2", 2, "^[]0;owned^G^[[2Jerror: gone"),
    ])
    func aCommandThatEndsWithoutAnsweringSaysWhyInTheError(command: String, status: Int, quoted: String) async throws {
        let transport = try StdioSyncTransport(command: command)
        defer { transport.close() }
        await #expect(throws: SyncError.unreachable("the command \"\(command)\" ended without answering (exit status \(status)); its standard error "
            + "ended with:\n  " + quoted, otherSide: .peer)) {
            try await transport.exchange(SyncMessage.request(SyncRequest(cursor: nil, documents: [])).encoded(), longPollSeconds: 0)
        }
    }

    /// A command that leaves a process holding its standard error open
    /// (`sleep 120 &`) still fails at once, with what it wrote so far; and
    /// one killed by a signal says which, its standard error quoted only
    /// as far as it goes (the last `lineLimit` lines).
    @Test func aCommandsStandardErrorLeftOpenOrLongDoesNotHoldTheError() async throws {
        let leftOpen = "echo 'cannot connect' >&2; sleep 120 >/dev/null & exit 255"
        // Well short of the sleep, far beyond a loaded machine's start of a shell.
        let outcome = await finishing(within: 90) { () async -> SyncError? in
            let transport = try? StdioSyncTransport(command: leftOpen)
            defer { transport?.close() }
            do throws(SyncError) { _ = try await transport?.exchange([], longPollSeconds: 0) } catch { return error }
            return nil
        }
        #expect(outcome == .some(.unreachable("the command \"\(leftOpen)\" ended without answering (exit status 255); its standard "
            + "error ended with:\n  cannot connect", otherSide: .peer)))
        let killed = "seq 1 5000 >&2; kill -9 $$"
        let transport = try StdioSyncTransport(command: killed)
        defer { transport.close() }
        await #expect(throws: SyncError.unreachable("the command \"\(killed)\" ended without answering (ended by signal 9); its standard error "
            + "ended with:\n" + (4991...5000).map { "  \($0)" }.joined(separator: "\n"), otherSide: .peer)) {
            try await transport.exchange([], longPollSeconds: 0)
        }
    }
}

/// A peer command's standard error, as it goes to ours.
@Suite struct PeerErrorLinesTests {
    /// What a hostile peer (or a host ssh reaches) writes there cannot
    /// retitle, clear or colour the terminal: every escape is shown, and
    /// each line is marked as the peer's, however the reads cut it.
    @Test func aPeersLinesArePrefixedAndTheirEscapesShown() {
        var lines = PeerErrorLines()
        let written = Array("\u{1B}]0;owned\u{7}\u{1B}[2Jcleared\r\nred \u{1B}[31mtext\u{1B}[0m\nhidden\u{202E}txet caf\u{E9}\n".utf8)
        // Cut within the CRLF and within the é, with nothing more for now each time.
        let cuts = [0, 25, 50, written.count - 2, written.count]
        var shown = ""
        for (start, end) in zip(cuts, cuts.dropFirst()) {
            shown += lines.text(for: written[start..<end], showingUnfinished: true)
        }
        shown += lines.finish()
        #expect(shown == "peer: ^[]0;owned^G^[[2Jcleared\npeer: red ^[[31mtext^[[0m\npeer: hidden<U+202E>txet caf\u{E9}\n")
    }

    /// A line begun (a prompt) is shown when nothing more comes for now,
    /// its rest later without a second prefix; one the command never ends
    /// is ended when its standard error ends.
    @Test func aLineBegunIsShownOnceAndEndedAtTheEnd() {
        var lines = PeerErrorLines()
        #expect(lines.text(for: Array("Password: ".utf8)[...], showingUnfinished: false) == "")
        #expect(lines.text(for: Array("".utf8)[...], showingUnfinished: true) == "peer: Password: ")
        #expect(lines.text(for: Array("ok\nlast".utf8)[...], showingUnfinished: false) == "ok\n")
        #expect(lines.finish() == "peer: last\n")
        #expect(lines.finish() == "")
    }
}

/// What `body` returns, or nil if it has not finished within `seconds`
/// (it is left running): a test of something that used to hang fails
/// instead of hanging.
func finishing<T: Sendable>(within seconds: Double, _ body: @escaping @Sendable () async -> T) async -> T? {
    await withCheckedContinuation { continuation in
        let once = ResumingOnce(continuation)
        Task.detached { once.resume(returning: await body()) }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { once.resume(returning: nil) }
    }
}

/// What `body` returns, run on a thread of its own rather than one of the
/// few that run tasks: for blocking reads and writes.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
    }
}

/// Resumes a continuation with the first value it is given.
private final class ResumingOnce<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T?, Never>?

    init(_ continuation: CheckedContinuation<T?, Never>) {
        self.continuation = continuation
    }

    func resume(returning value: T?) {
        lock.withLock {
            continuation?.resume(returning: value)
            continuation = nil
        }
    }
}

/// How many write transactions the write-ahead log of the store at `path` holds: its
/// commit frames (a non-zero database size in the frame header) that carry
/// the log's current salt. The log is only reset by a checkpoint, which
/// SQLite makes past 1,000 pages: keep what a test writes below that.
func committedTransactions(inLogOf path: String) -> Int {
    guard let log = FileManager.default.contents(atPath: path + "-wal").map([UInt8].init), log.count >= 32 else { return 0 }
    func bigEndian(_ offset: Int) -> UInt32 { log[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) } }
    let pageSize = Int(bigEndian(8)), salt = (bigEndian(16), bigEndian(20))
    var commits = 0
    var frame = 32
    while frame + 24 + pageSize <= log.count, (bigEndian(frame + 8), bigEndian(frame + 12)) == salt {
        if bigEndian(frame + 4) != 0 { commits += 1 }
        frame += 24 + pageSize
    }
    return commits
}

/// Answers the first `answers` exchanges, then is unreachable: a peer killed in the middle of a sync.
private final class CutOffTransport: SyncTransport {
    let service: any SyncService
    private let left: Mutex<Int>

    init(service: any SyncService, answers: Int) {
        self.service = service
        left = Mutex(answers)
    }

    func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
        guard left.withLock({ left in
            left -= 1
            return left >= 0
        }) else { throw .unreachable("the peer was killed") }
        return await service.respond(toMessage: request, access: .unrestricted)
    }
}
