/// The edits that turn one sequence into another: a shortest edit script
/// (Myers' O(ND) algorithm) after trimming the common prefix and suffix.
///
/// Used wherever a whole new value replaces an old one (a Codable field, a
/// note edited in `$EDITOR`), so that the change records only what was
/// typed or deleted, and concurrent edits elsewhere in the text survive.
public enum TextDiff {
    /// One edit, in positions of the sequence as it is when the edit applies
    /// (edits are listed in the order to apply them).
    public enum Edit: Hashable, Sendable {
        case delete(at: Int, count: Int)
        case insert(at: Int, count: Int, from: Int)  // `count` elements of the new sequence starting at `from`
    }

    /// Past this many differences, the middle is replaced whole: the script
    /// is then not minimal, but the time stays O((n + m) * maxDistance).
    public static let maxDistance = 2_000

    /// Edits turning `old` into `new`, applied left to right.
    public static func edits<Element: Equatable>(from old: [Element], to new: [Element]) -> [Edit] {
        var prefix = 0
        while prefix < old.count, prefix < new.count, old[prefix] == new[prefix] { prefix += 1 }
        var suffix = 0
        while suffix < old.count - prefix, suffix < new.count - prefix,
              old[old.count - 1 - suffix] == new[new.count - 1 - suffix] { suffix += 1 }
        let a = old[prefix..<(old.count - suffix)]
        let b = new[prefix..<(new.count - suffix)]
        if a.isEmpty && b.isEmpty { return [] }

        // Runs of kept elements: (start in old, start in new, length), in order.
        let kept = commonRuns(a, b) ?? []
        var edits: [Edit] = []
        var shift = 0            // how far insertions and deletions so far moved positions
        var oldPosition = a.startIndex
        var newPosition = b.startIndex
        for (oldStart, newStart, length) in kept + [(a.endIndex, b.endIndex, 0)] {
            if oldStart > oldPosition {
                edits.append(.delete(at: oldPosition + shift, count: oldStart - oldPosition))
                shift -= oldStart - oldPosition
            }
            if newStart > newPosition {
                edits.append(.insert(at: oldStart + shift, count: newStart - newPosition, from: newPosition))
                shift += newStart - newPosition
            }
            oldPosition = oldStart + length
            newPosition = newStart + length
        }
        return edits
    }

    /// Myers' greedy forward search; `nil` past `maxDistance`.
    private static func commonRuns<Element: Equatable>(_ a: ArraySlice<Element>, _ b: ArraySlice<Element>) -> [(Int, Int, Int)]? {
        let n = a.count, m = b.count
        let limit = min(n + m, maxDistance)
        let offset = limit + 1
        var frontier = [Int](repeating: 0, count: 2 * limit + 3)
        var trace: [[Int]] = []
        var found = false
        search: for distance in 0...limit {
            trace.append(frontier)
            for k in stride(from: -distance, through: distance, by: 2) {
                var x = (k == -distance || (k != distance && frontier[offset + k - 1] < frontier[offset + k + 1]))
                    ? frontier[offset + k + 1] : frontier[offset + k - 1] + 1
                var y = x - k
                while x < n, y < m, a[a.startIndex + x] == b[b.startIndex + y] { x += 1; y += 1 }
                frontier[offset + k] = x
                if x >= n && y >= m { found = true; break search }
            }
        }
        guard found else { return nil }
        // Walk back through the saved frontiers to recover the diagonal runs.
        var runs: [(Int, Int, Int)] = []
        var x = n, y = m
        for distance in stride(from: trace.count - 1, through: 0, by: -1) {
            let previous = trace[distance]
            let k = x - y
            let previousK = (k == -distance || (k != distance && previous[offset + k - 1] < previous[offset + k + 1])) ? k + 1 : k - 1
            let previousX = distance == 0 ? 0 : previous[offset + previousK]
            let previousY = previousX - previousK
            let startX = distance == 0 ? 0 : (previousK == k + 1 ? previousX : previousX + 1)
            let startY = startX - k
            if x > startX { runs.append((a.startIndex + startX, b.startIndex + startY, x - startX)) }
            x = previousX
            y = previousY
            if distance == 0 { break }
        }
        return runs.reversed()
    }
}

extension Transaction {
    /// Makes a text object hold `newValue`, recording only the scalars that
    /// differ (see `TextDiff`), so concurrent edits to unchanged parts merge.
    public mutating func setText(_ text: ObjectID, to newValue: some StringProtocol) throws(DocumentError) {
        let old = Array(try document.text(text).unicodeScalars)
        let new = Array(newValue.unicodeScalars)
        for edit in TextDiff.edits(from: old, to: new) {
            switch edit {
            case let .delete(at, count):
                try deleteText(text, at: at, count: count)
            case let .insert(at, count, from):
                var inserted = String.UnicodeScalarView()
                inserted.append(contentsOf: new[from..<(from + count)])
                try insertText(text, at: at, String(inserted))
            }
        }
    }
}
