import Testing
@testable import QuireCore

/// Causal readiness, duplicates, parking and the checks of Specs/crdt.md, "Causal readiness and delivery".
@Suite struct DeliveryTests {
    let alice = ReplicaID(0xA)
    let bob = ReplicaID(0xB)

    /// Three changes by Alice, each depending on the one before.
    func threeChanges() throws -> (Document, ObjectID) {
        var doc = Document(replica: alice)
        let body = try doc.transact { tx in try tx.putObject(.root, key: "body", kind: .text) }
        try doc.transact { tx in try tx.insertText(body, at: 0, "one ") }
        try doc.transact { tx in try tx.insertText(body, at: 4, "two") }
        return (doc, body)
    }

    @Test func changesArrivingEarlyWaitForTheirParents() throws {
        let (source, body) = try threeChanges()
        var doc = Document(replica: bob)
        let changes = (try source.allChanges())
        #expect(try doc.apply(changes[2]) == 0)
        #expect(try doc.apply(changes[1]) == 0)
        #expect(doc.pendingCount == 2)
        #expect(doc.versionVector.isEmpty)
        #expect(try doc.apply(changes[0]) == 3)
        #expect(doc.pendingCount == 0)
        #expect(try doc.text(body) == "one two")
    }

    @Test func applyingAChangeTwiceChangesNothing() throws {
        let (source, body) = try threeChanges()
        var doc = Document(replica: bob)
        try doc.apply((try source.allChanges()))
        let before = doc.encodeSnapshot()
        #expect(try doc.apply((try source.allChanges()) + (try source.allChanges())) == 0)
        #expect(doc.encodeSnapshot() == before)
        #expect(try doc.text(body) == "one two")
    }

    /// A change under the document's own replica that is not ready is
    /// refused, not parked: the replica's next local edits would take its
    /// counters, and the two would clash once it became ready.
    @Test func anEarlyChangeOfTheDocumentsOwnReplicaIsRefused() throws {
        let (source, body) = try threeChanges()
        let changes = try source.allChanges()
        var doc = Document(replica: alice)
        try doc.apply(changes[0])
        #expect(throws: DocumentError.invalidChange(changes[2].id, reason: "it is under this replica's own id but does not "
            + "follow on from its changes, so its next edits would take the same counters")) { try doc.apply(changes[2]) }
        #expect(doc.pendingCount == 0)
        try doc.transact { tx in try tx.insertText(body, at: 0, "mine") }
        #expect(try doc.text(body) == "mine")
    }

    @Test func theParkingLimitIsAClearError() throws {
        let (source, _) = try threeChanges()
        var doc = Document(replica: bob)
        doc.pendingLimit = 1
        try doc.apply((try source.allChanges())[2])
        #expect(throws: DocumentError.tooManyPendingChanges(limit: 1)) { try doc.apply((try source.allChanges())[1]) }
        #expect(doc.pendingCount == 1)
        // Nothing parked was dropped: the rest arrives and everything applies.
        try doc.apply((try source.allChanges())[0])
        try doc.apply((try source.allChanges())[1])
        #expect(doc.versionVector == source.versionVector)
    }

    /// A change that is parked already takes no new place: sent again
    /// (a peer retrying a page) while the parking area is full, it is the
    /// no-op any repeat is, not `tooManyPendingChanges`.
    @Test func aParkedChangeSentAgainWhenParkingIsFullIsANoOp() throws {
        let (source, _) = try threeChanges()
        var doc = Document(replica: bob)
        doc.pendingLimit = 1
        let early = (try source.allChanges())[2]
        try doc.apply(early)
        #expect(try doc.apply(early) == 0)
        #expect(doc.pendingCount == 1)
    }

    /// A parked change whose id a change from elsewhere has taken since
    /// can never apply: it is dropped, not reported as a
    /// `conflictingChange` of the change that applied.
    @Test func aParkedChangeWhoseIdIsTakenSinceIsDropped() throws {
        let (source, _) = try threeChanges()
        let first = try source.allChanges()[0]
        var doc = Document(replica: ReplicaID(0xC))
        // Same id, other content, waiting for a change of Bob's that never comes.
        let other = Change(id: first.id, lamport: 2, parents: [OpID(replica: bob, counter: 1)],
                           operations: [.put(object: .root, key: "other", value: .scalar(.int(1)), pred: [])])
        #expect(try doc.apply(other) == 0)
        #expect(try doc.apply(first) == 1)
        #expect(doc.pendingCount == 0)
    }

    /// Counters end at `2^64 - 3`: a change reaching past it is invalid,
    /// whether or not it is ready; one ending there waits as any other.
    @Test func countersEndAtTwoToTheSixtyFourMinusThree() throws {
        var doc = Document(replica: bob)
        func change(at counter: UInt64) -> Change {
            Change(id: OpID(replica: alice, counter: counter), lamport: 1, parents: [],
                   operations: [.put(object: .root, key: "k", value: .scalar(.int(1)), pred: [])])
        }
        #expect(throws: DocumentError.invalidChange(change(at: .max - 1).id, reason: "its counters overflow or its Lamport values reach 2^62")) {
            try doc.apply(change(at: .max - 1))
        }
        #expect(try doc.apply(change(at: .max - 2)) == 0)
        #expect(doc.pendingCount == 1)
    }

    @Test func aReusedChangeIDWithOtherContentIsRejected() throws {
        let (source, _) = try threeChanges()
        var doc = Document(replica: bob)
        try doc.apply((try source.allChanges()))
        var forged = (try source.allChanges())[2]
        forged.operations = [.insert(object: forged.operations[0].object, origin: nil, content: .text("evil"))]
        #expect(throws: DocumentError.conflictingChange(forged.id)) { try doc.apply(forged) }
    }

    /// A ready change that breaks a rule is rejected whole, leaving the document unchanged.
    @Test(arguments: [
        "unknown object", "wrong kind", "unknown origin", "unknown delete target",
        "lamport not above parent", "empty", "unsorted parents",
    ])
    func invalidChangesAreRejectedWhole(_ defect: String) throws {
        let (source, body) = try threeChanges()
        var doc = Document(replica: bob)
        try doc.apply((try source.allChanges()))
        let before = doc.encodeSnapshot()
        let next = OpID(replica: alice, counter: source.versionVector[alice] + 1)
        let good: [Operation] = [.put(object: .root, key: "ok", value: .scalar(.int(1)), pred: [])]
        var change = Change(id: next, lamport: source.maxLamport + 1, parents: source.heads, operations: good)
        switch defect {
        case "unknown object":
            change.operations += [.increment(object: ObjectID(OpID(replica: bob, counter: 99)), delta: 1)]
        case "wrong kind":
            change.operations += [.increment(object: body, delta: 1)]
        case "unknown origin":
            change.operations += [.insert(object: body, origin: OpID(replica: bob, counter: 5), content: .text("x"))]
        case "unknown delete target":
            change.operations += [.delete(object: body, target: IDRun(start: OpID(replica: alice, counter: 2), length: 50))]
        case "lamport not above parent":
            change.lamport = source.maxLamport
        case "empty":
            change.operations = []
        default:
            change.parents = [source.heads[0], OpID(replica: alice, counter: 1)]  // 8@alice before 1@alice
        }
        #expect(throws: DocumentError.self) { try doc.apply(change) }
        #expect(doc.encodeSnapshot() == before)
    }

    /// A delete is checked as a whole run: the first element the text lacks
    /// is named; elements the same change inserted before count as held.
    @Test func aDeleteRunIsCheckedWhole() throws {
        let (source, body) = try threeChanges()  // Alice: 1 the text, 2...8 "one two"
        var doc = Document(replica: bob)
        try doc.apply(source.allChanges())
        let before = doc.encodeSnapshot()
        let next = OpID(replica: alice, counter: 9)
        // Two operations, so that the change is validated before any applies.
        let overrun = Change(id: next, lamport: source.maxLamport + 1, parents: source.heads, operations: [
            .put(object: .root, key: "k", value: .scalar(.int(1)), pred: []),
            .delete(object: body, target: IDRun(start: OpID(replica: alice, counter: 2), length: 8)),
        ])
        #expect(throws: DocumentError.invalidChange(next, reason: "it deletes \(OpID(replica: alice, counter: 9)), which \(body) does not hold")) {
            try doc.apply(overrun)
        }
        #expect(doc.encodeSnapshot() == before)

        // Insert "xy" (9, 10), then delete 8...11: 11 is neither in the text nor inserted.
        let pastInserted = Change(id: next, lamport: source.maxLamport + 1, parents: source.heads, operations: [
            .insert(object: body, origin: OpID(replica: alice, counter: 8), content: .text("xy")),
            .delete(object: body, target: IDRun(start: OpID(replica: alice, counter: 8), length: 4)),
        ])
        #expect(throws: DocumentError.invalidChange(next, reason: "it deletes \(OpID(replica: alice, counter: 11)), which \(body) does not hold")) {
            try doc.apply(pastInserted)
        }
        #expect(doc.encodeSnapshot() == before)

        // Insert "xy" (9, 10), then delete 8...10: "o" of "two" and both new ones.
        let insertThenDelete = Change(id: next, lamport: source.maxLamport + 1, parents: source.heads, operations: [
            .insert(object: body, origin: OpID(replica: alice, counter: 8), content: .text("xy")),
            .delete(object: body, target: IDRun(start: OpID(replica: alice, counter: 8), length: 3)),
        ])
        try doc.apply(insertThenDelete)
        #expect(try doc.text(body) == "one tw")
    }
}

extension DeliveryTests {
    /// A change's later operations may name elements its earlier ones
    /// inserted, in the same text; an element inserted into the other text,
    /// or by a later operation, is not held. Checked with hundreds of
    /// operations in one change, through `apply` and through a decoded
    /// bundle (each has its own checks).
    @Test func aLongChangeFindsWhatItInsertedItself() throws {
        var source = Document(replica: alice)
        let (first, second) = try source.transact { tx in
            (try tx.putObject(.root, key: "a", kind: .text), try tx.putObject(.root, key: "b", kind: .text))
        }
        try source.transact { tx in
            for round in 0..<300 {
                try tx.insertText(first, at: 0, "xyz")
                try tx.insertText(second, at: 0, "pq")
                try tx.deleteText(first, at: 1, count: 1)
                if round.isMultiple(of: 10) { try tx.deleteText(second, at: 0, count: 2) }
            }
        }
        let changes = try source.allChanges()
        let long = try #require(changes.last)
        #expect(long.operations.count > 900)

        var applied = Document(replica: bob)
        try applied.apply(changes)
        var decoded = Document(replica: bob)
        try decoded.applyEncoded(ChangeEncoding.encode(changes))
        for doc in [applied, decoded] {
            #expect(try doc.text(first) == source.text(first))
            #expect(try doc.text(second) == source.text(second))
        }

        // The first delete from `first` made to name its element in `second`,
        // then to name an element that a later insert into `first` makes.
        let firstDelete = try #require(long.operations.firstIndex { if case .delete(first, _) = $0 { true } else { false } })
        guard case .delete(_, let target) = long.operations[firstDelete] else { return }
        var id = long.id, insertedLater: OpID?
        for (index, operation) in long.operations.enumerated() {
            if index > firstDelete, case .insert(first, _, _) = operation, insertedLater == nil { insertedLater = id }
            id = id.advanced(by: UInt64(operation.width))
        }
        let later = try #require(insertedLater)
        for (object, run) in [(second, target), (first, IDRun(start: later, length: 1))] {
            var wrong = long
            wrong.operations[firstDelete] = .delete(object: object, target: run)
            var doc = Document(replica: bob)
            try doc.apply(Array(changes.dropLast()))
            let before = doc.encodeSnapshot()
            #expect(throws: DocumentError.invalidChange(long.id, reason: "it deletes \(run.start), which \(object) does not hold")) {
                try doc.apply(wrong)
            }
            // A fresh replica decodes the bundle and applies its edits straight from it.
            var fresh = Document(replica: bob)
            #expect(throws: DocumentError.self) { try fresh.applyEncoded(ChangeEncoding.encode(Array(changes.dropLast()) + [wrong])) }
            #expect(!fresh.versionVector.contains(long.id))
            #expect(doc.encodeSnapshot() == before)
        }
    }
}

extension DeliveryTests {
    /// A write replaces only entries below its own Lamport value, whatever
    /// else the key holds: entries above it that it does not name are
    /// passed over (not a reason to refuse it), one above it that it names
    /// is refused, and many named at once are found too.
    @Test func aWriteMayReplaceOnlyEntriesBelowItsLamportValue() throws {
        var a = Document(replica: alice), b = Document(replica: bob)
        try a.transact { tx in try tx.put(.root, key: "k", .int(1)) }  // lamport 1
        for number in 0..<4 { try b.transact { tx in try tx.put(.root, key: "x", .int(Int64(number))) } }
        try b.transact { tx in try tx.put(.root, key: "k", .int(2)) }  // lamport 5
        var doc = Document(replica: ReplicaID(0xD))
        try doc.apply(a.allChanges() + b.allChanges())
        let (aliceEntry, bobEntry) = (OpID(replica: alice, counter: 1), OpID(replica: bob, counter: 5))
        #expect(try doc.entries(.root, key: "k").map(\.id) == [bobEntry, aliceEntry])

        let carol = ReplicaID(0xC)
        func write(naming pred: [OpID], counter: UInt64 = 1) -> Change {
            Change(id: OpID(replica: carol, counter: counter), lamport: 3, parents: [aliceEntry], operations: [
                .put(object: .root, key: "x", value: .scalar(.int(9)), pred: []),
                .put(object: .root, key: "k", value: .scalar(.int(3)), pred: pred),
            ])
        }
        let before = doc.encodeSnapshot()
        #expect(throws: DocumentError.invalidChange(OpID(replica: carol, counter: 1),
                                                    reason: "it replaces \(bobEntry) at key k without a greater Lamport value")) {
            try doc.apply(write(naming: [aliceEntry, bobEntry]))
        }
        // Named among more than eight ids, which are looked up by hash.
        let many = (2...12).map { OpID(replica: ReplicaID(0xE), counter: UInt64($0)) } + [bobEntry]
        #expect(throws: DocumentError.self) { try doc.apply(write(naming: many)) }
        #expect(doc.encodeSnapshot() == before)

        try doc.apply(write(naming: [aliceEntry]))
        #expect(try doc.entries(.root, key: "k").map(\.id) == [bobEntry, OpID(replica: carol, counter: 2)])
    }
}
