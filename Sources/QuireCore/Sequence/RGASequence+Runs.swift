/// Walking the sequence span by span: visible elements, and the runs that
/// snapshots store.
extension RGASequence {
    /// All visible elements in order, read span by span.
    @inlinable
    public var elements: Elements { Elements(sequence: self) }

    public struct Elements: Sequence {
        @usableFromInline let sequence: RGASequence

        @inlinable
        init(sequence: RGASequence) { self.sequence = sequence }

        @inlinable
        public func makeIterator() -> Iterator {
            Iterator(sequence: sequence, upcoming: sequence.tree.firstSpan)
        }

        @inlinable
        public var underestimatedCount: Int { sequence.count }
    }

    public struct Iterator: IteratorProtocol {
        @usableFromInline let sequence: RGASequence
        /// The span to read after the current one.
        @usableFromInline var upcoming: (leaf: Int32, slot: Int)?
        @usableFromInline var position = 0
        @usableFromInline var end = 0

        @inlinable
        init(sequence: RGASequence, upcoming: (leaf: Int32, slot: Int)?) {
            self.sequence = sequence
            self.upcoming = upcoming
        }

        @inlinable
        public mutating func next() -> Element? {
            while position == end {
                guard let (leaf, slot) = upcoming else { return nil }
                let span = sequence.tree.span(leaf, slot)
                if !span.isDeleted {
                    position = Int(span.contentStart)
                    end = position + Int(span.length)
                }
                upcoming = sequence.tree.nextSpan(after: leaf, slot)
            }
            defer { position += 1 }
            return sequence.content[position]
        }
    }

    /// Every run in document order, tombstones included (with their
    /// values). Adjacent spans that continue each other (same replica,
    /// consecutive counters and lamports, same deleted flag) are reported as
    /// one run, whatever the storage looks like, so replicas with the same
    /// logical content report exactly the same runs (byte-identical snapshots).
    @inlinable
    public func forEachRun(_ body: (SequenceRun<Element>) throws -> Void) rethrows {
        let found = tree.runs()
        var nextRange = 0
        for header in found.runs.lazy.map(\.header) {
            // A run's elements while they are one range of `content`;
            // gathered when its spans are not (parts that arrived at different times).
            var elements = content.slice(found.contents[nextRange])
            nextRange += 1
            if elements.count < header.count {
                var gathered = Array(elements)
                while gathered.count < header.count {
                    gathered.append(contentsOf: content.slice(found.contents[nextRange]))
                    nextRange += 1
                }
                elements = gathered[...]
            }
            try body(SequenceRun(id: header.id, lamport: header.lamport, isDeleted: header.isDeleted, elements: elements))
        }
    }

    /// Builds a sequence from every element in document order, tombstones
    /// included, and the runs they form, as `forEachRun` reports them
    /// (loading a snapshot). The tree is built bottom-up in one pass and
    /// `content` becomes the content buffer as it is. Throws `invalidRun`
    /// for an empty or overflowing run (its ids must end 256 or more below
    /// 2^64) and `duplicateElement` for an id that occurs twice.
    /// `widthsAreCounts` says that every element is one UTF-16 unit and one
    /// UTF-8 byte (ASCII text), so that a run's widths are its count and
    /// need not be measured.
    @inlinable
    public init(content: [Element], runs: [RunHeader], widthsAreCounts: Bool = false) throws(SequenceError) {
        // A loaded document is mostly read and edited a little: no slack.
        let storage = Element.Storage(compacting: content)
        self = try runs.withUnsafeBufferPointer { runs throws(SequenceError) in
            try Self(storage: storage, runs: runs, widthsAreCounts: widthsAreCounts)
        }
    }

    /// `init(content:runs:widthsAreCounts:)` with the content already in
    /// its storage (a text's UTF-8 that is ASCII is one, as it is), and the
    /// runs where the caller read them (a snapshot's text runs, in room of
    /// their own).
    @usableFromInline
    init(storage: Element.Storage, runs: UnsafeBufferPointer<RunHeader>, widthsAreCounts: Bool) throws(SequenceError) {
        tree = try storage.withUnsafeView { view throws(SequenceError) in
            try SpanTree(loading: runs, contentCount: storage.count, widthsAreCounts: widthsAreCounts) {
                Element.Storage.widths(view, $0, $1)
            }
        }
        content = storage
    }
}

/// The runs `RGASequence.forEachRun(_:)` reports, without their elements:
/// what a snapshot writes (a text's elements straight from its storage).
@usableFromInline
struct SequenceRuns {
    @usableFromInline
    struct Run {
        @usableFromInline var header: RunHeader
        /// The run's replica as the sequence's index of it (`SpanTree.replicaID(_:)`).
        @usableFromInline var replica: UInt32
    }

    /// Each run, in document order.
    @usableFromInline var runs: [Run]
    /// The ranges of the content buffer that hold the runs' elements, in
    /// order, adjacent ones joined: a run's ranges add up to its count.
    @usableFromInline var contents: [Range<Int>]
}

extension SpanTree {
    /// The sequence's runs (`RGASequence.forEachRun(_:)`), found in one
    /// loop over the leaves' spans and stored through pointers (at most a
    /// run and a range a span). Reported through closures a run at a time,
    /// then appended to arrays, they cost about three times as much.
    @usableFromInline
    func runs() -> SequenceRuns {
        let spanCount = self.spanCount
        var contents: [Range<Int>] = []
        let runs = [SequenceRuns.Run](unsafeUninitializedCapacity: spanCount) { runs, runCount in
            contents = [Range<Int>](unsafeUninitializedCapacity: spanCount) { contents, rangeCount in
                spans.withUnsafeBufferPointer { spans in
                    // The pending run, and the part of its elements not yet in `contents`.
                    var isPending = false
                    var run = SequenceRuns.Run(header: RunHeader(id: OpID(replica: ReplicaID(0), counter: 0), lamport: 0, isDeleted: false, count: 0),
                                               replica: 0)
                    var contiguous = 0..<0
                    func finishRun() {
                        contents.initializeElement(at: rangeCount, to: contiguous)
                        rangeCount += 1
                        runs.initializeElement(at: runCount, to: run)
                        runCount += 1
                    }
                    var leaf = firstLeaf
                    while leaf >= 0 {
                        let first = Int(leaf) * Self.leafCapacity
                        for span in spans[first..<first + Int(leaves[Int(leaf)].count)] {
                            let start = Int(span.contentStart), end = start + Int(span.length)
                            if isPending, run.header.isDeleted == span.isDeleted, run.replica == span.replica,
                               run.header.id.counter &+ UInt64(run.header.count) == span.counter,
                               run.header.lamport &+ UInt64(run.header.count) == span.lamport {
                                if contiguous.upperBound == start {
                                    contiguous = contiguous.lowerBound..<end
                                } else {
                                    contents.initializeElement(at: rangeCount, to: contiguous)
                                    rangeCount += 1
                                    contiguous = start..<end
                                }
                                run.header.count += Int(span.length)
                            } else {
                                if isPending { finishRun() }
                                contiguous = start..<end
                                run = SequenceRuns.Run(
                                    header: RunHeader(id: OpID(replica: replicaID(span.replica), counter: span.counter),
                                                      lamport: span.lamport, isDeleted: span.isDeleted, count: Int(span.length)),
                                    replica: span.replica)
                                isPending = true
                            }
                        }
                        leaf = leaves[Int(leaf)].next
                    }
                    if isPending { finishRun() }
                }
            }
        }
        return SequenceRuns(runs: runs, contents: contents)
    }
}
