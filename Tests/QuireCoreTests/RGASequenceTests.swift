import Testing
import QuireTestSupport
@testable import QuireCore


typealias Text = RGASequence<Unicode.Scalar>

private let a = ReplicaID(0xA)
private let b = ReplicaID(0xB)
private let c = ReplicaID(0xC)

private func scalars(_ s: String) -> [Unicode.Scalar] { Array(s.unicodeScalars) }

private extension RGASequence {
    /// Loads `runs` as a snapshot does: their elements in one buffer, and their headers.
    init(runs: [SequenceRun<Element>]) throws(SequenceError) {
        try self.init(content: runs.flatMap(\.elements), runs: runs.map {
            RunHeader(id: $0.id, lamport: $0.lamport, isDeleted: $0.isDeleted, count: $0.elements.count)
        })
    }
}

/// Checks that each leaf of `loaded`, a sequence loaded from runs, has its
/// spans' lowest stamp as its lowest stamp, exactly: the invariants ask only
/// for a bound, which edits keep, but a load sums each leaf from scratch.
private func expectExactLowestStamps(_ loaded: Text, _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation) {
    for (leaf, node) in loaded.tree.leaves.enumerated() {
        let stamps = (0..<Int(node.count)).map { loaded.tree.stamp(of: loaded.tree.span(Int32(leaf), $0)) }
        #expect(node.lowestStamp == stamps.min() ?? .highest, comment, sourceLocation: sourceLocation)
    }
}

/// Checks that `loaded`, built from `built`'s runs in one pass, is the same
/// sequence: structure, elements, ids, positions and offsets, and that both
/// take the same edits afterwards alike.
private func expectSameSequence(_ loaded: Text, _ built: Text, _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation) throws {
    loaded.checkInvariants()
    #expect(loaded.runs == built.runs, comment, sourceLocation: sourceLocation)
    #expect(loaded.tree.summary == built.tree.summary, comment, sourceLocation: sourceLocation)
    #expect(Array(loaded.elements) == Array(built.elements), comment, sourceLocation: sourceLocation)
    var utf16 = 0, utf8 = 0
    for i in 0..<built.count {
        #expect(loaded.id(at: i) == built.id(at: i) && loaded[i] == built[i], comment, sourceLocation: sourceLocation)
        #expect(loaded.utf16Offset(ofIndex: i) == utf16 && loaded.utf8Offset(ofIndex: i) == utf8, comment, sourceLocation: sourceLocation)
        utf16 += built[i].utf16Width
        utf8 += built[i].utf8Width
    }
    for run in built.runs {
        for offset in 0..<run.elements.count {
            let id = run.id.advanced(by: UInt64(offset))
            #expect(loaded.position(of: id)! == built.position(of: id)!, comment, sourceLocation: sourceLocation)
        }
    }
    // Both take further edits alike: local typing inside, a remote insert, a delete across runs.
    var (x, y) = (loaded, built)
    let writer = ReplicaID(0xEE)
    for i in 0..<3 {
        let at = min(x.count, 5 + i)
        let id = OpID(replica: writer, counter: UInt64(i + 1))
        #expect(try x.insertLocal(at: at, id: id, lamport: 1_000_000 + UInt64(i), contentsOf: scalars("é")) ==
                    y.insertLocal(at: at, id: id, lamport: 1_000_000 + UInt64(i), contentsOf: scalars("é")),
                comment, sourceLocation: sourceLocation)
    }
    if x.count > 10 {
        #expect(try x.deleteLocal(2..<x.count - 2) == y.deleteLocal(2..<y.count - 2), comment, sourceLocation: sourceLocation)
    }
    try x.insertRemote(origin: nil, id: OpID(replica: writer, counter: 10), lamport: 2_000_000, contentsOf: scalars("😀x"))
    try y.insertRemote(origin: nil, id: OpID(replica: writer, counter: 10), lamport: 2_000_000, contentsOf: scalars("😀x"))
    x.checkInvariants()
    #expect(x.runs == y.runs && Array(x.elements) == Array(y.elements), comment, sourceLocation: sourceLocation)
}

private extension RGASequence where Element == Unicode.Scalar {
    var string: String { String(String.UnicodeScalarView(elements)) }

    var runs: [SequenceRun<Unicode.Scalar>] {
        var runs: [SequenceRun<Unicode.Scalar>] = []
        forEachRun { runs.append($0) }
        return runs
    }

    /// Checks that the runs' headers and UTF-8, as a snapshot writes them
    /// straight from the storage, are those of `runs`.
    func checkHeadersAndUTF8(sourceLocation: SourceLocation = #_sourceLocation) {
        let found = tree.runs()
        let headers = found.runs.map(\.header)
        #expect(found.runs.map { tree.replicaID($0.replica) } == headers.map(\.id.replica), sourceLocation: sourceLocation)
        #expect(found.contents.reduce(0) { $0 + $1.count } == headers.reduce(0) { $0 + $1.count }, sourceLocation: sourceLocation)
        let utf8 = content.utf8(of: found.contents)
        let runs = self.runs
        #expect(headers == runs.map { RunHeader(id: $0.id, lamport: $0.lamport, isDeleted: $0.isDeleted, count: $0.elements.count) },
                sourceLocation: sourceLocation)
        #expect(utf8 == Array(String(String.UnicodeScalarView(runs.flatMap(\.elements))).utf8), sourceLocation: sourceLocation)
    }
}

/// Random text with some multi-byte and non-BMP scalars.
private func randomScalars(_ count: Int, _ rng: inout SeededGenerator) -> [Unicode.Scalar] {
    let pool = scalars("abcdefgh ijklm\néü€😀𝄞中")
    return (0..<count).map { _ in pool[Int(rng.next() % UInt64(pool.count))] }
}

@Suite struct RGASequenceTests {
    @Test func localInsertAndDelete() throws {
        var text = Text()
        #expect(try text.insertLocal(at: 0, id: OpID(replica: a, counter: 1), lamport: 1, contentsOf: scalars("hello")) == nil)
        let origin = try text.insertLocal(at: 5, id: OpID(replica: a, counter: 6), lamport: 6, contentsOf: scalars(" world"))
        #expect(origin == OpID(replica: a, counter: 5))
        #expect(text.string == "hello world")
        #expect(text.spanCount == 1, "typing on extends one span")
        let deleted = try text.deleteLocal(0..<1)
        #expect(deleted == [IDRun(start: OpID(replica: a, counter: 1), length: 1)])
        #expect(text.string == "ello world")
        #expect(text.count == 10 && text.tombstoneCount == 1)
        #expect(try text.deleteLocal(3..<6) == [IDRun(start: OpID(replica: a, counter: 5), length: 3)])
        #expect(text.string == "ellorld")
        #expect(text.id(at: 3) == OpID(replica: a, counter: 8))
        #expect(text[3] == "o")
        #expect(throws: SequenceError.indexOutOfRange(9)) { try text.deleteLocal(2..<9) }
        #expect(throws: SequenceError.indexOutOfRange(8)) {
            try text.insertLocal(at: 8, id: OpID(replica: a, counter: 20), lamport: 20, contentsOf: scalars("x"))
        }
        text.checkInvariants()
    }

    @Test func tombstonesKeepTheirPlaceAndLocalInsertsGoBeforeThem() throws {
        var text = Text()
        _ = try text.insertLocal(at: 0, id: OpID(replica: a, counter: 1), lamport: 1, contentsOf: scalars("abc"))
        _ = try text.deleteLocal(1..<2)
        #expect(text.position(of: OpID(replica: a, counter: 2))! == (1, true))
        #expect(text.position(of: OpID(replica: a, counter: 3))! == (1, false))
        // Inserting at 1 goes right after "a", before the tombstone "b".
        let origin = try text.insertLocal(at: 1, id: OpID(replica: a, counter: 4), lamport: 4, contentsOf: scalars("X"))
        #expect(origin == OpID(replica: a, counter: 1))
        #expect(text.runs.map { String(String.UnicodeScalarView($0.elements)) } == ["a", "X", "b", "c"])
        #expect(text.runs.map(\.isDeleted) == [false, false, true, false])
        // A late remote insert after the tombstone still finds its origin.
        try text.insertRemote(origin: OpID(replica: a, counter: 2), id: OpID(replica: b, counter: 1), lamport: 3, contentsOf: scalars("Y"))
        #expect(text.string == "aXYc")
        text.checkInvariants()
    }

    /// Hundreds of writers insert after one origin, as a bundle of many
    /// writers can (more than fill a leaf, so that remote inserts skip
    /// whole leaves of winners): every arrival order gives the order of
    /// descending stamps, and some writers' later inserts after their own
    /// element (a winner's descendants) stay right after it.
    @Test func manyConcurrentInsertsAtOneOriginOrderByDescendingStampInEveryArrivalOrder() throws {
        var base = Text()
        _ = try base.insertLocal(at: 0, id: OpID(replica: a, counter: 1), lamport: 1, contentsOf: scalars("<>"))
        let origin = OpID(replica: a, counter: 1)
        var rng = SeededGenerator(seed: 7)
        // Writer w inserts "w" with Lamport 2 or 3 (ties broken by replica);
        // every fifth then types "+" after its own element.
        var writers: [(replica: ReplicaID, lamport: UInt64)] = []
        for w in 0..<300 {
            let replica = ReplicaID(UInt64(1000 + (w * 7919) % 300))
            writers.append((replica, 2 + rng.next() % 2))
        }
        func stamp(_ w: Int) -> Stamp { Stamp(lamport: writers[w].lamport, replica: writers[w].replica) }
        let ascending: [Int] = writers.indices.sorted { stamp($0) < stamp($1) }
        let expected: [String] = ascending.reversed().flatMap { w -> [String] in
            writers[w].replica.rawValue % 5 == 0 ? ["w", "+"] : ["w"]
        }
        var shuffled = Array(writers.indices)
        shuffled.shuffle(using: &rng)
        for order in [ascending, Array(ascending.reversed()), shuffled] {
            var text = base
            for w in order {
                let (replica, lamport) = writers[w]
                try text.insertRemote(origin: origin, id: OpID(replica: replica, counter: 1), lamport: lamport, contentsOf: scalars("w"))
                if replica.rawValue % 5 == 0 {
                    try text.insertRemote(origin: OpID(replica: replica, counter: 1), id: OpID(replica: replica, counter: 2),
                                          lamport: 10, contentsOf: scalars("+"))
                }
            }
            text.checkInvariants()
            #expect(text.string == "<" + expected.joined() + ">")
        }
    }

    /// Worked example: after "ab" (a1, a2 with lamports 1, 2), b and c both
    /// insert after "a" with lamport 3. Stamps (3, c) > (3, b), so c's text
    /// comes first, and an insert with a smaller stamp after the same origin
    /// goes after both: "a" "y" "x" "b" on every delivery order.
    @Test func concurrentInsertsAtOneOriginOrderByDescendingStamp() throws {
        var base = Text()
        _ = try base.insertLocal(at: 0, id: OpID(replica: a, counter: 1), lamport: 1, contentsOf: scalars("ab"))
        let origin = OpID(replica: a, counter: 1)
        let ops: [(OpID, UInt64, String)] = [
            (OpID(replica: b, counter: 1), 3, "x"),
            (OpID(replica: c, counter: 1), 3, "y"),
        ]
        for order in [[0, 1], [1, 0]] {
            var text = base
            for i in order {
                try text.insertRemote(origin: origin, id: ops[i].0, lamport: ops[i].1, contentsOf: scalars(ops[i].2))
            }
            #expect(text.string == "ayxb")
            text.checkInvariants()
        }
        // b's run "xz" typed into the middle of a's span: splits it.
        var text = base
        try text.insertRemote(origin: origin, id: OpID(replica: b, counter: 1), lamport: 3, contentsOf: scalars("xz"))
        #expect(text.string == "axzb")
        // A concurrent insert with a greater stamp than "xz" after "a" goes first; one with a smaller one
        // skips the whole run (and what was typed after it).
        try text.insertRemote(origin: OpID(replica: b, counter: 2), id: OpID(replica: b, counter: 3), lamport: 5, contentsOf: scalars("!"))
        try text.insertRemote(origin: origin, id: OpID(replica: c, counter: 1), lamport: 2, contentsOf: scalars("s"))
        try text.insertRemote(origin: origin, id: OpID(replica: c, counter: 2), lamport: 9, contentsOf: scalars("g"))
        #expect(text.string == "agxz!sb")
        text.checkInvariants()
    }

    @Test func remoteDeleteIsIdempotent() throws {
        var text = Text()
        try text.insertRemote(origin: nil, id: OpID(replica: b, counter: 10), lamport: 4, contentsOf: scalars("hello"))
        #expect(try text.deleteRemote(IDRun(start: OpID(replica: b, counter: 11), length: 2)) == 2)
        #expect(try text.deleteRemote(IDRun(start: OpID(replica: b, counter: 11), length: 2)) == 0)
        #expect(try text.deleteRemote(IDRun(start: OpID(replica: b, counter: 10), length: 5)) == 3)
        #expect(text.count == 0 && text.tombstoneCount == 5)
        #expect(text.spanCount == 1, "adjacent tombstones merge back into one span")
        text.checkInvariants()
    }

    @Test func errorsLeaveTheSequenceUnchanged() throws {
        var text = Text()
        _ = try text.insertLocal(at: 0, id: OpID(replica: a, counter: 1), lamport: 1, contentsOf: scalars("abc"))
        let before = text.runs
        #expect(throws: SequenceError.unknownElement(OpID(replica: b, counter: 7))) {
            try text.insertRemote(origin: OpID(replica: b, counter: 7), id: OpID(replica: b, counter: 8), lamport: 9, contentsOf: scalars("x"))
        }
        #expect(throws: SequenceError.duplicateElement(OpID(replica: a, counter: 3))) {
            try text.insertRemote(origin: nil, id: OpID(replica: a, counter: 3), lamport: 9, contentsOf: scalars("xy"))
        }
        #expect(throws: SequenceError.unknownElement(OpID(replica: a, counter: 4))) {
            try text.deleteRemote(IDRun(start: OpID(replica: a, counter: 2), length: 3))
        }
        #expect(throws: SequenceError.unknownElement(OpID(replica: c, counter: 1))) {
            try text.deleteRemote(IDRun(start: OpID(replica: c, counter: 1), length: 1))
        }
        #expect(text.runs == before)
        #expect(text.string == "abc" && !text.contains(OpID(replica: b, counter: 8)))
        text.checkInvariants()
    }

    @Test func idChecksOfRunsFindTheExactElementAcrossIndexPages() throws {
        // 600 elements over three pages of the id index, which checks a page's entries at once.
        var text = Text()
        try text.insertRemote(origin: nil, id: OpID(replica: b, counter: 1), lamport: 1,
                              contentsOf: scalars(String(repeating: "abcdefghij", count: 60)))
        #expect(text.firstMissing(of: IDRun(start: OpID(replica: b, counter: 1), length: 600)) == nil)
        #expect(text.firstMissing(of: IDRun(start: OpID(replica: b, counter: 250), length: 400)) == OpID(replica: b, counter: 601))
        #expect(throws: SequenceError.unknownElement(OpID(replica: b, counter: 601))) {
            try text.deleteRemote(IDRun(start: OpID(replica: b, counter: 500), length: 200))
        }
        try text.insertRemote(origin: nil, id: OpID(replica: b, counter: 700), lamport: 700, contentsOf: scalars("0123456789"))
        #expect(throws: SequenceError.duplicateElement(OpID(replica: b, counter: 700))) {
            try text.insertRemote(origin: nil, id: OpID(replica: b, counter: 650), lamport: 800,
                                  contentsOf: scalars(String(repeating: "x", count: 60)))
        }
        // One id, which the index looks up without its page loop: held, in a gap, past the last page.
        for counter: UInt64 in [1, 255, 256, 257, 600, 601, 699, 700, 709, 710, 5000] {
            let held = counter <= 600 || (700..<710).contains(counter)
            #expect(text.firstMissing(of: IDRun(start: OpID(replica: b, counter: counter), length: 1))
                    == (held ? nil : OpID(replica: b, counter: counter)), "\(counter)")
        }
        #expect(try text.deleteRemote(IDRun(start: OpID(replica: b, counter: 250), length: 300)) == 300)
        #expect(text.count == 310 && text.tombstoneCount == 300)
        text.checkInvariants()
    }

    @Test func manyWritersOfAFewElementsEachTakeAFewIndexEntries() throws {
        // B3.4's shape: 1,540 writers, one element each. A whole page each
        // (256 entries of 4 bytes) would hold 1.5 MB.
        var list = Text()
        for writer in 1...1540 as ClosedRange<UInt64> {
            try list.insertRemote(origin: nil, id: OpID(replica: ReplicaID(writer), counter: 1), lamport: writer,
                                  contentsOf: scalars("x"))
        }
        #expect(list.tree.ids.byteCount < 400_000, "\(list.tree.ids.byteCount) bytes")
        list.checkInvariants()
    }

    /// A page of the id index whose entries all name one leaf is stored as
    /// that leaf: a note typed top to bottom takes a few bytes of index, not
    /// 4 an element. Edits that move its elements to other leaves give the
    /// page its entries back; every id is found throughout.
    @Test func pagesOfOneLeafTakeNoEntriesAndComeBackWhenElementsMove() throws {
        var rng = SeededGenerator(seed: 31)
        var text = Text()
        // 3,000 keystrokes at the end: one span, one leaf, pages 1 to 10 whole.
        for counter in 1...3_000 as ClosedRange<UInt64> {
            _ = try text.insertLocal(at: text.count, id: OpID(replica: a, counter: counter), lamport: counter, contentsOf: scalars("k"))
        }
        text.checkInvariants()
        #expect(text.tree.ids.byteCount < 3_000, "\(text.tree.ids.byteCount) bytes")
        // A paste of 1,000 after it, then edits by another writer all over,
        // which split leaves and move the typed elements.
        _ = try text.insertLocal(at: text.count, id: OpID(replica: a, counter: 3_001), lamport: 3_001,
                                 contentsOf: scalars(String(repeating: "p", count: 1_000)))
        text.checkInvariants()
        for step in 0..<400 as Range<UInt64> {
            let at = Int(rng.next() % UInt64(text.count + 1))
            _ = try text.insertLocal(at: at, id: OpID(replica: b, counter: step + 1), lamport: 5_000 + step, contentsOf: scalars("x"))
            if step % 50 == 0 { text.checkInvariants() }
        }
        _ = try text.deleteLocal(100..<900)
        text.checkInvariants()
        #expect(text.firstMissing(of: IDRun(start: OpID(replica: a, counter: 1), length: 4_000)) == nil)
        #expect(text.firstMissing(of: IDRun(start: OpID(replica: a, counter: 3_990), length: 20)) == OpID(replica: a, counter: 4_001))
        for index in stride(from: 0, to: text.count, by: 37) {
            #expect(text.position(of: text.id(at: index))?.index == index)
        }
        // Loaded from its runs, the index stores whole pages again, and takes the same edits.
        let loaded = try Text(runs: text.runs)
        #expect(loaded.tree.ids.byteCount <= text.tree.ids.byteCount)
        try expectSameSequence(loaded, text, "typed, pasted and edited")
    }

    /// `ElementIndex.compact` stores full pages as their runs of one leaf;
    /// leaf splits then edit those runs in place (or move them, or store the
    /// page whole again past `maxRuns`). A sequence compacted every few
    /// edits and one never compacted take the same edits and answer every
    /// id lookup alike, and the compacted index is far smaller.
    @Test(arguments: [41, 42, 43] as [UInt64])
    func pagesStoredAsRunsAnswerLikeWholePagesThroughLeafSplits(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        var (compacted, whole) = (Text(), Text())
        var counters: [ReplicaID: UInt64] = [a: 0, b: 0]
        for step in 1...6_000 as ClosedRange<UInt64> {
            // Two writers: a types in bursts, b inserts and deletes all over.
            let writer = step % 7 == 0 ? b : a
            let at = writer == a && step % 40 != 0 ? min(Int(step % 97), compacted.count) : Int(rng.next() % UInt64(compacted.count + 1))
            let length = writer == b && step % 5 == 0 ? 300 : 1
            let id = OpID(replica: writer, counter: counters[writer]! + 1)
            counters[writer]! += UInt64(length)
            let text = scalars(String(repeating: "x", count: length))
            #expect(try compacted.insertLocal(at: at, id: id, lamport: step * 400, contentsOf: text)
                    == whole.insertLocal(at: at, id: id, lamport: step * 400, contentsOf: text))
            if step % 11 == 0, compacted.count > 20 {
                let start = Int(rng.next() % UInt64(compacted.count - 10))
                #expect(try compacted.deleteLocal(start..<start + 3) == whole.deleteLocal(start..<start + 3))
            }
            if step % 500 == 0 {
                compacted.tree.ids.compact()
                compacted.checkInvariants()
            }
        }
        compacted.checkInvariants()
        whole.checkInvariants()
        #expect(compacted.tree.ids.byteCount * 3 < whole.tree.ids.byteCount,
                "\(compacted.tree.ids.byteCount) bytes against \(whole.tree.ids.byteCount)")
        for (writer, last) in counters {
            for counter in stride(from: UInt64(1), through: last + 300, by: 13) {
                let run = IDRun(start: OpID(replica: writer, counter: counter), length: Int(rng.next() % 600) + 1)
                #expect(compacted.firstMissing(of: run) == whole.firstMissing(of: run))
                #expect(compacted.position(of: run.start).map { "\($0)" } == whole.position(of: run.start).map { "\($0)" })
            }
        }
        #expect(compacted.runs == whole.runs)
        // Remote edits by id on the compacted pages: deletes, and inserts after old elements.
        for step in 0..<200 as Range<UInt64> {
            let target = OpID(replica: a, counter: rng.next() % counters[a]! + 1)
            let id = OpID(replica: b, counter: counters[b]! + 1 + step)
            try compacted.insertRemote(origin: target, id: id, lamport: 10_000_000 + step, contentsOf: scalars("r"))
            try whole.insertRemote(origin: target, id: id, lamport: 10_000_000 + step, contentsOf: scalars("r"))
            let deleted = IDRun(start: OpID(replica: a, counter: rng.next() % (counters[a]! - 5) + 1), length: 4)
            #expect(try compacted.deleteRemote(deleted) == whole.deleteRemote(deleted))
        }
        compacted.checkInvariants()
        #expect(compacted.runs == whole.runs)
    }

    /// A leaf split records its moved spans in the id index in one call
    /// (`ElementIndex.setLeaf(_:ofMoved:)`), which writes a span inside one
    /// page itself: the index must end as `setLeaf` per span leaves it, for
    /// spans of every shape (one element at a page's last entry, ending at
    /// a page's end, across pages, whole pages), pages that are short,
    /// whole, one leaf or runs, and writers' pages in any order.
    @Test(arguments: [51, 52, 53] as [UInt64])
    func spansMovedByALeafSplitAreIndexedAsOneByOne(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let writers = [a, b, c]
        var spans: [Span] = []
        for replica in 0..<UInt32(writers.count) {
            var counter: UInt64 = 1 + rng.next() % 300
            while counter < 3_000 {
                let shape = rng.next() % 8
                let length: UInt64 = switch shape {
                case 0: 1
                case 1: 256 - counter % 256 // up to a page's end
                case 2: 300 + rng.next() % 300 // across pages, or whole ones
                default: 1 + rng.next() % 20
                }
                spans.append(Span(counter: counter, lamport: counter, contentStart: 0, length: Int32(length),
                                  utf16: Int32(length), utf8: Int32(length), replica: replica, isDeleted: false))
                counter += length + (shape == 0 ? 0 : rng.next() % 3)
            }
        }
        var (batched, oneByOne) = (ElementIndex(), ElementIndex())
        for writer in writers { _ = (batched.intern(writer), oneByOne.intern(writer)) }
        spans.shuffle(using: &rng)
        for (i, span) in spans.enumerated() {
            let leaf = Int32(i % 4)
            batched.setLeaf(leaf, replica: span.replica, counters: span.counter..<span.counterEnd)
            oneByOne.setLeaf(leaf, replica: span.replica, counters: span.counter..<span.counterEnd)
        }
        for round in 0..<40 {
            if round == 20 { (batched, oneByOne) = (compacted(batched), compacted(oneByOne)) }
            // A leaf's spans: mostly near each other in the counters, some anywhere.
            let first = Int(rng.next() % UInt64(spans.count))
            let moved = (0..<24).map { k in spans[k % 3 == 0 ? Int(rng.next() % UInt64(spans.count)) : (first + k) % spans.count] }
            let leaf = Int32(4 + round)
            moved.withUnsafeBufferPointer { batched.setLeaf(leaf, ofMoved: $0) }
            for span in moved { oneByOne.setLeaf(leaf, replica: span.replica, counters: span.counter..<span.counterEnd) }
            #expect(batched.entryCount == oneByOne.entryCount, "seed \(seed), round \(round)")
            for span in spans {
                for counter in span.counter..<span.counterEnd where batched.leaf(replica: span.replica, counter: counter)
                    != oneByOne.leaf(replica: span.replica, counter: counter) {
                    Issue.record("seed \(seed), round \(round): replica \(span.replica), counter \(counter)")
                    return
                }
            }
        }

        func compacted(_ index: ElementIndex) -> ElementIndex {
            var index = index
            index.compact()
            return index
        }
    }

    @Test func aShortPageThatGrowsAfterAnotherWritersPageMovesWithItsEntries() throws {
        var text = Text()
        try text.insertRemote(origin: nil, id: OpID(replica: a, counter: 1), lamport: 1, contentsOf: scalars("abc"))
        // b's first page comes after a's in the index's pool; a's, still short, must move to grow.
        try text.insertRemote(origin: nil, id: OpID(replica: b, counter: 1), lamport: 2, contentsOf: scalars("B"))
        try text.insertRemote(origin: OpID(replica: a, counter: 3), id: OpID(replica: a, counter: 4), lamport: 3,
                              contentsOf: scalars(String(repeating: "d", count: 40)))
        // A run from the short page of b into its second page, and one typed past a's first page.
        try text.insertRemote(origin: OpID(replica: b, counter: 1), id: OpID(replica: b, counter: 2), lamport: 4,
                              contentsOf: scalars(String(repeating: "e", count: 300)))
        try text.insertRemote(origin: OpID(replica: a, counter: 43), id: OpID(replica: a, counter: 300), lamport: 5,
                              contentsOf: scalars("z"))
        text.checkInvariants()
        #expect(text.firstMissing(of: IDRun(start: OpID(replica: a, counter: 1), length: 43)) == nil)
        #expect(text.firstMissing(of: IDRun(start: OpID(replica: a, counter: 40), length: 10)) == OpID(replica: a, counter: 44))
        #expect(text.firstMissing(of: IDRun(start: OpID(replica: b, counter: 1), length: 302)) == OpID(replica: b, counter: 302))
        #expect(throws: SequenceError.duplicateElement(OpID(replica: a, counter: 2))) {
            try text.insertRemote(origin: nil, id: OpID(replica: a, counter: 2), lamport: 9, contentsOf: scalars("q"))
        }
        #expect(try text.deleteRemote(IDRun(start: OpID(replica: a, counter: 2), length: 40)) == 40)
        #expect(try text.deleteRemote(IDRun(start: OpID(replica: b, counter: 250), length: 52)) == 52)
        #expect(text.count == 3 + 1 + 40 + 300 + 1 - 92)
        text.checkInvariants()
    }

    /// Writers whose counters in a text are far apart (they wrote elsewhere
    /// in between) get their index pages one by one when a snapshot loads,
    /// the first writer's first page appended while the second has none:
    /// every element is still found by its id afterwards.
    @Test func writersWithSpreadCountersLoadFromASnapshotWithEveryElementFound() throws {
        var hub = Document(replica: ReplicaID(1))
        let text = try hub.transact { tx in try tx.putObject(.root, key: "t", kind: .text) }
        for replica: UInt64 in [2, 3] {
            var writer = Document(replica: ReplicaID(replica))
            try writer.apply(hub.allChanges())
            try writer.transact { tx in try tx.insertText(text, at: 0, "x") }
            for value in 0..<600 { try writer.transact { tx in try tx.put(.root, key: "k", .int(Int64(value))) } }
            try writer.transact { tx in try tx.insertText(text, at: 0, "y") }
            try hub.apply(writer.changes(since: hub.versionVector))
        }
        var loaded = try Document(snapshot: hub.encodeSnapshot(), replica: ReplicaID(9))
        #expect(try loaded.text(text) == hub.text(text))
        // Typing after each writer's elements and deleting them finds each by id.
        var edited = hub
        for replica: UInt64 in [2, 3] {
            var writer = Document(replica: ReplicaID(replica))
            try writer.apply(hub.allChanges())
            try writer.transact { tx in
                // After elements of both writers (the origins are looked up), and one deleted.
                try tx.insertText(text, at: 1, "\(replica)")
                try tx.insertText(text, at: 5, "!")
                try tx.deleteText(text, at: 3, count: 1)
            }
            let changes = try writer.changes(since: hub.versionVector)
            try loaded.apply(changes)
            try edited.apply(changes)
        }
        #expect(try loaded.text(text) == edited.text(text))
        for (replica, counter): (UInt64, UInt64) in [(2, 1), (2, 602), (3, 1), (3, 602)] {
            let element = OpID(replica: ReplicaID(replica), counter: counter)
            #expect(try loaded.change(containing: element)?.id == edited.change(containing: element)?.id)
        }
        loaded.objects.texts.forEach { $0.checkInvariants() }
    }

    @Test func nonBMPScalarsConvertUTF16AndUTF8Offsets() throws {
        var text = Text()
        let string = "a😀b€𝄞"
        _ = try text.insertLocal(at: 0, id: OpID(replica: a, counter: 1), lamport: 1, contentsOf: scalars(string))
        #expect(text.count == 5)
        #expect(text.utf16Count == string.utf16.count && text.utf8Count == string.utf8.count)
        #expect((0...5).map(text.utf16Offset(ofIndex:)) == [0, 1, 3, 4, 5, 7])
        #expect((0...7).map(text.index(ofUTF16Offset:)) == [0, 1, 1, 2, 3, 4, 4, 5])
        #expect((0...5).map(text.utf8Offset(ofIndex:)) == [0, 1, 5, 6, 9, 13])
        #expect(text.index(ofUTF8Offset: 3) == 1 && text.index(ofUTF8Offset: 5) == 2 && text.index(ofUTF8Offset: 8) == 3)
        // Every offset, those in the span's second half counted back from its end.
        #expect((0...13).map(text.index(ofUTF8Offset:)) == [0, 1, 1, 1, 1, 2, 3, 3, 3, 4, 4, 4, 4, 5])
        // Deleting the emoji splits a span that is not one unit per element.
        _ = try text.deleteLocal(1..<2)
        #expect(text.utf16Count == 5 && text.utf8Count == 9)
        #expect(text.utf16Offset(ofIndex: 3) == 3 && text.index(ofUTF16Offset: 4) == 3)
        text.checkInvariants()
    }

    /// Widths are sums of comparisons (so that measuring wide storage
    /// vectorises): they must still match the encodings at every boundary.
    @Test func scalarWidthsMatchTheirEncodingsAtEveryBoundary() throws {
        let values: [UInt32] = [0, 0x7F, 0x80, 0xFF, 0x100, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x1_0000, 0x10_FFFF]
        let boundaries = values.compactMap(Unicode.Scalar.init)
        for scalar in boundaries {
            #expect(scalar.utf8Width == String(scalar).utf8.count && scalar.utf16Width == String(scalar).utf16.count, "\(scalar.value)")
        }
        // Measured in wide storage, whole and in part.
        let storage = ScalarStorage(compacting: boundaries)
        #expect(storage.form == .fourBytes)
        let string = String(String.UnicodeScalarView(boundaries))
        let widths = storage.withUnsafeView { ScalarStorage.widths($0, 0, storage.count) }
        #expect(widths.utf8 == string.utf8.count && widths.utf16 == string.utf16.count)
        let tail = String(String.UnicodeScalarView(boundaries[5...]))
        let tailWidths = storage.withUnsafeView { ScalarStorage.widths($0, 5, storage.count - 5) }
        #expect(tailWidths.utf8 == tail.utf8.count && tailWidths.utf16 == tail.utf16.count)
    }

    /// Narrow storage is measured by a vectorised test for ASCII first: a
    /// byte above it anywhere in a range, at either end or past the first
    /// vector's worth of bytes, still counts two UTF-8 bytes.
    @Test func narrowWidthsCountEveryByteAboveASCII() {
        let ascii = Array(repeating: Unicode.Scalar(UInt8(ascii: "a")), count: 80)
        for position in [0, 1, 15, 16, 17, 31, 32, 63, 79] {
            var scalars = ascii
            scalars[position] = "é"
            let storage = ScalarStorage(compacting: scalars)
            #expect(storage.form == .oneByte)
            for (start, count) in [(0, 80), (position, 1), (position, 80 - position), (0, position + 1), (0, position)] {
                let expected = String(String.UnicodeScalarView(scalars[start..<start + count]))
                let widths = storage.withUnsafeView { ScalarStorage.widths($0, start, count) }
                #expect(widths.utf8 == expected.utf8.count && widths.utf16 == expected.utf16.count, "é at \(position), \(start)..<\(start + count)")
            }
        }
    }

    /// Storage of two or four bytes a scalar is measured by counting, in
    /// 32 bits, the scalars above each width's limit: a scalar above ASCII
    /// of any width, anywhere in a range of ASCII (the rest of the loop's
    /// vectors), counts its own widths.
    @Test(arguments: ["\u{FFFF}", "😀"] as [Unicode.Scalar])
    func wideWidthsCountEveryScalarAboveASCII(last: Unicode.Scalar) {
        var ascii = Array(repeating: Unicode.Scalar(UInt8(ascii: "a")), count: 80)
        ascii[79] = last
        for scalar: Unicode.Scalar in ["é", "ā", "€", "\u{FFFF}", "😀"] {
            for position in [0, 1, 3, 4, 8, 9, 31, 32, 63, 78] {
                var scalars = ascii
                scalars[position] = scalar
                let storage = ScalarStorage(compacting: scalars)
                #expect(storage.form == .needed(for: max(last.value, scalar.value)))
                for (start, count) in [(0, 80), (0, 79), (position, 1), (position, 79 - position), (0, position + 1), (0, position),
                                       (position + 1, 78 - position)] {
                    let expected = String(String.UnicodeScalarView(scalars[start..<start + count]))
                    let widths = storage.withUnsafeView { ScalarStorage.widths($0, start, count) }
                    #expect(widths.utf8 == expected.utf8.count && widths.utf16 == expected.utf16.count,
                            "\(scalar) at \(position), \(start)..<\(start + count)")
                }
            }
        }
    }

    /// Narrow storage widened by its first scalar from U+0100 on keeps every
    /// scalar it held (written straight into the wide buffer), with or
    /// without spare room.
    @Test func widenedStorageKeepsItsScalars() {
        let latin1 = (0..<300).map { Unicode.Scalar(UInt8(truncatingIfNeeded: $0 * 7)) }
        for reserved in [0, 300, 1_000] {
            var storage = ScalarStorage()
            storage.reserveCapacity(reserved)
            storage.append(contentsOf: latin1)
            #expect(storage.form == .oneByte)
            storage.append("ā")
            storage.append(contentsOf: latin1[..<5])
            #expect(storage.form == .twoBytes)
            #expect(Array(storage) == latin1 + ["ā"] + latin1[..<5], "room for \(reserved)")
            storage.append("😀")
            storage.append(contentsOf: latin1[..<5])
            #expect(storage.form == .fourBytes)
            #expect(Array(storage) == latin1 + ["ā"] + latin1[..<5] + ["😀"] + latin1[..<5], "room for \(reserved)")
        }
    }

    /// The UTF-8 of stored scalars, in ASCII, narrow and wide storage, of
    /// ranges in any order, whole and in parts longer than the chunk it is
    /// encoded through.
    @Test func utf8OfStoredScalarsIsTheStringsUTF8() {
        var rng = SeededGenerator(seed: 8)
        let lengths: [ClosedRange<UInt32>] = [0...0x7F, 0x80...0xFF, 0x100...0x7FF, 0x800...0xD7FF, 0xE000...0xFFFF, 0x1_0000...0x10_FFFF]
        for kinds in [1, 2, 5, lengths.count] {
            let scalars = (0..<3_000).map { index -> Unicode.Scalar in
                Unicode.Scalar(UInt32.random(in: lengths[index % kinds], using: &rng))!
            }
            let storage = ScalarStorage(compacting: scalars)
            #expect(storage.form == (kinds <= 2 ? .oneByte : kinds < lengths.count ? .twoBytes : .fourBytes))
            for ranges in [[0..<3_000], [1..<2_999], [7..<8, 0..<0, 2..<3], [130..<1_900, 5..<100, 2_000..<2_001], []] {
                let expected = ranges.flatMap { Array(String(String.UnicodeScalarView(scalars[$0])).utf8) }
                #expect(storage.utf8(of: ranges) == expected, "\(kinds) kinds, \(ranges)")
            }
        }
    }

    /// Mostly ASCII beside a few wider scalars, the text the encoder takes
    /// eight scalars at a time: each wider scalar at every place in such a
    /// step and in the range's last few, in narrow and wide storage.
    @Test func utf8OfMostlyASCIIScalarsIsTheStringsUTF8() {
        for wider: Unicode.Scalar in ["é", "ā", "€", "😀"] {
            for place in 0..<20 {
                var scalars = (0..<20).map { Unicode.Scalar(UInt8(0x61 + $0)) }
                scalars[place] = wider
                let storage = ScalarStorage(compacting: scalars)
                #expect(storage.form == .needed(for: wider.value))
                for ranges in [[0..<20], [place..<20], [0..<place + 1], [3..<12, 0..<3, 12..<20]] {
                    let expected = ranges.flatMap { Array(String(String.UnicodeScalarView(scalars[$0])).utf8) }
                    #expect(storage.utf8(of: ranges) == expected, "\(wider) at \(place), \(ranges)")
                }
            }
        }
    }

    /// Cutting a span whose scalars are not all one unit wide measures the
    /// shorter side of the cut and takes the other from the span's widths:
    /// a diff applied back to front cuts one long pasted span near its end
    /// again and again, and measuring the part before the cut walked the
    /// span each time (quadratic: an 86 KB note's 2,807 replacements took
    /// seconds). Counted here as the scalars the tree asks to be measured,
    /// for the edits made locally and for the same edits merged remotely.
    @Test func editsNearTheEndOfALongWideSpanMeasureOnlyTheShortSide() throws {
        let pasted = scalars(String(repeating: "alpha γάμμα ", count: 400))
        var local = Text()
        var remote = Text()
        let paste = OpID(replica: a, counter: 1)
        _ = try local.insertLocal(at: 0, id: paste, lamport: 1, contentsOf: pasted)
        try remote.insertRemote(origin: nil, id: paste, lamport: 1, contentsOf: pasted)
        var expected = pasted
        var measuredLocally = 0, measuredRemotely = 0
        var next = UInt64(pasted.count + 1)
        // Every "alpha" becomes "ALPHA", the last first, as a text diff applies its edits.
        let edits = Array(stride(from: pasted.count - 12, through: 0, by: -12))
        for start in edits {
            let deleted = try local.withTree { tree, measure throws(SequenceError) in
                try tree.deleteLocal(start..<start + 5) { measuredLocally += $1; return measure($0, $1) }
            }
            let id = OpID(replica: a, counter: next)
            let origin = try local.withAppended(scalars("ALPHA"), id: id, lamport: next) { tree, run, measure throws(SequenceError) in
                try tree.insertLocal(at: start, run) { measuredLocally += $1; return measure($0, $1) }
            }
            for run in deleted {
                _ = try remote.withTree { tree, measure throws(SequenceError) in
                    try tree.deleteRemote(run, isNextEdit: false) { measuredRemotely += $1; return measure($0, $1) }
                }
            }
            try remote.withAppended(scalars("ALPHA"), id: id, lamport: next) { tree, run, measure throws(SequenceError) in
                try tree.insertRemote(origin: origin ?? nil, run, checkingOriginStamp: true) { measuredRemotely += $1; return measure($0, $1) }
            }
            next += 5
            expected.replaceSubrange(start..<start + 5, with: scalars("ALPHA"))
        }
        // Each edit cuts next to the previous one, a dozen scalars away: a
        // few dozen scalars measured an edit, not the 2,400 before it.
        let bound = 40 * edits.count
        #expect(measuredLocally < bound, "\(measuredLocally) scalars measured")
        #expect(measuredRemotely < bound, "\(measuredRemotely) scalars measured")
        let text = String(String.UnicodeScalarView(expected))
        for sequence in [local, remote] {
            sequence.checkInvariants()
            #expect(String(String.UnicodeScalarView(Array(sequence.elements))) == text)
            #expect(sequence.utf16Count == text.utf16.count && sequence.utf8Count == text.utf8.count)
        }
        try expectSameSequence(remote, local, "merged like typed")
    }

    /// Text below U+0100 is kept a byte a scalar until a wider scalar
    /// arrives; it reads, measures and loads the same either way.
    @Test func latin1TextTakesAByteAScalarUntilAWiderOneArrives() throws {
        var text = Text()
        let latin1 = "héllo wörld ÿ"
        _ = try text.insertLocal(at: 0, id: OpID(replica: a, counter: 1), lamport: 1, contentsOf: scalars(latin1))
        #expect(text.content.form == .oneByte && text.content.bytes.count == latin1.unicodeScalars.count)
        #expect(text.utf8Count == latin1.utf8.count && text.utf16Count == latin1.utf16.count)
        // Deleting splits spans that are not one UTF-8 byte a scalar: measured on the bytes.
        _ = try text.deleteLocal(1..<3)
        #expect(text.utf8Count == "hlo wörld ÿ".utf8.count && text.utf8Offset(ofIndex: 6) == "hlo wö".utf8.count)
        // A run of scalars arriving as an array is taken in one go.
        try text.insertRemote(origin: nil, id: OpID(replica: b, counter: 1), lamport: 15, contentsOf: scalars("ü!"))
        #expect(text.content.form == .oneByte && text.string == "ü!hlo wörld ÿ")
        let narrow = text
        // One that does not fit in a byte widens the storage, wherever it comes in the run.
        try text.insertRemote(origin: nil, id: OpID(replica: b, counter: 3), lamport: 20, contentsOf: scalars("a€b"))
        #expect(text.content.form == .twoBytes && text.content.bytes.count == 2 * text.content.count)
        #expect(text.string == "a€bü!hlo wörld ÿ")
        #expect(Array(text.runs.dropFirst()) == narrow.runs)
        text.checkInvariants()
        narrow.checkHeadersAndUTF8()
        text.checkHeadersAndUTF8()
        for sample in [narrow, text] {
            let loaded = try Text(runs: sample.runs)
            try expectSameSequence(loaded, sample, "loaded \(sample.string)")
            expectExactLowestStamps(loaded, "loaded \(sample.string)")
        }
    }

    /// Storage takes the fewest bytes a scalar that hold every scalar it
    /// has held: one below U+0100, two below U+10000, four from it on. It
    /// widens one step or two at once, by whichever way the wider scalars
    /// come (one by one, an array, another storage's, UTF-8), keeps every
    /// scalar it held, and reads and measures the same in each form.
    @Test func storageWidensFromOneToTwoToFourBytesAScalarAsItsScalarsNeed() {
        // The last scalar of each form and the first of the next, and
        // U+D7FF and U+E000 side by side: the surrogates between them are
        // not scalars, so a two-byte value is always one UTF-16 unit.
        #expect(Unicode.Scalar(UInt32(0xD800)) == nil && Unicode.Scalar(UInt32(0xDFFF)) == nil)
        let oneByte: [Unicode.Scalar] = ["a", "\u{80}", "\u{FF}"]
        let twoBytes: [Unicode.Scalar] = ["\u{100}", "\u{D7FF}", "\u{E000}", "\u{FFFF}"]
        let fourBytes: [Unicode.Scalar] = ["\u{10000}", "b", "\u{10FFFF}"]
        func append(_ scalars: [Unicode.Scalar], to storage: inout ScalarStorage, by way: Int) {
            switch way {
            case 0: for scalar in scalars { storage.append(scalar) }
            case 1: storage.append(contentsOf: scalars)
            case 2: storage.append(contentsOf: ScalarStorage(compacting: ["!"] + scalars).dropFirst())
            default:
                let utf8 = Array(String(String.UnicodeScalarView(scalars)).utf8)
                _ = storage.append(decodingUTF8: utf8[...], textLength: utf8.count)
            }
        }
        for way in 0..<4 {
            for steps in [[oneByte, twoBytes, fourBytes], [oneByte, fourBytes], [twoBytes, fourBytes], [twoBytes, oneByte],
                          [fourBytes, oneByte, twoBytes], [twoBytes], [fourBytes]] {
                var storage = ScalarStorage()
                var expected: [Unicode.Scalar] = []
                for step in steps {
                    append(step, to: &storage, by: way)
                    expected += step
                    let comment: Comment = "way \(way), \(expected.map(\.value))"
                    #expect(storage.form == .needed(for: expected.map(\.value).max()!), comment)
                    #expect(storage.bytes.count == expected.count << storage.form.shift, comment)
                    #expect(Array(storage) == expected, comment)
                    #expect(storage.slice(1..<expected.count) == expected[1...], comment)
                    let string = String(String.UnicodeScalarView(expected))
                    #expect(storage.utf8(of: [1..<expected.count, 0..<1]) == Array(String(String.UnicodeScalarView(expected[1...] + expected[..<1])).utf8), comment)
                    for start in 0..<expected.count {
                        let measured = storage.withUnsafeView { ScalarStorage.widths($0, start, expected.count - start) }
                        let tail = String(String.UnicodeScalarView(expected[start...]))
                        #expect(measured.utf16 == tail.utf16.count && measured.utf8 == tail.utf8.count, comment)
                    }
                    // Loaded from its UTF-8 or from an array, it takes the same form.
                    #expect(ScalarStorage(utf8: Array(string.utf8)[...])?.form == storage.form, comment)
                    #expect(ScalarStorage(compacting: expected).form == storage.form, comment)
                }
                // Cut back, it keeps its form (tombstones keep their scalars);
                // emptied for reuse, it takes a byte a scalar again.
                storage.removeSubrange(1...)
                #expect(Array(storage) == [expected[0]] && storage.bytes.count == 1 << storage.form.shift)
                storage.removeAllKeepingCapacity()
                storage.append("x")
                #expect(storage.form == .oneByte && Array(storage) == ["x"])
            }
        }
        // Part of a wider storage copied in widens only as far as its own scalars need.
        let source = ScalarStorage(compacting: oneByte + twoBytes + fourBytes)
        for (range, form) in [(0..<3, ScalarStorage.Form.oneByte), (2..<7, .twoBytes), (6..<8, .fourBytes), (8..<9, .oneByte)] {
            var copy = ScalarStorage()
            copy.append("x")
            copy.append(contentsOf: source[range])
            #expect(copy.form == form && Array(copy) == ["x"] + (oneByte + twoBytes + fourBytes)[range], "\(range)")
        }
    }

    /// Text edited across the forms' boundaries: inserts and deletes before,
    /// at and after a two- or four-byte scalar keep the text, its UTF-16 and
    /// UTF-8 offsets and its runs right, and it loads the same.
    @Test func textEditedAcrossTheFormsBoundariesKeepsItsOffsets() throws {
        var text = Text()
        var counter: UInt64 = 1
        func insert(_ string: String, at index: Int) throws {
            _ = try text.insertLocal(at: index, id: OpID(replica: a, counter: counter), lamport: counter, contentsOf: scalars(string))
            counter += UInt64(string.unicodeScalars.count)
        }
        try insert("hello world", at: 0)
        try insert("\u{FF}", at: 5)
        #expect(text.content.form == .oneByte)
        try insert("\u{FFFF}\u{100}", at: 6)
        #expect(text.content.form == .twoBytes)
        try insert("x", at: 7)
        _ = try text.deleteLocal(5..<7)
        #expect(text.string == "hellox\u{100} world")
        try insert("\u{10000}", at: 6)
        #expect(text.content.form == .fourBytes)
        _ = try text.deleteLocal(7..<8)
        try insert("\u{E000}\u{D7FF}", at: 0)
        let expected = "\u{E000}\u{D7FF}hellox\u{10000} world"
        #expect(text.string == expected)
        #expect(text.utf16Count == expected.utf16.count && text.utf8Count == expected.utf8.count)
        for index in 0...expected.unicodeScalars.count {
            let prefix = String(String.UnicodeScalarView(expected.unicodeScalars.prefix(index)))
            #expect(text.utf16Offset(ofIndex: index) == prefix.utf16.count && text.utf8Offset(ofIndex: index) == prefix.utf8.count, "\(index)")
            #expect(text.index(ofUTF16Offset: prefix.utf16.count) == index, "\(index)")
        }
        text.checkInvariants()
        text.checkHeadersAndUTF8()
        try expectSameSequence(try Text(runs: text.runs), text, "loaded")
    }

    @Test func forEachRunCoalescesAndRoundTrips() throws {
        // Typed one scalar at a time, locally.
        var typed = Text()
        for (i, s) in scalars("hello world").enumerated() {
            _ = try typed.insertLocal(at: i, id: OpID(replica: a, counter: UInt64(i + 1)), lamport: UInt64(i + 1), contentsOf: [s])
        }
        // The same content arriving as two remote runs, the second first
        // inserted at the head and then deleted and re-added elsewhere.
        var received = Text()
        try received.insertRemote(origin: nil, id: OpID(replica: a, counter: 1), lamport: 1, contentsOf: scalars("hello"))
        try received.insertRemote(origin: OpID(replica: a, counter: 5), id: OpID(replica: a, counter: 6), lamport: 6, contentsOf: scalars(" world"))
        for text in [typed, received] {
            var copy = text
            try copy.deleteRemote(IDRun(start: OpID(replica: a, counter: 3), length: 4))
            try copy.insertRemote(origin: OpID(replica: a, counter: 2), id: OpID(replica: b, counter: 1), lamport: 20, contentsOf: scalars("Y"))
            #expect(copy.runs.count == 4)
            #expect(copy.runs[2].isDeleted && copy.runs[2].elements.elementsEqual(scalars("llo ")))
            let loaded = try Text(runs: copy.runs)
            #expect(loaded.runs == copy.runs)
            #expect(loaded.string == "heYworld" && loaded.tombstoneCount == 4)
            loaded.checkInvariants()
        }
        #expect(typed.runs == received.runs)
        // Parts of one run whose content arrived apart (b's insert came in
        // between) are still reported as one run.
        var interleaved = Text()
        try interleaved.insertRemote(origin: nil, id: OpID(replica: a, counter: 1), lamport: 1, contentsOf: scalars("hel"))
        try interleaved.insertRemote(origin: nil, id: OpID(replica: b, counter: 1), lamport: 9, contentsOf: scalars(">"))
        try interleaved.insertRemote(origin: OpID(replica: a, counter: 3), id: OpID(replica: a, counter: 4), lamport: 4, contentsOf: scalars("lo"))
        try interleaved.insertRemote(origin: OpID(replica: a, counter: 5), id: OpID(replica: a, counter: 6), lamport: 6, contentsOf: scalars(" world"))
        var direct = Text()
        try direct.insertRemote(origin: nil, id: OpID(replica: a, counter: 1), lamport: 1, contentsOf: scalars("hello world"))
        try direct.insertRemote(origin: nil, id: OpID(replica: b, counter: 1), lamport: 9, contentsOf: scalars(">"))
        #expect(interleaved.runs == direct.runs && interleaved.runs.count == 2)
        for text in [typed, received, interleaved] { text.checkHeadersAndUTF8() }
        #expect(interleaved.string == ">hello world")
        #expect(typed.runs == [SequenceRun(id: OpID(replica: a, counter: 1), lamport: 1, isDeleted: false, elements: ArraySlice(scalars("hello world")))])
    }

    /// A tree built bottom-up from runs is the tree the same runs make
    /// inserted one at a time: here deep enough for three levels of inner
    /// nodes, with tombstones, several writers and multi-byte scalars.
    @Test func aTreeBuiltInOnePassMatchesOneBuiltRunByRun() throws {
        var rng = SeededGenerator(seed: 21)
        var text = Text()
        var last: OpID?
        var counters = [a: UInt64(1), b: UInt64(1), c: UInt64(1)]
        for step in 0..<26_000 {
            // Alternating writers, so that no run continues the one before.
            let writer = [a, b, c][step % 3]
            let id = OpID(replica: writer, counter: counters[writer]!)
            let elements = randomScalars(Int(rng.next() % 3) + 1, &rng)
            try text.insertRemote(origin: last, id: id, lamport: UInt64(step + 1), contentsOf: elements)
            counters[writer]! += UInt64(elements.count)
            last = id.advanced(by: UInt64(elements.count - 1))
            if step % 7 == 0 { try text.deleteRemote(IDRun(start: id, length: 1)) }
        }
        #expect(text.tree.height == 3)
        try expectSameSequence(try Text(runs: text.runs), text, "deep tree")
        try expectSameSequence(try Text(runs: []), Text(), "empty")
        let one = [SequenceRun(id: OpID(replica: a, counter: 1), lamport: 1, isDeleted: false, elements: ArraySlice(scalars("a😀b")))]
        try expectSameSequence(try Text(runs: one), try Text(runs: one), "one run")
    }

    @Test func invalidRunsAreRejected() throws {
        let empty = SequenceRun<Unicode.Scalar>(id: OpID(replica: a, counter: 1), lamport: 1, isDeleted: false, elements: [])
        #expect(throws: SequenceError.invalidRun(OpID(replica: a, counter: 1))) { try Text(runs: [empty]) }
        let first = SequenceRun(id: OpID(replica: a, counter: 1), lamport: 1, isDeleted: false, elements: ArraySlice(scalars("abc")))
        let overlapping = SequenceRun(id: OpID(replica: a, counter: 3), lamport: 7, isDeleted: true, elements: ArraySlice(scalars("xy")))
        #expect(throws: SequenceError.duplicateElement(OpID(replica: a, counter: 3))) { try Text(runs: [first, overlapping]) }
        // A run over ids that two earlier runs hold: the first of them is named.
        let later = SequenceRun(id: OpID(replica: a, counter: 10), lamport: 2, isDeleted: false, elements: ArraySlice(scalars("klm")))
        let wide = SequenceRun(id: OpID(replica: a, counter: 2), lamport: 9, isDeleted: false, elements: ArraySlice(scalars("0123456789")))
        #expect(throws: SequenceError.duplicateElement(OpID(replica: a, counter: 2))) { try Text(runs: [later, first, wide]) }
        // Counters far apart (more index pages in range than elements) take the index's general path.
        let low = SequenceRun(id: OpID(replica: b, counter: 1), lamport: 1, isDeleted: false, elements: ArraySlice(scalars("ab")))
        let high = SequenceRun(id: OpID(replica: b, counter: 5000), lamport: 2, isDeleted: false, elements: ArraySlice(scalars("cd")))
        let sparse = try Text(runs: [high, low])
        sparse.checkInvariants()
        #expect(sparse.runs == [high, low] && sparse.contains(OpID(replica: b, counter: 5001)))
        let repeated = SequenceRun(id: OpID(replica: b, counter: 5001), lamport: 7, isDeleted: true, elements: ArraySlice(scalars("x")))
        #expect(throws: SequenceError.duplicateElement(OpID(replica: b, counter: 5001))) { try Text(runs: [high, low, repeated]) }
        let overflowing = SequenceRun(id: OpID(replica: a, counter: .max), lamport: 1, isDeleted: false, elements: ArraySlice(scalars("xy")))
        #expect(throws: SequenceError.invalidRun(OpID(replica: a, counter: .max))) { try Text(runs: [overflowing]) }
        // Ids in the id index's last page, whose end is 2^64, are refused (the
        // load's page loops, unchecked, took it as page 0 and wrote outside the
        // pool); those up to the page before load.
        let topPage = SequenceRun(id: OpID(replica: a, counter: .max - 3), lamport: 1, isDeleted: false, elements: ArraySlice(scalars("xyz")))
        #expect(throws: SequenceError.invalidRun(OpID(replica: a, counter: .max - 3))) { try Text(runs: [topPage]) }
        let belowTopPage = SequenceRun(id: OpID(replica: a, counter: .max - 258), lamport: 1, isDeleted: false,
                                       elements: ArraySlice(scalars("xyz")))
        let loaded = try Text(runs: [belowTopPage])
        loaded.checkInvariants()
        #expect(loaded.runs == [belowTopPage] && loaded.contains(OpID(replica: a, counter: .max - 256)))
    }

    /// The id index loads a run across one of its pages' bounds (256 ids a
    /// page) page by page: each of its ids is found, and one that a run
    /// before or after it also holds is named, on either page.
    @Test func runsAcrossAnIndexPageBoundLoadAndTheirRepeatsAreRejected() throws {
        let across = SequenceRun(id: OpID(replica: a, counter: 250), lamport: 1, isDeleted: false, elements: ArraySlice(scalars("0123456789")))
        let other = SequenceRun(id: OpID(replica: b, counter: 1), lamport: 2, isDeleted: false, elements: ArraySlice(scalars("xy")))
        let text = try Text(runs: [other, across])
        text.checkInvariants()
        #expect((250..<260).allSatisfy { text.contains(OpID(replica: a, counter: $0)) })
        #expect(!text.contains(OpID(replica: a, counter: 260)) && !text.contains(OpID(replica: a, counter: 249)))
        let onFarPage = SequenceRun(id: OpID(replica: a, counter: 257), lamport: 3, isDeleted: false, elements: ArraySlice(scalars("z")))
        let onNearPage = SequenceRun(id: OpID(replica: a, counter: 255), lamport: 3, isDeleted: false, elements: ArraySlice(scalars("z")))
        #expect(throws: SequenceError.duplicateElement(OpID(replica: a, counter: 257))) { try Text(runs: [across, other, onFarPage]) }
        #expect(throws: SequenceError.duplicateElement(OpID(replica: a, counter: 257))) { try Text(runs: [onFarPage, other, across]) }
        #expect(throws: SequenceError.duplicateElement(OpID(replica: a, counter: 255))) { try Text(runs: [onNearPage, onFarPage, across]) }
    }

    /// A replica whose counters in the text leave more than `maxFilledGap`
    /// index pages unused (they went to other objects), with more elements
    /// than pages in its range, loads with a page for every counter of the
    /// range: each id is found where it is, none in the gap, and a repeat
    /// of an id on a page past the gap is named.
    @Test func aReplicasCountersWithAGapOfManyPagesLoadWithEveryIdFound() throws {
        let low = SequenceRun(id: OpID(replica: a, counter: 1), lamport: 1, isDeleted: false, elements: ArraySlice(scalars("0123456789abcdef")))
        let high = SequenceRun(id: OpID(replica: a, counter: 3000), lamport: 3000, isDeleted: false, elements: ArraySlice(scalars("xyz")))
        let other = SequenceRun(id: OpID(replica: b, counter: 1), lamport: 2, isDeleted: false, elements: ArraySlice(scalars("q")))
        let text = try Text(runs: [high, other, low])
        text.checkInvariants()
        #expect((1...16).allSatisfy { text.contains(OpID(replica: a, counter: $0)) })
        #expect((3000...3002).allSatisfy { text.contains(OpID(replica: a, counter: $0)) })
        #expect(![0, 17, 1500, 2999, 3003].contains { text.contains(OpID(replica: a, counter: $0)) })
        #expect(text.position(of: OpID(replica: a, counter: 3001))! == (1, false))
        #expect(text.position(of: OpID(replica: a, counter: 5))! == (8, false))
        let repeated = SequenceRun(id: OpID(replica: a, counter: 3002), lamport: 4000, isDeleted: true, elements: ArraySlice(scalars("!")))
        #expect(throws: SequenceError.duplicateElement(OpID(replica: a, counter: 3002))) { try Text(runs: [high, other, low, repeated]) }
    }

    /// Random local edits against a plain array of scalars, checking contents,
    /// offsets, ids and the invariants after every step.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func matchesAReferenceModel(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        var text = Text()
        var model: [Unicode.Scalar] = []
        var ids: [OpID] = []
        var counter: UInt64 = 1
        for step in 0..<1200 {
            if model.isEmpty || rng.next() % 100 < 60 {
                let index = Int(rng.next() % UInt64(model.count + 1))
                let new = randomScalars(rng.next() % 4 == 0 ? Int(rng.next() % 20) + 1 : 1, &rng)
                let id = OpID(replica: a, counter: counter)
                let origin = try text.insertLocal(at: index, id: id, lamport: counter, contentsOf: new)
                #expect(origin == (index == 0 ? nil : ids[index - 1]), "seed \(seed) step \(step)")
                model.insert(contentsOf: new, at: index)
                ids.insert(contentsOf: (0..<new.count).map { id.advanced(by: UInt64($0)) }, at: index)
                counter += UInt64(new.count)
            } else if rng.next() % 4 == 0 {
                // A streak of backspaces or forward deletes, one scalar at a time.
                let backwards = rng.next() % 2 == 0
                var index = Int(rng.next() % UInt64(model.count))
                for _ in 0..<Int(rng.next() % 8) + 1 where index >= 0 && index < model.count {
                    #expect(try text.deleteLocal(index..<index + 1) == [IDRun(start: ids[index], length: 1)], "seed \(seed) step \(step)")
                    model.remove(at: index)
                    ids.remove(at: index)
                    counter += 1
                    if backwards { index -= 1 }
                }
            } else {
                let start = Int(rng.next() % UInt64(model.count))
                let end = min(model.count, start + 1 + Int(rng.next() % (rng.next() % 3 == 0 ? 30 : 3)))
                let runs = try text.deleteLocal(start..<end)
                #expect(runs.flatMap { run in (0..<run.length).map { run.start.advanced(by: UInt64($0)) } } == Array(ids[start..<end]),
                        "seed \(seed) step \(step)")
                model.removeSubrange(start..<end)
                ids.removeSubrange(start..<end)
                counter += UInt64(end - start)
            }
            text.checkInvariants()
            #expect(Array(text.elements) == model, "seed \(seed) step \(step)")
            if step % 10 == 0 {
                let string = String(String.UnicodeScalarView(model))
                #expect(text.utf16Count == string.utf16.count && text.utf8Count == string.utf8.count, "seed \(seed) step \(step)")
                if !model.isEmpty {
                    let i = Int(rng.next() % UInt64(model.count))
                    let prefix = String(String.UnicodeScalarView(model[..<i]))
                    #expect(text[i] == model[i] && text.id(at: i) == ids[i], "seed \(seed) step \(step)")
                    #expect(text.position(of: ids[i])! == (i, false), "seed \(seed) step \(step)")
                    #expect(text.utf16Offset(ofIndex: i) == prefix.utf16.count, "seed \(seed) step \(step)")
                    #expect(text.utf8Offset(ofIndex: i) == prefix.utf8.count, "seed \(seed) step \(step)")
                    #expect(text.index(ofUTF16Offset: prefix.utf16.count) == i, "seed \(seed) step \(step)")
                    #expect(text.index(ofUTF8Offset: prefix.utf8.count + (model[i].utf8Width > 1 ? 1 : 0)) == i,
                            "seed \(seed) step \(step)")
                }
            }
        }
        #expect(text.spanCount > 1000, "the tree grew past one level of inner nodes")
    }

    /// Text written back to front, a character at a time at the head,
    /// packs leaves full as text written front to back does: a full leaf
    /// stays whole and a new one starts before it, moving no spans.
    @Test func prependingPacksLeavesFull() throws {
        var local = Text(), remote = Text()
        for i in 1...300 as ClosedRange<UInt64> {
            _ = try local.insertLocal(at: 0, id: OpID(replica: a, counter: i), lamport: i, contentsOf: scalars("x"))
            try remote.insertRemote(origin: nil, id: OpID(replica: b, counter: i), lamport: i, contentsOf: scalars("y"))
        }
        for text in [local, remote] {
            text.checkInvariants()
            #expect(text.spanCount == 300)
            #expect(text.tree.leaves.count == (300 + SpanTree.leafCapacity - 1) / SpanTree.leafCapacity)
            #expect(text.id(at: 0).counter == 300 && text.id(at: 299).counter == 1)
        }
    }

    /// Remote inserts and deletes found by id, against a plain array of ids:
    /// mostly next to the previous remote target (where the found-span hint
    /// applies, often in a span the previous operation just split), else
    /// anywhere, with local edits in between that move spans under the hint,
    /// until leaves have split many times.
    @Test(arguments: [21, 22] as [UInt64])
    func remoteEditsFindTheirTargets(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        var text = Text()
        var model: [Unicode.Scalar] = []
        var ids: [OpID] = []
        var clock: UInt64 = 0
        var counters = [a: UInt64(1), b: UInt64(1)]
        var last = 0
        for step in 0..<1500 {
            let nearLast = rng.next() % 3 != 0 && !ids.isEmpty
            let at = nearLast ? min(ids.count - 1, max(0, last + Int(rng.next() % 5) - 2)) : Int(rng.next() % UInt64(ids.count + 1))
            let choice = rng.next() % 100
            if ids.isEmpty || choice < 45 {
                // A lamport above every other puts the run right after its origin.
                let new = randomScalars(rng.next() % 4 == 0 ? Int(rng.next() % 6) + 2 : 1, &rng)
                let id = OpID(replica: b, counter: counters[b]!)
                let position = min(at, ids.count)
                let origin = position == 0 ? nil : ids[position - 1]
                try text.insertRemote(origin: origin, id: id, lamport: clock + 1, contentsOf: new)
                model.insert(contentsOf: new, at: position)
                ids.insert(contentsOf: (0..<new.count).map { id.advanced(by: UInt64($0)) }, at: position)
                counters[b]! += UInt64(new.count)
                clock += UInt64(new.count)
                last = position + Int(rng.next() % UInt64(new.count))
            } else if choice < 75 {
                // Deletes a run of counters from a visible element on: later
                // ones may be gone already or in other leaves.
                let index = min(at, ids.count - 1)
                let run = IDRun(start: ids[index], length: 1 + Int(rng.next() % 4))
                let end = run.start.counter + UInt64(run.length)
                if end > counters[run.start.replica]! {
                    // Part of the run was never in this sequence: nothing changes.
                    #expect(throws: SequenceError.self, "seed \(seed) step \(step)") { try text.deleteRemote(run) }
                } else {
                    let present = ids.indices.filter {
                        ids[$0].replica == run.start.replica && ids[$0].counter >= run.start.counter && ids[$0].counter < end
                    }
                    #expect(try text.deleteRemote(run) == present.count, "seed \(seed) step \(step)")
                    for i in present.reversed() {
                        model.remove(at: i)
                        ids.remove(at: i)
                    }
                }
                last = index
            } else if choice < 90 {
                let new = randomScalars(1 + Int(rng.next() % 3), &rng)
                let id = OpID(replica: a, counter: counters[a]!)
                let position = min(at, ids.count)
                _ = try text.insertLocal(at: position, id: id, lamport: clock + 1, contentsOf: new)
                model.insert(contentsOf: new, at: position)
                ids.insert(contentsOf: (0..<new.count).map { id.advanced(by: UInt64($0)) }, at: position)
                counters[a]! += UInt64(new.count)
                clock += UInt64(new.count)
            } else if !ids.isEmpty {
                let start = min(at, ids.count - 1)
                let end = min(ids.count, start + 1 + Int(rng.next() % 3))
                _ = try text.deleteLocal(start..<end)
                model.removeSubrange(start..<end)
                ids.removeSubrange(start..<end)
            }
            text.checkInvariants()
            #expect(Array(text.elements) == model, "seed \(seed) step \(step)")
            if step % 25 == 0, !ids.isEmpty {
                let i = Int(rng.next() % UInt64(ids.count))
                #expect(text.id(at: i) == ids[i] && text.position(of: ids[i])! == (i, false), "seed \(seed) step \(step)")
            }
        }
        #expect(text.spanCount > 1000, "seed \(seed): leaves split many times")
    }

    /// Three replicas edit at random and exchange their operations in random
    /// causally valid orders; in the end all have the same elements and the
    /// same runs.
    @Test(arguments: [11, 12, 13, 14, 15] as [UInt64])
    func replicasConverge(seed: UInt64) throws {
        enum Operation {
            case insert(origin: OpID?, id: OpID, lamport: UInt64, elements: [Unicode.Scalar])
            case delete([IDRun])
        }
        struct Replica {
            var id: ReplicaID
            var text = Text()
            var clock: UInt64 = 0
            var counter: UInt64 = 1
            /// How many operations of each replica this one has applied.
            var applied: [Int]
        }
        var rng = SeededGenerator(seed: seed)
        let ids = [a, b, c]
        var replicas = ids.map { Replica(id: $0, applied: [0, 0, 0]) }
        /// Each replica's operations, with the `applied` vector they depend on.
        var logs: [[(operation: Operation, dependencies: [Int])]] = [[], [], []]

        func deliver(_ from: Int, to: Int) throws {
            let next = replicas[to].applied[from]
            guard next < logs[from].count,
                  zip(logs[from][next].dependencies, replicas[to].applied).allSatisfy({ $0 <= $1 }) else { return }
            switch logs[from][next].operation {
            case let .insert(origin, id, lamport, elements):
                try replicas[to].text.insertRemote(origin: origin, id: id, lamport: lamport, contentsOf: elements)
                replicas[to].clock = max(replicas[to].clock, lamport + UInt64(elements.count) - 1)
            case let .delete(runs):
                for run in runs { try replicas[to].text.deleteRemote(run) }
            }
            replicas[to].applied[from] += 1
        }

        for _ in 0..<600 {
            let r = Int(rng.next() % 3)
            if rng.next() % 100 < 55 {
                var replica = replicas[r]
                let dependencies = replica.applied
                let operation: Operation
                if replica.text.count == 0 || rng.next() % 100 < 65 {
                    let elements = randomScalars(rng.next() % 3 == 0 ? Int(rng.next() % 8) + 1 : 1, &rng)
                    let id = OpID(replica: replica.id, counter: replica.counter)
                    let index = Int(rng.next() % UInt64(replica.text.count + 1))
                    let origin = try replica.text.insertLocal(at: index, id: id, lamport: replica.clock + 1, contentsOf: elements)
                    operation = .insert(origin: origin, id: id, lamport: replica.clock + 1, elements: elements)
                    replica.clock += UInt64(elements.count)
                    replica.counter += UInt64(elements.count)
                } else {
                    let start = Int(rng.next() % UInt64(replica.text.count))
                    let end = min(replica.text.count, start + 1 + Int(rng.next() % 4))
                    operation = .delete(Array(try replica.text.deleteLocal(start..<end)))
                    replica.counter += UInt64(end - start)
                }
                replica.applied[r] += 1
                logs[r].append((operation, dependencies))
                replicas[r] = replica
            } else {
                for _ in 0..<Int(rng.next() % 6) { try deliver(Int(rng.next() % 3), to: r) }
            }
        }
        // Deliver everything that is left, in random ready order.
        while replicas.contains(where: { $0.applied != logs.map(\.count) }) {
            try deliver(Int(rng.next() % 3), to: Int(rng.next() % 3))
        }
        for replica in replicas {
            replica.text.checkInvariants()
            #expect(Array(replica.text.elements) == Array(replicas[0].text.elements), "seed \(seed)")
            #expect(replica.text.runs == replicas[0].text.runs, "seed \(seed)")
            let loaded = try Text(runs: replica.text.runs)
            try expectSameSequence(loaded, replica.text, "seed \(seed), loaded")
            expectExactLowestStamps(loaded, "seed \(seed), loaded")
        }
        #expect(replicas[0].text.count > 0, "seed \(seed)")
    }
}
