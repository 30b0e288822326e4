import Foundation
import Quire
import QuireSync
import QuireTestSupport
import Synchronization
import Testing

/// One store used by many threads and tasks at once, as an app uses it:
/// editing, reading, syncing over HTTP with a server another replica syncs
/// with too, and observing.
@Suite struct ConcurrentSyncTests {
    @Test func editingReadingSyncingAndObservingOneStoreLoseAndRepeatNothing() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = SyncServer.Configuration()
            (configuration.requestsPerSecond, configuration.burst) = (1e6, 1e6)
            let server = try SyncServer(log: ServerLog(path: directory + "/server.db"), tokens: nil, configuration: configuration)
            let http = HTTPServer(port: 0, handler: server.handle)
            try http.start()
            defer { http.stop() }
            let address = URL(string: "http://127.0.0.1:\(http.port)")!

            let store = try DocumentStore(path: directory + "/notes.quire", snapshotInterval: 10)
            let other = try DocumentStore.inMemory()
            let editors = 3, edits = 20
            let own = try (0..<editors).map { _ in try store.createDocument() }
            let shared = try store.createDocument()
            try other.create(id: shared)
            // Events come in commit order: this document's comes after all the others.
            let last = try store.createDocument()
            let observed = Task { [events = store.allEvents()] in
                var ids: [String] = []
                for await event in events {
                    if event.document == last { break }
                    ids += event.changeIDs.map { "\(event.document) \($0)" }
                }
                return ids
            }

            let client = SyncClient(store: store, peer: "server", transport: HTTPSyncTransport(server: address, token: nil))
            let otherClient = SyncClient(store: other, peer: "server", transport: HTTPSyncTransport(server: address, token: nil))
            let working = Mutex(editors + 2)
            let syncs = Task {
                // Both replicas sync again and again while the edits go on.
                while working.withLock({ $0 }) > 0 {
                    try await client.sync()
                    try await otherClient.sync()
                }
            }
            let finished = await runOnThreadsAsync(editors + 2) { thread in
                defer { working.withLock { $0 -= 1 } }
                for edit in 0..<edits {
                    switch thread {
                    case ..<editors:
                        try! store.edit(own[thread]) { tx in try tx.put(.root, key: "k\(edit)", .int(1)) }
                        try! store.edit(shared) { tx in try tx.put(.root, key: "t\(thread)-\(edit)", .int(1)) }
                    case editors:
                        try! other.edit(shared) { tx in try tx.put(.root, key: "other-\(edit)", .int(1)) }
                    default:
                        _ = try! store.read(shared) { try $0.keys(.root) }
                        _ = try! store.versionVectors()
                    }
                }
            }
            #expect(finished, "the threads deadlocked")
            guard finished else { return }
            try await syncs.value
            for syncing in [client, otherClient, client] { try await syncing.sync() }

            // Every change, made here or received, is in the store once, and in the other replica and on the server.
            let versions = try store.versionVectors()
            #expect(try other.versionVectors()[shared] == versions[shared])
            #expect(versions[shared]?.operationCount == UInt64((editors + 1) * edits))
            for id in own { #expect(try store.changes(id).count == edits) }
            #expect(try store.read(shared) { try $0.keys(.root).count } == (editors + 1) * edits)
            for id in own + [shared] { #expect(server.log.version(id) == versions[id]) }
            #expect(try store.outbox(peer: "server").values.allSatisfy(\.isEmpty))

            // Each change made one event, once.
            let made = try (own + [shared]).flatMap { id in try store.changes(id).map { "\(id) \($0.id)" } }
            try store.edit(last) { tx in try tx.put(.root, key: "done", .bool(true)) }
            let ids = await observed.value
            #expect(ids.count == made.count)
            #expect(Set(ids) == Set(made))
        }
    }

    /// An app cancels a sync (its view went away) while the answer of a
    /// later round is awaited: the pages applied before stay, each document
    /// whole, and the next sync brings the rest, once.
    @Test func aSyncCancelledBetweenPagesKeepsWholePagesAndTheNextEndsIt() async throws {
        let other = try DocumentStore.inMemory(), store = try DocumentStore.inMemory()
        for index in 0..<6 {
            let id = DocumentID(rawValue: "n\(index)")!
            try other.create(id: id)
            for key in 0..<3 { try write(other, id, "k\(key)", Int64(key)) }
        }
        var peer = PeerSyncService(store: other)
        peer.maxPageDocuments = 2
        let stalled = AsyncStream<Void>.makeStream()
        let transport = StallingTransport(inner: FaultyTransport.sound(peer), stallingAt: 3, stalled: stalled.continuation)
        let sync = Task { try await SyncClient(store: store, peer: "p", transport: transport).sync() }
        var waiting = stalled.stream.makeAsyncIterator()
        await waiting.next()
        sync.cancel()
        let error = await #expect(throws: SyncError.self) { try await sync.value }
        #expect(error == .cancelled() && error?.isCancelled == true)

        let full = try other.versionVectors(), kept = try store.versionVectors()
        #expect(kept.count == 4, "two pages of two documents")
        for (id, version) in kept { #expect(version == full[id], "document \(id) half applied") }
        let report = try await SyncClient(store: store, peer: "p", transport: FaultyTransport.sound(peer)).sync()
        #expect(report.received == 3 * (full.count - kept.count))
        #expect(try store.versionVectors() == full)
    }
}

/// Answers through `inner` until its `stallingAt`-th exchange, which waits
/// for its task to be cancelled and then fails as a cancelled HTTP request
/// does (`HTTPSyncTransport`).
final class StallingTransport: SyncTransport {
    let inner: any SyncTransport
    let stallingAt: Int
    let stalled: AsyncStream<Void>.Continuation
    private let exchanges = Mutex(0)

    init(inner: any SyncTransport, stallingAt: Int, stalled: AsyncStream<Void>.Continuation) {
        self.inner = inner
        self.stallingAt = stallingAt
        self.stalled = stalled
    }

    func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
        guard exchanges.withLock({ $0 += 1; return $0 }) == stallingAt else {
            return try await inner.exchange(request, longPollSeconds: longPollSeconds)
        }
        stalled.yield()
        while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
        throw .cancelled()
    }
}
