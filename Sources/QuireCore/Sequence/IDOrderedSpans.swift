/// Where a sequence's elements are in its content buffer, by id: its spans
/// sorted by replica, then counter. For reading the content of many runs
/// of ids, as a history's encode reads the text of every insert: the id
/// index finds an id in a few hundred instructions (its page, its run of
/// entries, the span in the leaf), and a run of typing that later edits
/// split is as many spans as pieces. In id order, a run's pieces are next
/// to each other, and the next run read is usually right after.
struct IDOrderedSpans {
    private struct Piece {
        var counter: UInt64
        var replica: UInt32
        var contentStart: Int32
        var length: Int32
    }

    private var pieces: [Piece] = []
    /// The piece after the last one `find` used.
    private var next = 0
    /// The content ranges of the elements `find` found last.
    private(set) var ranges: [Range<Int>] = []

    init(_ tree: SpanTree) {
        pieces.reserveCapacity(tree.spanCount)
        var leaf = tree.firstLeaf
        while leaf >= 0 {
            for slot in 0..<Int(tree.leaves[Int(leaf)].count) {
                let span = tree.span(leaf, slot)
                pieces.append(Piece(counter: span.counter, replica: span.replica, contentStart: span.contentStart, length: span.length))
            }
            leaf = tree.leaves[Int(leaf)].next
        }
        pieces = Self.sortedByID(pieces)
    }

    /// `pieces` by replica, then counter: a radix sort, a byte of the key
    /// at a time from the counter's lowest, through as many bytes as the
    /// highest counter and replica take. (`sort(by:)` took about 500
    /// instructions a span, as much as the lookups it saves.)
    private static func sortedByID(_ pieces: [Piece]) -> [Piece] {
        let highestCounter = pieces.reduce(0) { max($0, $1.counter) }
        let highestReplica = pieces.reduce(0) { max($0, $1.replica) }
        func bytes(_ value: UInt64) -> Int { (UInt64.bitWidth - value.leadingZeroBitCount + 7) / 8 }
        // Counter bytes, then replica bytes: each pass keeps the order of the passes before among equal bytes.
        let passes = (0..<bytes(highestCounter)).map { (isReplica: false, shift: UInt64($0 * 8)) }
            + (0..<bytes(UInt64(highestReplica))).map { (isReplica: true, shift: UInt64($0 * 8)) }
        var sorted = pieces, spare = pieces
        for pass in passes {
            sorted.withUnsafeBufferPointer { from in
                spare.withUnsafeMutableBufferPointer { to in
                    func digit(_ piece: Piece) -> Int {
                        Int(truncatingIfNeeded: ((pass.isReplica ? UInt64(piece.replica) : piece.counter) >> pass.shift) & 0xFF)
                    }
                    var starts = [Int](repeating: 0, count: 257)
                    for piece in from { starts[digit(piece) + 1] += 1 }
                    for index in 1..<starts.count { starts[index] += starts[index - 1] }
                    for piece in from {
                        let digit = digit(piece)
                        to[starts[digit]] = piece
                        starts[digit] += 1
                    }
                }
            }
            swap(&sorted, &spare)
        }
        return sorted
    }

    /// Sets `ranges` to where the content of the elements `run` is, whose
    /// replica has index `replica` in the tree, a piece at a time; false if
    /// one of them is missing.
    mutating func find(_ run: IDRun, replica: UInt32) -> Bool {
        ranges.removeAll(keepingCapacity: true)
        var counter = run.start.counter, left = run.length
        var index = holds(next, replica, counter) ? next : firstIndex(replica, counter)
        while left > 0 {
            guard holds(index, replica, counter) else { return false }
            let piece = pieces[index]
            let offset = Int(counter - piece.counter)
            let taken = min(Int(piece.length) - offset, left)
            let start = Int(piece.contentStart) + offset
            ranges.append(start..<start + taken)
            left -= taken
            counter += UInt64(taken)
            index += 1
        }
        next = index
        return true
    }

    /// Whether piece `index` holds `counter` of `replica`.
    @inline(__always)
    private func holds(_ index: Int, _ replica: UInt32, _ counter: UInt64) -> Bool {
        guard index < pieces.count else { return false }
        let piece = pieces[index]
        return piece.replica == replica && counter >= piece.counter && counter - piece.counter < UInt64(piece.length)
    }

    /// The last piece that starts at or before `counter` of `replica` (the
    /// only one that can hold it), or `pieces.count` if there is none.
    private func firstIndex(_ replica: UInt32, _ counter: UInt64) -> Int {
        var (low, high) = (0, pieces.count)
        while low < high {
            let middle = (low + high) / 2
            let piece = pieces[middle]
            if piece.replica < replica || (piece.replica == replica && piece.counter <= counter) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low > 0 ? low - 1 : pieces.count
    }
}
