import Foundation
import QuireTestSupport
import Quire
import QuireSync
import Testing

/// Peer-to-peer sync through a pipe (`quire serve --stdio`) at scale, and
/// what a hostile or broken peer on the other end of the pipe can do.
@Suite struct PipeSyncTests {
    /// A push of many documents to a peer costs one transaction (one disk
    /// sync), not one per document.
    @Test func aPeerAppliesAPushOfManyDocumentsInOneTransaction() async throws {
        let directory = NSTemporaryDirectory() + "quire-pipe-sync-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
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
        #expect(committedTransactions(inLogOf: path) - before == 1)
        #expect(try peer.versionVectors() == writer.versionVectors())
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
