extension SpanTree {
    /// The slots of the leaves that hold `spanCount` spans packed full:
    /// whole leaves, and at least one.
    private static func slotsOfFullLeaves(holding spanCount: Int) -> Int {
        max(1, (spanCount + leafCapacity - 1) / leafCapacity) * leafCapacity
    }

    /// Builds the tree of `runs`, given in document order over `contentCount`
    /// elements of content (loading a snapshot), bottom-up in one pass:
    /// leaves packed full, the id index, then each level of inner nodes with
    /// its summaries. Inserting the runs one at a time would walk from the
    /// root and split a node at every leaf's worth. `measure` gives a run's
    /// widths unless `widthsAreCounts` (ASCII). Throws `invalidRun` for an
    /// empty, overflowing or out-of-content run, or one with ids in the id
    /// index's last page (`ElementIndex.counterEndLimit`), and as `makeSpan`
    /// does for a repeated id.
    ///
    /// Each run becomes one span, as given. Runs that continue each other
    /// (which `forEachRun` never reports, but a snapshot written otherwise
    /// may hold) stay apart: the tree needs no span to be maximal, as edits
    /// leave continuing spans apart too (across a leaf's bound), and
    /// `forEachRun` reports them as one run again. Joining them here cost
    /// a test per run on every load for input no writer makes.
    @usableFromInline
    init(loading runs: UnsafeBufferPointer<RunHeader>, contentCount: Int, widthsAreCounts: Bool, measure: Measure) throws(SequenceError) {
        // Spans are written straight into room for every run, padded to
        // whole leaves, so no append checks room or uniqueness.
        let spanCount = runs.count
        var start = 0
        spans = try Arena<Span>(unsafeUninitializedCapacity: Self.slotsOfFullLeaves(holding: spanCount)) { buffer, count throws(SequenceError) in
            // Writes each run's span, its widths from `widths(start, count)`
            // once its count is checked against the content. A loop for
            // ASCII of its own, with the widths inlined: with the call to
            // `measure` in the one loop, the compiler kept four of a run's
            // values on the stack for that call on every run, ASCII or not.
            // The run is read through the pointer, its count before the call
            // and the rest after it, so that none of it is kept across it.
            @inline(__always)
            func writeSpans(widths: Measure) throws(SequenceError) {
                for index in runs.indices {
                    let length = runs[index].count
                    guard length > 0, length <= contentCount - start else { throw .invalidRun(runs[index].id) }
                    let (utf16, utf8) = widths(start, length)
                    let run = runs[index]
                    let span = try checkedSpan(NewRun(id: run.id, lamport: run.lamport, contentStart: start, length: length,
                                                      utf16: utf16, utf8: utf8), isDeleted: run.isDeleted)
                    // The id index's load reaches each page's end unchecked: no id may be in its last page.
                    guard span.counterEnd <= ElementIndex.counterEndLimit else { throw .invalidRun(run.id) }
                    start += length
                    buffer.initializeElement(at: count, to: span)
                    count += 1
                }
            }
            if widthsAreCounts { try writeSpans { ($1, $1) } } else { try writeSpans(widths: measure) }
            // Leaf l owns slots l * leafCapacity ..< (l + 1) * leafCapacity: packed
            // full, the spans are already where their leaves want them.
            count = buffer.count
            buffer[spanCount..<count].initialize(repeating: .empty)
        }
        precondition(start == contentCount, "SpanTree: the runs must cover the content exactly")
        let leafCount = spans.count / Self.leafCapacity
        if let duplicate = spans.withUnsafeBufferPointer({ ids.load($0, leafCapacity: Self.leafCapacity) }) {
            throw .duplicateElement(OpID(replica: ids.replicas[Int(duplicate.replica)], counter: duplicate.counter))
        }

        // The leaves read the spans through a pointer (a subscript of the
        // arena checks the index and its count per span), and look up a
        // span's replica id only when its Lamport value does not settle
        // whether it lowers the leaf's lowest stamp.
        var builtLeaves: [Leaf] = []
        builtLeaves.reserveCapacity(leafCount)
        spans.withUnsafeBufferPointer { spans in
            for leaf in 0..<leafCount {
                let first = leaf * Self.leafCapacity
                let end = min(first + Self.leafCapacity, spanCount)
                var summary = Summary.zero
                var lowest = Stamp.highest
                for span in spans[first..<end] {
                    summary += span.summary
                    if span.lamport <= lowest.lamport { lowest = min(lowest, stamp(of: span)) }
                }
                builtLeaves.append(Leaf(summary: summary, parent: -1, count: Int32(end - first),
                                        previous: Int32(leaf - 1), next: leaf + 1 < leafCount ? Int32(leaf + 1) : -1,
                                        lowestStamp: lowest))
            }
        }
        // Moved, not copied: with `builtLeaves` alive to the end of the
        // scope, the first parent set below copied every leaf (64 bytes a leaf).
        leaves = consume builtLeaves

        // Each level groups the one below by `fanout`, until one node is left.
        var level: [(node: Int32, summary: Summary)] = leaves.indices.map { (Int32($0), leaves[$0].summary) }
        height = 0
        while level.count > 1 {
            var above: [(node: Int32, summary: Summary)] = []
            above.reserveCapacity((level.count + Self.fanout - 1) / Self.fanout)
            for group in stride(from: 0, to: level.count, by: Self.fanout) {
                let node = Int32(inners.count)
                let members = level[group..<min(group + Self.fanout, level.count)]
                var summary = Summary.zero
                for member in members {
                    summary += member.summary
                    if height == 0 { leaves[Int(member.node)].parent = node } else { inners[Int(member.node)].parent = node }
                }
                children.append(contentsOf: members.map(\.node))
                children.append(contentsOf: repeatElement(-1, count: Self.fanout - members.count))
                inners.append(Inner(summary: summary, parent: -1, count: Int32(members.count)))
                above.append((node, summary))
            }
            level = above
            height += 1
        }
        root = level[0].node
        firstLeaf = 0
        // Only what grew a step at a time has slack left (copying is skipped otherwise).
        shrinkToFit()
    }
}
