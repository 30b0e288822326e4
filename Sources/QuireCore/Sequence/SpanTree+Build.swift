extension SpanTree {
    /// A run of a sequence being loaded, its content already in the content buffer.
    @usableFromInline
    struct LoadedRun: Sendable {
        @usableFromInline var run: NewRun
        @usableFromInline var isDeleted: Bool

        @inlinable
        init(run: NewRun, isDeleted: Bool) {
            self.run = run
            self.isDeleted = isDeleted
        }
    }

    /// Builds the tree of `runs`, given in document order (loading a
    /// snapshot), bottom-up in one pass: leaves packed full, then each level
    /// of inner nodes with its summaries, then the id index. Inserting the
    /// runs one at a time would walk from the root and split a node at every
    /// leaf's worth. Throws as `makeSpan` does for an invalid or repeated id.
    @usableFromInline
    init(loading runs: [LoadedRun]) throws(SequenceError) {
        var built: [Span] = []
        // The exact size when no run continues the one before (snapshots).
        built.reserveCapacity(max(1, (runs.count + Self.leafCapacity - 1) / Self.leafCapacity) * Self.leafCapacity)
        for loaded in runs {
            let span = try checkedSpan(loaded.run, isDeleted: loaded.isDeleted)
            // Runs from `forEachRun` are maximal; merging keeps other input
            // stored as edits would have stored it.
            if let last = built.last, last.canAbsorb(span) { built[built.count - 1].absorb(span) } else { built.append(span) }
        }
        let leafCount = max(1, (built.count + Self.leafCapacity - 1) / Self.leafCapacity)
        let spanCount = built.count
        // Leaf l owns slots l * leafCapacity ..< (l + 1) * leafCapacity: packed
        // full, the spans are already where their leaves want them.
        built.append(contentsOf: repeatElement(Span.empty, count: leafCount * Self.leafCapacity - spanCount))
        spans = built
        reserveIDPages()

        leaves = []
        leaves.reserveCapacity(leafCount)
        for leaf in 0..<leafCount {
            let first = leaf * Self.leafCapacity
            let end = min(first + Self.leafCapacity, spanCount)
            var summary = Summary.zero
            for i in first..<end {
                let span = spans[i]
                summary += span.summary
                if let present = ids.setLeaf(Int32(leaf), replica: span.replica, counters: span.counter..<span.counterEnd) {
                    throw .duplicateElement(OpID(replica: ids.replicas[Int(span.replica)], counter: present))
                }
            }
            leaves.append(Leaf(summary: summary, parent: -1, count: Int32(end - first),
                               previous: Int32(leaf - 1), next: leaf + 1 < leafCount ? Int32(leaf + 1) : -1))
        }

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

    /// Gives the id index, in one step, the pages of each replica whose
    /// elements fill at least half of its counter range (the usual case), so
    /// that filling it in document order does not add pages one at a time.
    private mutating func reserveIDPages() {
        var ranges = [(low: UInt64, high: UInt64, elements: UInt64)?](repeating: nil, count: ids.replicas.count)
        for span in spans where span.length > 0 {
            let replica = Int(span.replica)
            let last = span.counterEnd - 1
            if let range = ranges[replica] {
                ranges[replica] = (min(range.low, span.counter), max(range.high, last), range.elements + UInt64(span.length))
            } else {
                ranges[replica] = (span.counter, last, UInt64(span.length))
            }
        }
        for (replica, range) in ranges.enumerated() {
            guard let range, range.elements >= (range.high - range.low) / 2 else { continue }
            ids.addPages(replica: UInt32(replica), covering: range.low...range.high)
        }
    }
}
