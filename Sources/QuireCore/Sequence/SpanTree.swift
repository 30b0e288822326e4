/// The structure behind `RGASequence`: spans in document order, kept in a
/// B-tree whose nodes carry `Summary`s, plus the id index.
///
/// It is not generic: it never looks at element values (only at their
/// widths, through `Measure`), so it is compiled once, fully optimised, in
/// this module, and only `RGASequence`'s thin generic layer gets specialised
/// in client modules.
///
/// Nodes live in arenas (flat arrays addressed by `Int32`), not in objects,
/// so there is no ARC traffic per node or per span and copying the tree is
/// copying a few arrays (copy-on-write). The spans, most of the tree's
/// memory, are in an `Arena`, which grows in place rather than by copying.
/// Leaf `l` owns the slots
/// `spans[l * leafCapacity ..< l * leafCapacity + leaves[l].count]`; inner
/// node `n` owns `children[n * fanout ...]` in the same way. Each node stores
/// its own summary, so an edit updates its leaf and walks parent links up.
/// Spans are never removed from the tree except by merging with a neighbour
/// in the same leaf, so nodes never underflow and are never freed.
@usableFromInline
struct SpanTree: Sendable {
    static let leafCapacity = 24
    static let fanout = 32

    struct Leaf: Sendable {
        var summary = Summary.zero
        var parent: Int32 = -1
        var count: Int32 = 0
        var previous: Int32 = -1
        var next: Int32 = -1
        /// No span of the leaf starts with a lower stamp. A remote insert
        /// skips concurrent inserts that win over it; with this it skips a
        /// leaf of them whole, not span by span (many writers inserting at
        /// one place in the order that loses, as a hostile bundle can, cost
        /// the square of their number in spans). A bound, not the minimum:
        /// only a new span lowers it, and spans never start below the span
        /// they were split from or merged into.
        var lowestStamp = Stamp.highest
    }

    struct Inner: Sendable {
        var summary = Summary.zero
        var parent: Int32 = -1
        var count: Int32 = 0
    }

    /// Where a local edit happened last: a leaf and the summary of everything
    /// before it. The next edit nearby (typing, backspacing) scans that leaf
    /// instead of descending from the root. Edits in or after the leaf keep
    /// it valid; splitting a leaf and remote operations clear it.
    struct Cursor: Sendable {
        var leaf: Int32
        var before: Summary
    }

    /// Where the last local edit left off: the span at (`leaf`, `slot`)
    /// and the number of visible elements before it. The next local edit is
    /// usually in that span or a neighbour (typing on, backspacing, deleting
    /// forwards, typing after a deletion) and is found there without a
    /// lookup. Every local edit sets it when it is done; any other change
    /// clears it.
    struct EditPoint: Sendable {
        var leaf: Int32
        var slot: Int
        var before: Int
    }

    /// A span in the tree, with the summary of everything before it.
    @usableFromInline
    struct Location: Sendable {
        @usableFromInline var leaf: Int32
        @usableFromInline var slot: Int
        @usableFromInline var before: Summary
    }

    var spans = Arena<Span>()
    var leaves: [Leaf] = []
    var children: [Int32] = []
    var inners: [Inner] = []
    /// A leaf while `height == 0`, else an inner node.
    var root: Int32 = 0
    // Beside `root`, so that the two share a word: a sequence is copied by
    // value in places, and past 248 bytes those copies became calls to memcpy.
    var firstLeaf: Int32 = 0
    var height = 0
    var ids = ElementIndex()
    var cursor: Cursor?
    var editPoint: EditPoint?
    /// The span the last remote operation found by id. Remote operations
    /// mostly follow each other through the document (typing, backspacing),
    /// so the next one usually lands in that span or a neighbour: checking
    /// there first saves scanning the leaf. A stale hint only costs the check.
    var foundHint = (leaf: Int32(-1), slot: 0)

    @usableFromInline
    init() {
        root = allocateLeaf()
        firstLeaf = root
    }

    @usableFromInline
    var summary: Summary { height == 0 ? leaves[Int(root)].summary : inners[Int(root)].summary }

    @usableFromInline
    var spanCount: Int { leaves.reduce(0) { $0 + Int($1.count) } }

    /// Bytes held by spans, nodes and the id index (not the content), for statistics.
    @usableFromInline
    var byteCount: Int {
        spans.capacity * MemoryLayout<Span>.stride + leaves.capacity * MemoryLayout<Leaf>.stride
            + children.capacity * 4 + inners.capacity * MemoryLayout<Inner>.stride + ids.byteCount
    }

    /// Makes room in the span arena, on top of the slots its leaves hold,
    /// for the leaves of `count` more spans half full, as a leaf split in
    /// the middle leaves them, when those may need more than the arena's
    /// next growth step (`Arena.nextCapacity`): grown leaf by leaf, it would
    /// copy its leaves at each step. An empty tree (one leaf, whose next
    /// step is a second) reserves for a bound of two leaves or more; a
    /// bundle that the room left, or one step, may hold reserves nothing,
    /// so that a text synced a few changes at a time is not grown and given
    /// back again at each. `count` is a bound from a bundle's operations
    /// (`ChangeDecoder.textBounds(including:)`), often several times the
    /// spans the text gains: the room is touched only as leaves are added,
    /// and what they do not take is given back after the bundle, or after
    /// the last of several applied in a row
    /// (`Document.applyEncodedRun(_:limits:keepingSpanRoom:)`).
    ///
    /// - Returns: whether it made room.
    mutating func reserveCapacity(spans count: Int) -> Bool {
        let slots = Self.slotsReserved(forSpans: count, besides: spans.count)
        guard slots > spans.nextCapacity else { return false }
        spans.reserveCapacity(slots)
        return true
    }

    /// The arena's slots for the `held` it holds and `count` more spans in
    /// half-full leaves.
    static func slotsReserved(forSpans count: Int, besides held: Int) -> Int {
        held + count / (leafCapacity / 2) * leafCapacity
    }

    /// Releases the arrays' spare capacity (after loading a snapshot).
    mutating func shrinkToFit() {
        spans.shrinkToFit()
        leaves = compacted(leaves)
        children = compacted(children)
        inners = compacted(inners)
        ids.shrinkToFit()
    }

    @usableFromInline
    func span(_ leaf: Int32, _ slot: Int) -> Span {
        spans[Int(leaf) * Self.leafCapacity + slot]
    }

    @usableFromInline
    func replicaID(_ index: UInt32) -> ReplicaID { ids.replicas[Int(index)] }

    /// How many replicas the spans refer to by index (`replicaID(_:)`).
    var replicaCount: Int { ids.replicas.count }

    /// The stamp of `span`'s first element.
    func stamp(of span: Span) -> Stamp { Stamp(lamport: span.lamport, replica: replicaID(span.replica)) }

    // MARK: Finding positions

    /// The span holding unit `target` (counted in `metric`) of the visible
    /// content; `target` must be less than the total.
    @usableFromInline
    func locate(_ metric: Metric, _ target: Int) -> Location {
        let (leaf, before) = leafHolding(metric, target)
        return locate(metric, target, inLeaf: leaf, before: before)
    }

    /// The span holding visible element `target` and the element's offset in
    /// it, for a local edit: near the edit point if it is there, else by
    /// `locate`, remembering the leaf for the next edit.
    mutating func locateForEdit(_ target: Int) -> (leaf: Int32, slot: Int, offset: Int) {
        if let point = editPoint, let found = locate(target, near: point) { return found }
        let (leaf, before) = leafHolding(.visible, target)
        cursor = Cursor(leaf: leaf, before: before)
        let location = locate(.visible, target, inLeaf: leaf, before: before)
        return (location.leaf, location.slot, target - location.before.count)
    }

    /// Looks for visible element `target` in the span at `point` and its
    /// two neighbours.
    @inline(__always)
    private func locate(_ target: Int, near point: EditPoint) -> (leaf: Int32, slot: Int, offset: Int)? {
        let count = Int(leaves[Int(point.leaf)].count)
        guard point.slot < count else { return nil }
        return spans.withUnsafeBufferPointer { buffer in
            let at = Int(point.leaf) * Self.leafCapacity + point.slot
            let visible = buffer[at].visibleCount
            if target >= point.before {
                if target < point.before + visible { return (point.leaf, point.slot, target - point.before) }
                let after = point.before + visible
                guard point.slot + 1 < count, target < after + buffer[at + 1].visibleCount else { return nil }
                return (point.leaf, point.slot + 1, target - after)
            }
            guard point.slot > 0 else { return nil }
            let start = point.before - buffer[at - 1].visibleCount
            return target >= start ? (point.leaf, point.slot - 1, target - start) : nil
        }
    }

    private func leafHolding(_ metric: Metric, _ target: Int) -> (Int32, Summary) {
        if let cursor, cursor.before[metric] <= target,
           target < cursor.before[metric] + leaves[Int(cursor.leaf)].summary[metric] {
            return (cursor.leaf, cursor.before)
        }
        var node = root
        var before = Summary.zero
        var level = height
        while level > 0 {
            let base = Int(node) * Self.fanout
            let last = base + Int(inners[Int(node)].count) - 1
            var i = base
            while i < last {
                let child = children[i]
                let s = level == 1 ? leaves[Int(child)].summary : inners[Int(child)].summary
                if before[metric] + s[metric] > target { break }
                before += s
                i += 1
            }
            node = children[i]
            level -= 1
        }
        return (node, before)
    }

    private func locate(_ metric: Metric, _ target: Int, inLeaf leaf: Int32, before: Summary) -> Location {
        let base = Int(leaf) * Self.leafCapacity
        let count = Int(leaves[Int(leaf)].count)
        return spans.withUnsafeBufferPointer { buffer in
            var before = before
            for slot in 0..<count {
                let s = buffer[base + slot].summary
                if before[metric] + s[metric] > target { return Location(leaf: leaf, slot: slot, before: before) }
                before += s
            }
            preconditionFailure("SpanTree: summaries disagree with spans")
        }
    }

    /// The slot of the span holding `counter` of `replica` in `leaf`.
    func slot(of replica: UInt32, _ counter: UInt64, in leaf: Int32) -> Int {
        guard let slot = slot(of: replica, counter, in: leaf, among: 0..<Int(leaves[Int(leaf)].count)) else {
            preconditionFailure("SpanTree: id index points at the wrong leaf")
        }
        return slot
    }

    /// `slot(of:_:in:)`, trying the neighbourhood of `foundHint` first.
    mutating func slotNearHint(of replica: UInt32, _ counter: UInt64, in leaf: Int32) -> Int {
        let count = Int(leaves[Int(leaf)].count)
        if foundHint.leaf == leaf, let slot = slot(
            of: replica, counter, in: leaf, among: (foundHint.slot - 1 ..< foundHint.slot + 2).clamped(to: 0..<count)) {
            foundHint.slot = slot
            return slot
        }
        guard let slot = slot(of: replica, counter, in: leaf, among: 0..<count) else {
            preconditionFailure("SpanTree: id index points at the wrong leaf")
        }
        foundHint = (leaf, slot)
        return slot
    }

    /// The slot among `slots` of `leaf` of the span holding `counter` of
    /// `replica`, if there is one. Always inlined: as a call from a mutating
    /// method, it took a copy of the whole tree struct each time.
    @inline(__always)
    func slot(of replica: UInt32, _ counter: UInt64, in leaf: Int32, among slots: Range<Int>) -> Int? {
        spans.withUnsafeBufferPointer { buffer in
            let leafSpans = buffer.baseAddress! + Int(leaf) * Self.leafCapacity
            // A `while`, not a `for` over the range: that checked the bound twice a span.
            var slot = slots.lowerBound
            while slot < slots.upperBound {
                if leafSpans[slot].contains(replica: replica, counter: counter) { return slot }
                slot &+= 1
            }
            return nil
        }
    }

    /// The span holding an id, if present. (Inlined: a call took a copy of
    /// the whole tree struct.)
    @usableFromInline @inline(__always)
    func find(_ id: OpID) -> (leaf: Int32, slot: Int, offset: Int)? {
        guard let replica = ids.replicaIndex(of: id.replica) else { return nil }
        let leaf = ids.leaf(replica: replica, counter: id.counter)
        guard leaf >= 0 else { return nil }
        let slot = slot(of: replica, id.counter, in: leaf)
        return (leaf, slot, Int(id.counter - span(leaf, slot).counter))
    }

    /// The summary of everything before the span at (`leaf`, `slot`).
    @usableFromInline
    func summary(before leaf: Int32, _ slot: Int) -> Summary {
        var before = Summary.zero
        let base = Int(leaf) * Self.leafCapacity
        for i in 0..<slot { before += spans[base + i].summary }
        var child = leaf
        var parent = leaves[Int(leaf)].parent
        var childIsLeaf = true
        while parent >= 0 {
            let base = Int(parent) * Self.fanout
            var i = base
            while children[i] != child {
                before += childIsLeaf ? leaves[Int(children[i])].summary : inners[Int(children[i])].summary
                i += 1
            }
            child = parent
            parent = inners[Int(parent)].parent
            childIsLeaf = false
        }
        return before
    }

    /// The span after (`leaf`, `slot`) in document order, crossing leaves.
    @usableFromInline
    func nextSpan(after leaf: Int32, _ slot: Int) -> (leaf: Int32, slot: Int)? {
        var leaf = leaf
        var slot = slot + 1
        while slot >= Int(leaves[Int(leaf)].count) {
            leaf = leaves[Int(leaf)].next
            if leaf < 0 { return nil }
            slot = 0
        }
        return (leaf, slot)
    }

    /// The first span in document order, if any.
    @usableFromInline
    var firstSpan: (leaf: Int32, slot: Int)? {
        leaves[Int(firstLeaf)].count > 0 ? (firstLeaf, 0) : nextSpan(after: firstLeaf, 0)
    }

    // MARK: Changing the tree

    /// Adds `delta` to the summaries of `leaf` and its ancestors.
    @inline(__always)
    mutating func add(_ delta: Summary, to leaf: Int32) {
        leaves[Int(leaf)].summary += delta
        var node = leaves[Int(leaf)].parent
        // Every edit comes through here: one uniqueness check for the whole walk.
        inners.withUnsafeMutableBufferPointer { inners in
            while node >= 0 {
                inners[Int(node)].summary += delta
                node = inners[Int(node)].parent
            }
        }
    }

    /// Puts `span` into `slot` of `leaf`, which has room, shifting later spans right.
    mutating func place(_ span: Span, _ leaf: Int32, _ slot: Int) {
        openGap(leaf, slot, width: 1) { $0.initialize(to: span) }
    }

    /// Puts `span` and `next` into `slot` and `slot + 1` of `leaf`, which has
    /// room for both, shifting later spans right once: the two new spans
    /// of a span split around new or deleted elements.
    mutating func place(_ span: Span, then next: Span, _ leaf: Int32, _ slot: Int) {
        openGap(leaf, slot, width: 2) {
            $0.initialize(to: span)
            ($0 + 1).initialize(to: next)
        }
    }

    /// Shifts the spans of `leaf` from `slot` on `width` slots right and has
    /// `fill` initialise the `width` slots left free.
    @inline(__always)
    private mutating func openGap(_ leaf: Int32, _ slot: Int, width: Int, fill: (UnsafeMutablePointer<Span>) -> Void) {
        let start = Int(leaf) * Self.leafCapacity + slot
        let moving = Int(leaves[Int(leaf)].count) - slot
        precondition(slot >= 0 && moving >= 0 && start + moving + width <= (Int(leaf) + 1) * Self.leafCapacity)
        spans.withUnsafeMutableBufferPointer { buffer in
            let at = buffer.baseAddress! + start
            (at + width).moveInitialize(from: at, count: moving)
            fill(at)
        }
        leaves[Int(leaf)].count += Int32(width)
    }

    /// Removes the span in `slot` of `leaf`, shifting later spans left.
    mutating func remove(_ leaf: Int32, _ slot: Int) {
        let start = Int(leaf) * Self.leafCapacity + slot
        let moving = Int(leaves[Int(leaf)].count) - slot - 1
        precondition(slot >= 0 && moving >= 0)
        spans.withUnsafeMutableBufferPointer { buffer in
            let at = buffer.baseAddress! + start
            at.moveInitialize(from: at + 1, count: moving)
        }
        leaves[Int(leaf)].count -= 1
    }

    /// Makes room for `extra` more spans in `leaf`, splitting it if full.
    /// Returns where the span that was at `slot` is now, or with `isGap`,
    /// where the room for new spans before it is. (Inlined: most edits find
    /// room, and the call cost them more than the test.)
    @inline(__always)
    mutating func makeRoom(_ leaf: Int32, _ slot: Int, extra: Int, isGap: Bool = false) -> (leaf: Int32, slot: Int) {
        guard Int(leaves[Int(leaf)].count) + extra > Self.leafCapacity else { return (leaf, slot) }
        return splitLeaf(leaf, slot, isGap: isGap)
    }

    /// Splits the full `leaf` for `makeRoom`, returning what it returns.
    ///
    /// A split at the end of a leaf (appending) leaves the full leaf alone
    /// and starts an empty one after it, so text written front to back packs
    /// leaves full; a split for new spans before the first (prepending)
    /// starts the empty leaf before it. Otherwise the leaf is cut at the
    /// edit, but no nearer its ends than a quarter of it, and the side with
    /// fewer spans moves to the new leaf (the side with fewer elements when
    /// both hold as many): every moved span costs an id-index write. A cut
    /// in the middle moved half the leaf's spans at every split; a cut at
    /// the edit itself left one side nearly full, to be split again soon.
    @inline(never)
    private mutating func splitLeaf(_ leaf: Int32, _ slot: Int, isGap: Bool) -> (leaf: Int32, slot: Int) {
        let count = Int(leaves[Int(leaf)].count)
        cursor = nil
        editPoint = nil
        let isPrepending = isGap && slot == 0
        let mid = slot == count ? count : isPrepending ? 0 : min(max(slot, count / 4), count - count / 4)
        let base = Int(leaf) * Self.leafCapacity
        let moveLeft: Bool
        if isPrepending || 2 * mid != count {
            moveLeft = 2 * mid < count
        } else {
            var leftElements = 0
            for i in 0..<mid { leftElements += Int(spans[base + i].length) }
            moveLeft = 2 * leftElements < leaves[Int(leaf)].summary.total
        }
        let moved = moveLeft ? 0..<mid : mid..<count
        let newLeaf = allocateLeaf()
        let newBase = Int(newLeaf) * Self.leafCapacity
        spans.withUnsafeMutableBufferPointer { buffer in
            let at = buffer.baseAddress! + base
            (buffer.baseAddress! + newBase).moveInitialize(from: at + moved.lowerBound, count: moved.count)
            if moveLeft, mid > 0 { at.moveInitialize(from: at + mid, count: count - mid) }
        }
        var movedSummary = Summary.zero
        var movedLowest = Stamp.highest
        spans.withUnsafeBufferPointer { buffer in
            let movedSpans = UnsafeBufferPointer(rebasing: buffer[newBase..<newBase + moved.count])
            for span in movedSpans {
                movedSummary += span.summary
                // Only a span no later than the lowest yet can lower it: its
                // replica's id is looked up for those alone.
                if span.lamport <= movedLowest.lamport { movedLowest = min(movedLowest, stamp(of: span)) }
            }
            ids.setLeaf(newLeaf, ofMoved: movedSpans)
        }
        leaves[Int(newLeaf)].count = Int32(moved.count)
        leaves[Int(leaf)].count = Int32(count - moved.count)
        leaves[Int(newLeaf)].summary = movedSummary
        leaves[Int(newLeaf)].lowestStamp = movedLowest
        leaves[Int(leaf)].summary -= movedSummary
        if moveLeft {
            link(newLeaf, before: leaf)
        } else {
            link(newLeaf, after: leaf)
        }
        insertChild(newLeaf, beside: leaf, after: !moveLeft, level: 0)
        if moveLeft {
            return slot < mid || isPrepending ? (newLeaf, slot) : (leaf, slot - mid)
        }
        return slot < mid ? (leaf, slot) : (newLeaf, slot - mid)
    }

    private mutating func link(_ newLeaf: Int32, before leaf: Int32) {
        let previous = leaves[Int(leaf)].previous
        leaves[Int(newLeaf)].previous = previous
        leaves[Int(newLeaf)].next = leaf
        leaves[Int(leaf)].previous = newLeaf
        if previous >= 0 { leaves[Int(previous)].next = newLeaf } else { firstLeaf = newLeaf }
    }

    private mutating func link(_ newLeaf: Int32, after leaf: Int32) {
        let next = leaves[Int(leaf)].next
        leaves[Int(newLeaf)].next = next
        leaves[Int(newLeaf)].previous = leaf
        leaves[Int(leaf)].next = newLeaf
        if next >= 0 { leaves[Int(next)].previous = newLeaf }
    }

    private func parent(of node: Int32, level: Int) -> Int32 {
        level == 0 ? leaves[Int(node)].parent : inners[Int(node)].parent
    }

    private mutating func setParent(_ parent: Int32, of node: Int32, level: Int) {
        if level == 0 { leaves[Int(node)].parent = parent } else { inners[Int(node)].parent = parent }
    }

    private func summary(of node: Int32, level: Int) -> Summary {
        level == 0 ? leaves[Int(node)].summary : inners[Int(node)].summary
    }

    /// Inserts `child` (a node at `level`, 0 = leaves) next to its sibling in
    /// the sibling's parent, splitting ancestors as needed. The child's
    /// elements came out of the sibling, so they are already counted in the
    /// ancestors' summaries.
    private mutating func insertChild(_ child: Int32, beside sibling: Int32, after: Bool, level: Int) {
        var parent = parent(of: sibling, level: level)
        if parent < 0 {
            let newRoot = allocateInner()
            let base = Int(newRoot) * Self.fanout
            children[base] = after ? sibling : child
            children[base + 1] = after ? child : sibling
            inners[Int(newRoot)].count = 2
            inners[Int(newRoot)].summary = summary(of: sibling, level: level)
            inners[Int(newRoot)].summary += summary(of: child, level: level)
            setParent(newRoot, of: sibling, level: level)
            setParent(newRoot, of: child, level: level)
            root = newRoot
            height += 1
            return
        }
        var base = Int(parent) * Self.fanout
        var position = 0
        while children[base + position] != sibling { position += 1 }
        if after { position += 1 }
        var count = Int(inners[Int(parent)].count)
        if count == Self.fanout {
            // Split like leaves: at the end when appending, else in half. The
            // new node takes the right part; summaries move with the children
            // (and with `child` if it lands there) before the new node is
            // itself inserted, so every ancestor stays correct.
            let mid = position == count ? count : count / 2
            let newNode = allocateInner()
            let newBase = Int(newNode) * Self.fanout
            var movedSummary = Summary.zero
            for i in mid..<count {
                let moving = children[base + i]
                children[newBase + i - mid] = moving
                setParent(newNode, of: moving, level: level)
                movedSummary += summary(of: moving, level: level)
            }
            inners[Int(newNode)].count = Int32(count - mid)
            inners[Int(parent)].count = Int32(mid)
            if position >= mid { movedSummary += summary(of: child, level: level) }
            inners[Int(newNode)].summary = movedSummary
            inners[Int(parent)].summary -= movedSummary
            insertChild(newNode, beside: parent, after: true, level: level + 1)
            if position >= mid {
                parent = newNode
                base = newBase
                position -= mid
            }
            count = Int(inners[Int(parent)].count)
        }
        // The later children move right with one memmove, not one checked
        // write each.
        precondition(count < Self.fanout && base + Self.fanout <= children.count, "SpanTree: no room for a child")
        children.withUnsafeMutableBufferPointer { children in
            let at = children.baseAddress! + base + position
            (at + 1).moveInitialize(from: at, count: count - position)
            at.initialize(to: child)
        }
        inners[Int(parent)].count += 1
        setParent(parent, of: child, level: level)
    }

    private mutating func allocateLeaf() -> Int32 {
        precondition(leaves.count < Int(Int32.max) / Self.leafCapacity, "SpanTree: too many leaves")
        leaves.reserveGrowingByAThird(adding: 1)
        leaves.append(Leaf())
        // A leaf reads only its first `count` slots, each written when the
        // span goes in: filling the rest first cost a split 72 stores.
        spans.appendUnwritten(count: Self.leafCapacity)
        return Int32(leaves.count - 1)
    }

    private mutating func allocateInner() -> Int32 {
        inners.append(Inner())
        children.append(contentsOf: repeatElement(-1, count: Self.fanout))
        return Int32(inners.count - 1)
    }
}

extension Array {
    /// Makes room for `extra` more elements, as `grownCapacity` says: for
    /// the arrays that grow with a large document (text content, the tree's
    /// leaves). The test for room is inlined, the growth a call: as a call
    /// itself, the test cost a merge's one-letter insert 22 instructions
    /// (merge-k2-m1000, HISTORY.md, review217).
    @inlinable @inline(__always)
    mutating func reserveGrowingByAThird(adding extra: Int) {
        guard count + extra > capacity else { return }
        growByAThird(adding: extra)
    }

    /// `reserveGrowingByAThird(adding:)` once the array is found full.
    @inlinable @inline(never)
    mutating func growByAThird(adding extra: Int) {
        reserveCapacity(Swift.max(count + extra, grownCapacity(capacity, stride: MemoryLayout<Element>.stride)))
    }
}

/// The room a full array of `capacity` elements of `stride` bytes makes:
/// double while small, as `append` does, but a third more once it holds
/// 4 MiB. The arrays that hold most of a large document then keep at most a
/// quarter of their memory spare instead of half, for two more copies of
/// each element in all; many small copies would cost more than they save.
/// (`Arena` grows in its own steps.)
@usableFromInline
func grownCapacity(_ capacity: Int, stride: Int) -> Int {
    capacity * stride >= 4 << 20 ? capacity + capacity / 3 : 2 * capacity
}

/// Whether room for `capacity` elements holding `count` is worth giving
/// back: more than a sixteenth of them spare (malloc rounds every block up,
/// so a smaller block would keep some too).
@usableFromInline
func isWorthShrinking(count: Int, capacity: Int) -> Bool {
    capacity - count > count / 16
}

/// A copy of `array` without spare capacity; `array` itself when
/// `isWorthShrinking` says its slack is small.
@usableFromInline
func compacted<T>(_ array: [T]) -> [T] {
    guard isWorthShrinking(count: array.count, capacity: array.capacity) else { return array }
    return Array(unsafeUninitializedCapacity: array.count) { buffer, initialized in
        initialized = buffer.initialize(fromContentsOf: array)
    }
}
