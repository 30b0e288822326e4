import Foundation
import QuireTestSupport
import Testing
@testable import Quire

@Suite struct SnapshotTests {
    /// Builds a random document in a file store that snapshots every few
    /// changes, and returns the store's path and the document id.
    func randomDocument(seed: UInt64, directory: String, edits: Int = 40) throws -> (path: String, id: DocumentID) {
        var rng = SeededGenerator(seed: seed)
        let path = directory + "/store-\(seed).quire"
        let store = try DocumentStore(path: path, snapshotInterval: Int.random(in: 3...15, using: &rng))
        let id: DocumentID = "doc"
        try store.create(id: id)
        try store.edit(id) { tx in try RandomEdits.setUp(&tx) }
        for _ in 0..<edits { try store.edit(id) { tx in try RandomEdits.edit(&tx, using: &rng) } }
        return (path, id)
    }

    /// The document replayed from every logged change, without snapshots.
    func replay(_ store: DocumentStore, _ id: DocumentID) throws -> [UInt8] {
        var document = Document(replica: store.replicaID)
        try document.apply(store.changes(id))
        return document.encodeSnapshot(includeHistory: false)
    }

    @Test func snapshotEqualsReplayAndSaveThenLoadIsStable() throws {
        try withTemporaryDirectory { directory in
            for seed in UInt64(1)...10 {
                let (path, id) = try randomDocument(seed: seed, directory: directory)
                let warnings = WarningLog()
                let loaded = try DocumentStore(path: path, onWarning: warnings.handler)
                let snapshots = try loaded.database.query(sql: "SELECT count(*) FROM snapshots")[0].int64(0)
                try #require(snapshots > 0, "seed \(seed): no snapshot was written")
                let state = try loaded.state(id)
                let replayed = try replay(loaded, id)
                try #require(state == replayed, "seed \(seed): snapshot + tail differs from a full replay")
                try loaded.snapshot(id)
                let reloaded = try DocumentStore(path: path)
                let stateAfterReload = try reloaded.state(id)
                try #require(stateAfterReload == state, "seed \(seed): save then load changed the document")
                #expect(warnings.all.isEmpty)
            }
        }
    }

    /// A document edited a little in each of many sessions still gets its
    /// snapshots: a load counts the changes it replayed after the newest
    /// snapshot toward the next, or the log's tail would grow for good.
    @Test func changesReplayedAtLoadCountTowardTheNextSnapshot() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            let id: DocumentID = "note"
            func snapshotCount(_ store: DocumentStore) throws -> Int64 {
                try store.database.query(sql: "SELECT count(*) FROM snapshots")[0].int64(0)
            }
            for session in 0..<4 {
                let store = try DocumentStore(path: path, snapshotInterval: 10)
                if session == 0 { try store.create(id: id) }
                try store.read(id) { _ in }  // loaded, as a session opening the note does
                for index in 0..<4 { try store.edit(id) { tx in try tx.put(.root, key: "s\(session)k\(index)", .int(1)) } }
                // 4 changes a session: the 10th falls in session 2, and the
                // next snapshot is due 10 changes later, after session 3.
                #expect(try snapshotCount(store) == [0, 0, 1, 1][session], "session \(session)")
            }
        }
    }

    /// Damages the newest snapshot in `damage` ways; loading must skip it
    /// with a warning that names the frame's check (`storage.md`, "Which
    /// check covers a snapshot") and still produce the right document.
    @Test(arguments: ["flip", "truncate", "empty", "garbage", "text", "size", "checksum", "payload"])
    func aDamagedSnapshotIsSkippedWithAWarning(damage: String) throws {
        try withTemporaryDirectory { directory in
            let (path, id) = try randomDocument(seed: 7, directory: directory)
            let expected = try DocumentStore(path: path).state(id)
            let database = try Database(path: path)
            let newest = try database.query(sql: "SELECT id, frame FROM snapshots ORDER BY id DESC LIMIT 1")[0]
            var frame = try newest.blob(1)
            switch damage {
            case "flip": for offset in stride(from: 0, to: frame.count, by: max(1, frame.count / 5)) { frame[offset] ^= 0x10 }
            case "truncate": frame.removeLast(frame.count / 3)
            case "empty": frame = []
            case "text": frame[frame.count / 2] ^= 0x01  // and stored as TEXT, as `x || y` in `sqlite3` does
            case "size": frame[14] ^= 0x01  // the header's declared size
            case "checksum": frame[22] ^= 0x01  // the header's CRC-32
            case "payload": frame[frame.count - 1] ^= 0x01  // the last byte of the zstd frame
            default: frame = Array(repeating: 0xAB, count: 64)
            }
            let value = damage == "text" ? "CAST(? AS TEXT)" : "?"
            try database.execute(sql: "UPDATE snapshots SET frame = \(value) WHERE id = ?", arguments: [.blob(frame), newest[0]])
            database.close()

            let warnings = WarningLog()
            let store = try DocumentStore(path: path, onWarning: warnings.handler)
            #expect(try store.state(id) == expected)
            #expect(warnings.all.count == 1)
            #expect(warnings.all.first?.contains("is damaged and was skipped: invalid snapshot frame: ") == true)
        }
    }

    /// `storage.md`, "Which check covers a snapshot": a stored frame's
    /// CRC-32 covers the `QDOC` encoding inside, whose own is not compared
    /// again. A frame sealed around an encoding whose own checksum is
    /// wrong (damage no disk can do under a good frame checksum) loads
    /// without a warning; before, it was skipped and the log replayed.
    @Test func aStoredFramesChecksumStandsForTheEncodingsOwn() throws {
        try withTemporaryDirectory { directory in
            let (path, id) = try randomDocument(seed: 7, directory: directory)
            let expected = try DocumentStore(path: path).state(id)
            let database = try Database(path: path)
            let newest = try database.query(sql: "SELECT id, frame FROM snapshots ORDER BY id DESC LIMIT 1")[0]
            let opened = try SnapshotFrame.open(try newest.blob(1))
            var encoding = opened.encoding
            encoding[encoding.count - 1] ^= 0x01
            let resealed = try SnapshotFrame.seal(encoding, changeCount: opened.changeCount)
            try database.execute(sql: "UPDATE snapshots SET frame = ? WHERE id = ?", arguments: [.blob(resealed), newest[0]])
            database.close()

            let warnings = WarningLog()
            let store = try DocumentStore(path: path, onWarning: warnings.handler)
            #expect(try store.state(id) == expected)
            #expect(warnings.all.isEmpty)
        }
    }

    /// A warning handler that calls the store (to show the note it warns
    /// about, say) runs while the store is locked: the call waited for that
    /// lock for ever. It gets `StoreError.nestedCall`, as a call from a
    /// `read` or `edit` closure does, and loading goes on.
    @Test func aWarningHandlerCallingTheStoreGetsANestedCallError() throws {
        final class Handler: @unchecked Sendable {
            weak var store: DocumentStore?
            var errors: [String] = []
        }
        try withTemporaryDirectory { directory in
            let (path, id) = try randomDocument(seed: 7, directory: directory)
            let expected = try DocumentStore(path: path).state(id)
            let database = try Database(path: path)
            try database.execute(sql: "UPDATE snapshots SET frame = zeroblob(64) WHERE id = (SELECT max(id) FROM snapshots)")
            database.close()

            let handler = Handler()
            let store = try DocumentStore(path: path, onWarning: { _ in
                do { _ = try handler.store?.read(id) { $0.versionVector } } catch { handler.errors.append("\(error)") }
            })
            handler.store = store
            #expect(try store.state(id) == expected)
            #expect(handler.errors == [StoreError.nestedCall.description])
        }
    }

    /// A change row damaged, stored as a BLOB or (as `x || y` in `sqlite3`
    /// leaves it) as TEXT; a small change's bundle as it is, a large one's
    /// compressed (`StoredBundle`).
    @Test(arguments: [false, true], [false, true])
    func aCorruptChangeIsAClearErrorAndOtherDocumentsStayUsable(storedAsText: Bool, compressed: Bool) throws {
        let title = compressed ? String(repeating: "a title long enough to be compressed ", count: 20) : "hello"
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            do {
                let store = try DocumentStore(path: path)
                try store.create(id: "damaged")
                try store.create(id: "fine")
                for id: DocumentID in ["damaged", "fine"] {
                    try store.edit(id) { tx in try tx.put(.root, key: "title", .string(title)) }
                }
            }
            let database = try Database(path: path)
            let row = try database.query(sql: "SELECT seq, data FROM changes WHERE document = (SELECT number FROM documents WHERE id = 'damaged')")[0]
            var data = try row.blob(1)
            #expect(Zstd.isFrame(data) == compressed)
            data[data.count / 2] ^= 0x01
            let value = storedAsText ? "CAST(? AS TEXT)" : "?"
            try database.execute(sql: "UPDATE changes SET data = \(value) WHERE seq = ?", arguments: [.blob(data), row[0]])
            database.close()

            let store = try DocumentStore(path: path)
            #expect {
                try store.read("damaged") { _ in }
            } throws: { error in
                guard case StoreError.corruptChange(document: "damaged", _, _)? = error as? StoreError else { return false }
                return true
            }
            #expect(try store.read("fine") { try $0.get(.root, key: "title") } == .scalar(.string(title)))
            try store.edit("fine") { tx in try tx.put(.root, key: "title", .string("still writable")) }
        }
    }
}
