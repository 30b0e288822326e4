extension SpanTree {
    /// Traps unless the tree is consistent: every node's summary is the sum
    /// of what is below it, parent and sibling links agree, every leaf but the
    /// root is non-empty, spans are well formed and have the widths
    /// `measure` gives their content (splits measure one side and take the
    /// other's from the span's), and the id index maps every element (and
    /// nothing else) to its leaf. For tests: O(n).
    func checkInvariants(contentCount: Int, measure: Measure) {
        var elements = 0
        var leafOrder: [Int32] = []
        let total = checkNode(root, level: height, parent: -1, leafOrder: &leafOrder, elements: &elements,
                              contentCount: contentCount, measure: measure)
        precondition(total == summary, "root summary")
        precondition(leafOrder.first == firstLeaf, "first leaf")
        for (i, leaf) in leafOrder.enumerated() {
            precondition(leaves[Int(leaf)].previous == (i > 0 ? leafOrder[i - 1] : -1), "previous link")
            precondition(leaves[Int(leaf)].next == (i + 1 < leafOrder.count ? leafOrder[i + 1] : -1), "next link")
        }
        precondition(leafOrder.count == leaves.count, "unreachable leaves")
        // Every element maps to its leaf (checked per span) and nothing else is indexed.
        precondition(ids.entryCount == elements, "id index covers exactly the elements")
    }

    private func checkNode(_ node: Int32, level: Int, parent: Int32, leafOrder: inout [Int32],
                           elements: inout Int, contentCount: Int, measure: Measure) -> Summary {
        var sum = Summary.zero
        if level == 0 {
            let leaf = leaves[Int(node)]
            precondition(leaf.parent == parent, "leaf parent link")
            precondition(leaf.count > 0 || node == root, "empty leaf")
            precondition(leaf.count <= Self.leafCapacity, "leaf overflow")
            leafOrder.append(node)
            for slot in 0..<Int(leaf.count) {
                let s = span(node, slot)
                precondition(s.length > 0 && s.utf16 >= s.length && s.utf8 >= s.length, "span sizes")
                precondition(s.contentStart >= 0 && Int(s.contentStart) + Int(s.length) <= contentCount, "span content")
                let widths = measure(Int(s.contentStart), Int(s.length))
                precondition(widths.utf16 == Int(s.utf16) && widths.utf8 == Int(s.utf8), "span widths")
                precondition(Int(s.replica) < ids.replicas.count, "span replica")
                precondition(!(stamp(of: s) < leaf.lowestStamp), "leaf's lowest stamp")
                sum += s.summary
                elements += Int(s.length)
                for counter in s.counter..<s.counterEnd {
                    precondition(ids.leaf(replica: s.replica, counter: counter) == node, "id index entry")
                }
            }
            precondition(leaf.summary == sum, "leaf summary")
            return sum
        }
        let inner = inners[Int(node)]
        precondition(inner.parent == parent, "inner parent link")
        precondition(inner.count >= 1 && inner.count <= Self.fanout, "inner size")
        for i in 0..<Int(inner.count) {
            sum += checkNode(children[Int(node) * Self.fanout + i], level: level - 1, parent: node,
                             leafOrder: &leafOrder, elements: &elements, contentCount: contentCount, measure: measure)
        }
        precondition(inner.summary == sum, "inner summary")
        return sum
    }
}
