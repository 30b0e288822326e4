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
    /// snapshot), bottom-up in one pass: leaves packed full, the id index,
    /// then each level of inner nodes with its summaries. Inserting the
    /// runs one at a time would walk from the root and split a node at every
    /// leaf's worth. Throws as `makeSpan` does for an invalid or repeated id.
    @usableFromInline
    init(loading runs: [LoadedRun]) throws(SequenceError) {
        var built = Arena<Span>()
        // The exact size when no run continues the one before (snapshots).
        built.reserveCapacity(max(1, (runs.count + Self.leafCapacity - 1) / Self.leafCapacity) * Self.leafCapacity)
        for loaded in runs {
            let span = try checkedSpan(loaded.run, isDeleted: loaded.isDeleted)
            // Runs from `forEachRun` are maximal; merging keeps other input
            // stored as edits would have stored it.
            if !built.isEmpty, built[built.count - 1].canAbsorb(span) { built[built.count - 1].absorb(span) } else { built.append(span) }
        }
        let leafCount = max(1, (built.count + Self.leafCapacity - 1) / Self.leafCapacity)
        let spanCount = built.count
        // Leaf l owns slots l * leafCapacity ..< (l + 1) * leafCapacity: packed
        // full, the spans are already where their leaves want them.
        built.append(repeating: .empty, count: leafCount * Self.leafCapacity - spanCount)
        spans = built
        if let duplicate = built.withUnsafeBufferPointer({ ids.load($0, leafCapacity: Self.leafCapacity) }) {
            throw .duplicateElement(OpID(replica: ids.replicas[Int(duplicate.replica)], counter: duplicate.counter))
        }

        leaves = []
        leaves.reserveCapacity(leafCount)
        for leaf in 0..<leafCount {
            let first = leaf * Self.leafCapacity
            let end = min(first + Self.leafCapacity, spanCount)
            var summary = Summary.zero
            var lowest = Stamp.highest
            for i in first..<end {
                summary += spans[i].summary
                lowest = min(lowest, stamp(of: spans[i]))
            }
            leaves.append(Leaf(summary: summary, parent: -1, count: Int32(end - first),
                               previous: Int32(leaf - 1), next: leaf + 1 < leafCount ? Int32(leaf + 1) : -1,
                               lowestStamp: lowest))
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
}
