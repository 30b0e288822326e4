/// A replicated sequence (text, lists) with RGA semantics (DESIGN.md,
/// "Semantics", "RGA sequence").
///
/// Every element has an id `OpID` and a Lamport stamp. A remote insert goes
/// right after its origin, after any elements there with a greater stamp;
/// deletes leave tombstones in place forever, so late concurrent inserts
/// still find their origin.
///
/// This is a thin generic layer: the element values live in one contiguous,
/// append-only buffer (`content`, deleted values stay), and everything else
/// (spans, the B-tree, the id index) is the non-generic `SpanTree`. The
/// public entry points are `@inlinable` so that client modules specialise
/// them for their element type; the tree work behind them is compiled once.
public struct RGASequence<Element: SequenceElement>: Sendable {
    @usableFromInline var tree: SpanTree
    @usableFromInline var content: Element.Storage

    @inlinable
    public init() {
        tree = SpanTree()
        content = Element.Storage()
    }

    /// Visible elements. (Always inlined: editing code reads it around
    /// every insert, and a call would copy the sequence out of its array.)
    @inlinable @inline(__always) public var count: Int { tree.summary.count }
    @inlinable public var utf16Count: Int { tree.summary.utf16 }
    @inlinable public var utf8Count: Int { tree.summary.utf8 }
    @inlinable public var tombstoneCount: Int { tree.summary.total - tree.summary.count }
    /// Stored spans, for statistics (`forEachRun` coalesces further).
    @inlinable public var spanCount: Int { tree.spanCount }
    /// Approximate bytes held, content included, for statistics.
    @inlinable public var byteCount: Int {
        tree.byteCount + content.byteCount
    }

    /// Local insert at a visible index: the new elements go right after the
    /// visible element at `index - 1` (before any tombstones that follow
    /// it), or at the very start when `index == 0`. Returns the origin the
    /// operation must record (nil for the head). `id` and `lamport` are the
    /// first element's; the caller guarantees they are greater than
    /// everything known. Inserting nothing changes nothing.
    @inlinable
    public mutating func insertLocal(at index: Int, id: OpID, lamport: UInt64,
                                     contentsOf elements: some Collection<Element>) throws(SequenceError) -> OpID? {
        let inserted = try withAppended(elements, id: id, lamport: lamport) { tree, run, measure throws(SequenceError) in
            try tree.insertLocal(at: index, run, measure: measure)
        }
        if let origin = inserted { return origin }
        // Nothing to insert: still answer with the origin an insert there would have.
        guard index >= 0 && index <= count else { throw .indexOutOfRange(index) }
        return index == 0 ? nil : self.id(at: index - 1)
    }

    /// Remote insert after `origin` (nil: the head) by the RGA rule. Throws
    /// `unknownElement` if the origin is missing, `duplicateElement` if an
    /// id is already present and, `checkingOriginStamp`, `stampNotAboveOrigin`
    /// if `lamport` is not above the origin's; nothing changes on throw.
    @inlinable
    public mutating func insertRemote(origin: OpID?, id: OpID, lamport: UInt64,
                                      contentsOf elements: some Collection<Element>,
                                      checkingOriginStamp: Bool = false) throws(SequenceError) {
        let start = content.count
        content.append(contentsOf: elements)
        try insertRemote(appendedFrom: start, origin: origin, id: id, lamport: lamport, checkingOriginStamp: checkingOriginStamp)
    }

    /// `insertRemote(origin:id:lamport:contentsOf:checkingOriginStamp:)` of
    /// the elements appended to the content from `start` on. Each kind of
    /// insert appends its elements its own way, then comes here, so that
    /// the tree's insert is reached through one closure whatever was appended.
    @inlinable
    mutating func insertRemote(appendedFrom start: Int, origin: OpID?, id: OpID, lamport: UInt64,
                               checkingOriginStamp: Bool) throws(SequenceError) {
        try withAppended(from: start, id: id, lamport: lamport) { tree, run, measure throws(SequenceError) in
            try tree.insertRemote(origin: origin, run, checkingOriginStamp: checkingOriginStamp, measure: measure)
        }
    }

    /// Local delete of the visible elements `range`. Returns the deleted ids
    /// as runs in document order (each run: consecutive counters of one
    /// replica), which become delete operations.
    @inlinable
    public mutating func deleteLocal(_ range: Range<Int>) throws(SequenceError) -> DeletedRuns {
        try withTree { tree, measure throws(SequenceError) in try tree.deleteLocal(range, measure: measure) }
    }

    /// Remote delete of `run`'s ids (one replica). Throws `unknownElement`,
    /// before changing anything, if one is missing. Deleting a tombstone
    /// again is a no-op. Returns how many elements became newly deleted.
    ///
    /// `isNextEdit`: `run` is a delete after the first edit of a change,
    /// looked for next to the change's previous delete first.
    @inlinable @discardableResult
    public mutating func deleteRemote(_ run: IDRun, isNextEdit: Bool = false) throws(SequenceError) -> Int {
        try withTree { tree, measure throws(SequenceError) in try tree.deleteRemote(run, isNextEdit: isNextEdit, measure: measure) }
    }

    @inlinable
    public func contains(_ id: OpID) -> Bool { tree.find(id) != nil }

    /// The visible element at `index`.
    @inlinable
    public subscript(index: Int) -> Element {
        precondition(index >= 0 && index < count, "RGASequence index out of range")
        let location = tree.locate(.visible, index)
        let span = tree.span(location.leaf, location.slot)
        return content[Int(span.contentStart) + index - location.before.count]
    }

    /// The id of the visible element at `index`.
    @inlinable
    public func id(at index: Int) -> OpID {
        precondition(index >= 0 && index < count, "RGASequence index out of range")
        let location = tree.locate(.visible, index)
        let span = tree.span(location.leaf, location.slot)
        return OpID(replica: tree.replicaID(span.replica),
                    counter: span.counter + UInt64(index - location.before.count))
    }

    /// The visible index of an element; for a tombstone, the index where it
    /// sits (the number of visible elements before it) and `isDeleted`.
    /// Nil if the sequence has no such element.
    @inlinable
    public func position(of id: OpID) -> (index: Int, isDeleted: Bool)? {
        guard let found = tree.find(id) else { return nil }
        let before = tree.summary(before: found.leaf, found.slot).count
        return tree.span(found.leaf, found.slot).isDeleted ? (before, true) : (before + found.offset, false)
    }

    /// Where in `content` the elements with the ids `run` are, tombstones
    /// included, a span's part at a time; nil if one is missing.
    private func contentRanges(of run: IDRun) -> [Range<Int>]? {
        guard run.length <= tree.summary.total else { return nil }
        var ranges: [Range<Int>] = []
        var next = run.start, found = 0
        while found < run.length {
            guard let location = tree.find(next) else { return nil }
            let span = tree.span(location.leaf, location.slot)
            let start = Int(span.contentStart) + location.offset
            let taken = min(Int(span.length) - location.offset, run.length - found)
            ranges.append(start..<start + taken)
            found += taken
            next = next.advanced(by: UInt64(taken))
        }
        return ranges
    }

    /// Appends `elements` to the content buffer and hands them, described as
    /// a run, to `body` (which adds them to the tree); takes them back out if
    /// `body` throws. Returns nil, doing nothing, if there are no elements.
    @inlinable
    mutating func withAppended<Result>(
        _ elements: some Collection<Element>, id: OpID, lamport: UInt64,
        _ body: (inout SpanTree, SpanTree.NewRun, Measure) throws(SequenceError) -> Result
    ) throws(SequenceError) -> Result? {
        let start = content.count
        content.append(contentsOf: elements)
        return try withAppended(from: start, id: id, lamport: lamport, body)
    }

    /// `withAppended(_:id:lamport:_:)` once the elements are appended: those
    /// of the content from `start` on. (Not generic over what was appended,
    /// so that its closure, and the tree's code specialised on it, is one
    /// function for every kind of insert.)
    @inlinable
    mutating func withAppended<Result>(
        from start: Int, id: OpID, lamport: UInt64,
        _ body: (inout SpanTree, SpanTree.NewRun, Measure) throws(SequenceError) -> Result
    ) throws(SequenceError) -> Result? {
        let end = content.count
        guard end > start else { return nil }
        let (utf16, utf8) = content.withUnsafeView { Element.Storage.widths($0, start, end - start) }
        let run = SpanTree.NewRun(id: id, lamport: lamport, contentStart: start, length: end - start,
                                  utf16: utf16, utf8: utf8)
        do {
            return try withUnsafeMutablePointer(to: &self) { sequence throws(SequenceError) in
                try body(&sequence.pointee.tree, run) { Self.widths(sequence, $0, $1) }
            }
        } catch {
            content.removeSubrange(start...)
            throw error
        }
    }

    /// Runs `body` on the tree with a `Measure` that reads the content.
    @inlinable
    mutating func withTree<Result>(
        _ body: (inout SpanTree, Measure) throws(SequenceError) -> Result
    ) throws(SequenceError) -> Result {
        try withUnsafeMutablePointer(to: &self) { sequence throws(SequenceError) in
            try body(&sequence.pointee.tree) { Self.widths(sequence, $0, $1) }
        }
    }

    /// The widths of `count` elements of the content from `start`: the
    /// `Measure` of `withAppended` and `withTree`.
    ///
    /// Those hand the tree to their body through a pointer to the sequence,
    /// and this reads the content through it, only when asked: borrowing
    /// `content` around the call that mutates `tree` made the compiler
    /// retain and release the content's buffer on every edit (40
    /// instructions of a keystroke). The two are distinct stored
    /// properties, so the accesses never overlap.
    @inlinable
    static func widths(_ sequence: UnsafeMutablePointer<Self>, _ start: Int, _ count: Int) -> (utf16: Int, utf8: Int) {
        sequence.pointee.content.withUnsafeView { Element.Storage.widths($0, start, count) }
    }

    /// Traps unless the internal structure is consistent (tests).
    func checkInvariants() {
        content.withUnsafeView { view in
            tree.checkInvariants(contentCount: content.count) { Element.Storage.widths(view, $0, $1) }
        }
    }
}

extension RGASequence<Unicode.Scalar> {
    /// Whether no element was ever inserted (tombstones count).
    var isEmptyOfElements: Bool { tree.summary.total == 0 }

    /// Makes room for what a bundle inserts: while the sequence is empty,
    /// for `count` scalars (if they are narrow) and about `ids` element ids
    /// in its index; and for at most `spans` more spans, if they may need
    /// more than a step of the span arena's growth
    /// (`SpanTree.reserveCapacity(spans:)`). A sequence that holds some gets
    /// no room for scalars and ids: only the spans' room is given back
    /// after the bundle, and the ids' bound counts the bundle's deletes, so
    /// that room would be kept, above what the bundle takes, until a local
    /// commit compacts the index (`ElementIndex.compactIfGrown()`).
    ///
    /// - Returns: whether it made span room, for `giveBackSpareSpanRoom()`
    ///   to give back.
    mutating func reserveCapacity(_ count: Int, ids: Int, spans: Int) -> Bool {
        if isEmptyOfElements {
            content.reserveCapacity(count)
            tree.ids.reserveCapacity(ids)
        }
        return tree.reserveCapacity(spans: spans)
    }

    /// Gives back the span arena's room past its leaves (after
    /// `reserveCapacity(_:ids:spans:)`).
    mutating func giveBackSpareSpanRoom() {
        tree.spans.shrinkToFit()
    }
}

extension RGASequence where Element == Unicode.Scalar {
    /// `insertRemote(origin:id:lamport:contentsOf:checkingOriginStamp:)` of
    /// the scalars in `range` of `scalars`: a merge's decoded text, whether
    /// a chain's or one edit's of a change. (One text type for both, so
    /// that they reach one copy of the tree's insert: two copies, one a
    /// caller, missed the instruction cache in turns.)
    @inlinable
    mutating func insertRemote(origin: OpID?, id: OpID, lamport: UInt64, contentsOf scalars: ScalarStorage,
                               _ range: Range<Int>, checkingOriginStamp: Bool) throws(SequenceError) {
        let start = content.count
        content.append(contentsOf: scalars, range)
        try insertRemote(appendedFrom: start, origin: origin, id: id, lamport: lamport, checkingOriginStamp: checkingOriginStamp)
    }

    /// Calls `body` with the UTF-8 of the elements with the ids `run`,
    /// tombstones included (the text an insert wrote); nil if one is
    /// missing. ASCII text in one span is read in place: a history's
    /// encode reads a few scalars at a time, and copying them into arrays
    /// cost more than finding them.
    func withUTF8<Result>(of run: IDRun, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        var laterSpans = 0
        return withUTF8(of: run, countingLaterSpansIn: &laterSpans, body)
    }

    /// `withUTF8(of:_:)`, adding to `laterSpans` how many spans past its
    /// first the run was found in, each by id.
    func withUTF8<Result>(of run: IDRun, countingLaterSpansIn laterSpans: inout Int,
                          _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        guard run.length <= tree.summary.total, let location = tree.find(run.start) else { return nil }
        let span = tree.span(location.leaf, location.slot)
        if Int(span.length) - location.offset >= run.length {
            let start = Int(span.contentStart) + location.offset
            if let result = content.withASCII(start..<start + run.length, body) { return result }
        }
        guard let ranges = contentRanges(of: run) else { return nil }
        laterSpans += ranges.count - 1
        return withUTF8(of: ranges, body)
    }

    /// `withUTF8(of:_:)`, finding the elements through `spans`, made from
    /// this sequence as it is: for reading many runs, in id order.
    func withUTF8<Result>(of run: IDRun, in spans: inout IDOrderedSpans, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        guard let replica = tree.ids.replicaIndex(of: run.start.replica), spans.find(run, replica: replica) else { return nil }
        return withUTF8(of: spans.ranges, body)
    }

    /// Calls `body` with the UTF-8 of the content in `ranges`, read in
    /// place if that is one range of ASCII.
    private func withUTF8<Result>(of ranges: [Range<Int>], _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if ranges.count == 1, let result = content.withASCII(ranges[0], body) { return result }
        return content.withUTF8(of: ranges, body)
    }

    /// The spans in id order (`IDOrderedSpans`), once the runs a reader
    /// asked for were found in as many spans past their first as the tree
    /// has leaves: each such span took a lookup by id, and sorting the
    /// spans costs about as much as a lookup for every ten, about a leaf's
    /// worth. (Counted in reads, random edits, whose runs are one span
    /// each, paid for the sort and gained little: merge-k8-m10000's
    /// history took 3% more instructions.)
    func idOrderedSpans(afterLaterSpans laterSpans: Int) -> IDOrderedSpans? {
        laterSpans >= tree.leaves.count ? IDOrderedSpans(tree) : nil
    }
}
