import Foundation
import QuireTestSupport
@testable import Quire
import QuireStore
import QuireSync
import Synchronization
import Testing

@Suite struct SyncProtocolTests {
    func makeServer() throws -> SyncServer {
        try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil)
    }

    /// Two syncs of one store at once push the same change; the server
    /// takes it once, and `sent` counts it once between them: the sync that
    /// records the server holding it first. (Both counted it.)
    @Test func twoSyncsOfOneStoreAtOnceCountASentChangeOnce() async throws {
        let server = try makeServer()
        let store = try DocumentStore.inMemory()
        try store.create(id: "n")
        try write(store, "n", "k", 1)
        // A stored cursor: the next syncs push in their first round.
        #expect(try await SyncClient(store: store, peer: "server", transport: FaultyTransport.sound(server)).sync().sent == 1)
        try write(store, "n", "k", 2)
        let gathering = GatheringTransport(service: server, requests: 2)
        async let first = SyncClient(store: store, peer: "server", transport: gathering).sync()
        async let second = SyncClient(store: store, peer: "server", transport: gathering).sync()
        let reports = try await [first, second]
        #expect(reports.map(\.sent).sorted() == [0, 1])
        #expect(try store.outbox(peer: "server").isEmpty)
    }

    /// A change its writer relays through a peer to the server before
    /// pushing it itself: the server's answer says the push brought nothing
    /// new (`Quire-New-Changes`), so `sent` is 0 (it was 1: the writer's
    /// acknowledgements do not cover it). A server that does not say (one
    /// before the header, here one that strips it) is counted as before.
    @Test(arguments: [true, false])
    func aChangeTheServerGotThroughARelayIsNotCountedAsSent(serverSaysWhatWasNew: Bool) async throws {
        let server = try makeServer()
        let handler: HTTPServer.Handler = { request in
            var response = await server.handle(request)
            if !serverSaysWhatWasNew { response.headers[HTTPSyncTransport.newChangesHeader] = nil }
            return response
        }
        try await withServer(handler: handler) { http in
            let writer = try DocumentStore.inMemory(), relay = try DocumentStore.inMemory()
            func toServer(_ store: DocumentStore) -> SyncClient {
                SyncClient(store: store, peer: "server", transport: HTTPSyncTransport(server: url(http, ""), token: nil, replica: store.replicaID))
            }
            try writer.create(id: "n")
            try write(writer, "n", "k", 1)
            #expect(try await toServer(writer).sync().sent == 1)
            try write(writer, "n", "k", 2)
            _ = try await SyncClient(store: writer, peer: "via:relay", transport: FaultyTransport.sound(PeerSyncService(store: relay))).sync()
            try write(writer, "n", "k", 4)
            #expect(try await toServer(relay).sync().sent == 1)
            // The relayed change and one the server lacks go; one was new to it.
            let report = try await toServer(writer).sync()
            #expect(report.sent == (serverSaysWhatWasNew ? 1 : 2))
            #expect(try writer.outbox(peer: "server").isEmpty)
            #expect(server.log.version("n") == (try writer.versionVector("n")))
        }
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func replicasConvergeOverANetworkThatLosesDuplicatesAndReorders(seed: UInt64) async throws {
        let server = try makeServer()
        let stores = try (0..<3).map { _ in try DocumentStore.inMemory() }
        let documents: [DocumentID] = ["a", "b"]
        var random = SeededGenerator(seed: seed)
        var changesMade = 0
        for round in 0..<8 {
            for (index, store) in stores.enumerated() where Bool.random(using: &random) {
                let id = documents.randomElement(using: &random)!
                try store.createIfMissing(id)
                try write(store, id, "k\(Int.random(in: 0..<4, using: &random))", Int64(round * 10 + index))
                changesMade += 1
            }
            let store = stores.randomElement(using: &random)!
            let transport = FaultyTransport(service: server, seed: random.next())
            try await syncUntilDone(SyncClient(store: store, peer: "server", transport: transport))
        }
        // Everyone syncs twice at the end over a sound network: the first
        // brings the server everything, the second brings everyone the rest.
        for _ in 0..<2 {
            for store in stores {
                let transport = FaultyTransport(service: server, seed: 0)
                transport.dropRequest = 0; transport.dropAnswer = 0; transport.duplicate = 0; transport.replayOld = 0
                try await SyncClient(store: store, peer: "server", transport: transport).sync()
            }
        }
        // Each change is in the server's log exactly once (a row may hold several).
        let logged = try server.log.page(after: 0, access: .unrestricted, known: [:], maxBytes: .max).documents
            .flatMap { document in try document.bundles.flatMap { try ChangeEncoding.decode($0) }.map { "\(document.id) \($0.id)" } }
        #expect(logged.count == changesMade)
        #expect(Set(logged).count == changesMade)
        for id in documents where try stores[0].documents().contains(where: { $0.id == id }) {
            let version = try stores[0].versionVector(id)
            #expect(version.operationCount == server.log.version(id).operationCount)
            for store in stores {
                #expect(try store.versionVector(id) == version)
                for key in 0..<4 { #expect(try value(store, id, "k\(key)") == value(stores[0], id, "k\(key)")) }
                #expect(try store.outbox(peer: "server").isEmpty)
            }
        }
    }

    /// A sync's store work (here, applying what the server sent, whose
    /// commit waits for a lock another process holds) runs on a thread kept for
    /// store calls (`store.async`), not on a thread of Swift's cooperative
    /// pool, which must never block.
    @Test func aSyncsStoreWorkRunsOnTheStoresThreads() async throws {
        let server = try makeServer()
        let source = try DocumentStore.inMemory()
        try source.create(id: "a")
        try write(source, "a", "k", 1)
        let transport = LimitedTransport(service: server, limits: SyncMessage.Limits())
        try await SyncClient(store: source, peer: "server", transport: transport).sync()

        try await withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let store = try DocumentStore(path: path)
            store.writerLockTimeout = 3600
            let otherProcess = try #require(LockFile(beside: path))
            #expect(otherProcess.lock(exclusive: true, within: 0))
            // No deadline: on a loaded machine the sync may take minutes to reach
            // its commit (a 60 s one failed so); it cannot end without the lock.
            let ended = Mutex(false)
            let sync = Task {
                defer { ended.withLock { $0 = true } }
                return try await SyncClient(store: store, peer: "server", transport: transport).sync()
            }
            while !store.condition.withLock({ store.isWriting }) && !ended.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(1)) }
            #expect(store.condition.withLock { store.isWriting }, "the sync's commit never waited for the lock")
            #expect(store.callThreads.counts.busy >= 1, "the commit waits on a thread of Swift's pool")
            otherProcess.unlock()
            #expect(try await sync.value.received == 1)
            #expect(try value(store, "a", "k") == .scalar(.int(1)))
        }
    }

    /// A sync whose task is cancelled before it starts does nothing and
    /// says it was cancelled, as a cancelled HTTP request does: not that
    /// the server could not be reached.
    @Test func aSyncCancelledBeforeItStartsDoesNothing() async throws {
        let server = try makeServer()
        let store = try DocumentStore.inMemory()
        try store.create(id: "a")
        try write(store, "a", "k", 1)
        let transport = LimitedTransport(service: server, limits: SyncMessage.Limits())
        let sync = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await SyncClient(store: store, peer: "server", transport: transport).sync()
        }
        let error = await #expect(throws: SyncError.self) { try await sync.value }
        #expect(error == .cancelled())
        #expect(error?.isCancelled == true)
        #expect(error?.localizedDescription
                    == "the sync with the server was cancelled; what it applied is kept, and the next sync goes on from there")
        #expect(try store.outbox(peer: "server")["a"]?.count == 1)
        #expect(server.log.version("a").isEmpty)
    }

    /// A document the store cannot read (a damaged change) is left out of
    /// the sync, which goes on with the others and reports it.
    @Test func aDamagedDocumentIsLeftOutAndTheOthersSync() async throws {
        let server = try makeServer()
        try await withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let bob = try DocumentStore.inMemory()
            do {
                let alice = try DocumentStore(path: path)
                for id: DocumentID in ["bad", "ok"] {
                    try alice.create(id: id)
                    try write(alice, id, "k", 1)
                }
                try await SyncClient(store: alice, peer: "s", transport: FaultyTransport.sound(server)).sync()
                try await SyncClient(store: bob, peer: "s", transport: FaultyTransport.sound(server)).sync()
                for id: DocumentID in ["bad", "ok"] { try write(bob, id, "k", 2) }
                try await SyncClient(store: bob, peer: "s", transport: FaultyTransport.sound(server)).sync()
                try write(alice, "ok", "mine", 3)
                try write(alice, "bad", "mine", 3)
                try alice.database.write { db in try db.execute(sql: "UPDATE changes SET data = x'00' WHERE document = (SELECT number FROM documents WHERE id = 'bad')") }
            }
            let alice = try DocumentStore(path: path, onWarning: { _ in })  // reopened: "bad" must load from the file
            let report = try await SyncClient(store: alice, peer: "s", transport: FaultyTransport.sound(server)).sync()
            #expect(Array(report.damaged.keys) == ["bad"])
            #expect(report.sent == 1 && report.received == 1)
            #expect(try value(alice, "ok", "k") == .scalar(.int(2)))
            try await SyncClient(store: bob, peer: "s", transport: FaultyTransport.sound(server)).sync()
            #expect(try value(bob, "ok", "mine") == .scalar(.int(3)))
            #expect(try value(bob, "bad", "mine") == nil)
        }
    }

    /// The first sync with a server asks what it holds before sending;
    /// later ones send at once what it was last known to lack.
    @Test func aSyncSendsExactlyTheVersionVectorDifferenceInOneRoundTrip() async throws {
        let server = try makeServer()
        let alice = try DocumentStore.inMemory(), bob = try DocumentStore.inMemory()
        try alice.create(id: "n")
        for index in 0..<5 { try write(alice, "n", "k\(index)", Int64(index)) }
        let first = try await SyncClient(store: alice, peer: "s", transport: FaultyTransport.sound(server)).sync()
        #expect(first.rounds == 2 && first.sent == 5 && first.received == 0)

        let second = try await SyncClient(store: bob, peer: "s", transport: FaultyTransport.sound(server)).sync()
        #expect(second.rounds == 1 && second.received == 5 && second.sent == 0)

        try write(alice, "n", "more", 1)
        try write(alice, "n", "more", 2)
        let recorder = RecordingTransport(inner: FaultyTransport.sound(server))
        let third = try await SyncClient(store: alice, peer: "s", transport: recorder).sync()
        #expect(third.rounds == 1 && third.sent == 2)
        let pushed = try recorder.requests[0].documents[0].changes(limits: .default)
        #expect(pushed.map(\.id.counter) == [6, 7])
        #expect(try server.log.version("n") == alice.versionVector("n"))
    }

    /// With a wait, a sync that finds nothing asks first without waiting,
    /// then waits in a second round; one that sends or receives does not wait.
    @Test func aSyncWaitsForNewsOnlyAfterARoundThatFoundNothing() async throws {
        let server = try makeServer()
        let alice = try DocumentStore.inMemory(), bob = try DocumentStore.inMemory()
        try alice.create(id: "n")
        try write(alice, "n", "k", 1)
        let pushing = RecordingTransport(inner: FaultyTransport.sound(server))
        let pushed = try await SyncClient(store: alice, peer: "s", transport: pushing).sync(waitSeconds: 30)
        #expect(pushed.rounds == 2 && pushing.requests.map(\.waitMilliseconds) == [0, 0])
        let pulling = RecordingTransport(inner: FaultyTransport.sound(server))
        let pulled = try await SyncClient(store: bob, peer: "s", transport: pulling).sync(waitSeconds: 30)
        #expect(pulled.rounds == 1 && pulled.received == 1 && pulling.requests.map(\.waitMilliseconds) == [0])

        let waiting = RecordingTransport(inner: FaultyTransport.sound(server))
        let bobWaits = Task { try await SyncClient(store: bob, peer: "s", transport: waiting).sync(waitSeconds: 30) }
        for _ in 0..<2_000 where waiting.requests.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
        try write(alice, "n", "k", 2)
        try await SyncClient(store: alice, peer: "s", transport: FaultyTransport.sound(server)).sync()
        let news = try await bobWaits.value
        #expect(news.rounds == 2 && news.received == 1)
        #expect(waiting.requests.map(\.waitMilliseconds) == [0, 30_000])
        #expect(try value(bob, "n", "k") == .scalar(.int(2)))
    }

    /// A first round with a server states the version of every document
    /// the store holds changes of, as loading it would give (compacted,
    /// removed, with a change waiting), read from the store: nothing is
    /// loaded when there is nothing to send.
    @Test func aRoundStatesEveryDocumentsVersionWithoutLoadingIt() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/client.quire"
            let server = try makeServer()
            let other = try DocumentStore.inMemory()
            try other.create(id: "shared")
            for index in 0..<5 { try write(other, "shared", "k\(index)", Int64(index)) }
            try await SyncClient(store: other, peer: "s", transport: FaultyTransport.sound(server)).sync()
            for index in 5..<7 { try write(other, "shared", "k\(index)", Int64(index)) }
            do {
                let store = try DocumentStore(path: path)
                try await SyncClient(store: store, peer: "s", transport: FaultyTransport.sound(server)).sync()
                try store.compact("shared", keepHistory: false)
                #expect(try store.apply("shared", [other.changes("shared").last!]) == 0)  // waits for the one before
                try store.create(id: "mine")
                for index in 0..<3 { try write(store, "mine", "k", Int64(index)) }
                try store.create(id: "removed")
                try write(store, "removed", "k", 1)
                try store.remove("removed")
                try store.create(id: "empty")
                try await SyncClient(store: store, peer: "s", transport: FaultyTransport.sound(server)).sync()
            }

            let reopened = try DocumentStore(path: path)
            let recorder = RecordingTransport(inner: FaultyTransport.sound(server))
            // Under another name, the server is new to the store: it has no cursor there.
            let report = try await SyncClient(store: reopened, peer: "s again", transport: recorder).sync()
            #expect(report.rounds == 1 && report.sent == 0 && report.received == 0)
            #expect(reopened.cache.count == 0)
            let stated = Dictionary(uniqueKeysWithValues: recorder.requests[0].documents.map { ($0.id, $0.version) })
            #expect(Set(stated.keys) == ["shared", "mine", "removed"])
            for (id, version) in stated { #expect(try reopened.read(id) { $0.versionVector } == version) }
            #expect(stated["shared"] == [other.replicaID: 5])
            #expect(stated["mine"] == [reopened.replicaID: 3])
        }
    }

    @Test func aReplacedServerGetsEverythingAgainByVersionVectors() async throws {
        let oldServer = try makeServer()
        let store = try DocumentStore.inMemory()
        try store.create(id: "n")
        try write(store, "n", "x", 1)
        try await SyncClient(store: store, peer: "s", transport: FaultyTransport.sound(oldServer)).sync()
        #expect(try store.outbox(peer: "s").isEmpty)

        let newServer = try makeServer()  // another log id: the cursor cannot be served
        let report = try await SyncClient(store: store, peer: "s", transport: FaultyTransport.sound(newServer)).sync()
        #expect(report.rounds <= 2)
        #expect(try newServer.log.version("n") == store.versionVector("n"))
    }

    @Test func aWriteAfterASyncWinsOverEverythingSeen() async throws {
        let server = try makeServer()
        // Many edits on one side push its Lamport clock far ahead.
        let busy = try DocumentStore.inMemory(), quiet = try DocumentStore.inMemory()
        try busy.create(id: "n")
        for index in 0..<20 { try write(busy, "n", "title", Int64(index)) }
        try await SyncClient(store: busy, peer: "s", transport: FaultyTransport.sound(server)).sync()
        try await SyncClient(store: quiet, peer: "s", transport: FaultyTransport.sound(server)).sync()
        try write(quiet, "n", "title", 1000)
        try await SyncClient(store: quiet, peer: "s", transport: FaultyTransport.sound(server)).sync()
        try await SyncClient(store: busy, peer: "s", transport: FaultyTransport.sound(server)).sync()
        #expect(try value(busy, "n", "title") == .scalar(.int(1000)))
    }

    @Test func largeHistoriesTravelInPages() async throws {
        var configuration = SyncServer.Configuration()
        configuration.maxPageBytes = 2_000
        let server = try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil, configuration: configuration)
        let writer = try DocumentStore.inMemory(), reader = try DocumentStore.inMemory()
        try writer.create(id: "n")
        for index in 0..<300 { try write(writer, "n", "k\(index % 7)", Int64(index)) }
        var pusher = SyncClient(store: writer, peer: "s", transport: FaultyTransport.sound(server))
        pusher.maxPushChanges = 50
        #expect(try await pusher.sync().rounds >= 6)
        let report = try await SyncClient(store: reader, peer: "s", transport: FaultyTransport.sound(server)).sync()
        #expect(report.rounds > 1 && report.received == 300)
        #expect(try reader.versionVector("n") == writer.versionVector("n"))
    }

    /// Once a server has acknowledged what a store holds, a sync names only
    /// the documents whose version is not the one acknowledged: with
    /// nothing new it names none and is answered with none; a change made
    /// elsewhere since still comes, and a document changed here is named,
    /// alone, with its push.
    @Test func aSyncNamesOnlyTheDocumentsThatChanged() async throws {
        let server = try makeServer()
        let alice = try DocumentStore.inMemory(), bob = try DocumentStore.inMemory()
        for index in 0..<20 {
            let id = DocumentID(rawValue: "n\(index)")!
            try alice.create(id: id)
            try write(alice, id, "k", Int64(index))
        }
        try await SyncClient(store: alice, peer: "s", transport: FaultyTransport.sound(server)).sync()
        try await SyncClient(store: bob, peer: "s", transport: FaultyTransport.sound(server)).sync()
        let quiet = RecordingTransport(inner: FaultyTransport.sound(server))
        let nothing = try await SyncClient(store: alice, peer: "s", transport: quiet).sync()
        #expect(nothing.rounds == 1 && nothing.sent == 0 && nothing.received == 0)
        #expect(quiet.requests[0].documents.isEmpty && quiet.responses[0].documents.isEmpty)

        try write(bob, "n3", "k", 100)
        try await SyncClient(store: bob, peer: "s", transport: FaultyTransport.sound(server)).sync()
        try write(alice, "n5", "k", 200)
        let busy = RecordingTransport(inner: FaultyTransport.sound(server))
        let report = try await SyncClient(store: alice, peer: "s", transport: busy).sync()
        #expect(report.rounds == 1 && report.sent == 1 && report.received == 1)
        #expect(busy.requests[0].documents.map(\.id) == ["n5"])
        #expect(Set(busy.responses[0].documents.map(\.id)) == ["n3", "n5"])
        #expect(try value(alice, "n3", "k") == .scalar(.int(100)))
        #expect(try server.log.version("n5") == alice.versionVector("n5"))
    }

    /// A store syncing with a peer for the first time sends it nothing it
    /// holds already: after one store synced through another, a sync the
    /// other way (another peer name) sends nothing, and counts nothing sent.
    @Test func aFirstSyncWithAPeerSendsOnlyWhatItLacks() async throws {
        let alice = try DocumentStore.inMemory(), bob = try DocumentStore.inMemory()
        for (store, id) in [(alice, "a"), (bob, "b")] as [(DocumentStore, DocumentID)] {
            try store.create(id: id)
            for index in 0..<3 { try write(store, id, "k", Int64(index)) }
        }
        let there = try await SyncClient(store: alice, peer: "via:bob", transport: FaultyTransport.sound(PeerSyncService(store: bob))).sync()
        #expect(there.sent == 3 && there.received == 3)
        let back = RecordingTransport(inner: FaultyTransport.sound(PeerSyncService(store: alice)))
        let report = try await SyncClient(store: bob, peer: "via:alice", transport: back).sync()
        #expect(report.sent == 0 && report.received == 0 && report.rounds == 1)
        #expect(back.requests.allSatisfy { $0.documents.allSatisfy(\.bundles.isEmpty) })
        #expect(try bob.outbox(peer: "via:alice").isEmpty)
    }

    /// A store with more documents than a message may name states them a
    /// range of ids at a time, and answers name no more than a message may:
    /// every document syncs, through a server and through a peer, in both
    /// directions, and nothing is refused.
    @Test func storesWithMoreDocumentsThanAMessageNamesSyncInRanges() async throws {
        let limits = SyncMessage.Limits(maxDocuments: 10)
        var configuration = SyncServer.Configuration()
        configuration.message = limits
        let server = try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil, configuration: configuration)
        let alice = try DocumentStore.inMemory(), bob = try DocumentStore.inMemory(), carol = try DocumentStore.inMemory()
        for (store, prefix, count) in [(alice, "a", 25), (carol, "c", 12)] {
            for index in 0..<count {
                let id = DocumentID(rawValue: "\(prefix)\(index)")!
                try store.create(id: id)
                try write(store, id, "k", Int64(index))
            }
        }
        var recorders: [RecordingTransport] = []
        func sync(_ store: DocumentStore, with service: any SyncService) async throws -> SyncClient.Report {
            let recorder = RecordingTransport(inner: LimitedTransport(service: service, limits: limits))
            recorders.append(recorder)
            var client = SyncClient(store: store, peer: "p", transport: recorder)
            client.maxStatedDocuments = 4
            client.messageLimits = limits
            return try await client.sync()
        }
        let pushed = try await sync(alice, with: server)
        #expect(pushed.sent == 25 && pushed.rejected.isEmpty)
        #expect(try await sync(bob, with: server).received == 25)
        #expect(try bob.versionVectors() == alice.versionVectors())

        var peer = PeerSyncService(store: alice)
        peer.maxDocuments = limits.maxDocuments
        let viaPeer = try await sync(carol, with: peer)
        #expect(viaPeer.sent == 12 && viaPeer.received == 25 && viaPeer.rejected.isEmpty)
        #expect(try carol.versionVectors() == alice.versionVectors() && alice.versionVectors().count == 37)
        #expect(recorders.allSatisfy { $0.requests.allSatisfy { $0.documents.count <= 4 } })
    }

    /// A store keeps at most `cachedDocuments` loaded documents: syncs that
    /// push and pull every document of a store leave no more in memory.
    @Test func syncingManyDocumentsKeepsBoundedlyManyInMemory() async throws {
        let server = try makeServer()
        let alice = try DocumentStore.inMemory(cachedDocuments: 8), bob = try DocumentStore.inMemory(cachedDocuments: 8)
        for index in 0..<60 {
            let id = DocumentID(rawValue: "n\(index)")!
            try alice.create(id: id)
            try write(alice, id, "k", Int64(index))
        }
        #expect(alice.cache.count <= 8)
        #expect(try await SyncClient(store: alice, peer: "s", transport: FaultyTransport.sound(server)).sync().sent == 60)
        #expect(alice.cache.count <= 8)
        #expect(try await SyncClient(store: bob, peer: "s", transport: FaultyTransport.sound(server)).sync().received == 60)
        #expect(bob.cache.count <= 8)
        for index in 0..<60 { #expect(try value(bob, DocumentID(rawValue: "n\(index)")!, "k") == .scalar(.int(Int64(index)))) }
        #expect(bob.cache.count <= 8)
    }

    /// A page carries the changes of at most `maxPageDocuments` documents,
    /// which the client holds in memory until it has applied the page: a
    /// store catching up with many small notes gets them in several pages,
    /// from a server and from a peer.
    @Test func aPageCarriesTheChangesOfBoundedlyManyDocuments() async throws {
        var configuration = SyncServer.Configuration()
        configuration.maxPageDocuments = 5
        let server = try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil, configuration: configuration)
        let alice = try DocumentStore.inMemory(), bob = try DocumentStore.inMemory(), carol = try DocumentStore.inMemory()
        for index in 0..<23 {
            let id = DocumentID(rawValue: "n\(index)")!
            try alice.create(id: id)
            try write(alice, id, "k", Int64(index))
        }
        try await SyncClient(store: alice, peer: "s", transport: FaultyTransport.sound(server)).sync()
        var peer = PeerSyncService(store: alice)
        peer.maxPageDocuments = 5
        for (store, service) in [(bob, server), (carol, peer)] as [(DocumentStore, any SyncService)] {
            let recorder = RecordingTransport(inner: FaultyTransport.sound(service))
            #expect(try await SyncClient(store: store, peer: "p", transport: recorder).sync().received == 23)
            #expect(recorder.responses.count >= 5)
            #expect(recorder.responses.allSatisfy { $0.documents.filter { !$0.bundles.isEmpty }.count <= 5 })
            #expect(try store.versionVectors() == alice.versionVectors())
        }
    }

    /// A peer cuts its answer into pages inside the first document too: a
    /// page larger than a frame or a message may be is refused.
    @Test func aPeersLargeHistoryTravelsInPages() async throws {
        let writer = try DocumentStore.inMemory(), reader = try DocumentStore.inMemory()
        try writer.create(id: "n")
        for index in 0..<300 { try write(writer, "n", "k\(index % 7)", Int64(index)) }
        var peer = PeerSyncService(store: writer)
        peer.maxPageBytes = 2_000
        let report = try await SyncClient(store: reader, peer: "p", transport: FaultyTransport.sound(peer)).sync()
        #expect(report.rounds > 1 && report.received == 300)
        #expect(try reader.versionVectors() == writer.versionVectors())
    }

    /// A sync names each document it changed, with how many, its version
    /// before the first and after the last (`quire sync` prints the diff
    /// from one to the other): over several pages, the version before the
    /// first page that changed it and after the last; empty before for a
    /// document new here; none for one it left as it was.
    @Test func aSyncNamesEachDocumentItChangedWithItsVersionBefore() async throws {
        let writer = try storeHolding(["n", "same"], "k", 0), reader = try DocumentStore.inMemory()
        var peer = PeerSyncService(store: writer)
        peer.maxPageBytes = 2_000
        try await SyncClient(store: reader, peer: "p", transport: FaultyTransport.sound(peer)).sync()
        try write(reader, "n", "mine", 1)
        let before = try reader.versionVector("n")
        for index in 0..<300 { try write(writer, "n", "k\(index % 7)", Int64(index)) }
        try writer.create(id: "new")
        try write(writer, "new", "k", 1)

        let report = try await SyncClient(store: reader, peer: "p", transport: FaultyTransport.sound(peer)).sync()
        #expect(report.rounds > 2 && report.received == 301)
        #expect(report.changedDocuments.mapValues(\.versionBefore) == ["n": before, "new": VersionVector()])
        #expect(report.changedDocuments.mapValues(\.received) == ["n": 300, "new": 1])
        #expect(report.changedDocuments.mapValues(\.versionAfter) == ["n": try reader.versionVector("n"), "new": try reader.versionVector("new")])
    }

    /// A document's version before the sync is the one the store held as
    /// the sync's changes went in, read in the transaction that applied
    /// them: an edit another process (here a second store on the file)
    /// committed after the request was made, before its answer was applied,
    /// is in it, not taken for one the sync brought. (It was the version
    /// read for the request: `quire sync`'s diff showed the edit as brought.)
    @Test func aDocumentsVersionBeforeIsReadAsTheSyncsChangesGoIn() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/reader.quire"
            let writer = try DocumentStore.inMemory(), reader = try DocumentStore(path: path), beside = try DocumentStore(path: path)
            let peer = PeerSyncService(store: writer)
            try writer.create(id: "n")
            try write(writer, "n", "k", 0)
            try await SyncClient(store: reader, peer: "p", transport: FaultyTransport.sound(peer)).sync()
            try write(writer, "n", "k", 1)
            let edited = Mutex(VersionVector())
            let meddling = MeddlingTransport(inner: FaultyTransport.sound(peer)) {
                try write(beside, "n", "mine", 2)
                let version = try beside.versionVector("n")
                edited.withLock { $0 = version }
            }
            let report = try await SyncClient(store: reader, peer: "p", transport: meddling).sync()
            let versionEdited = edited.withLock { $0 }
            #expect(report.changedDocuments["n"]?.received == 1)
            #expect(!versionEdited.isEmpty && report.changedDocuments["n"]?.versionBefore == versionEdited, "\(report.changedDocuments)")
        }
    }

    /// A document another process edits between two pages of a sync that
    /// change it is said to be (`isInterleaved`): its versions before and
    /// after the sync hold that edit too, so a diff between them shows it.
    /// One the sync alone changed is not.
    @Test func aDocumentEditedBetweenTwoPagesOfASyncIsSaidToBe() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/reader.quire"
            let writer = try storeHolding(["n", "other"], "k", 0), reader = try DocumentStore(path: path), beside = try DocumentStore(path: path)
            var peer = PeerSyncService(store: writer)
            peer.maxPageBytes = 2_000
            try await SyncClient(store: reader, peer: "p", transport: FaultyTransport.sound(peer)).sync()
            for index in 0..<300 { try write(writer, "n", "k\(index % 7)", Int64(index)) }
            try write(writer, "other", "k", 1)
            let inner = FaultyTransport.sound(peer), requests = Mutex(0)
            // After the first page went in, before the second is asked for.
            let transport = ScriptedTransport { (request) throws(SyncError) -> [UInt8] in
                if requests.withLock({ $0 += 1; return $0 }) == 2 {
                    do { try write(beside, "n", "mine", 1) } catch { throw .store("\(error)") }
                }
                return try await inner.exchange(request, longPollSeconds: 0)
            }
            let report = try await SyncClient(store: reader, peer: "p", transport: transport).sync()
            #expect(report.rounds > 2 && report.changedDocuments["n"]?.received == 300)
            #expect(report.changedDocuments.mapValues(\.isInterleaved) == ["n": true, "other": false], "\(report.changedDocuments)")
        }
    }

    /// A sync that fails after applying a page returns, with the error,
    /// what it applied (`syncKeepingReport`): the page's changes stay in the
    /// store and are named in `received` and `changedDocuments`, so that
    /// `quire sync` can show what did arrive; `sync()` throws the same error.
    @Test func aSyncThatFailsAfterAPageSaysWhatItApplied() async throws {
        let writer = try storeHolding(["a", "b"], "k", 1), reader = try DocumentStore.inMemory()
        let peer = PeerSyncService(store: writer)
        // The peer's first answer comes; then it is gone, before the round that states what the store took.
        let answers = Mutex(0)
        let transport = ScriptedTransport { (request) throws(SyncError) -> [UInt8] in
            guard answers.withLock({ $0 += 1; return $0 }) == 1 else { throw .unreachable("the peer is gone") }
            return await peer.respond(toMessage: request, access: .unrestricted)
        }
        let client = SyncClient(store: reader, peer: "p", transport: transport)
        let (report, error) = await client.syncKeepingReport()
        #expect(error == .unreachable("the peer is gone", otherSide: .server))
        #expect(report.received == 2 && report.rounds == 2)
        #expect(report.changedDocuments.mapValues(\.received) == ["a": 1, "b": 1])
        #expect(report.changedDocuments.values.allSatisfy { $0.versionBefore.isEmpty })
        #expect(try reader.versionVectors() == writer.versionVectors())
        await #expect(throws: SyncError.unreachable("the peer is gone")) { try await client.sync() }
    }

    /// A peer whose history lists two writers' keystrokes in turns sends
    /// each writer's together, as `encodeChanges` does: the fresh store
    /// catching up through it holds them in that order.
    @Test func peerSyncSendsEachWritersChangesTogether() async throws {
        let turns = try TurnTaking()
        let (hub, text) = (turns.hub, turns.text)
        let peer = try DocumentStore.inMemory(), fresh = try DocumentStore.inMemory()
        try peer.create(id: "n")
        try peer.apply("n", try hub.allChanges())
        #expect(try peer.changes("n").map(\.replica.rawValue) == [3, 1, 2, 1, 2, 1, 2])

        let report = try await SyncClient(store: fresh, peer: "p", transport: FaultyTransport.sound(PeerSyncService(store: peer))).sync()
        #expect(report.received == 7)
        #expect(try fresh.changes("n").map(\.replica.rawValue) == [3, 1, 1, 1, 2, 2, 2])
        #expect(try fresh.read("n") { try $0.text(text) } == hub.text(text))
    }

    /// A peer answers every document the client names, those it lacks at
    /// no version: a store put in place of the one a client synced with
    /// through the same command gets every document again.
    @Test func aReplacedPeerStoreGetsEveryDocumentAgain() async throws {
        let alice = try DocumentStore.inMemory()
        try alice.create(id: "n")
        try write(alice, "n", "k", 1)
        try await SyncClient(store: alice, peer: "via:peer", transport: FaultyTransport.sound(PeerSyncService(store: .inMemory()))).sync()
        let replaced = try DocumentStore.inMemory()
        let report = try await SyncClient(store: alice, peer: "via:peer", transport: FaultyTransport.sound(PeerSyncService(store: replaced))).sync()
        #expect(report.sent == 1)
        #expect(try replaced.versionVectors() == alice.versionVectors())
        #expect(try alice.outbox(peer: "via:peer").isEmpty)
    }

    /// A push a peer refuses stores nothing, not even the document it was for.
    @Test func aPushAPeerRefusesLeavesNoDocumentBehind() async throws {
        let store = try DocumentStore.inMemory()
        let unknownObject = ObjectID(OpID(replica: ReplicaID(9), counter: 4))
        let change = Change(id: OpID(replica: ReplicaID(7), counter: 1), lamport: 1, parents: [],
                            operations: [.put(object: unknownObject, key: "k", value: .scalar(.int(1)), pred: [])])
        let request = SyncRequest(cursor: nil, documents: [SyncDocument(id: "new", version: [:], changes: [change])])
        let answer = await PeerSyncService(store: store).respond(toMessage: SyncMessage.request(request).encoded(), access: .unrestricted)
        #expect(try SyncMessage.decode(answer) == .failure(SyncFailure(status: 400, "a change of document new does not apply: "
            + "change 1@0000000000000007 is invalid: it edits object 4@0000000000000009, which does not exist")))
        #expect(try store.documents(includeRemoved: true).isEmpty)
    }

    /// An answer stating part of a change (a counter inside it) is recorded
    /// as the peer's acknowledgement like any other, and the change is then
    /// pushed whole: a later sync with that peer works instead of failing
    /// for good as if the store's history had been compacted away.
    @Test func anAcknowledgementOfPartOfAChangeDoesNotStopLaterSyncs() async throws {
        let store = try DocumentStore.inMemory()
        try store.create(id: "n")
        try store.edit("n") { tx in for key in ["a", "b", "c", "d"] { try tx.put(.root, key: key, .int(1)) } }
        let replica = store.replicaID
        let partial = ScriptedPeer { request in
            SyncResponse(cursor: SyncCursor(logID: 1, seq: 0), documents: request.documents.map { SyncDocument(id: $0.id, version: [replica: 2]) })
        }
        await #expect(throws: SyncError.self) {
            try await SyncClient(store: store, peer: "p", transport: FaultyTransport.sound(partial)).sync()
        }
        #expect(try store.acknowledgedVersions(peer: "p") == ["n": [replica: 2]])
        #expect(try store.changes("n", since: [replica: 2]).map(\.id.counter) == [1])

        let honest = try DocumentStore.inMemory()
        let report = try await SyncClient(store: store, peer: "p", transport: FaultyTransport.sound(PeerSyncService(store: honest))).sync()
        #expect(report.sent == 1)
        #expect(try honest.versionVectors() == ["n": [replica: 4]])
    }

    /// A page holding a change under the store's own replica id that does
    /// not follow on from its changes is refused whole: parked, it would
    /// clash with the store's next edits, and the note would no longer load.
    @Test func anEarlyChangeUnderTheStoresOwnIdIsRefused() async throws {
        let store = try DocumentStore.inMemory()
        try store.create(id: "n")
        try write(store, "n", "k", 1)
        let own = store.replicaID
        let early = Change(id: OpID(replica: own, counter: 5), lamport: 5, parents: [OpID(replica: own, counter: 4)],
                           operations: [.put(object: .root, key: "forged", value: .scalar(.int(9)), pred: [])])
        let sender = ScriptedPeer { _ in
            SyncResponse(cursor: SyncCursor(logID: 1, seq: 0), documents: [SyncDocument(id: "n", version: [:], changes: [early])])
        }
        let report = try await SyncClient(store: store, peer: "p", transport: FaultyTransport.sound(sender)).sync()
        #expect(report.notApplied.mapValues { "\($0.reason)" } == ["n": "change \(early.id) is invalid: it is under this replica's own id "
            + "but does not follow on from its changes, so its next edits would take the same counters"])
        for value in 2...6 { try write(store, "n", "k", Int64(value)) }
        store.cache.removeAll()
        #expect(try store.versionVector("n") == [own: 6])
        #expect(try value(store, "n", "k") == .scalar(.int(6)))
    }

    /// Document `id` as a forged answer leaves it: the server holds one
    /// change 1@7 of it, `store` another under the same id, and the
    /// answer's acknowledgement of it.
    func forgeAClash(of id: DocumentID, in store: DocumentStore, with server: SyncServer) throws {
        func changeOneOf7(_ value: Int64) -> Change {
            Change(id: OpID(replica: ReplicaID(7), counter: 1), lamport: 1, parents: [],
                   operations: [.put(object: .root, key: "k", value: .scalar(.int(value)), pred: [])])
        }
        _ = try server.log.push([(id, [changeOneOf7(1)])], by: .unrestricted, limits: .init())
        _ = try store.apply(bundles: [(id, [ChangeEncoding.encode([changeOneOf7(2)])])])
        _ = try store.recordSyncProgress(peer: "server", acknowledged: [id: [ReplicaID(7): 1]], cursor: nil)
    }

    /// A note whose change 1@X differs between this store and the server
    /// (a forged answer gave the store its copy, review137) is left out of
    /// the sync, named in the report, sync after sync, and the other notes
    /// still sync both ways. (The whole sync failed, every time.)
    @Test func aNoteClashingWithTheServersCopyLeavesTheOtherNotesSyncing() async throws {
        let server = try makeServer()
        let alice = try DocumentStore.inMemory(), bob = try DocumentStore.inMemory()
        try alice.create(id: "todo")
        try write(alice, "todo", "k", 1)
        let aliceClient = SyncClient(store: alice, peer: "server", transport: FaultyTransport.sound(server))
        try await aliceClient.sync()
        try forgeAClash(of: "groceries", in: alice, with: server)
        try bob.create(id: "recipes")
        try write(bob, "recipes", "k", 3)
        try await SyncClient(store: bob, peer: "server", transport: FaultyTransport.sound(server)).sync()
        try write(alice, "todo", "k", 4)

        for _ in 1...2 {
            let report = try await aliceClient.sync()
            #expect(report.notApplied.mapValues { "\($0.reason)" } == ["groceries": "\(DocumentError.conflictingChange(OpID(replica: ReplicaID(7), counter: 1)))"])
        }
        #expect(try value(alice, "recipes", "k") == .scalar(.int(3)))
        #expect(try value(alice, "groceries", "k") == .scalar(.int(2)))
        #expect(server.log.version("todo") == [alice.replicaID: 2])
        try await SyncClient(store: bob, peer: "server", transport: FaultyTransport.sound(server)).sync()
        #expect(try value(bob, "todo", "k") == .scalar(.int(4)))
    }

    /// While a refused note keeps the stored cursor behind, a later sync in
    /// ranges pulls each range from that cursor: once the refusal is met,
    /// it states every document, so that the server leaves out the rows of
    /// the others the store took before. (It stated only those changed
    /// here, and was sent the others' rows again, sync after sync.)
    @Test func aSyncInRangesBehindARefusedNoteIsNotSentTheOthersRowsAgain() async throws {
        let server = try makeServer()
        let alice = try DocumentStore.inMemory(), bob = try DocumentStore.inMemory()
        for id: DocumentID in ["b-todo", "c-recipes"] {
            try alice.create(id: id)
            try write(alice, id, "k", 1)
        }
        try await SyncClient(store: alice, peer: "server", transport: FaultyTransport.sound(server)).sync()
        try forgeAClash(of: "a-groceries", in: alice, with: server)
        try bob.create(id: "d-journal")
        try write(bob, "d-journal", "k", 3)
        try await SyncClient(store: bob, peer: "server", transport: FaultyTransport.sound(server)).sync()
        let first = try await SyncClient(store: alice, peer: "server", transport: FaultyTransport.sound(server)).sync()
        #expect(Array(first.notApplied.keys) == ["a-groceries"])
        #expect(try value(alice, "d-journal", "k") == .scalar(.int(3)))

        // Two notes changed here, each a range of its own: b-todo's holds the refused note.
        try write(alice, "b-todo", "k", 2)
        try write(alice, "c-recipes", "k", 2)
        let recorder = RecordingTransport(inner: FaultyTransport.sound(server))
        var client = SyncClient(store: alice, peer: "server", transport: recorder)
        client.maxStatedDocuments = 1
        let second = try await client.sync()
        #expect(Array(second.notApplied.keys) == ["a-groceries"])
        #expect(recorder.requests.count > 2)
        let resent = recorder.responses.flatMap(\.documents).filter { $0.id == "d-journal" && !$0.bundles.isEmpty }
        #expect(resent.isEmpty, "\(resent)")
        for id: DocumentID in ["b-todo", "c-recipes"] { #expect(try server.log.version(id) == alice.versionVector(id)) }
    }

    /// A note this store refuses the server's changes to holds the stored
    /// cursor back behind its rows, sync after sync. Each later sync states
    /// the other notes (`refusedDocuments` tells it to), so it pulls the
    /// note's rows and the new ones, not every row since that cursor (4, 7,
    /// 10 bundles before). The way out (`quire sync --take-theirs`):
    /// `discardCopy` drops this store's copy with the server's cursor and
    /// acknowledgements, and the next sync takes the server's copy whole,
    /// refusing nothing.
    @Test func aRefusedNoteCostsEachSyncItsOwnRowsUntilTheServersCopyIsTaken() async throws {
        let server = try makeServer()
        let alice = try DocumentStore.inMemory(), bob = try DocumentStore.inMemory()
        try alice.create(id: "todo")
        try write(alice, "todo", "k", 1)
        try await SyncClient(store: alice, peer: "server", transport: FaultyTransport.sound(server)).sync()
        try forgeAClash(of: "groceries", in: alice, with: server)
        try bob.create(id: "recipes")
        /// bob writes recipes three times, a row each; then alice syncs: the bundles its answers carried.
        func bobWritesThenAliceSyncs() async throws -> (report: SyncClient.Report, bundles: Int) {
            for _ in 1...3 {
                try write(bob, "recipes", "k", 3)
                try await SyncClient(store: bob, peer: "server", transport: FaultyTransport.sound(server)).sync()
            }
            let recording = RecordingTransport(inner: FaultyTransport.sound(server))
            let report = try await SyncClient(store: alice, peer: "server", transport: recording).sync()
            return (report, recording.responses.flatMap(\.documents).reduce(0) { $0 + $1.bundles.count })
        }
        for _ in 1...3 {
            let refused = try await bobWritesThenAliceSyncs()
            #expect(refused.report.notApplied.keys.sorted() == ["groceries"] && refused.bundles == 4)  // its row, bob's three new ones
        }
        #expect(try alice.refusedDocuments(peer: "server") == ["groceries"])

        try alice.discardCopy(of: "groceries", resyncingWith: "server")
        #expect(try alice.syncCursor(peer: "server") == nil && alice.acknowledgedVersions(peer: "server").isEmpty)
        #expect(try alice.refusedDocuments(peer: "server").isEmpty)
        let taken = try await bobWritesThenAliceSyncs()
        #expect(taken.report.notApplied.isEmpty)
        #expect(try value(alice, "groceries", "k") == .scalar(.int(1)))
        #expect(taken.bundles == 4)  // the server's groceries, bob's three new rows; the rows alice holds are left out
        #expect(try await bobWritesThenAliceSyncs().bundles == 3)
        // The note syncs again both ways.
        try write(alice, "groceries", "k", 5)
        try await SyncClient(store: alice, peer: "server", transport: FaultyTransport.sound(server)).sync()
        try await SyncClient(store: bob, peer: "server", transport: FaultyTransport.sound(server)).sync()
        #expect(try value(bob, "groceries", "k") == .scalar(.int(5)))
    }

    /// A note refused by the last sync and edited here since is still
    /// refused by the next, named in its report, and its local changes stay
    /// pending, as the refusal says. (Its first request stated the note at
    /// this store's version, which covers the clashing change, and pushed
    /// the edit: the server took it onto its own copy, left the clashing row
    /// out of the answer, and the sync moved the cursor past it and forgot
    /// the refusal, the two copies different in silence for good.)
    @Test func aRefusedNoteEditedHereStaysRefusedAndItsEditsPending() async throws {
        let server = try makeServer()
        let alice = try DocumentStore.inMemory()
        try alice.create(id: "todo")
        try write(alice, "todo", "k", 1)
        let client = SyncClient(store: alice, peer: "server", transport: FaultyTransport.sound(server))
        try await client.sync()
        try forgeAClash(of: "groceries", in: alice, with: server)
        #expect(try await client.sync().notApplied.keys.sorted() == ["groceries"])

        try write(alice, "groceries", "other", 3)
        for _ in 1...2 {
            let report = try await client.sync()
            #expect(report.notApplied.keys.sorted() == ["groceries"])
            #expect(try alice.refusedDocuments(peer: "server") == ["groceries"])
            #expect(server.log.version("groceries") == [ReplicaID(7): 1])
        }
    }

    /// After `discardCopy` (`quire sync --take-theirs`) the store edits
    /// under a new replica id, here, in another store open on the file,
    /// and once the file is opened again: its next edit of the note does
    /// not take again the id of a local change it dropped, which the server
    /// lacked and a peer (bob, synced with `--via`) held. The server, bob
    /// and the store then converge on the note, refusing nothing, the
    /// dropped change back among its changes. (Under the old id the new
    /// edit was 1@alice again, with other content, and bob refused the
    /// server's copy of the note, as alice bob's.)
    @Test func afterTakingTheServersCopyTheStoreEditsUnderANewReplica() async throws {
        try await withTemporaryDirectory { directory in
            let server = try makeServer(), bob = try DocumentStore.inMemory()
            let path = directory + "/alice.quire"
            let alice = try DocumentStore(path: path), aliceBeside = try DocumentStore(path: path)
            func sync(_ store: DocumentStore) async throws -> SyncClient.Report {
                try await SyncClient(store: store, peer: "server", transport: FaultyTransport.sound(server)).sync()
            }
            func aliceSyncsWithBob() async throws -> SyncClient.Report {
                try await SyncClient(store: alice, peer: "via:bob", transport: FaultyTransport.sound(PeerSyncService(store: bob))).sync()
            }
            // Neither side refused a change of the other's.
            func refusesNothing(_ report: SyncClient.Report) -> Bool { report.notApplied.isEmpty && report.rejected.isEmpty }
            // The note's first change, written by replica 7, and alice's edit of it, which bob gets and the server not.
            func changeOf7(_ counter: UInt64, _ value: Int64) -> Change {
                Change(id: OpID(replica: ReplicaID(7), counter: counter), lamport: counter,
                       parents: counter == 1 ? [] : [OpID(replica: ReplicaID(7), counter: counter - 1)],
                       operations: [.put(object: .root, key: "k", value: .scalar(.int(value)), pred: [])])
            }
            _ = try server.log.push([("groceries", [changeOf7(1, 1)])], by: .unrestricted, limits: .init())
            _ = try await sync(alice)
            let old = alice.replicaID
            try write(alice, "groceries", "alice", 1)
            #expect(try await aliceSyncsWithBob().notApplied.isEmpty)
            #expect(try bob.versionVector("groceries") == [ReplicaID(7): 1, old: 1])
            // The clash: change 2@7 differs between the server and alice, whose
            // copy came with an answer claiming all of alice's (review137's forgery).
            _ = try server.log.push([("groceries", [changeOf7(2, 2)])], by: .unrestricted, limits: .init())
            _ = try alice.apply(bundles: [("groceries", [ChangeEncoding.encode([changeOf7(2, 20)])])])
            _ = try alice.recordSyncProgress(peer: "server", acknowledged: ["groceries": alice.versionVector("groceries")], cursor: nil)
            #expect(try await sync(alice).notApplied.keys.sorted() == ["groceries"])
            #expect(server.log.version("groceries") == [ReplicaID(7): 2])

            try alice.discardCopy(of: "groceries", resyncingWith: "server")
            let renewed = alice.replicaID
            #expect(renewed != old)
            #expect(try await sync(alice).notApplied.isEmpty)
            #expect(try alice.versionVector("groceries") == [ReplicaID(7): 2])
            try write(alice, "groceries", "alice", 2)
            // Another store on the file edits under the new id too, from its first commit on.
            try write(aliceBeside, "groceries", "beside", 3)
            #expect(aliceBeside.replicaID == renewed)
            #expect(try alice.versionVector("groceries") == [ReplicaID(7): 2, renewed: 2])

            #expect(try await refusesNothing(sync(alice)))
            #expect(try await refusesNothing(sync(bob)))
            #expect(try await refusesNothing(aliceSyncsWithBob()))
            #expect(try await refusesNothing(sync(alice)))
            let converged: VersionVector = [ReplicaID(7): 2, old: 1, renewed: 2]
            #expect(try alice.versionVector("groceries") == converged && bob.versionVector("groceries") == converged)
            #expect(server.log.version("groceries") == converged)
            for key in ["k", "alice", "beside"] { #expect(try value(alice, "groceries", key) == value(bob, "groceries", key)) }
            // No change id names two changes: each store's log holds each id once.
            for store in [alice, bob] {
                let ids = try store.changes("groceries").map(\.id)
                #expect(Set(ids).count == ids.count, "\(ids)")
            }

            try alice.close()
            try aliceBeside.close()
            let reopened = try DocumentStore(path: path)
            #expect(reopened.replicaID == renewed)
            try write(reopened, "groceries", "alice", 4)
            #expect(try reopened.versionVector("groceries")[renewed] == 3)
        }
    }

    /// `discardCopy` writes the copy it keeps (`quire sync --take-theirs`'s
    /// new note) in the transaction that drops the document: an edit another
    /// store on the file commits after the copy was made and before the drop
    /// is in the copy, made again from the document as written. (Read in one
    /// step and dropped in another, such an edit was in neither copy.)
    @Test func anEditMadeWhileTheCopyIsKeptIsInTheCopy() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/alice.quire"
            let alice = try DocumentStore(path: path), beside = try DocumentStore(path: path)
            try alice.create(id: "groceries")
            try write(alice, "groceries", "k", 1)
            var copiesMade = 0
            let kept = try alice.discardCopy(of: "groceries", resyncingWith: "server") { dropped, copy in
                copiesMade += 1
                // The other store's edit, once, between this read of the note and its drop.
                if copiesMade == 1 { try write(beside, "groceries", "k", 2) }
                guard case .scalar(let k)? = try dropped.get(.root, key: "k") else { Issue.record("the note lacks k"); return }
                try copy.put(.root, key: "k", k)
            }
            let copy = try #require(kept)
            #expect(copiesMade == 2)
            #expect(try value(alice, copy, "k") == .scalar(.int(2)))
            #expect(try alice.documents().map(\.id) == [copy])
            #expect(throws: StoreError.noSuchDocument("groceries")) { try beside.read("groceries") { _ in } }
        }
    }

    /// The copy `discardCopy` keeps of a removed document is removed too,
    /// from the same time (`quire sync --take-theirs` on a note removed
    /// here): out of the list, as the note was, until restored. (It was
    /// kept as a document not removed.)
    @Test func aRemovedDocumentsCopyIsKeptRemoved() throws {
        let alice = try DocumentStore.inMemory()
        try alice.create(id: "groceries")
        try write(alice, "groceries", "k", 1)
        try alice.remove("groceries")
        let removedAt = try #require(alice.documents(includeRemoved: true).first?.removedAt)
        let kept = try alice.discardCopy(of: "groceries", resyncingWith: "server") { _, copy in try copy.put(.root, key: "k", .int(1)) }
        let copy = try #require(kept)
        #expect(try alice.documents().isEmpty)
        let listed = try alice.documents(includeRemoved: true)
        #expect(listed.map(\.id) == [copy] && listed.first?.removedAt == removedAt)
        try alice.restore(copy)
        #expect(try alice.documents().map(\.id) == [copy] && value(alice, copy, "k") == .scalar(.int(1)))
    }

    /// Several documents' copies dropped in one call (`quire sync
    /// --take-theirs` given for several notes): one transaction keeps each
    /// copy, forgets the server's cursor and mints one replica id (observers
    /// told of each drop and copy in turn), and one
    /// sync, one pull from the start of the server's log, brings the
    /// server's copy of every document, refusing nothing; the next sync
    /// brings nothing more. (A call took one document: a store refusing two
    /// took two drops, each minting an id and each followed by a sync from
    /// the start of the log.)
    @Test func severalCopiesDroppedInOneCallComeBackWithOneSync() async throws {
        let server = try makeServer()
        let alice = try DocumentStore.inMemory()
        func sync(_ transport: any SyncTransport) async throws -> SyncClient.Report {
            try await SyncClient(store: alice, peer: "server", transport: transport).sync()
        }
        try alice.create(id: "todo")
        try write(alice, "todo", "k", 1)
        _ = try await sync(FaultyTransport.sound(server))
        for id: DocumentID in ["groceries", "recipes"] { try forgeAClash(of: id, in: alice, with: server) }
        #expect(try await sync(FaultyTransport.sound(server)).notApplied.keys.sorted() == ["groceries", "recipes"])
        func replicas() throws -> Set<ReplicaID> { try alice.database.read { db in try ReplicaIdentity.all(db) } }
        let replicasBefore = try replicas()
        var events = alice.allEvents().makeAsyncIterator()

        var copiesMade: [DocumentID] = []
        let kept = try alice.discardCopies(of: ["recipes", "groceries"], resyncingWith: "server") { id, dropped, copy in
            copiesMade.append(id)
            try copy.put(.root, key: "of", .string(id.rawValue))
            if case .scalar(let k)? = try dropped.get(.root, key: "k") { try copy.put(.root, key: "k", k) }
        }
        #expect(copiesMade == ["recipes", "groceries"] && Set(kept).count == 2)
        #expect(try kept.map { try value(alice, $0, "of") } == [.scalar(.string("recipes")), .scalar(.string("groceries"))])
        #expect(try kept.map { try value(alice, $0, "k") } == [.scalar(.int(2)), .scalar(.int(2))])
        #expect(try alice.replacedCopies() == ["recipes": kept[0], "groceries": kept[1]])
        #expect(try replicas() == replicasBefore.union([alice.replicaID]) && !replicasBefore.contains(alice.replicaID))
        #expect(try alice.syncCursor(peer: "server") == nil && alice.refusedDocuments(peer: "server").isEmpty)
        // Observers are told as for one document, document by document: its drop (no changes), then its kept copy.
        var told: [(document: DocumentID, hasChanges: Bool)] = []
        for _ in 1...4 {
            let event = try #require(await events.next())
            told.append((event.document, !event.changeIDs.isEmpty))
        }
        #expect(told.map(\.document) == ["recipes", kept[0], "groceries", kept[1]] && told.map(\.hasChanges) == [false, true, false, true])

        let recording = RecordingTransport(inner: FaultyTransport.sound(server))
        let report = try await sync(recording)
        #expect(report.notApplied.isEmpty && report.rejected.isEmpty)
        #expect(recording.requests.filter { $0.cursor == nil }.count == 1)
        for id: DocumentID in ["groceries", "recipes"] {
            #expect(try value(alice, id, "k") == .scalar(.int(1)) && alice.versionVector(id) == server.log.version(id))
        }
        for copy in kept { #expect(try server.log.version(copy) == alice.versionVector(copy)) }
        let next = try await sync(FaultyTransport.sound(server))
        #expect(next.received == 0 && next.notApplied.isEmpty)
    }

    /// `discardCopies` drops every document given or none: a copy that
    /// cannot be kept (its closure throws) or a document the store does not
    /// list leaves each document, the cursor, the acknowledgements and the
    /// replica id as they were, and keeps no copy.
    @Test func severalCopiesAreDroppedAllOrNone() async throws {
        let server = try makeServer()
        let alice = try storeHolding(["groceries", "recipes"], "k", 1)
        _ = try await SyncClient(store: alice, peer: "server", transport: FaultyTransport.sound(server)).sync()
        let cursor = try alice.syncCursor(peer: "server"), acknowledged = try alice.acknowledgedVersions(peer: "server")
        let replica = alice.replicaID, rewinds = try alice.cursorRewinds()
        struct CannotKeepTheCopy: Error {}
        #expect(throws: CannotKeepTheCopy.self) {
            try alice.discardCopies(of: ["groceries", "recipes"], resyncingWith: "server") { id, _, copy in
                if id == "recipes" { throw CannotKeepTheCopy() }
                try copy.put(.root, key: "k", .int(2))
            }
        }
        #expect(throws: StoreError.noSuchDocument("journal")) {
            try alice.discardCopies(of: ["groceries", "journal"], resyncingWith: "server")
        }
        #expect(try alice.documents().map(\.id).sorted() == ["groceries", "recipes"])
        for id: DocumentID in ["groceries", "recipes"] { #expect(try value(alice, id, "k") == .scalar(.int(1))) }
        #expect(try alice.syncCursor(peer: "server") == cursor && alice.acknowledgedVersions(peer: "server") == acknowledged)
        #expect(try alice.replicaID == replica && alice.cursorRewinds() == rewinds && alice.replacedCopies().isEmpty)
    }

    /// Taking the server's copy tells the app showing the note: the drop
    /// makes a `.local` event naming every object and key the dropped copy
    /// held, the kept copy a `.local` event of its own, and the server's
    /// copy a `.remote` one as the sync applies it. (The drop made none: an
    /// app refreshing what events name kept showing the dropped copy's
    /// `items`, which the server's copy lacks.)
    @Test func takingTheServersCopyTellsTheNotesObservers() async throws {
        let server = try makeServer()
        let alice = try DocumentStore.inMemory()
        try forgeAClash(of: "groceries", in: alice, with: server)
        let items = try alice.edit("groceries") { tx in
            let items = try tx.putObject(.root, key: "items", kind: .map)
            try tx.put(items, key: "milk", .int(2))
            return items
        }
        let noteEvents = alice.events(of: "groceries")
        var allEvents = alice.allEvents().makeAsyncIterator()

        let kept = try #require(try alice.discardCopy(of: "groceries", resyncingWith: "server") { _, copy in
            try copy.put(.root, key: "title", .string("kept"))
        })
        let dropped = try #require(await nextElement(of: noteEvents))
        #expect(dropped == DocumentEvent(document: "groceries", origin: .local, changeIDs: [], versionVector: [:],
                                         changedObjects: [.root, items], changedKeys: [.root: ["k", "items"], items: ["milk"]]))
        let droppedAgain = await allEvents.next()
        #expect(droppedAgain == dropped)
        let copied = try #require(await allEvents.next())
        #expect(copied.document == kept && copied.origin == .local && copied.changedKeys == [.root: ["title"]])

        try await SyncClient(store: alice, peer: "server", transport: FaultyTransport.sound(server)).sync()
        let taken = try #require(await allEvents.next())
        #expect(taken.document == "groceries" && taken.origin == .remote)
        #expect(taken.changeIDs == [OpID(replica: ReplicaID(7), counter: 1)] && taken.changedKeys == [.root: ["k"]])
    }

    /// Taking one server's copy of a note sends every other server's cursor
    /// back to the start of its log, keeping what that server acknowledged:
    /// the next sync with it states every note and brings the changes of
    /// the note it sent before the cursor that the copy taken lacks. (The
    /// cursor stayed past them: the note was stated at the taken copy's
    /// version, only rows after the cursor came, and bob's edit, which
    /// server B held and alice had, was gone from alice for good.)
    @Test func takingOneServersCopyRewindsTheOtherServersCursors() async throws {
        let serverA = try makeServer(), serverB = try makeServer()
        let alice = try storeHolding(["groceries", "todo"], "k", 1), bob = try DocumentStore.inMemory()
        func sync(_ store: DocumentStore, with peer: String, _ server: SyncServer) async throws -> SyncClient.Report {
            try await SyncClient(store: store, peer: peer, transport: FaultyTransport.sound(server)).sync()
        }
        _ = try await sync(alice, with: "a", serverA)
        _ = try await sync(alice, with: "b", serverB)
        // bob's edit of the note reaches alice through server B only.
        _ = try await sync(bob, with: "b", serverB)
        try write(bob, "groceries", "bob", 2)
        _ = try await sync(bob, with: "b", serverB)
        _ = try await sync(alice, with: "b", serverB)
        #expect(try value(alice, "groceries", "bob") == .scalar(.int(2)))
        let cursorB = try #require(try alice.syncCursor(peer: "b"))
        let todoHeldByB = try alice.acknowledgedVersion(peer: "b", id: "todo")

        try alice.discardCopy(of: "groceries", resyncingWith: "a")
        #expect(try alice.syncCursor(peer: "b") == SyncCursor(logID: cursorB.logID, seq: 0))
        #expect(try alice.acknowledgedVersion(peer: "b", id: "todo") == todoHeldByB)
        #expect(try await sync(alice, with: "a", serverA).notApplied.isEmpty)
        #expect(try value(alice, "groceries", "bob") == nil)  // server A's copy lacks it
        #expect(try await sync(alice, with: "b", serverB).notApplied.isEmpty)
        #expect(try value(alice, "groceries", "bob") == .scalar(.int(2)))
        #expect(try alice.versionVector("groceries") == serverB.log.version("groceries"))
        _ = try await sync(alice, with: "a", serverA)
        #expect(serverA.log.version("groceries") == serverB.log.version("groceries"))
    }

    /// A note this store refuses server B's changes to stays refused once
    /// the copy of another note is taken from server A: B's cursor goes
    /// back to seq 0, and the refused note is still left unstated until its
    /// rows came again. (Stated at this store's version, which holds the
    /// clashing change, with the cursor at seq 0 it was sent none of them:
    /// the refusal ended in silence, the copies apart.)
    @Test func aNoteRefusedByAnotherServerStaysRefusedAfterItsCursorIsRewound() async throws {
        let serverA = try makeServer(), serverB = try makeServer()
        let alice = try storeHolding(["todo"], "k", 1)
        let clientB = SyncClient(store: alice, peer: "server", transport: FaultyTransport.sound(serverB))
        try await clientB.sync()
        try forgeAClash(of: "groceries", in: alice, with: serverB)
        #expect(try await clientB.sync().notApplied.keys.sorted() == ["groceries"])
        try await SyncClient(store: alice, peer: "a", transport: FaultyTransport.sound(serverA)).sync()

        try alice.discardCopy(of: "todo", resyncingWith: "a")
        #expect(try alice.syncCursor(peer: "server")?.seq == 0)
        for _ in 1...2 { #expect(try await clientB.sync().notApplied.keys.sorted() == ["groceries"]) }
        #expect(try alice.refusedDocuments(peer: "server") == ["groceries"])
        #expect(try value(alice, "todo", "k") == .scalar(.int(1)))
    }

    /// Server A, server B answering one document a page, and alice on a
    /// file in `directory`, holding the notes groceries and todo synced
    /// with both; `beside` is a second store on the file (another process).
    func storeBesideTwoServers(in directory: String) async throws
        -> (servers: [String: SyncServer], alice: DocumentStore, beside: DocumentStore) {
        let path = directory + "/alice.quire"
        var onePerPage = SyncServer.Configuration()
        onePerPage.maxPageDocuments = 1
        let servers = ["a": try makeServer(), "b": try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil, configuration: onePerPage)]
        let alice = try DocumentStore(path: path), beside = try DocumentStore(path: path)
        for id: DocumentID in ["groceries", "todo"] {
            try alice.create(id: id)
            try write(alice, id, "k", 1)
        }
        for peer in ["a", "b"] { try await SyncClient(store: alice, peer: peer, transport: FaultyTransport.sound(servers[peer]!)).sync() }
        return (servers, alice, beside)
    }

    /// A sync with server B that began before another process on the file
    /// took server A's copy of a note (or B's own), and ends after, leaves
    /// B's cursor as the drop left it: at seq 0 (forgotten, for B's own
    /// copy). So the next sync with B still brings bob's edit of the note,
    /// which only B had sent. The sync itself goes on through its pages
    /// from where they got. (It stored its answer's cursor over the
    /// rewind, and that edit never came back.)
    @Test(arguments: ["a", "b"])
    func aSyncRunningWhileACopyIsTakenDoesNotUndoTheRewind(takenFrom: String) async throws {
        try await withTemporaryDirectory { directory in
            let (servers, alice, beside) = try await storeBesideTwoServers(in: directory)
            let bob = try DocumentStore.inMemory()
            func sync(_ store: DocumentStore, with peer: String, through transport: (any SyncTransport)? = nil) async throws -> SyncClient.Report {
                try await SyncClient(store: store, peer: peer, transport: transport ?? FaultyTransport.sound(servers[peer]!)).sync()
            }
            // bob's edit of the note reaches alice through server B only.
            _ = try await sync(bob, with: "b")
            try write(bob, "groceries", "bob", 2)
            _ = try await sync(bob, with: "b")
            _ = try await sync(alice, with: "b")
            #expect(try value(alice, "groceries", "bob") == .scalar(.int(2)))
            let logB = try #require(try alice.syncCursor(peer: "b")).logID
            // Three notes new to alice: three pages.
            let bobsNotes: [DocumentID] = ["n1", "n2", "n3"]
            for id in bobsNotes {
                try bob.create(id: id)
                try write(bob, id, "k", 3)
            }
            _ = try await sync(bob, with: "b")

            // The other process's drop, once this sync has begun and made its first request.
            let dropping = MeddlingTransport(inner: FaultyTransport.sound(servers["b"]!)) {
                try beside.discardCopy(of: "groceries", resyncingWith: takenFrom)
            }
            let report = try await sync(alice, with: "b", through: dropping)
            #expect(report.received == 3 && report.rounds == 3)
            for id in bobsNotes { #expect(try value(alice, id, "k") == .scalar(.int(3))) }
            #expect(try alice.syncCursor(peer: "b") == (takenFrom == "b" ? nil : SyncCursor(logID: logB, seq: 0)))
            _ = try await sync(alice, with: "a")
            _ = try await sync(alice, with: "b")
            #expect(try value(alice, "groceries", "bob") == .scalar(.int(2)))
            #expect(try alice.versionVector("groceries") == servers["b"]!.log.version("groceries"))
        }
    }

    /// A sync with server B whose first round was recorded before another
    /// process on the file took server A's copy of a note (or B's own), and
    /// whose next request read B's cursor after, as the drop left it, stores
    /// the cursor its pages reach: they went from the start of B's log (or
    /// from no cursor), past nothing the drop made this store lack. So the
    /// next sync goes on from there: one round, stating only the note edited
    /// since. (The count of drops was read when the sync began, and no
    /// cursor was stored: the next sync stated every note and pushed only
    /// once an answer had stated them, in two rounds.)
    @Test(arguments: ["a", "b"])
    func aSyncThatReadTheCursorAfterACopyWasTakenStoresItsCursor(takenFrom: String) async throws {
        try await withTemporaryDirectory { directory in
            let (servers, alice, beside) = try await storeBesideTwoServers(in: directory)
            let bob = try DocumentStore.inMemory()
            func client(_ store: DocumentStore, with peer: String, through transport: (any SyncTransport)? = nil) -> SyncClient {
                SyncClient(store: store, peer: peer, transport: transport ?? FaultyTransport.sound(servers[peer]!))
            }
            // Three notes new to alice: three pages.
            for id: DocumentID in ["n1", "n2", "n3"] {
                try bob.create(id: id)
                try write(bob, id, "k", 3)
            }
            _ = try await client(bob, with: "b").sync()

            // The other process's drop, once the first round is recorded: before the second request reads the cursor.
            var paging = client(alice, with: "b")
            let dropped = Mutex(false)
            paging.progress = { line in
                guard line.hasPrefix("round 1,"), !dropped.withLock({ done in defer { done = true }; return done }) else { return }
                #expect(throws: Never.self) { try beside.discardCopy(of: "groceries", resyncingWith: takenFrom) }
            }
            let report = try await paging.sync()
            #expect(dropped.withLock { $0 } && report.received > 0)
            let end = SyncCursor(logID: servers["b"]!.log.logID, seq: servers["b"]!.log.lastSeq)
            #expect(try alice.syncCursor(peer: "b") == end)
            #expect(try value(alice, "groceries", "k") == .scalar(.int(1)) && value(alice, "n3", "k") == .scalar(.int(3)))

            try write(alice, "todo", "k", 2)
            let recorder = RecordingTransport(inner: FaultyTransport.sound(servers["b"]!))
            let next = try await client(alice, with: "b", through: recorder).sync()
            #expect(next.rounds == 1 && next.sent == 1)
            #expect(recorder.requests.first?.cursor == end && recorder.requests.first?.documents.map(\.id) == ["todo"])
        }
    }

    /// A sync stating its notes a range at a time stores, once every range
    /// is pulled, where the first range ended: so a copy taken after the
    /// first range's request read the cursor keeps that cursor from being
    /// stored, though the later ranges read the cursor as the drop left it.
    /// The next sync with server B then brings again bob's edit of the
    /// note, which only B sent, in the first range.
    @Test func aSyncInRangesStoresNoCursorWhenACopyIsTakenAfterItsFirstRangeBegan() async throws {
        try await withTemporaryDirectory { directory in
            let (servers, alice, beside) = try await storeBesideTwoServers(in: directory)
            let bob = try DocumentStore.inMemory()
            func sync(_ store: DocumentStore, with peer: String) async throws {
                try await SyncClient(store: store, peer: peer, transport: FaultyTransport.sound(servers[peer]!)).sync()
            }
            try await sync(bob, with: "b")
            try write(bob, "groceries", "bob", 2)
            try await sync(bob, with: "b")
            // Both notes edited: stated, one a range.
            for id: DocumentID in ["groceries", "todo"] { try write(alice, id, "k", 5) }
            var ranged = SyncClient(store: alice, peer: "b", transport: FaultyTransport.sound(servers["b"]!))
            ranged.maxStatedDocuments = 1
            let dropped = Mutex(false)
            ranged.progress = { line in
                guard line.hasPrefix("round 1,"), !dropped.withLock({ done in defer { done = true }; return done }) else { return }
                #expect(throws: Never.self) { try beside.discardCopy(of: "groceries", resyncingWith: "a") }
            }
            try await ranged.sync()
            #expect(dropped.withLock { $0 })
            #expect(try alice.syncCursor(peer: "b")?.seq == 0)
            try await sync(alice, with: "a")
            try await sync(alice, with: "b")
            #expect(try value(alice, "groceries", "bob") == .scalar(.int(2)))
            #expect(try alice.versionVector("groceries") == servers["b"]!.log.version("groceries"))
        }
    }

    /// A store on a file where another store on it dropped a note's copy
    /// (another process's `quire sync --take-theirs`, beside an app that
    /// has not written since and so still holds the retired replica id)
    /// syncs the note back: the server holds more of the note's changes
    /// under the retired id than the file now does, and says so before
    /// they have all come (a page at a time), or in the answer to a request
    /// made before the drop (none come then: the next sync brings them).
    /// (Taken for a claim of more of this store's own changes than it had
    /// made, that ended the sync as a protocol violation.)
    @Test(arguments: [false, true])
    func aStoreThatHasNotTakenTheNewReplicaIDSyncsADroppedNoteBack(dropDuringTheSync: Bool) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/alice.quire"
            var oneRowPerPage = SyncServer.Configuration()
            oneRowPerPage.maxPageBytes = 1
            let server = try SyncServer(log: ServerLog(path: ":memory:"), tokens: nil, configuration: oneRowPerPage)
            let app = try DocumentStore(path: path), beside = try DocumentStore(path: path)
            let client = SyncClient(store: app, peer: "server", transport: FaultyTransport.sound(server))
            try app.create(id: "groceries")
            // Two rows of the app's changes to the note in the server's log: two pages.
            for value: Int64 in 1...2 {
                try write(app, "groceries", "k", value)
                try await client.sync()
            }
            let retired = app.replicaID
            let drop: @Sendable () throws -> Void = { _ = try beside.discardCopy(of: "groceries", resyncingWith: "server") }
            if dropDuringTheSync {
                // Pushed, and stated by the answer, but gone from the file when the answer comes.
                try write(app, "groceries", "k", 3)
                try await SyncClient(store: app, peer: "server", transport: MeddlingTransport(inner: FaultyTransport.sound(server), meddle: drop)).sync()
                #expect(try app.versionVectors()["groceries"] == nil)
            } else {
                try drop()
            }
            #expect(app.replicaID == retired && beside.replicaID != retired)
            try await client.sync()
            #expect(try value(app, "groceries", "k") == .scalar(.int(dropDuringTheSync ? 3 : 2)))
            #expect(try app.versionVector("groceries") == server.log.version("groceries"))
        }
    }

    /// A store on the file at `path` that has written notes "n" and
    /// "dropped", and has not taken the replica id another store on the
    /// file (`beside`) minted dropping "dropped" since.
    func storeThatHasNotTakenItsFilesNewReplicaID(at path: String) throws -> (app: DocumentStore, beside: DocumentStore) {
        let app = try DocumentStore(path: path), beside = try DocumentStore(path: path)
        for id: DocumentID in ["n", "dropped"] {
            try app.create(id: id)
            try write(app, id, "k", 1)
        }
        try beside.discardCopy(of: "dropped", resyncingWith: "elsewhere")
        return (app, beside)
    }

    /// The claim a store refuses is of the file's replica id, which a store
    /// on the file that has not written since another one dropped a copy
    /// does not hold yet: an answer claiming more changes under the new id
    /// than the file holds is refused all the same, and not recorded.
    @Test func aClaimOfChangesUnderTheFilesNewReplicaIDIsRefusedByAStoreThatHasNotTakenIt() async throws {
        try await withTemporaryDirectory { directory in
            let (app, beside) = try storeThatHasNotTakenItsFilesNewReplicaID(at: directory + "/alice.quire")
            let renewed = beside.replicaID
            #expect(app.replicaID != renewed)
            let liar = ScriptedPeer { request in
                SyncResponse(cursor: SyncCursor(logID: 1, seq: 0), documents: request.documents.map { SyncDocument(id: $0.id, version: [renewed: 1]) })
            }
            await #expect(throws: SyncError.protocolViolation("it claims to hold the changes of this store (replica \(renewed)) "
                + "to document n up to counter 1, but this store has made them only up to 0")) {
                try await SyncClient(store: app, peer: "p", transport: FaultyTransport.sound(liar)).sync()
            }
            #expect(try app.acknowledgedVersions(peer: "p").isEmpty)
        }
    }

    /// A sync whose peer serves this very file is refused as one, before
    /// anything of the answer is applied or recorded, also when one of the
    /// two stores on the file has not taken the new replica id another one
    /// minted dropping a copy (`--take-theirs` in another process): the
    /// client (checked against the file's id too), or the served store
    /// (which answers under the file's). Either way the sync used to end
    /// as a success, every note acknowledged for the peer and the clients,
    /// so that `quire status` counted nothing pending.
    @Test(arguments: ["client", "served"])
    func aSyncWithThisFileItselfIsRefusedWhenOneSideHasNotTakenItsNewReplicaID(notTaken: String) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/alice.quire"
            let (app, beside) = try storeThatHasNotTakenItsFilesNewReplicaID(at: path)
            let opened = try DocumentStore(path: path)
            let (client, served) = notTaken == "client" ? (app, opened) : (opened, app)
            #expect(app.replicaID != beside.replicaID && opened.replicaID == beside.replicaID)
            await #expect(throws: SyncError.unreachable("it answered from this store itself (replica \(beside.replicaID)), not another: "
                + "nothing was synced; run `quire serve --stdio` on the other store")) {
                try await SyncClient(store: client, peer: "via:self", transport: FaultyTransport.sound(PeerSyncService(store: served))).sync()
            }
            #expect(try client.syncCursor(peer: "via:self") == nil)
            #expect(try client.acknowledgedVersions(peer: "via:self").isEmpty)
            #expect(try client.acknowledgedVersions(peer: PeerSyncService.clientsPeer).isEmpty)
        }
    }

    /// A sync whose peer serves this very file is refused also when another
    /// store on the file drops a copy (`--take-theirs` in another process)
    /// after the served store read the file's replica id for its answer and
    /// before the answer comes, and the client takes the new id meanwhile
    /// (it writes): the answer names the id just retired, which neither the
    /// client nor the file holds any more, but the file held as the request
    /// was made. (Left open by review203: the answer was taken for another
    /// store's, applied and its versions recorded as the peer's
    /// acknowledgements; only the next round's answer, under the new id,
    /// ended the sync.)
    @Test func aSyncWithThisFileItselfIsRefusedWhenTheFileTakesANewReplicaIDBeforeTheAnswerComes() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/alice.quire"
            let app = try DocumentStore(path: path), served = try DocumentStore(path: path), beside = try DocumentStore(path: path)
            for id: DocumentID in ["n", "dropped"] {
                try app.create(id: id)
                try write(app, id, "k", 1)
            }
            let retired = app.replicaID
            let service = FaultyTransport.sound(PeerSyncService(store: served))
            let dropAfterTheAnswer = Mutex(true)
            let dropping = ScriptedTransport { request throws(SyncError) in
                let answer = try await service.exchange(request, longPollSeconds: 0)
                guard dropAfterTheAnswer.withLock({ drop in defer { drop = false }; return drop }) else { return answer }
                do {
                    try beside.discardCopy(of: "dropped", resyncingWith: "elsewhere")
                    try write(app, "n", "k", 2)
                } catch { throw .store("\(error)") }
                return answer
            }
            await #expect(throws: SyncError.unreachable("it answered from this store itself (replica \(retired)), not another: "
                + "nothing was synced; run `quire serve --stdio` on the other store")) {
                try await SyncClient(store: app, peer: "via:self", transport: dropping).sync()
            }
            #expect(app.replicaID == beside.replicaID && app.replicaID != retired)
            #expect(try app.syncCursor(peer: "via:self") == nil)
            #expect(try app.acknowledgedVersions(peer: "via:self").isEmpty)
            #expect(try app.acknowledgedVersions(peer: PeerSyncService.clientsPeer).isEmpty)
        }
    }

    /// A store served to others (`PeerSyncService`) that has not written
    /// since another store on its file dropped a copy answers under the
    /// file's new replica id: its client takes it for the new log it is
    /// and forgets what it knew the store held before the drop, so the
    /// dropped note's changes it sends back count in `sent`. (Answered
    /// under the retired id, the client kept its acknowledgements, which
    /// still claimed the note's changes held: `sent` 0 for the two that
    /// went, and the cursor kept naming the retired id.)
    @Test func aServedStoreAnswersUnderItsFilesNewReplicaIDBeforeItWrites() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/hub.quire"
            let hub = try DocumentStore(path: path), beside = try DocumentStore(path: path)
            let phone = try DocumentStore.inMemory()
            func sync() async throws -> SyncClient.Report {
                try await SyncClient(store: phone, peer: "via:hub", transport: FaultyTransport.sound(PeerSyncService(store: hub))).sync()
            }
            try phone.create(id: "n")
            try write(phone, "n", "k", 1)
            _ = try await sync()
            try write(hub, "n", "j", 2)
            _ = try await sync()
            #expect(try phone.versionVector("n") == hub.versionVector("n"))
            let retired = hub.replicaID
            #expect(try phone.syncCursor(peer: "via:hub")?.logID == retired.rawValue)

            try beside.discardCopy(of: "n", resyncingWith: "elsewhere")
            #expect(hub.replicaID == retired && beside.replicaID != retired)
            let report = try await sync()
            #expect(report.sent == 2)
            #expect(try phone.syncCursor(peer: "via:hub")?.logID == beside.replicaID.rawValue)
            #expect(try hub.versionVector("n") == phone.versionVector("n"))
        }
    }

    /// Known, not fixed (`sync.md`, "Sessions"): a clash that the version
    /// this store states covers goes unseen. Stated at a version holding
    /// 1@7 (the first sync states every note; later ones a note edited
    /// here), the note is sent none of the server's rows its version
    /// covers, the server's 1@7 among them, with other content: the syncs
    /// refuse nothing, the server acknowledges the note, and the two copies
    /// stay different for good. Version vectors name changes, not their
    /// content.
    @Test(arguments: [false, true])
    func aClashTheStatedVersionCoversGoesUnseen(editedHere: Bool) async throws {
        let server = try makeServer()
        let alice = try DocumentStore.inMemory(), bob = try DocumentStore.inMemory()
        let client = SyncClient(store: alice, peer: "server", transport: FaultyTransport.sound(server))
        if editedHere {
            // A cursor past seq 0: the note is then stated only at a version other than acknowledged.
            try alice.create(id: "todo")
            try write(alice, "todo", "k", 1)
            try await client.sync()
        }
        try forgeAClash(of: "groceries", in: alice, with: server)
        if editedHere { try write(alice, "groceries", "other", 3) }
        for _ in 1...2 { #expect(try await client.sync().notApplied.isEmpty) }
        #expect(try alice.versionVector("groceries") == server.log.version("groceries"))
        try await SyncClient(store: bob, peer: "server", transport: FaultyTransport.sound(server)).sync()
        #expect(try value(alice, "groceries", "k") == .scalar(.int(2)) && value(bob, "groceries", "k") == .scalar(.int(1)))
    }

    /// A peer that answers a push without taking the changes or refusing
    /// them ends the sync at the round that would repeat the last, not
    /// after `maxRounds` rounds sending the same changes.
    @Test func aPeerThatNeitherTakesNorRefusesAPushEndsTheSync() async throws {
        let store = try DocumentStore.inMemory()
        try store.create(id: "n")
        try write(store, "n", "k", 1)
        let recorder = RecordingTransport(inner: FaultyTransport.sound(ScriptedPeer { request in
            SyncResponse(cursor: SyncCursor(logID: 1, seq: 0), documents: request.documents.map { SyncDocument(id: $0.id, version: [:]) })
        }))
        await #expect(throws: SyncError.protocolViolation("it neither took nor refused the changes pushed (1 of document n) "
            + "and sent nothing new: another round would only repeat the last")) {
            try await SyncClient(store: store, peer: "p", transport: recorder).sync()
        }
        #expect(recorder.requests.count == 2)  // the second states the cursor the first answer gave
        #expect(try store.outbox(peer: "p")["n"]?.count == 1)
    }

    /// An answer claiming more of this store's own changes than it has made
    /// ends the sync and is not recorded: as an acknowledgement, it would
    /// keep those changes from ever being sent to that peer. One change more
    /// is as much a lie as many more.
    @Test(arguments: [2, 1 << 40] as [UInt64])
    func anAnswerClaimingMoreOfTheStoresOwnChangesThanItMadeIsRefused(claimed: UInt64) async throws {
        let store = try DocumentStore.inMemory()
        try store.create(id: "n")
        try write(store, "n", "k", 1)
        let replica = store.replicaID
        let liar = ScriptedPeer { request in
            SyncResponse(cursor: SyncCursor(logID: 1, seq: 0), documents: request.documents.map { SyncDocument(id: $0.id, version: [replica: claimed]) })
        }
        await #expect(throws: SyncError.protocolViolation("it claims to hold the changes of this store (replica \(replica)) "
            + "to document n up to counter \(claimed), but this store has made them only up to 1")) {
            try await SyncClient(store: store, peer: "p", transport: FaultyTransport.sound(liar)).sync()
        }
        #expect(try store.acknowledgedVersions(peer: "p").isEmpty)
        #expect(try store.outbox(peer: "p")["n"]?.count == 1)
    }

    /// A refusal that says nothing about the pushed changes (401 for a
    /// mistyped token, 404 for a wrong URL: `SyncFailure.refusesPush`)
    /// ends the sync and leaves them pending: parked as rejected, they
    /// would never be sent again once the token or URL is put right.
    @Test(arguments: [401, 404])
    func aRefusalThatIsNotAboutThePushLeavesItsChangesPending(status: Int) async throws {
        /// Refuses every request that pushes; answers the others as a server holding nothing.
        struct RefusingPushes: SyncTransport {
            let failure: SyncFailure
            func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
                guard case .request(let stated)? = try? SyncMessage.decode(request), stated.documents.allSatisfy(\.bundles.isEmpty) else {
                    return SyncMessage.failure(failure).encoded()
                }
                let empty = stated.documents.map { SyncDocument(id: $0.id, version: [:]) }
                return SyncMessage.response(SyncResponse(cursor: SyncCursor(logID: 1, seq: 0), documents: empty)).encoded()
            }
        }
        let store = try DocumentStore.inMemory()
        try store.create(id: "n")
        try write(store, "n", "k", 1)
        let failure = SyncFailure(status: status, "no")
        await #expect(throws: SyncError.refused(failure)) {
            try await SyncClient(store: store, peer: "p", transport: RefusingPushes(failure: failure)).sync()
        }
        #expect(try store.rejectedChanges(peer: "p").isEmpty)
        #expect(try store.outbox(peer: "p")["n"]?.count == 1)
    }

    /// A sync to a server that takes no connection says so once, then why
    /// (where "could not reach the server: server unreachable …" said it twice).
    @Test func anUnreachableServerIsNamedOnceInTheError() async throws {
        let store = try DocumentStore.inMemory()
        try await withRefusingPort { port in
            let address = URL(string: "http://127.0.0.1:\(port)")!
            let transport = HTTPSyncTransport(server: address, token: nil, retryPolicy: SleepRecorder().policy(maxAttempts: 2))
            await #expect {
                try await SyncClient(store: store, peer: "server", transport: transport).sync()
            } throws: { error in
                error.localizedDescription.hasPrefix("could not reach the server: no answer (gave up after retries): POST \(address.absoluteString)")
            }
        }
    }

    /// A change whose Lamport value jumps far ahead is refused by a peer
    /// (400, as by the server) and by a client taking a page, which keeps
    /// nothing of it: taken, it would end the document's local edits.
    @Test func aChangeFarAheadInLamportValueIsRefusedBothWays() async throws {
        let store = try DocumentStore.inMemory()
        try store.create(id: "n")
        try write(store, "n", "k", 1)
        let farAhead = Change(id: OpID(replica: ReplicaID(7), counter: 1), lamport: Document.lamportLimit - 3,
                              parents: [OpID(replica: store.replicaID, counter: 1)],
                              operations: [.put(object: .root, key: "k", value: .scalar(.int(2)), pred: [])])
        let reason = "change 1@0000000000000007 is invalid: its Lamport value \(Document.lamportLimit - 3) lies more than "
            + "\(DocumentStore.maxLamportLead) beyond the highest before it, 1"
        let request = SyncRequest(cursor: nil, documents: [SyncDocument(id: "n", version: [:], changes: [farAhead])])
        let answer = await PeerSyncService(store: store).respond(toMessage: SyncMessage.request(request).encoded(), access: .unrestricted)
        #expect(try SyncMessage.decode(answer) == .failure(SyncFailure(status: 400, "a change of document n does not apply: " + reason)))

        let sender = ScriptedPeer { _ in
            SyncResponse(cursor: SyncCursor(logID: 1, seq: 0), documents: [SyncDocument(id: "n", version: [:], changes: [farAhead])])
        }
        let report = try await SyncClient(store: store, peer: "p", transport: FaultyTransport.sound(sender)).sync()
        #expect(report.notApplied.mapValues { "\($0.reason)" } == ["n": reason])
        #expect(try store.versionVectors() == ["n": [store.replicaID: 1]])
    }

    /// The server measures the Lamport lead as a store does, from the
    /// highest value before each change, the push's earlier changes
    /// counted: a history climbing the whole lead a change is taken in one
    /// push as in steps, and one climbing a step further is refused in
    /// both, at the same change.
    @Test func theServerTakesOrRefusesAHistoryAlikeInOnePushOrInSteps() throws {
        let lead = DocumentStore.maxLamportLead
        func push(_ changes: [Change], to log: ServerLog) throws(SyncFailure) {
            _ = try log.push([("n", changes)], by: .unrestricted, limits: .init())
        }
        let climbing = climbingHistory(count: 3, from: lead, climbingBy: lead)
        let inSteps = try ServerLog(path: ":memory:"), inOnePush = try ServerLog(path: ":memory:")
        for change in climbing { try push([change], to: inSteps) }
        try push(climbing, to: inOnePush)
        #expect(inSteps.version("n") == [ReplicaID(7): 3] && inOnePush.version("n") == [ReplicaID(7): 3])

        let tooSteep = climbingHistory(count: 3, from: lead, climbingBy: lead + 1)
        let refusal = SyncFailure(status: 400, "change \(tooSteep[1].id) has Lamport value \(2 * lead + 1), more than \(lead) "
            + "beyond the highest before it, \(lead)")
        let refusingSteps = try ServerLog(path: ":memory:"), refusingOnePush = try ServerLog(path: ":memory:")
        try push([tooSteep[0]], to: refusingSteps)
        #expect(throws: refusal) { try push([tooSteep[1]], to: refusingSteps) }
        #expect(throws: refusal) { try push(tooSteep, to: refusingOnePush) }
        #expect(refusingSteps.version("n") == [ReplicaID(7): 1] && refusingOnePush.version("n").isEmpty)
    }

    /// A change whose insert names as its origin an element of its own
    /// replica not before it (which a bundle of version 3 can say), and
    /// that waits for its replica's first change: the server refuses the
    /// push as changes that do not decode, storing nothing, and a store
    /// given it refuses it too. (Both parked it, writing it in version 5,
    /// which cannot say such an origin: the process trapped.)
    @Test func aChangeWhoseOriginIsNotBeforeItIsRefusedNotParked() async throws {
        let replica = ReplicaID(7)
        let insert = OpID(replica: replica, counter: 2)
        let early = Change(id: insert, lamport: 2, parents: [OpID(replica: replica, counter: 1)],
                           operations: [.insert(object: ObjectID(OpID(replica: replica, counter: 1)), origin: insert, content: .text("x"))])
        let bundle = ChangeEncoding.encode([early], version: ChangeEncoding.olderReadersVersion)
        let reason = "invalid data: the insert at \(insert) names \(insert) as its origin, of its own replica but not before it"

        let server = try makeServer()
        let push = SyncRequest(cursor: nil, documents: [SyncDocument(id: "n", version: [replica: 2], bundles: [bundle])])
        let answer = try SyncMessage.decode(await server.respond(toMessage: SyncMessage.request(push).encoded(), access: .unrestricted))
        #expect(answer == .failure(SyncFailure(status: 400, "the changes of document n do not decode: \(reason)")))
        #expect(server.log.version("n").isEmpty)

        let store = try DocumentStore.inMemory()
        let refused = try store.applyEach(bundles: [("n", [bundle])]).refused
        #expect(refused.map { "\($0.id): \($0.error)" } == ["n: \(reason)"])
        #expect(try store.versionVectors().isEmpty)
    }

    /// A change the server parks counts for the pushes after it as within
    /// one push, also after the log is opened again, so a history sent
    /// before what it depends on is taken alike in steps. (The second push
    /// was refused: measured from the server's highest without the parked
    /// change, review138's "Left".)
    @Test func aParkedChangeCountsForLaterPushesAsWithinOne() throws {
        let (missing, history) = historyBeforeItsDependency(lead: DocumentStore.maxLamportLead)
        func push(_ changes: [Change], to log: ServerLog) throws(SyncFailure) {
            _ = try log.push([("n", changes)], by: .unrestricted, limits: .init())
        }
        try withTemporaryDirectory { directory in
            let path = directory + "/server.db"
            do { try push([history[0]], to: try ServerLog(path: path)) }
            let reopened = try reopenServerLog(path), inSteps = try ServerLog(path: ":memory:"), inOnePush = try ServerLog(path: ":memory:")
            try push([history[1]], to: reopened)
            for change in history { try push([change], to: inSteps) }
            try push(history, to: inOnePush)
            for log in [reopened, inSteps, inOnePush] {
                try push([missing], to: log)
                #expect(log.version("n") == [ReplicaID(7): 2, ReplicaID(8): 1])
            }
        }
    }

    /// An answer whose bundle for one document is not a bundle leaves that
    /// document out, named in the report, and the other document's good
    /// bundle is applied. (The whole sync failed, and nothing was kept.)
    @Test func anAnswersBadBundleIsNamedByItsDocument() async throws {
        let source = try DocumentStore.inMemory()
        try source.create(id: "good")
        try write(source, "good", "k", 1)
        let store = try DocumentStore.inMemory()
        let goodBundle = try ChangeEncoding.encode(source.changes("good"))
        let goodVersion = try source.versionVector("good")
        let sender = ScriptedPeer { _ in
            SyncResponse(cursor: SyncCursor(logID: 1, seq: 0), documents: [
                SyncDocument(id: "good", version: goodVersion, bundles: [goodBundle]),
                SyncDocument(id: "bad", version: [:], bundles: [[1, 2, 3]]),
            ])
        }
        let report = try await SyncClient(store: store, peer: "p", transport: FaultyTransport.sound(sender)).sync()
        #expect(report.notApplied.mapValues { "\($0.reason)" } == ["bad": "not a Quire change bundle (wrong magic number)"])
        #expect(try store.documents().map(\.id) == ["good"])
        #expect(try value(store, "good", "k") == .scalar(.int(1)))
    }

    /// A page with two documents this store refuses, for different
    /// reasons, between two it takes: both are named in the report, each
    /// with its own reason, and the two others applied and counted.
    @Test func twoRefusedDocumentsOfOnePageAreLeftOutAndTheOthersApplied() async throws {
        let source = try DocumentStore.inMemory()
        for id: DocumentID in ["a-good", "c-good"] {
            try source.create(id: id)
            try write(source, id, "k", 1)
        }
        let farAhead = Change(id: OpID(replica: ReplicaID(7), counter: 1), lamport: Document.lamportLimit - 3, parents: [],
                              operations: [.put(object: .root, key: "k", value: .scalar(.int(2)), pred: [])])
        let page = try [
            SyncDocument(id: "a-good", version: source.versionVector("a-good"), bundles: [ChangeEncoding.encode(source.changes("a-good"))]),
            SyncDocument(id: "b-bad", version: [:], bundles: [[1, 2, 3]]),
            SyncDocument(id: "c-good", version: source.versionVector("c-good"), bundles: [ChangeEncoding.encode(source.changes("c-good"))]),
            SyncDocument(id: "d-far", version: [ReplicaID(7): 1], changes: [farAhead]),
        ]
        let sender = ScriptedPeer { _ in SyncResponse(cursor: SyncCursor(logID: 1, seq: 0), documents: page) }
        let store = try DocumentStore.inMemory()
        let report = try await SyncClient(store: store, peer: "p", transport: FaultyTransport.sound(sender)).sync()
        #expect(report.notApplied.mapValues { "\($0.reason)" } == [
            "b-bad": "not a Quire change bundle (wrong magic number)",
            "d-far": "change 1@0000000000000007 is invalid: its Lamport value \(Document.lamportLimit - 3) lies more than "
                + "\(DocumentStore.maxLamportLead) beyond the highest before it, 0",
        ])
        #expect(report.received == 2)
        #expect(try store.documents().map(\.id) == ["a-good", "c-good"])
        #expect(try value(store, "a-good", "k") == .scalar(.int(1)) && value(store, "c-good", "k") == .scalar(.int(1)))
    }

    @Test func messagesRoundTripAndDamageIsRefused() throws {
        let request = SyncRequest(cursor: SyncCursor(logID: 9, seq: 4), waitMilliseconds: 250, documents: [
            SyncDocument(id: "x", version: [ReplicaID(3): 4], bundles: [Array(repeating: 7, count: 3000)]),
        ])
        var bytes = SyncMessage.request(request).encoded()
        #expect(bytes.count < 3000)  // compressed
        #expect(try SyncMessage.decode(bytes) == .request(request))
        bytes[bytes.count / 2] ^= 1
        #expect(throws: SyncMessage.DecodeError.self) { try SyncMessage.decode(bytes) }
        for range in [DocumentRange(after: "k", through: nil), DocumentRange(after: nil, through: "é")] {
            let ranged = SyncRequest(cursor: nil, documents: [SyncDocument(id: "m", version: [ReplicaID(3): 1])], range: range)
            #expect(try SyncMessage.decode(SyncMessage.request(ranged).encoded()) == .request(ranged))
        }
    }

    /// A response's flags byte holds only the bits `Specs/sync.md` names
    /// (1 more, 2 cursor reset), as the message's own flags do.
    @Test func aResponseWithUnknownFlagsIsRefused() throws {
        let response = [UInt8](repeating: 0, count: 9) + [4, 0]  // cursor none, flags 4, no documents
        #expect(throws: SyncMessage.DecodeError.malformed("invalid data: unknown response flags 4")) {
            try SyncMessage.decode(Envelope.seal(magic: Array("QSYN".utf8), version: 1, body: [2, 0] + response))
        }
    }

    /// A request's bytes, built by hand to say what no encoder writes:
    /// no cursor, no wait, then `documents`, each a name and its version
    /// vector's entries as given (repeats and zeros included), then `tail`;
    /// `flags` is the message's flags byte.
    static func requestBytes(_ documents: [(id: String, entries: [(replica: UInt64, counter: UInt64)])],
                             tail: [UInt8] = [], flags: UInt8 = 0) -> [UInt8] {
        var request = ByteWriter()
        request.writeUInt64(0)
        request.writeVarint(0)  // cursor none
        request.writeVarint(0)  // no wait
        request.writeVarint(documents.count)
        for document in documents {
            request.writeString(document.id)
            request.writeVarint(document.entries.count)
            for entry in document.entries {
                request.writeUInt64(entry.replica)
                request.writeVarint(entry.counter)
            }
            request.writeVarint(0)  // no bundles
        }
        return Envelope.seal(magic: Array("QSYN".utf8), version: 1, body: [1, flags] + request.bytes + tail)
    }

    /// A version vector names each replica once, with a counter of 1 or
    /// more: an entry of 0 (which no writer makes) is refused, and so
    /// cannot hide that its replica comes again.
    @Test func aVersionVectorEntryOfZeroIsRefused() throws {
        #expect(throws: SyncMessage.DecodeError.malformed("invalid data: replica 0000000000000005 has counter 0; "
            + "a version vector names only replicas it holds operations of")) {
            try SyncMessage.decode(Self.requestBytes([("n", [(5, 0), (5, 3)])]))
        }
    }

    /// What `Specs/sync.md` ("Messages") refuses is refused, naming what
    /// is wrong, rather than read as something else: a replica stated twice
    /// (which of its counters would the server send from?), a document named
    /// twice, bytes after the message, flags it does not define, and a
    /// payload or a document count one over its limit.
    @Test func aMessageThatStatesSomethingTwiceOrTooMuchIsRefused() throws {
        #expect(throws: SyncMessage.DecodeError.malformed("invalid data: replica 0000000000000005 is repeated")) {
            try SyncMessage.decode(Self.requestBytes([("n", [(5, 3), (5, 9)])]))
        }
        #expect(throws: SyncMessage.DecodeError.malformed("invalid data: document id \"n\" is empty, too long or repeated")) {
            try SyncMessage.decode(Self.requestBytes([("n", [(5, 3)]), ("n", [(5, 9)])]))
        }
        // Two range ends and then a byte more.
        #expect(throws: SyncMessage.DecodeError.malformed("invalid data: 1 bytes follow the message")) {
            try SyncMessage.decode(Self.requestBytes([("n", [(5, 3)])], tail: [0, 0, 7]))
        }
        // Only bit 0 (compressed) of a message's flags is defined.
        #expect(throws: SyncMessage.DecodeError.malformed("invalid data: unknown message flags 2")) {
            try SyncMessage.decode(Self.requestBytes([("n", [(5, 3)])], flags: 2))
        }
        // Uncompressed, the payload is held to the limit as a decompressed one is.
        #expect(throws: SyncMessage.DecodeError.tooLarge("24 bytes, above the limit of 23")) {
            try SyncMessage.decode(Self.requestBytes([("n", [(5, 3)])]), limits: SyncMessage.Limits(maxPayloadBytes: 23))
        }
        let three = Self.requestBytes([("a", [(5, 1)]), ("b", [(5, 1)]), ("c", [(5, 1)])])
        #expect(throws: SyncMessage.DecodeError.tooLarge("3 documents, above the limit of 2")) {
            try SyncMessage.decode(three, limits: SyncMessage.Limits(maxDocuments: 2))
        }
        guard case .request(let request) = try SyncMessage.decode(three, limits: SyncMessage.Limits(maxDocuments: 3)) else {
            Issue.record("not a request")
            return
        }
        #expect(request.documents.map(\.id) == ["a", "b", "c"])
    }

    /// A command that answers garbage and keeps writing fails the exchange
    /// and still ends when the transport closes.
    @Test func aStdioPeerThatFloodsGarbageIsClosed() async throws {
        let transport = try StdioSyncTransport(command: "yes")
        await #expect(throws: SyncError.self) {
            try await transport.exchange(SyncMessage.request(SyncRequest(cursor: nil, documents: [])).encoded(), longPollSeconds: 0)
        }
        // On another thread, so that a close that hangs fails the test instead of hanging it.
        let closed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { transport.close(); closed.signal() }
        #expect(closed.wait(timeout: .now() + 30) == .success)
    }

    /// A command that neither answers nor reads its input fails the
    /// exchange once it has been silent for the timeout, is stopped, and
    /// the transport closes: a small request waits on the answer, one larger
    /// than the pipe holds on its own writing.
    @Test(arguments: [0, 1 << 20])
    func aSilentStdioPeerTimesOut(padding: Int) async throws {
        let transport = try StdioSyncTransport(command: "sleep 600", timeout: 0.5)
        let request = SyncMessage.request(SyncRequest(cursor: nil, documents: [])).encoded() + [UInt8](repeating: 0, count: padding)
        await #expect(throws: SyncError.unreachable("the command \"sleep 600\" failed: nothing came through for 0.5 s", otherSide: .peer)) {
            try await transport.exchange(request, longPollSeconds: 0)
        }
        let closed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { transport.close(); closed.signal() }
        #expect(closed.wait(timeout: .now() + 30) == .success)
    }

    /// A stdin another process made non-blocking (a shell, ssh) is read as
    /// a blocking one: the frame that comes later is waited for.
    @Test func aNonBlockingInputIsWaitedOn() throws {
        let pipe = Pipe()
        let input = pipe.fileHandleForReading.fileDescriptor
        _ = fcntl(input, F_SETFL, fcntl(input, F_GETFL) | O_NONBLOCK)
        let writer = pipe.fileHandleForWriting
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { try? StdioFraming.write([7, 8, 9], to: writer) }
        #expect(try StdioFraming.read(from: pipe.fileHandleForReading) == [7, 8, 9])
    }

    /// A command that ignores the end of its input is stopped once the
    /// transport's timeout has passed, so that closing cannot hang.
    @Test func closingStopsACommandThatOutlivesItsInput() throws {
        let transport = try StdioSyncTransport(command: "sleep 600", timeout: 0.5)
        let closed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { transport.close(); closed.signal() }
        #expect(closed.wait(timeout: .now() + 30) == .success)
    }

    /// Closing does not wait for a command that outlives its input and
    /// ignores SIGTERM (it ends by itself later): `quire sync --via` would
    /// otherwise hang after the sync is done.
    @Test func closingDoesNotWaitForACommandThatIgnoresSIGTERM() throws {
        // Its standard error let go of: the test runner's own, it would keep
        // `swift test` waiting for the end of its output for the full 60 s.
        let transport = try StdioSyncTransport(command: "exec 2>/dev/null; trap '' TERM; sleep 60", timeout: 0.5)
        let closed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { transport.close(); closed.signal() }
        #expect(closed.wait(timeout: .now() + 30) == .success)
    }

    /// Only an input that ends between frames ends a stdio session cleanly;
    /// one cut inside a frame's length or message is an error.
    @Test(arguments: [[], [5, 0], [5, 0, 0, 0, 1]] as [[UInt8]])
    func stdioInputCutInsideAFrameIsRefused(tail: [UInt8]) throws {
        let pipe = Pipe()
        let message: [UInt8] = [1, 2, 3]
        try pipe.fileHandleForWriting.write(contentsOf: [3, 0, 0, 0] + message + tail)
        try pipe.fileHandleForWriting.close()
        #expect(try StdioFraming.read(from: pipe.fileHandleForReading) == message)
        if tail.isEmpty {
            #expect(try StdioFraming.read(from: pipe.fileHandleForReading) == nil)
        } else {
            #expect(throws: SyncFailure.self) { try StdioFraming.read(from: pipe.fileHandleForReading) }
        }
    }
}

extension FaultyTransport {
    /// A transport that never fails.
    static func sound(_ service: any SyncService) -> FaultyTransport {
        let transport = FaultyTransport(service: service, seed: 0)
        transport.dropRequest = 0; transport.dropAnswer = 0; transport.duplicate = 0; transport.replayOld = 0
        return transport
    }
}

/// Answers every request as `answer` says.
struct ScriptedPeer: SyncService {
    let answer: @Sendable (SyncRequest) throws(SyncFailure) -> SyncResponse

    func respond(to request: SyncRequest, access: Access) async throws(SyncFailure) -> SyncResponse { try answer(request) }
}

/// Passes requests on, running `meddle` once before the first: what
/// another process does while a sync's request is on its way.
final class MeddlingTransport: SyncTransport {
    let inner: any SyncTransport
    private let meddle: Mutex<(@Sendable () throws -> Void)?>

    init(inner: any SyncTransport, meddle: @escaping @Sendable () throws -> Void) {
        self.inner = inner
        self.meddle = Mutex(meddle)
    }

    func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
        if let meddle = meddle.withLock({ meddle in defer { meddle = nil }; return meddle }) {
            do { try meddle() } catch { throw .store("\(error)") }
        }
        return try await inner.exchange(request, longPollSeconds: longPollSeconds)
    }
}

/// Answers each request as `answer` says.
struct ScriptedTransport: SyncTransport {
    let answer: @Sendable ([UInt8]) async throws(SyncError) -> [UInt8]

    func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] { try await answer(request) }
}

/// Keeps every request it passes on, and every response it brings back.
final class RecordingTransport: SyncTransport, @unchecked Sendable {
    let inner: any SyncTransport
    private let lock = NSLock()
    private var recorded: [SyncRequest] = []
    private var answered: [SyncResponse] = []
    var requests: [SyncRequest] { lock.withLock { recorded } }
    var responses: [SyncResponse] { lock.withLock { answered } }

    init(inner: any SyncTransport) { self.inner = inner }

    func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
        if case .request(let decoded)? = try? SyncMessage.decode(request) { lock.withLock { recorded.append(decoded) } }
        let answer = try await inner.exchange(request, longPollSeconds: longPollSeconds)
        if case .response(let decoded)? = try? SyncMessage.decode(answer) { lock.withLock { answered.append(decoded) } }
        return answer
    }
}

/// Holds every request until `requests` have come (then lets each through
/// at once), so that concurrent syncs have all pushed before any answer.
final class GatheringTransport: SyncTransport {
    let service: any SyncService
    let requests: Int
    private let arrived = Mutex(0)

    init(service: any SyncService, requests: Int) {
        self.service = service
        self.requests = requests
    }

    func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
        arrived.withLock { $0 += 1 }
        while arrived.withLock({ $0 }) < requests { try? await Task.sleep(for: .milliseconds(5)) }
        return await service.respond(toMessage: request, access: .unrestricted)
    }
}
