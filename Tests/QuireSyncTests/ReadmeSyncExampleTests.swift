import Foundation
import Quire
import QuireSync
import QuireTestSupport
import Testing

/// README.md's "Syncing from code", as written there (only the paths and
/// the checks differ), so that a change that breaks it fails here first.
@Suite struct ReadmeSyncExampleTests {
    struct InProcessTransport: SyncTransport {
        let peer: PeerSyncService
        var otherSide: SyncOtherSide { .peer }
        func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
            await peer.respond(toMessage: request, access: .unrestricted)
        }
    }

    @Test func syncingFromCode() async throws {
        try await withTemporaryDirectory { directory in
            let store = try DocumentStore(path: directory + "/notes.quire")
            let id = try store.createDocument { tx in try tx.put(.root, key: "colour", .string("red")) }

            let server = SyncServer(log: try ServerLog(path: directory + "/server.qlog"), tokens: nil)
            let http = HTTPServer(port: 0, handler: server.handle)
            try http.start()
            defer { http.stop() }
            let url = URL(string: "http://127.0.0.1:\(http.port)")!

            let report = try await SyncClient(store: store, peer: url.absoluteString,
                                              transport: HTTPSyncTransport(server: url, token: nil, replica: store.replicaID)).sync()
            #expect((report.sent, report.received) == (1, 0))

            let laptop = store, phone = try DocumentStore(path: directory + "/phone.quire")
            let transport = InProcessTransport(peer: PeerSyncService(store: laptop))
            try await SyncClient(store: phone, peer: "laptop", transport: transport).sync()
            try laptop.edit(id) { tx in try tx.put(.root, key: "colour", .string("blue")) }
            try phone.edit(id) { tx in try tx.put(.root, key: "colour", .string("green")) }
            try await SyncClient(store: phone, peer: "laptop", transport: transport).sync()

            let (conflicted, colours) = try store.read(id) { doc in
                (try doc.conflictedKeys(.root), try doc.entries(.root, key: "colour").map(\.value))
            }
            #expect(conflicted == ["colour"])
            #expect(Set(colours) == [.scalar(.string("blue")), .scalar(.string("green"))])
            #expect(try colours.first == store.read(id) { try $0.get(.root, key: "colour") })
            let history = try store.changes(id)
            #expect(history.count == 3)  // red, then blue and green at once
        }
    }
}
