import Foundation
import QuireTestSupport
import Testing
@testable import Quire

/// A store file copied to another place must not write under the
/// original's replica id: both copies edit, merge, and converge.
@Suite struct CopiedStoreTests {
    @Test func editingBothCopiesAndMergingConverges() throws {
        try withTemporaryDirectory { directory in
            let originalPath = directory + "/original.quire", copyPath = directory + "/copy.quire"
            let id: DocumentID = "shared"
            let text: ObjectID
            do {
                let store = try DocumentStore(path: originalPath)
                try store.create(id: id)
                text = try store.edit(id) { tx in
                    let text = try tx.putObject(.root, key: "body", kind: .text)
                    try tx.insertText(text, at: 0, "base")
                    return text
                }
            }
            try FileManager.default.copyItem(atPath: originalPath, toPath: copyPath)

            let original = try DocumentStore(path: originalPath)
            let copy = try DocumentStore(path: copyPath)
            #expect(original.replicaID != copy.replicaID)
            let copyReplicas = try copy.database.query(sql: "SELECT count(*) FROM local_replicas")[0].int64(0)
            #expect(copyReplicas == 2)

            try original.edit(id) { tx in try tx.insertText(text, at: 0, "A") }
            try copy.edit(id) { tx in try tx.insertText(text, at: 4, "B") }
            let originalVersion = try original.read(id) { $0.versionVector }
            let copyVersion = try copy.read(id) { $0.versionVector }
            try original.apply(id, copy.changes(id, since: originalVersion))
            try copy.apply(id, original.changes(id, since: copyVersion))
            #expect(try original.state(id) == copy.state(id))
            #expect(try original.read(id) { try $0.text(text) } == "AbaseB")

            // Reopening keeps each file's own id.
            #expect(try DocumentStore(path: copyPath).replicaID == copy.replicaID)
        }
    }

    /// A symbolic link to a store is no copy: the store keeps its id
    /// whichever path, the link's or the file's, opens it.
    @Test func aStoreReachedThroughASymbolicLinkKeepsItsReplicaID() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/notes.quire", linkPath = directory + "/link.quire"
            try FileManager.default.createSymbolicLink(atPath: linkPath, withDestinationPath: path)
            let replica = try DocumentStore(path: path).replicaID
            #expect(try DocumentStore(path: linkPath).replicaID == replica)
            #expect(try DocumentStore(path: path).replicaID == replica)
            let store = try DocumentStore(path: linkPath)
            #expect(try store.database.query(sql: "SELECT count(*) FROM local_replicas")[0].int64(0) == 1)
        }
    }
}
