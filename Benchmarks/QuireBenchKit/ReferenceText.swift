/// The plainest possible replay of a sequential trace: a scalar array edited
/// in place. It checks that a trace file is well formed (every patch in range,
/// the result equal to `endContent`) independently of Quire's CRDT.
///
/// The array is a gap buffer: the free space sits at the cursor, so typing
/// (edits near the previous one) moves only the scalars between the two
/// positions instead of half the text. A flat array would take seconds on
/// automerge-paper.
public struct ReferenceText {
    private var storage: [Unicode.Scalar]
    private var gapStart = 0
    private var gapEnd: Int

    public init() {
        storage = []
        gapEnd = 0
    }

    public var count: Int { storage.count - (gapEnd - gapStart) }

    public var scalars: [Unicode.Scalar] { Array(storage[..<gapStart] + storage[gapEnd...]) }

    /// Deletes then inserts, as a trace patch does; throws if it reaches past the end.
    public mutating func apply(_ patch: Patch) throws(PatchOutOfRange) {
        guard patch.position + patch.deleteCount <= count else {
            throw PatchOutOfRange(position: patch.position, deleteCount: patch.deleteCount, length: count)
        }
        moveGap(to: patch.position)
        gapEnd += patch.deleteCount
        if gapEnd - gapStart < patch.inserted.count { grow(by: patch.inserted.count) }
        storage.replaceSubrange(gapStart..<gapStart + patch.inserted.count, with: patch.inserted)
        gapStart += patch.inserted.count
    }

    /// Moves the scalars between the gap and `position` across the gap.
    /// Copies go element by element: the ranges may overlap, and a slice of
    /// `storage` passed to `replaceSubrange` would copy the whole buffer.
    private mutating func moveGap(to position: Int) {
        if position < gapStart {
            let moved = gapStart - position
            for offset in (0..<moved).reversed() { storage[gapEnd - moved + offset] = storage[position + offset] }
            gapStart = position
            gapEnd -= moved
        } else if position > gapStart {
            let moved = position - gapStart
            for offset in 0..<moved { storage[gapStart + offset] = storage[gapEnd + offset] }
            gapStart = position
            gapEnd += moved
        }
    }

    /// Widens the gap to hold at least `needed` more scalars, doubling so that
    /// growth stays amortised O(1) per scalar.
    private mutating func grow(by needed: Int) {
        let extra = max(needed, storage.count, 64)
        storage.insert(contentsOf: repeatElement(" ", count: extra), at: gapEnd)
        gapEnd += extra
    }
}

/// A patch that deletes past the end of the text or starts beyond it.
public struct PatchOutOfRange: Error, CustomStringConvertible {
    public var position: Int
    public var deleteCount: Int
    public var length: Int
    public var description: String {
        "patch [\(position), \(deleteCount), …] is out of range for a text of \(length) scalars"
    }
}

extension SequentialTrace {
    /// Replays the trace on a `ReferenceText`. Throws a `TraceFormatError`
    /// naming the patch if one is out of range.
    public func referenceReplay() throws(TraceFormatError) -> [Unicode.Scalar] {
        var text = ReferenceText()
        for (txnIndex, txn) in txns.enumerated() {
            for (patchIndex, patch) in txn.enumerated() {
                do { try text.apply(patch) } catch {
                    throw TraceFormatError(description: "txns[\(txnIndex)].patches[\(patchIndex)]: \(error)")
                }
            }
        }
        return text.scalars
    }
}
