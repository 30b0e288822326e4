extension SpanTree {
    /// Local delete of the visible elements `range`. Returns the deleted ids
    /// in document order, as runs of consecutive counters of one replica.
    @usableFromInline
    mutating func deleteLocal(_ range: Range<Int>, measure: Measure) throws(SequenceError) -> DeletedRuns {
        guard range.lowerBound >= 0 else { throw .indexOutOfRange(range.lowerBound) }
        guard range.upperBound <= summary.count else { throw .indexOutOfRange(range.upperBound) }
        var deleted = DeletedRuns()
        guard !range.isEmpty else { return deleted }
        var (leaf, slot, offset) = locateForEdit(range.lowerBound)
        var remaining = range.count
        // The run being extended; it joins `deleted` when the next does not continue it.
        var current: IDRun?
        while true {
            let span = self.span(leaf, slot)
            if !span.isDeleted {
                let n = min(Int(span.length) - offset, remaining)
                let start = OpID(replica: replicaID(span.replica), counter: span.counter + UInt64(offset))
                if let run = current, run.start.replica == start.replica,
                   run.start.counter + UInt64(run.length) == start.counter {
                    current!.length += n
                } else {
                    if let run = current { deleted.append(run) }
                    current = IDRun(start: start, length: n)
                }
                (leaf, slot) = markDeleted(leaf, slot, offset: offset, count: n, measure: measure)
                remaining -= n
                if remaining == 0 {
                    // Every visible element between the start and this
                    // tombstone is gone: `range.lowerBound` are before it.
                    editPoint = EditPoint(leaf: leaf, slot: slot, before: range.lowerBound)
                    deleted.append(current!)
                    return deleted
                }
            }
            guard let next = nextSpan(after: leaf, slot) else {
                preconditionFailure("SpanTree: summaries disagree with spans")
            }
            (leaf, slot, offset) = (next.leaf, next.slot, 0)
        }
    }

    /// Remote delete of `run`'s ids. Throws, before changing anything, if one
    /// is missing. `isNextEdit`: `run` is a delete after the first edit of
    /// a change, which mostly follows the change's previous delete in the
    /// document, so it is looked for there first. Returns how many were
    /// visible until now.
    @usableFromInline
    mutating func deleteRemote(_ run: IDRun, isNextEdit: Bool, measure: Measure) throws(SequenceError) -> Int {
        guard run.length > 0 else { return 0 }
        guard run.start.counter <= UInt64.max - UInt64(run.length) else { throw .invalidRun(run.start) }
        let end = run.start.counter + UInt64(run.length)
        guard let replica = ids.cachedReplicaIndex(of: run.start.replica),
              var (leaf, slot) = locate(replica, run.start.counter, nearLastTombstone: isNextEdit)
        else { throw .unknownElement(run.start) }
        // The rest of the run is looked up unless the span found holds it all (most deletes).
        let found = span(leaf, slot)
        if end - found.counter > UInt64(found.length),
           let missing = ids.first(present: false, replica: replica, counters: run.start.counter + 1..<end) {
            throw .unknownElement(OpID(replica: run.start.replica, counter: missing))
        }
        cursor = nil
        editPoint = nil
        var counter = run.start.counter
        var newlyDeleted = 0
        while true {
            let span = self.span(leaf, slot)
            let offset = Int(counter - span.counter)
            let n = min(Int(span.length) - offset, Int(end - counter))
            if !span.isDeleted {
                (leaf, slot) = markDeleted(leaf, slot, offset: offset, count: n, measure: measure)
                newlyDeleted += n
            }
            foundHint = (leaf, slot)
            counter += UInt64(n)
            guard counter < end else { break }
            // The rest of a run follows its first part in the document, past tombstones.
            (leaf, slot) = locate(replica, counter, nearLastTombstone: true)!
        }
        return newlyDeleted
    }

    /// The span holding `counter` of `replica`, or nil if the tree holds
    /// no such element. With `nearLastTombstone`, it is looked for first
    /// around `foundHint` (after a delete, the tombstone it made last) and
    /// a few spans on, which skips the id index; callers ask for that only
    /// where it mostly is there, since a miss adds those comparisons to the lookup.
    private mutating func locate(_ replica: UInt32, _ counter: UInt64, nearLastTombstone: Bool) -> (leaf: Int32, slot: Int)? {
        let hint = foundHint
        if nearLastTombstone, hint.leaf >= 0, Int(hint.leaf) < leaves.count {
            let count = Int(leaves[Int(hint.leaf)].count)
            if let slot = slot(of: replica, counter, in: hint.leaf, among: (hint.slot - 1 ..< hint.slot + 3).clamped(to: 0..<count)) {
                return (hint.leaf, slot)
            }
            let next = leaves[Int(hint.leaf)].next
            if hint.slot + 3 > count, next >= 0,
               let slot = slot(of: replica, counter, in: next, among: 0..<min(2, Int(leaves[Int(next)].count))) {
                return (next, slot)
            }
        }
        let leaf = ids.leaf(replica: replica, counter: counter)
        guard leaf >= 0 else { return nil }
        return (leaf, slotNearHint(of: replica, counter, in: leaf))
    }

    /// Turns elements `offset ..< offset + count` of the visible span at
    /// (`leaf`, `slot`) into a tombstone, splitting off the parts that stay
    /// visible and merging the tombstone with tombstone neighbours that
    /// continue it (deleting characters one by one yields one span again).
    /// Returns where the tombstone span is.
    @discardableResult
    private mutating func markDeleted(_ leaf: Int32, _ slot: Int, offset: Int, count: Int, measure: Measure) -> (leaf: Int32, slot: Int) {
        let original = span(leaf, slot)
        if offset == 0, count == Int(original.length) {
            // The whole span (most spans of a long remote delete): no split, no room to make.
            add(Self.hiding(original), to: leaf)
            spans[Int(leaf) * Self.leafCapacity + slot].isDeleted = true
            return (leaf, mergeNeighbours(leaf, slot))
        }
        let keepsTail = offset + count < Int(original.length)
        if (offset > 0) != keepsTail, let moved = moveBoundary(leaf, slot, offset: offset, count: count, measure: measure) {
            return (leaf, moved)
        }
        var (leaf, slot) = makeRoom(leaf, slot, extra: (offset > 0 ? 1 : 0) + (keepsTail ? 1 : 0))
        var deleted = original
        if offset > 0 {
            let (head, rest) = split(deleted, at: offset, measure: measure)
            spans[Int(leaf) * Self.leafCapacity + slot] = head
            slot += 1
            deleted = rest
        }
        var tail: Span?
        if keepsTail {
            let (middle, rest) = split(deleted, at: count, measure: measure)
            deleted = middle
            tail = rest
        }
        add(Self.hiding(deleted), to: leaf)
        deleted.isDeleted = true
        if offset > 0 {
            if let tail { place(deleted, then: tail, leaf, slot) } else { place(deleted, leaf, slot) }
        } else {
            // No head, and not the whole span: it keeps a tail.
            spans[Int(leaf) * Self.leafCapacity + slot] = deleted
            place(tail!, leaf, slot + 1)
        }
        // No neighbour merges with the tombstone: where the span was cut, a
        // part that stays visible is next to it, and where it was not,
        // `moveBoundary` found no tombstone that continues it (and a leaf
        // split in `makeRoom` only takes neighbours away).
        return (leaf, slot)
    }

    /// The fast path of `markDeleted` for backspacing and deleting forwards:
    /// when the elements to delete are the tail of their span and the
    /// tombstone right after it continues them (or the head, continuing the
    /// tombstone right before), they move over to that tombstone: no split,
    /// no shifting. Returns the tombstone's slot, or nil if this does not apply.
    /// Inlined: it is most deletes, and a call cost a tenth of one.
    @inline(__always)
    private mutating func moveBoundary(_ leaf: Int32, _ slot: Int, offset: Int, count: Int, measure: Measure) -> Int? {
        let base = Int(leaf) * Self.leafCapacity
        let original = spans[base + slot]
        if offset > 0 {
            guard slot + 1 < Int(leaves[Int(leaf)].count) else { return nil }
            var (kept, deleted) = split(original, at: offset, measure: measure)
            deleted.isDeleted = true
            guard deleted.canAbsorb(spans[base + slot + 1]) else { return nil }
            add(Self.hiding(deleted), to: leaf)
            deleted.absorb(spans[base + slot + 1])
            spans[base + slot] = kept
            spans[base + slot + 1] = deleted
            return slot + 1
        }
        guard slot > 0, spans[base + slot - 1].isDeleted else { return nil }
        var (deleted, kept) = split(original, at: count, measure: measure)
        deleted.isDeleted = true
        guard spans[base + slot - 1].canAbsorb(deleted) else { return nil }
        spans[base + slot - 1].absorb(deleted)
        spans[base + slot] = kept
        add(Self.hiding(deleted), to: leaf)
        return slot - 1
    }

    /// The summary change when `span`'s elements stop being visible.
    private static func hiding(_ span: Span) -> Summary {
        Summary(count: -Int(span.length), utf16: -Int(span.utf16), utf8: -Int(span.utf8), total: 0)
    }

    /// Merges the span at `slot` with neighbours in the same leaf that it
    /// continues or that continue it. Returns the merged span's slot.
    private mutating func mergeNeighbours(_ leaf: Int32, _ slot: Int) -> Int {
        let base = Int(leaf) * Self.leafCapacity
        var slot = slot
        if slot + 1 < Int(leaves[Int(leaf)].count), spans[base + slot].canAbsorb(spans[base + slot + 1]) {
            spans[base + slot].absorb(spans[base + slot + 1])
            remove(leaf, slot + 1)
        }
        if slot > 0, spans[base + slot - 1].canAbsorb(spans[base + slot]) {
            spans[base + slot - 1].absorb(spans[base + slot])
            remove(leaf, slot)
            slot -= 1
        }
        return slot
    }
}
