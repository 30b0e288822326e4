import Testing
@testable import QuireCore

/// Rules of Specs/crdt.md, one test each where possible.
@Suite struct DocumentTests {
    let alice = ReplicaID(0xA)
    let bob = ReplicaID(0xB)

    /// A document with a text object at "body", made by `replica`.
    func documentWithText(_ replica: ReplicaID, _ initial: String = "") throws -> (Document, ObjectID) {
        var doc = Document(replica: replica)
        let body = try doc.transact { tx in
            let body = try tx.putObject(.root, key: "body", kind: .text)
            try tx.insertText(body, at: 0, initial)
            return body
        }
        return (doc, body)
    }

    @Test func aTransactionIsOneChangeWithConsecutiveCounters() throws {
        var (doc, body) = try documentWithText(alice, "ab")
        try doc.transact { tx in
            try tx.insertText(body, at: 2, "cd")
            try tx.deleteText(body, at: 0, count: 1)
        }
        #expect(try doc.text(body) == "bcd")
        #expect((try doc.allChanges()).count == 2)
        let second = (try doc.allChanges())[1]
        #expect(second.id == OpID(replica: alice, counter: 4))   // put (1) + "ab" (2) came first
        #expect(second.width == 3)
        #expect(second.lamport == 4)
        #expect(second.parents == [OpID(replica: alice, counter: 3)])
        #expect(doc.versionVector[alice] == 6)
        #expect(doc.heads == [OpID(replica: alice, counter: 6)])
    }

    @Test func aThrowingTransactionLeavesTheDocumentAsItWas() throws {
        var (doc, body) = try documentWithText(alice, "keep")
        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try doc.transact { tx in
                try tx.insertText(body, at: 0, "lost ")
                throw Abort()
            }
        }
        #expect(try doc.text(body) == "keep")
        #expect((try doc.allChanges()).count == 1)
        try doc.transact { tx in try tx.insertText(body, at: 4, "!") }
        #expect(try doc.text(body) == "keep!")
        #expect((try doc.allChanges())[1].id.counter == 6)
    }

    @Test func changesRoundTripThroughTheEncoding() throws {
        var (doc, body) = try documentWithText(alice, "héllo 👋")
        try doc.transact(time: 1_700_000_000_000) { tx in
            try tx.deleteText(body, at: 1, count: 2)
            try tx.put(.root, key: "title", .string("Notes"))
            let tags = try tx.putObject(.root, key: "tags", kind: .list)
            try tx.insert(tags, at: 0, .string("a"))
            let count = try tx.putObject(.root, key: "views", kind: .counter)
            try tx.increment(count, by: -3)
            try tx.remove(.root, key: "title")
        }
        let bytes = try doc.encodeChanges()
        let decoded = try ChangeEncoding.decode(bytes)
        #expect(decoded == (try doc.allChanges()))
        var copy = Document(replica: bob)
        try copy.applyEncoded(bytes)
        #expect(try copy.text(body) == "hlo 👋")
        #expect(try copy.keys(.root) == ["body", "tags", "views"])
    }
}
