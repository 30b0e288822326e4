import Testing
@testable import QuireCore

/// One test per rule of Specs/crdt.md that concerns merging replicas.
@Suite struct MergeRuleTests {
    let alice = ReplicaID(0xA)
    let bob = ReplicaID(0xB)
    let carol = ReplicaID(0xC)

    /// Brings `target` up to date with `source`.
    func sync(_ source: Document, into target: inout Document) throws {
        try target.apply(source.changes(since: target.versionVector))
    }

    /// Alice makes a note with a text body; Bob receives it.
    func sharedNote(_ initial: String = "") throws -> (Document, Document, ObjectID) {
        var a = Document(replica: alice)
        let body = try a.transact { tx in
            let body = try tx.putObject(.root, key: "body", kind: .text)
            try tx.insertText(body, at: 0, initial)
            return body
        }
        var b = Document(replica: bob)
        try sync(a, into: &b)
        return (a, b, body)
    }

    @Test func concurrentWritesKeepBothAndTheGreaterStampWins() throws {
        var (a, b, _) = try sharedNote()
        try a.transact { tx in try tx.put(.root, key: "title", .string("from alice")) }
        try b.transact { tx in try tx.put(.root, key: "title", .string("from bob")) }
        try sync(a, into: &b)
        try sync(b, into: &a)
        // Equal Lamport values: the greater replica id (bob) wins.
        #expect(try a.get(.root, key: "title") == .scalar(.string("from bob")))
        #expect(try b.get(.root, key: "title") == .scalar(.string("from bob")))
        let entries = try a.entries(.root, key: "title")
        #expect(entries.map(\.value) == [.scalar(.string("from bob")), .scalar(.string("from alice"))])
        #expect(try a.conflictedKeys(.root) == ["title"])
        // A write that saw both replaces both.
        try a.transact { tx in try tx.put(.root, key: "title", .string("settled")) }
        try sync(a, into: &b)
        #expect(try b.entries(.root, key: "title").map(\.value) == [.scalar(.string("settled"))])
    }

    /// A register holds its winner apart from the losing entries: whatever
    /// the order writes arrive in, its entries are by descending stamp, and
    /// a write replaces exactly the entries it saw.
    @Test func concurrentWritesAreSortedByStampInAnyOrderAndAWriteReplacesOnlyWhatItSaw() throws {
        let writes = try (1...3).map { number in
            var writer = Document(replica: ReplicaID(UInt64(number)))
            try writer.transact { tx in try tx.put(.root, key: "k", .int(Int64(number))) }
            return try writer.allChanges()[0]
        }
        let expected: [Value?] = [.scalar(.int(3)), .scalar(.int(2)), .scalar(.int(1))]
        for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0], [0, 2, 1]] {
            var merger = Document(replica: ReplicaID(9))
            for index in order { try merger.apply(writes[index]) }
            #expect(try merger.entries(.root, key: "k").map(\.value) == expected)
        }
        // Replica 4 saw the writes of 1 and 3 only: 2's stays, below the new write.
        var partial = Document(replica: ReplicaID(4))
        try partial.apply([writes[0], writes[2]])
        try partial.transact { tx in try tx.put(.root, key: "k", .int(4)) }
        var merger = Document(replica: ReplicaID(9))
        try merger.apply(writes + [try partial.allChanges().last!])
        #expect(try merger.entries(.root, key: "k").map(\.value) == [.scalar(.int(4)), .scalar(.int(2))])
        #expect(try merger.conflictedKeys(.root) == ["k"])
        // A snapshot keeps the entries and their order (it lists them winner
        // first; loading writes them the other way round).
        var three = Document(replica: ReplicaID(9))
        try three.apply(writes)
        let reloaded = try Document(snapshot: three.encodeSnapshot(), replica: ReplicaID(9))
        #expect(try reloaded.entries(.root, key: "k") == three.entries(.root, key: "k"))
        #expect(reloaded.encodeSnapshot() == three.encodeSnapshot())
    }

    @Test func aWriteMadeAfterSeeingAnotherWinsWhateverTheReplicaIDs() throws {
        var (a, b, _) = try sharedNote()
        // Bob (greater id) writes; then Alice, having seen it, writes: Alice's Lamport value is higher.
        try b.transact { tx in try tx.put(.root, key: "title", .string("bob")) }
        try sync(b, into: &a)
        try a.transact { tx in try tx.put(.root, key: "title", .string("alice, later")) }
        #expect((try a.allChanges()).last!.lamport > (try b.allChanges()).last!.lamport)
        try sync(a, into: &b)
        #expect(try b.get(.root, key: "title") == .scalar(.string("alice, later")))
    }

    @Test func aRemovalAndAConcurrentWriteAreDecidedByStamp() throws {
        var (a, b, _) = try sharedNote()
        try a.transact { tx in try tx.put(.root, key: "pinned", .bool(true)) }
        try sync(a, into: &b)
        try a.transact { tx in try tx.remove(.root, key: "pinned") }      // stamp (3, alice)
        try b.transact { tx in try tx.put(.root, key: "pinned", .bool(false)) } // stamp (3, bob): wins
        try sync(a, into: &b)
        try sync(b, into: &a)
        #expect(try a.get(.root, key: "pinned") == .scalar(.bool(false)))
        #expect(try a.entries(.root, key: "pinned").count == 2)
        // The other way round: the removal has the greater stamp and the key is absent.
        try b.transact { tx in try tx.put(.root, key: "x", .int(1)) }
        try sync(b, into: &a)
        try b.transact { tx in try tx.remove(.root, key: "x") }
        try a.transact { tx in try tx.put(.root, key: "x", .int(2)) }
        try sync(a, into: &b)
        try sync(b, into: &a)
        #expect(try a.get(.root, key: "x") == nil)
        #expect(try a.keys(.root).contains("x") == false)
        #expect(try b.get(.root, key: "x") == nil)
    }

    @Test func concurrentInsertsAtTheSameOriginOrderByDescendingStamp() throws {
        var (a, b, body) = try sharedNote("ab")
        var c = Document(replica: carol)
        try sync(a, into: &c)
        try a.transact { tx in try tx.insertText(body, at: 1, "1") }
        try b.transact { tx in try tx.insertText(body, at: 1, "2") }
        try c.transact { tx in try tx.insertText(body, at: 1, "3") }
        // All three have the same Lamport value, so the replica id decides: carol, bob, alice.
        for _ in 0..<2 {
            try sync(a, into: &b); try sync(b, into: &c); try sync(c, into: &a)
        }
        #expect(try a.text(body) == "a321b")
        #expect(try b.text(body) == "a321b")
        #expect(try c.text(body) == "a321b")
    }

    @Test func textTypedAfterAConcurrentInsertStaysWithIt() throws {
        var (a, b, body) = try sharedNote("[]")
        try a.transact { tx in try tx.insertText(body, at: 1, "alice") }
        try b.transact { tx in try tx.insertText(body, at: 1, "bob") }
        try sync(a, into: &b)
        try sync(b, into: &a)
        #expect(try a.text(body) == "[bobalice]")
        #expect(try b.text(body) == "[bobalice]")
    }

    @Test func anInsertIntoAConcurrentlyDeletedRangeStaysVisible() throws {
        var (a, b, body) = try sharedNote("hello world")
        try a.transact { tx in try tx.deleteText(body, at: 0, count: 6) }      // "world"
        try b.transact { tx in try tx.insertText(body, at: 3, "XY") }          // "helXYlo world"
        try sync(a, into: &b)
        try sync(b, into: &a)
        #expect(try a.text(body) == "XYworld")
        #expect(try b.text(body) == "XYworld")
    }

    @Test func concurrentDeletesOfTheSameElementDeleteItOnce() throws {
        var (a, b, body) = try sharedNote("abc")
        try a.transact { tx in try tx.deleteText(body, at: 1, count: 1) }
        try b.transact { tx in try tx.deleteText(body, at: 0, count: 2) }
        try sync(a, into: &b)
        try sync(b, into: &a)
        #expect(try a.text(body) == "c")
        #expect(try b.text(body) == "c")
    }

    @Test func concurrentIncrementsAllCount() throws {
        var a = Document(replica: alice)
        let likes = try a.transact { tx in try tx.putObject(.root, key: "likes", kind: .counter) }
        var b = Document(replica: bob)
        try sync(a, into: &b)
        try a.transact { tx in try tx.increment(likes, by: 2) }
        try b.transact { tx in try tx.increment(likes, by: 5); try tx.increment(likes, by: -1) }
        try sync(a, into: &b)
        try sync(b, into: &a)
        #expect(try a.counter(likes) == 6)
        #expect(try b.counter(likes) == 6)
    }

    /// Increments are summed as signed 64-bit numbers that wrap on overflow,
    /// so that every replica reaches the same sum in any order.
    @Test func aCounterWrapsOnOverflow() throws {
        var a = Document(replica: alice)
        let likes = try a.transact { tx in try tx.putObject(.root, key: "likes", kind: .counter) }
        var b = Document(replica: bob)
        try sync(a, into: &b)
        try a.transact { tx in try tx.increment(likes, by: .max) }
        try b.transact { tx in try tx.increment(likes, by: 2) }
        try sync(a, into: &b)
        try sync(b, into: &a)
        #expect(try a.counter(likes) == .min + 1)
        #expect(try b.counter(likes) == .min + 1)
    }

    @Test func removingANoteWhileItIsEditedKeepsTheEditsInTheObject() throws {
        var (a, b, body) = try sharedNote("draft")
        try a.transact { tx in try tx.remove(.root, key: "body") }
        try b.transact { tx in try tx.insertText(body, at: 5, " two") }
        try sync(a, into: &b)
        try sync(b, into: &a)
        // The removal (alice, Lamport 7) beats nothing at the key: bob did not write the key.
        #expect(try a.get(.root, key: "body") == nil)
        #expect(try b.get(.root, key: "body") == nil)
        // The edit is not lost: the object still holds it on both replicas.
        #expect(try a.text(body) == "draft two")
        #expect(try b.text(body) == "draft two")
        #expect(a.parent(of: body)?.key == "body")
    }

    /// Every nested object knows where it was created, on the replica that
    /// made it, on one that merged it, and after a snapshot: the root has
    /// no parent, a list element has no key.
    @Test func nestedObjectsKeepTheirParentAndKeyThroughMergesAndSnapshots() throws {
        var a = Document(replica: ReplicaID(1))
        let (notes, tags, card) = try a.transact { tx in
            let notes = try tx.putObject(.root, key: "notes", kind: .map)
            let tags = try tx.putObject(notes, key: "tags", kind: .list)
            return (notes, tags, try tx.insertObject(tags, at: 0, kind: .map))
        }
        var b = Document(replica: ReplicaID(2))
        try b.apply(a.allChanges())
        let loaded = try Document(snapshot: b.encodeSnapshot(), replica: ReplicaID(3))
        for doc in [a, b, loaded] {
            #expect(doc.parent(of: .root) == nil)
            #expect(doc.parent(of: notes).map { [$0.object.description, $0.key ?? "-"] } == ["root", "notes"])
            #expect(doc.parent(of: tags).map { [$0.object.description, $0.key ?? "-"] } == [notes.description, "tags"])
            #expect(doc.parent(of: card).map { [$0.object.description, $0.key ?? "-"] } == [tags.description, "-"])
            #expect(doc.parent(of: ObjectID(OpID(replica: ReplicaID(1), counter: 99))) == nil)
        }
    }

    @Test func theClockAdvancesOnReceive() throws {
        var (a, b, _) = try sharedNote()
        for number in 0..<10 { try a.transact { tx in try tx.put(.root, key: "n", .int(Int64(number))) } }
        try sync(a, into: &b)
        try b.transact { tx in try tx.put(.root, key: "n", .int(-1)) }
        #expect((try b.allChanges()).last!.lamport == a.maxLamport + 1)
    }
}
