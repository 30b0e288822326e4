import CSQLite
import Foundation
import Testing
@testable import Quire

/// Schema version 1 is the first released version. Every later version's
/// migration gets a test here on a file made by the version before it, with
/// unsent changes in the outbox.
@Suite struct MigrationTests {
    /// A store file as schema version 1 writes it: two documents with local
    /// changes no peer has acknowledged, and a parked remote change.
    static func makeVersion1Store(path: String) throws -> [DocumentID: [Change]] {
        let store = try DocumentStore(path: path, snapshotInterval: 2)
        for id: DocumentID in ["first", "second"] {
            try store.create(id: id)
            for index in 0..<3 { try store.edit(id) { tx in try tx.put(.root, key: "k\(index)", .int(Int64(index))) } }
        }
        let early = Change(id: OpID(replica: ReplicaID(77), counter: 2), lamport: 9, parents: [],
                           operations: [.put(object: .root, key: "remote", value: .scalar(.null), pred: [])])
        try store.apply("first", [early])
        let version = try store.database.query(sql: "PRAGMA user_version")[0].int64(0)
        precondition(version == 1, "the fixture must be made by schema version 1")
        return try store.outbox(peer: "server")
    }

    @Test func aVersion1StoreOpensWithItsOutboxAndParkedChanges() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/v1.quire"
            let outbox = try Self.makeVersion1Store(path: path)
            #expect(outbox.values.map(\.count) == [3, 3])
            let store = try DocumentStore(path: path)
            #expect(try store.outbox(peer: "server") == outbox)
            #expect(try store.read("first") { $0.pendingCount } == 1)
            #expect(try store.database.query(sql: "PRAGMA user_version")[0].int64(0) == Int64(StoreSchema.latestVersion))
        }
    }

    @Test func aStoreFromANewerVersionIsRefused() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/future.quire"
            _ = try Self.makeVersion1Store(path: path)
            let database = try Database(path: path)
            try database.execute(sql: "PRAGMA user_version = \(StoreSchema.latestVersion + 1)")
            database.close()
            #expect {
                try DocumentStore(path: path)
            } throws: { error in
                (error as? DatabaseError)?.description.contains("newer") == true
            }
            #expect(throws: StoreError.unsupportedSchema(found: StoreSchema.latestVersion + 1, expected: StoreSchema.latestVersion)) {
                try DocumentStore(path: path, readOnly: true)
            }
        }
    }
}
