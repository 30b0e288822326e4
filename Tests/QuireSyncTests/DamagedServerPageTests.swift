import Foundation
@testable import QuireSync
import Quire
import QuireTestSupport
import Testing

/// A damaged page of the sync server's own store (`Specs/storage.md`,
/// "Damaged stores"): it costs the documents whose rows SQLite cannot read
/// there, refused with 422 as a row that does not decode is; the server
/// opens, and serves and takes the others.
@Suite struct DamagedServerPageTests {
    static let documentCount = 30

    /// A server store of `documentCount` documents, one replica each, whose
    /// bodies zstd cannot shrink much, so that the log spans several pages:
    /// each document's changes, by id.
    static func storeOfManyDocuments(_ path: String, parkingOnly: Bool = false) throws -> [(id: DocumentID, changes: [Change])] {
        let log = try ServerLog(path: path)
        var random = SeededGenerator(seed: 7)
        return try (0..<documentCount).map { index in
            var writer = Document(replica: ReplicaID(UInt64(index + 1)))
            let body = try writer.transact { tx in try tx.putObject(.root, key: "body", kind: .text) }
            try writer.transact { tx in
                try tx.insertText(body, at: 0, String((0..<1500).map { _ in Character(UnicodeScalar(UInt8(97 + random.next() % 26))) }))
            }
            let id = DocumentID(rawValue: "note-\(index)")!
            let changes = try writer.changes(since: VersionVector())
            // Parked: the second change waits for the first.
            _ = try log.push([(id, parkingOnly ? [changes[1]] : changes)], by: .unrestricted, limits: .init())
            return (id, changes)
        }
    }

    /// A change after `changes` by their replica.
    static func next(after changes: [Change]) throws -> Change {
        var writer = Document(replica: changes[0].replica)
        try writer.apply(changes)
        try writer.transact { tx in try tx.put(.root, key: "k", .int(1)) }
        return writer.lastChange!
    }

    /// The id of the document a refusal names; nil if it is no damage refusal.
    static func refused(_ body: () throws -> Void) -> DocumentID? {
        do { try body() } catch { return (error as? SyncFailure)?.damagedDocument }
        return nil
    }

    /// One zeroed leaf of the `log` table: the server would not open (its
    /// versions read every row), and a running one answered every page
    /// reaching it with 500. Now each document whose rows it held is
    /// refused alone, by a page and a push; every other is served and
    /// takes pushes, and a catch-up of everything names a damaged one.
    @Test func aDamagedPageOfTheLogCostsOnlyTheDocumentsWhoseRowsItHeld() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/server.db"
            let documents = try Self.storeOfManyDocuments(path)
            try zeroLeafPage(of: "log", in: path)
            let log = try reopenServerLog(path)

            var damaged: Set<DocumentID> = []
            for (id, changes) in documents {
                // A client that lacks this document only.
                var known: [DocumentID: VersionVector] = [:]
                for other in documents where other.id != id { known[other.id] = log.version(other.id) }
                if let refused = Self.refused({ _ = try log.page(after: 0, access: .unrestricted, known: known, maxBytes: .max) }) {
                    #expect(refused == id)
                    damaged.insert(id)
                } else {
                    let page = try log.page(after: 0, access: .unrestricted, known: known, maxBytes: .max)
                    #expect(page.documents.map(\.id) == [id] && page.documents[0].bundles.count == 1)
                }
                #expect(log.version(id)[changes[0].replica] == changes.last!.lastID.counter)
            }
            #expect(!damaged.isEmpty && damaged.count < Self.documentCount, "\(damaged)")
            #expect(Self.refused({ _ = try log.page(after: 0, access: .unrestricted, known: [:], maxBytes: .max) }).map(damaged.contains) == true)

            for (id, changes) in documents {
                let pushed = Self.refused({ _ = try log.push([(id, [Self.next(after: changes)])], by: .unrestricted, limits: .init()) })
                #expect(pushed == (damaged.contains(id) ? id : nil))
            }
        }
    }

    /// One zeroed leaf of an index of `log`, or of `parked`: a server would
    /// not open (index) or answered pushes 500 (each a client tried five
    /// times, then ended its whole sync with). Now it opens and serves every
    /// row, and a push that needs the damaged page is refused naming its
    /// document, never a 500.
    @Test(arguments: ["log_replica", "sqlite_autoindex_log_1", "parked"]) func aDamagedPageOfAnIndexOrOfTheParkedChangesRefusesPushesByDocument(_ name: String) throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/server.db"
            let parking = name == "parked"
            let documents = try Self.storeOfManyDocuments(path, parkingOnly: parking)
            try zeroLeafPage(of: name, in: path)
            let log = try reopenServerLog(path)
            let page = try log.page(after: 0, access: .unrestricted, known: [:], maxBytes: .max)
            #expect(page.documents.count == (parking ? 0 : Self.documentCount))

            var refusals = 0
            for (id, changes) in documents {
                let pushed = parking ? changes[0] : try Self.next(after: changes)
                do throws(SyncFailure) {
                    _ = try log.push([(id, [pushed])], by: .unrestricted, limits: .init())
                } catch {
                    #expect(error.status == 422 && error.damagedDocument == id, "\(error)")
                    refusals += 1
                }
            }
            #expect(refusals > 0)
        }
    }
}
