import Testing
import QuireTestSupport
@testable import QuireCore

/// A document with a text object at "body", made by `replica` (for the
/// suites of this target).
func documentWithText(_ replica: ReplicaID, _ initial: String = "") throws -> (Document, ObjectID) {
    var doc = Document(replica: replica)
    let body = try doc.transact { tx in
        let body = try tx.putObject(.root, key: "body", kind: .text)
        try tx.insertText(body, at: 0, initial)
        return body
    }
    return (doc, body)
}

/// Rules of Specs/crdt.md, one test each where possible.
@Suite struct DocumentTests {
    let alice = ReplicaID(0xA)
    let bob = ReplicaID(0xB)

    /// A long editing session compacts its text's id index as the history
    /// is bundled (pages its writer has typed past are stored as runs): the
    /// index shrinks to under a byte an id, and the text, its ids
    /// and a merge into another replica come out as without it.
    @Test func aLongSessionCompactsItsIdIndexAndStaysTheSame() throws {
        var rng = SeededGenerator(seed: 12)
        var (doc, body) = try documentWithText(alice)
        var model: [Character] = []
        var indexBytes = 0
        var compactions = 0
        // Bursts of typing, mostly where the last one ended and sometimes
        // elsewhere, with some backspacing: leaves split all over.
        var at = 0
        while doc.changeCount < 3 * ChangeHistory.changesPerBundle {
            if rng.next() % 4 == 0 { at = Int(rng.next() % UInt64(model.count + 1)) }
            let backspaces = rng.next() % 3 == 0 ? Int(rng.next() % 8) : 0
            for typed in 0..<(1 + rng.next() % 60) {
                if at > 0 && typed < backspaces {
                    try doc.transact { tx in try tx.deleteText(body, at: at - 1, count: 1) }
                    model.remove(at: at - 1)
                    at -= 1
                } else {
                    try doc.transact { tx in try tx.insertText(body, at: at, "q") }
                    model.insert("q", at: at)
                    at += 1
                }
                let bytes = doc.objects.texts[0].tree.ids.byteCount
                if bytes < indexBytes / 2 {
                    compactions += 1
                    let ids = Int(doc.versionVector[alice])
                    #expect(bytes < ids, "\(bytes) bytes of index for \(ids) ids")
                }
                indexBytes = bytes
            }
        }
        #expect(compactions >= 1)
        let text = doc.objects.texts[0]
        text.checkInvariants()
        #expect(try doc.text(body) == String(model))
        var other = Document(replica: bob)
        try other.applyEncoded(doc.encodeChanges())
        #expect(try other.text(body) == String(model))
        for index in stride(from: 0, to: model.count, by: 101) {
            let id = text.id(at: index)
            #expect(other.objects.texts[0].position(of: id)?.index == index)
            #expect(text.position(of: id)?.index == index)
        }
    }

    /// The history indexes its records by replica a batch at a time, so a
    /// lookup covers indexed records and the ones after them: with runs of
    /// three replicas' changes over several batches, every version and every
    /// id must find exactly the changes a plain filter finds; also when the
    /// history is bundled every few hundred records, between the batches.
    @Test(arguments: [ChangeHistory.changesPerBundle, ChangeHistory.recordsPerIndexing + 44])
    func changesAreFoundByVersionAndByIdAcrossTheHistoryIndex(bundleSize: Int) throws {
        var rng = SeededGenerator(seed: 11)
        var (mine, body) = try documentWithText(alice)
        mine.history.bundleSize = bundleSize
        let setup = try mine.changes(since: VersionVector())
        var others = [Document(replica: bob), Document(replica: ReplicaID(0xC))]
        for i in others.indices { try others[i].apply(setup) }
        var versions = [VersionVector()]
        let total = 3 * ChangeHistory.recordsPerIndexing + 17
        while mine.changeCount < total {
            let writer = Int(rng.next() % 3)
            for _ in 0..<(1 + rng.next() % 12) {
                if writer == 0 {
                    try mine.transact { tx in try tx.insertText(body, at: 0, "a") }
                } else {
                    let other = writer - 1
                    let start = others[other].versionVector
                    try others[other].transact { tx in try tx.insertText(body, at: 0, "b") }
                    try mine.apply(others[other].changes(since: start))
                }
            }
            versions.append(mine.versionVector)
        }
        let all = try mine.changes(since: VersionVector())
        #expect(all.count == mine.changeCount)
        for (i, from) in versions.enumerated() {
            #expect(try mine.changes(since: from) == all.filter { !from.contains($0.lastID) }, "since version \(i)")
            let to = versions[min(versions.count - 1, i + 1 + Int(rng.next() % 5))]
            #expect(try mine.changes(from: from, to: to) == all.filter { !from.contains($0.lastID) && to.contains($0.lastID) },
                    "from version \(i)")
        }
        for change in all {
            for counter in change.counters {
                #expect(try mine.change(containing: OpID(replica: change.replica, counter: counter)) == change)
            }
        }
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
        // A transaction that makes no operation makes no change.
        try doc.transact { _ in }
        #expect((try doc.allChanges()).count == 2 && doc.versionVector[alice] == 6)
    }

    /// Typing one scalar per transaction (an ASCII keystroke takes a
    /// shortcut past the string's scalar view) builds the text, widths,
    /// changes and snapshot that applying the same changes builds, and each
    /// change records exactly the text typed.
    @Test func keystrokesBuildWhatApplyingTheirChangesBuilds() throws {
        var rng = SeededGenerator(seed: 7)
        let keys = ["a", "Z", " ", "\n", "é", "€", "👋", "e\u{301}"]  // the last is two scalars
        var (typed, body) = try documentWithText(alice)
        var expected: [Unicode.Scalar] = []
        var typedKeys: [String] = []
        for _ in 0..<400 {
            let key = keys[Int(rng.next() % UInt64(keys.count))]
            // Mostly typing on, sometimes elsewhere.
            let index = rng.next() % 4 == 0 ? Int(rng.next() % UInt64(expected.count + 1)) : expected.count
            try typed.transact { tx in try tx.insertText(body, at: index, key) }
            expected.insert(contentsOf: key.unicodeScalars, at: index)
            typedKeys.append(key)
        }
        let text = String(String.UnicodeScalarView(expected))
        #expect(try typed.text(body) == text)
        #expect(try typed.textCount(body) == expected.count)
        #expect(try typed.utf16Offset(body, index: expected.count) == text.utf16.count)
        #expect(try typed.utf8Offset(body, index: expected.count) == text.utf8.count)
        let changes = try typed.allChanges()
        let inserted = changes.dropFirst().map { change -> String? in
            guard case .insert(_, _, .text(let string)) = change.operations.first else { return nil }
            return string
        }
        #expect(inserted == typedKeys)
        var applied = Document(replica: bob)
        for change in changes { _ = try applied.apply(change) }
        #expect(try applied.text(body) == text)
        #expect(applied.encodeSnapshot() == typed.encodeSnapshot())
    }

    /// Objects nest at most `SnapshotEncoding.maxDepth` levels, the most a
    /// snapshot holds: a deeper one is refused, made locally or by a peer,
    /// and a document at the limit snapshots and loads.
    @Test func objectsNestNoDeeperThanASnapshotHolds() throws {
        let limit = SnapshotEncoding.maxDepth
        var doc = Document(replica: alice)
        let deepest = try doc.transact { tx in
            var map = ObjectID.root
            for _ in 0..<(limit - 1) { map = try tx.putObject(map, key: "n", kind: .map) }
            return try tx.putObject(map, key: "list", kind: .list)  // level `limit`
        }
        let before = doc.encodeSnapshot()
        #expect(throws: DocumentError.nestedTooDeep(parent: deepest, limit: limit)) {
            try doc.transact { tx in _ = try tx.insertObject(deepest, at: 0, kind: .text) }
        }
        #expect(throws: DocumentError.nestedTooDeep(parent: deepest, limit: limit)) {
            try doc.transact { tx in try tx.insert(deepest, at: 0, .int(1)); _ = try tx.insertObject(deepest, at: 1, kind: .map) }
        }
        let unchanged = doc.encodeSnapshot() == before  // (compared apart: a failure would print both snapshots)
        #expect(unchanged)
        let loaded = try Document(snapshot: before, replica: bob)
        let sameState = loaded.encodeSnapshot(includeHistory: false) == doc.encodeSnapshot(includeHistory: false)
        #expect(sameState)

        // A peer's change is checked too, objects it makes itself included:
        // a map at level `limit - 1` may hold a map, but not that map another.
        var peer = Document(replica: bob)
        try peer.applyEncoded(doc.encodeChanges())
        let parent = try #require(doc.objects.placement(of: deepest)?.parent)
        let id = OpID(replica: ReplicaID(0xC), counter: 1)
        let tooDeep = Change(id: id, lamport: peer.maxLamport + 1, parents: peer.heads, operations: [
            .put(object: parent, key: "m", value: .object(.map), pred: []),
            .put(object: ObjectID(id), key: "m", value: .object(.map), pred: []),
        ])
        let state = peer.encodeSnapshot()
        #expect(throws: DocumentError.invalidChange(id, reason: "it nests objects deeper than \(limit) levels")) {
            try peer.apply([tooDeep])
        }
        let peerUnchanged = peer.encodeSnapshot() == state
        #expect(peerUnchanged)
        try peer.apply([Change(id: id, lamport: peer.maxLamport + 1, parents: peer.heads, operations: [tooDeep.operations[0]])])
        #expect(try Document(snapshot: peer.encodeSnapshot(), replica: alice).versionVector == peer.versionVector)
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

    /// A keystroke typed on after the last edit skips the index check (the
    /// edit point shows the index is in range): one just past that point,
    /// or past the end, must still be refused, reporting the count it saw,
    /// and change nothing.
    @Test func keystrokesOutOfRangeAreRefusedAfterTyping() throws {
        var (doc, body) = try documentWithText(alice, "ab")
        for (index, key) in ["c", "d", "e"].enumerated() {
            try doc.transact { tx in try tx.insertText(body, at: 2 + index, key) }
        }
        for index in [6, 7, -1] {
            #expect(throws: DocumentError.indexOutOfRange(index: index, count: 5)) {
                try doc.transact { tx in try tx.insertText(body, at: index, "x") }
            }
        }
        #expect(try doc.text(body) == "abcde")
        try doc.transact { tx in try tx.insertText(body, at: 5, "f") }
        #expect(try doc.text(body) == "abcdef")
        #expect((try doc.allChanges()).count == 5)
    }

    /// A deletion out of range is refused naming its start when that is
    /// outside the elements, else its end, and computing the end never
    /// traps: `NSNotFound` (`Int.max`) is a location Apple's text APIs
    /// hand out.
    @Test func deletionsOutOfRangeNameTheirStartOrEndWithoutTrapping() throws {
        var doc = Document(replica: alice)
        let (text, list) = try doc.transact { tx in
            let text = try tx.putObject(.root, key: "text", kind: .text)
            try tx.insertText(text, at: 0, "abc")
            let list = try tx.putObject(.root, key: "list", kind: .list)
            for value in 0..<3 { try tx.insert(list, at: value, .int(Int64(value))) }
            return (text, list)
        }
        for (index, count, named) in [(Int.max, 1, Int.max), (-1, 2, -1), (2, 2, 4), (1, Int.max, Int.max)] {
            #expect(throws: DocumentError.indexOutOfRange(index: named, count: 3)) {
                try doc.transact { tx in try tx.deleteText(text, at: index, count: count) }
            }
            #expect(throws: DocumentError.indexOutOfRange(index: named, count: 3)) {
                try doc.transact { tx in try tx.delete(list, at: index, count: count) }
            }
        }
        #expect(try doc.text(text) == "abc")
        #expect(DocumentError.indexOutOfRange(index: -1, count: 1).description == "index -1 is out of range: the object holds 1 element")
        #expect(DocumentError.indexOutOfRange(index: 4, count: 3).description == "index 4 is out of range: the object holds 3 elements")
        #expect(try doc.list(list).count == 3)
        #expect(doc.changeCount == 1)
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

    /// A transaction takes its replica's next counter from `localCounter`,
    /// not from the version vector: a document that got the replica's
    /// changes from elsewhere (applied, or in a snapshot) must go on after them.
    @Test func aReplicaGoesOnAfterItsOwnChangesWhereverItsDocumentGotThem() throws {
        var (typed, body) = try documentWithText(alice, "ab")
        try typed.transact { tx in try tx.deleteText(body, at: 0, count: 1) }
        let last = typed.versionVector[alice]
        var applied = Document(replica: alice)
        try applied.apply(typed.changes(since: VersionVector()))
        let loaded = try Document(snapshot: typed.encodeSnapshot(), replica: alice)
        for var doc in [typed, applied, loaded] {
            let before = doc.versionVector
            try doc.transact { tx in try tx.insertText(body, at: 1, "c") }
            #expect(try doc.changes(since: before).map(\.id) == [OpID(replica: alice, counter: last + 1)])
            #expect(doc.versionVector[alice] == last + 1)
            #expect(try doc.text(body) == "bc")
        }
    }

    /// Map keys were `String` dictionary keys, so "café" precomposed and
    /// decomposed were one key: two replicas writing one each kept one
    /// register under whichever spelling each met first, and disagreed.
    /// They are two keys, on every replica, in every encoding.
    @Test func canonicallyEquivalentMapKeysAreTwoKeysOnEveryReplica() throws {
        let precomposed = "caf\u{E9}", decomposed = "cafe\u{301}"
        var alice = Document(replica: ReplicaID(1)), bob = Document(replica: ReplicaID(2))
        try alice.transact { tx in try tx.put(.root, key: precomposed, .int(1)) }
        try bob.transact { tx in try tx.put(.root, key: decomposed, .int(2)) }
        let fromAlice = try alice.encodeChanges(), fromBob = try bob.encodeChanges()
        try alice.applyEncoded(fromBob)
        try bob.applyEncoded(fromAlice)
        var fresh = Document(replica: ReplicaID(3))
        try fresh.applyEncoded(alice.encodeChanges())
        let reloaded = try Document(snapshot: bob.encodeSnapshot(), replica: ReplicaID(4))
        for doc in [alice, bob, fresh, reloaded] {
            // By scalars: "e" (0x65) before "é" (0xC3 0xA9 in UTF-8).
            #expect(try doc.keys(.root).map { Array($0.utf8) } == [Array(decomposed.utf8), Array(precomposed.utf8)])
            #expect(try doc.get(.root, key: precomposed) == .scalar(.int(1)))
            #expect(try doc.get(.root, key: decomposed) == .scalar(.int(2)))
            #expect(try doc.conflictedKeys(.root).isEmpty)
            #expect(doc.encodeSnapshot(includeHistory: false) == alice.encodeSnapshot(includeHistory: false))
        }
    }

    /// `ScalarValue` compared strings as Swift's `String` does, taking
    /// canonically equivalent ones for equal: "café" written decomposed
    /// ("e" and U+0301) over it precomposed was no change to what compares
    /// values (the Codable bridge, a note's tags). They differ by scalars.
    /// Doubles compare by bit pattern: `NaN` equals itself (a register
    /// holding it is no change when written again), and 0 and -0 differ.
    @Test func doublesAreEqualByBitPattern() {
        #expect(ScalarValue.double(.nan) == .double(.nan))
        #expect(Set([ScalarValue.double(.nan), .double(.nan)]).count == 1)
        #expect(ScalarValue.double(0) != .double(-0.0))
    }

    @Test func stringValuesAreEqualOnlyWithTheSameScalars() {
        let precomposed = ScalarValue.string("caf\u{E9}"), decomposed = ScalarValue.string("cafe\u{301}")
        #expect(precomposed != decomposed)
        #expect(Value.scalar(precomposed) != .scalar(decomposed))
        #expect(Set([precomposed, decomposed]).count == 2)
        #expect(precomposed == .string("caf\u{E9}"))
    }
}
