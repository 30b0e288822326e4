extension SpanTree {
    /// A run of new elements whose content is already in the content buffer.
    @usableFromInline
    struct NewRun: Sendable {
        @usableFromInline var id: OpID
        @usableFromInline var lamport: UInt64
        @usableFromInline var contentStart: Int
        @usableFromInline var length: Int
        @usableFromInline var utf16: Int
        @usableFromInline var utf8: Int

        @inlinable
        init(id: OpID, lamport: UInt64, contentStart: Int, length: Int, utf16: Int, utf8: Int) {
            self.id = id
            self.lamport = lamport
            self.contentStart = contentStart
            self.length = length
            self.utf16 = utf16
            self.utf8 = utf8
        }
    }

    /// Checks that `run` can be added (ids and lamports do not overflow, no
    /// id is present yet) and makes its span.
    @inline(__always)
    mutating func makeSpan(_ run: NewRun, isDeleted: Bool = false) throws(SequenceError) -> Span {
        let span = try checkedSpan(run, isDeleted: isDeleted)
        if let present = ids.first(present: true, replica: span.replica, counters: span.counter..<span.counterEnd) {
            throw .duplicateElement(OpID(replica: run.id.replica, counter: present))
        }
        return span
    }

    /// `run`'s span, after checking that its ids, lamports and sizes do not
    /// overflow; interns its replica. Does not look for ids already present.
    @inline(__always)
    mutating func checkedSpan(_ run: NewRun, isDeleted: Bool) throws(SequenceError) -> Span {
        let length = UInt64(run.length)
        guard run.length > 0, run.length < Int(Int32.max),
              run.id.counter <= UInt64.max - length, run.lamport <= UInt64.max - length,
              run.contentStart + run.length < Int(Int32.max), run.utf8 < Int(Int32.max)
        else { throw .invalidRun(run.id) }
        let replica = ids.intern(run.id.replica)
        return Span(counter: run.id.counter, lamport: run.lamport, contentStart: Int32(run.contentStart),
                    length: Int32(run.length), utf16: Int32(run.utf16), utf8: Int32(run.utf8),
                    replica: replica, isDeleted: isDeleted)
    }

    /// Local insert before visible index `index`, right after the visible
    /// element `index - 1` (before any tombstones after it). Returns the
    /// origin: the id of that element, nil at the head.
    @usableFromInline
    mutating func insertLocal(at index: Int, _ run: NewRun, measure: Measure) throws(SequenceError) -> OpID? {
        let typedOn = index > 0 ? editPoint(endingAt: index) : nil
        // An edit point ending at `index` shows that it is in range.
        guard typedOn != nil || (index >= 0 && index <= summary.count) else { throw .indexOutOfRange(index) }
        let span = try makeSpan(run)
        let origin: OpID?
        let placed: (leaf: Int32, slot: Int)
        if index == 0 {
            // Everything after the head moves, so no remembered leaf stays valid.
            cursor = nil
            origin = nil
            placed = insert(span, at: firstLeaf, 0, offset: 0, measure: measure)
        } else if let point = typedOn {
            // Typing on: the new elements go right after the edit point's span.
            let last = self.span(point.leaf, point.slot)
            origin = OpID(replica: replicaID(last.replica), counter: last.counterEnd - 1)
            if last.canAbsorb(span) {
                // The usual keystroke: the span grows and stays the edit
                // point, with the same elements before it.
                extend(point.leaf, point.slot, with: span)
                return origin
            }
            placed = insert(span, at: point.leaf, point.slot + 1, offset: 0, measure: measure)
        } else {
            let (leaf, slot, offset) = locateForEdit(index - 1)
            let originSpan = self.span(leaf, slot)
            origin = OpID(replica: replicaID(originSpan.replica), counter: originSpan.counter + UInt64(offset))
            placed = insert(span, after: leaf, slot, offset: offset, measure: measure)
        }
        // The new elements end their span (a new one, or one they extended).
        let length = Int(self.span(placed.leaf, placed.slot).length)
        editPoint = EditPoint(leaf: placed.leaf, slot: placed.slot, before: index + run.length - length)
        return origin
    }

    /// The edit point, if its span is visible and ends right before visible
    /// index `index`: typing on after the last local edit. (Inlined: a call
    /// from a mutating method took a copy of the whole tree struct.)
    @inline(__always)
    private func editPoint(endingAt index: Int) -> EditPoint? {
        guard let point = editPoint, point.slot < Int(leaves[Int(point.leaf)].count) else { return nil }
        let last = span(point.leaf, point.slot)
        return !last.isDeleted && point.before + Int(last.length) == index ? point : nil
    }

    /// Remote insert: integrates `run` after `origin` (nil: the head) by the
    /// RGA rule, skipping what follows the origin while its stamp is greater.
    /// `checkingOriginStamp` refuses a run whose Lamport value is not above
    /// the origin's, read here from the origin's span, which the insert
    /// finds anyway. Nothing changes if it throws.
    @usableFromInline
    mutating func insertRemote(origin: OpID?, _ run: NewRun, checkingOriginStamp: Bool, measure: Measure) throws(SequenceError) {
        var leaf = firstLeaf
        var slot = 0
        var originOffset: Int?
        if let origin {
            guard let found = locateNearHint(origin) else { throw .unknownElement(origin) }
            (leaf, slot) = found
            let originSpan = span(leaf, slot)
            originOffset = Int(origin.counter - originSpan.counter)
            if checkingOriginStamp, run.lamport <= originSpan.lamport + UInt64(originOffset!) {
                throw .stampNotAboveOrigin(origin)
            }
        }
        let span = try makeSpan(run)
        cursor = nil
        editPoint = nil
        let stamp = Stamp(lamport: run.lamport, replica: run.id.replica)
        if let offset = originOffset {
            let originSpan = self.span(leaf, slot)
            // Stamps rise along a span, so if the element after the origin is
            // greater than the new one, all the rest of its span is too.
            if offset + 1 < Int(originSpan.length), !(stamp < Stamp(
                lamport: originSpan.lamport + UInt64(offset) + 1, replica: replicaID(originSpan.replica))) {
                insert(span, at: leaf, slot, offset: offset + 1, measure: measure)
                return
            }
            slot += 1
        }
        // At a span boundary: skip whole spans whose first (smallest) stamp
        // is greater, and whole leaves whose spans all start greater.
        while let next = nextSpan(after: leaf, slot - 1) {
            if next.slot == 0, stamp < leaves[Int(next.leaf)].lowestStamp {
                (leaf, slot) = (next.leaf, Int(leaves[Int(next.leaf)].count))
                continue
            }
            guard stamp < self.stamp(of: self.span(next.leaf, next.slot)) else { break }
            (leaf, slot) = (next.leaf, next.slot + 1)
        }
        insert(span, at: leaf, slot, offset: 0, measure: measure)
    }

    /// The span holding element `id`, found as remote operations find
    /// their elements (the replica looked up last, `foundHint`), or nil if
    /// the tree has no such element. (Inlined: every remote insert comes
    /// through here, and as a call it cost merges of concurrent edits 0.3 %.)
    @inline(__always)
    mutating func locateNearHint(_ id: OpID) -> (leaf: Int32, slot: Int)? {
        guard let replica = ids.cachedReplicaIndex(of: id.replica) else { return nil }
        let leaf = ids.leaf(replica: replica, counter: id.counter)
        guard leaf >= 0 else { return nil }
        return (leaf, slotNearHint(of: replica, id.counter, in: leaf))
    }

    /// Inserts `span` right after element `offset` of the span at (`leaf`,
    /// `slot`). Returns where the new elements are.
    private mutating func insert(_ span: Span, after leaf: Int32, _ slot: Int, offset: Int, measure: Measure) -> (leaf: Int32, slot: Int) {
        if offset + 1 < Int(self.span(leaf, slot).length) {
            return insert(span, at: leaf, slot, offset: offset + 1, measure: measure)
        }
        return insert(span, at: leaf, slot + 1, offset: 0, measure: measure)
    }

    /// Inserts a new `span` before element `offset` of the span at (`leaf`,
    /// `slot`), splitting that span if `offset > 0`; with `offset == 0`,
    /// `slot` may be the leaf's count (the end of the leaf). Extends the
    /// previous span instead when the new one continues it (typing).
    /// Returns where the new elements are. (Never inlined: a copy in each
    /// of its callers made a merge miss the instruction cache far more.)
    @discardableResult @inline(never)
    private mutating func insert(_ span: Span, at leaf: Int32, _ slot: Int, offset: Int, measure: Measure) -> (leaf: Int32, slot: Int) {
        let base = Int(leaf) * Self.leafCapacity
        if offset == 0, slot > 0, spans[base + slot - 1].canAbsorb(span) {
            extend(leaf, slot - 1, with: span)
            return (leaf, slot - 1)
        }
        var (leaf, slot) = makeRoom(leaf, slot, extra: offset == 0 ? 1 : 2, isGap: offset == 0)
        if offset > 0 {
            let (left, right) = split(self.span(leaf, slot), at: offset, measure: measure)
            spans[Int(leaf) * Self.leafCapacity + slot] = left
            slot += 1
            place(span, then: right, leaf, slot)
        } else {
            place(span, leaf, slot)
        }
        // Only a span no later than the bound can lower it (most new spans
        // are later): its replica's id is looked up, and the leaf written, for those alone.
        if span.lamport <= leaves[Int(leaf)].lowestStamp.lamport, stamp(of: span) < leaves[Int(leaf)].lowestStamp {
            leaves[Int(leaf)].lowestStamp = stamp(of: span)
        }
        ids.setLeaf(leaf, replica: span.replica, counters: span.counter..<span.counterEnd)
        add(span.summary, to: leaf)
        return (leaf, slot)
    }

    /// Appends `span`, which continues it, to the span at (`leaf`, `slot`).
    @inline(__always)
    private mutating func extend(_ leaf: Int32, _ slot: Int, with span: Span) {
        spans[Int(leaf) * Self.leafCapacity + slot].absorb(span)
        ids.setLeaf(leaf, replica: span.replica, counters: span.counter..<span.counterEnd)
        add(span.summary, to: leaf)
    }

    /// The first `offset` elements of `span` and the rest; `offset` is
    /// inside the span (`0 < offset < span.length`).
    ///
    /// A span that is not uniform has the shorter part measured and the
    /// other's widths taken from the span's: a long paste cut again and
    /// again near its end (a text diff applies its edits last first) had
    /// the part before each cut measured, the whole span a cut, and a few
    /// thousand replacements in an 86 KB note took seconds.
    ///
    /// Unchecked arithmetic: both parts lie within the span, whose ids,
    /// Lamport values, content positions and widths were checked to fit
    /// when it was made.
    @inline(__always)
    func split(_ span: Span, at offset: Int, measure: Measure) -> (Span, Span) {
        var left = span
        var right = span
        let offset32 = Int32(truncatingIfNeeded: offset)
        left.length = offset32
        right.length = span.length &- offset32
        right.counter &+= UInt64(truncatingIfNeeded: offset)
        right.lamport &+= UInt64(truncatingIfNeeded: offset)
        right.contentStart &+= offset32
        if span.isUniform {
            left.utf16 = offset32
            left.utf8 = offset32
        } else {
            // One call for either side, so that each inlined split measures in one place.
            let measuresLeft = left.length <= right.length
            let measured = measuresLeft ? left : right
            let widths = measure(Int(measured.contentStart), Int(measured.length))
            let utf16 = Int32(truncatingIfNeeded: widths.utf16)
            let utf8 = Int32(truncatingIfNeeded: widths.utf8)
            left.utf16 = measuresLeft ? utf16 : span.utf16 &- utf16
            left.utf8 = measuresLeft ? utf8 : span.utf8 &- utf8
        }
        right.utf16 = span.utf16 &- left.utf16
        right.utf8 = span.utf8 &- left.utf8
        return (left, right)
    }
}
