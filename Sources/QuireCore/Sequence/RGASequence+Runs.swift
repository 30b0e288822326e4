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
        // A run's elements while they are one range of `content`; a run
        // whose spans are not (parts that arrived at different times) is
        // gathered in `gathered` instead.
        var first: Range<Int>?
        var gathered: [Element] = []
        try forEachRun(contents: { range in
            if let previous = first {
                if gathered.isEmpty { gathered.append(contentsOf: content.slice(previous)) }
                gathered.append(contentsOf: content.slice(range))
            } else {
                first = range
            }
        }, headers: { header, _ in
            let elements = gathered.isEmpty ? content.slice(first!) : gathered[...]
            try body(SequenceRun(id: header.id, lamport: header.lamport, isDeleted: header.isDeleted, elements: elements))
            first = nil
            gathered = []
        })
    }

    /// The runs `forEachRun(_:)` reports, without building their elements:
    /// `contents` gets the ranges of `content` that hold a run's elements,
    /// in order (adjacent ones joined), then `headers` gets the run and its
    /// replica's index in the sequence (below `tree.replicaCount`). (A
    /// snapshot writes a text's elements straight from its storage.)
    @inlinable
    func forEachRun(contents: (Range<Int>) throws -> Void, headers: (RunHeader, _ replica: UInt32) throws -> Void) rethrows {
        var pending: RunHeader?
        var pendingReplica: UInt32 = 0
        // The part of the pending run's elements not yet given to `contents`.
        var contiguous = 0..<0
        var next = tree.firstSpan
        while true {
            let span = next.map { tree.span($0.leaf, $0.slot) }
            if let span, let run = pending, run.isDeleted == span.isDeleted, pendingReplica == span.replica,
               run.id.counter + UInt64(run.count) == span.counter,
               run.lamport + UInt64(run.count) == span.lamport {
                let start = Int(span.contentStart), end = start + Int(span.length)
                if contiguous.upperBound != start {
                    try contents(contiguous)
                    contiguous = start..<start
                }
                contiguous = contiguous.lowerBound..<end
                pending!.count += Int(span.length)
            } else {
                if let run = pending {
                    try contents(contiguous)
                    try headers(run, pendingReplica)
                }
                guard let span else { return }
                let start = Int(span.contentStart)
                contiguous = start..<start + Int(span.length)
                pending = RunHeader(id: OpID(replica: tree.replicaID(span.replica), counter: span.counter),
                                    lamport: span.lamport, isDeleted: span.isDeleted, count: Int(span.length))
                pendingReplica = span.replica
            }
            next = next.flatMap { tree.nextSpan(after: $0.leaf, $0.slot) }
        }
    }

    /// Builds a sequence from every element in document order, tombstones
    /// included, and the runs they form, as `forEachRun` reports them
    /// (loading a snapshot). The tree is built bottom-up in one pass and
    /// `content` becomes the content buffer as it is. Throws `invalidRun`
    /// for an empty or overflowing run and `duplicateElement` for an id that
    /// occurs twice. `widthsAreCounts` says that every element is one
    /// UTF-16 unit and one UTF-8 byte (ASCII text), so that a run's widths
    /// are its count and need not be measured.
    @inlinable
    public init(content: [Element], runs: [RunHeader], widthsAreCounts: Bool = false) throws(SequenceError) {
        // A loaded document is mostly read and edited a little: no slack.
        try self.init(storage: Element.Storage(compacting: content), runs: runs, widthsAreCounts: widthsAreCounts)
    }

    /// `init(content:runs:widthsAreCounts:)` with the content already in
    /// its storage (a text's UTF-8 that is ASCII is one, as it is).
    @usableFromInline
    init(storage: Element.Storage, runs: [RunHeader], widthsAreCounts: Bool) throws(SequenceError) {
        var loaded: [SpanTree.LoadedRun] = []
        loaded.reserveCapacity(runs.count)
        try storage.withUnsafeView { view throws(SequenceError) in
            var start = 0
            for run in runs {
                guard run.count > 0, run.count <= storage.count - start else { throw .invalidRun(run.id) }
                let (utf16, utf8) = widthsAreCounts ? (run.count, run.count) : Element.Storage.widths(view, start, run.count)
                loaded.append(SpanTree.LoadedRun(
                    run: SpanTree.NewRun(id: run.id, lamport: run.lamport, contentStart: start, length: run.count,
                                         utf16: utf16, utf8: utf8),
                    isDeleted: run.isDeleted))
                start += run.count
            }
            precondition(start == storage.count, "RGASequence: the runs must cover the content exactly")
        }
        tree = try SpanTree(loading: loaded)
        content = storage
    }
}
