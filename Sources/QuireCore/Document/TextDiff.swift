/// The edits that turn one sequence into another: a shortest edit script
/// (Myers' O(ND) algorithm) after trimming the common prefix and suffix.
///
/// Used wherever a whole new value replaces an old one (a Codable field or
/// list, a note edited in `$EDITOR`), so that the change records only what
/// was typed or deleted, and concurrent edits elsewhere survive.
///
/// One search stops after `maxDistance` differences. Past that, text is
/// compared line by line, then word by word, and the lines (or words) that
/// differ are compared scalar by scalar: a long paste at the top of a note
/// and a fix at its bottom leave the text between them alone. Where too
/// many lines differ but both texts have as many, line i is compared with
/// line i (a word replaced throughout a note). What differs too much is
/// then searched a search at a time, each going on from the furthest point
/// the last reached: a text word by word (one long line where thousands of
/// words changed), the words that differ then scalar by scalar; a list,
/// which has no levels, or a text sharing no word, element by element.
/// Nothing is replaced whole
/// for differing too much: that would bring back whatever another replica
/// deleted there meanwhile, and duplicate what it kept.
public enum TextDiff {
    /// One edit, in positions of the sequence as it is when the edit applies
    /// (edits are listed in the order to apply them).
    public enum Edit: Hashable, Sendable {
        case delete(at: Int, count: Int)
        case insert(at: Int, count: Int, from: Int)  // `count` elements of the new sequence starting at `from`
    }

    /// Past this many differences, one search gives up: the time it takes
    /// stays O((n + m) * maxDistance).
    public static let maxDistance = 2_000

    /// What the searches of one diff share: where each gives up, and the
    /// work they did, counted so that tests can hold it to its bound.
    struct Searches {
        /// Past this many differences, a search gives up.
        let maxDistance: Int
        /// Diagonals visited, and elements matched along them, by every search so far.
        var steps = 0
    }

    /// Edits turning `old` into `new`, applied left to right.
    public static func edits<Element: Equatable>(from old: [Element], to new: [Element]) -> [Edit] {
        var searches = Searches(maxDistance: maxDistance)
        return script(keeping: keptRuns(old[...], new[...], tokenizers: [], searches: &searches), oldCount: old.count, newCount: new.count)
    }

    /// Edits turning the text `old` into `new`, applied left to right,
    /// refined through lines and words when the scalars differ too much.
    public static func edits(from old: [Unicode.Scalar], to new: [Unicode.Scalar]) -> [Edit] {
        var searches = Searches(maxDistance: maxDistance)
        return edits(from: old, to: new, searches: &searches)
    }

    /// `edits(from:to:)` with another search limit, or its steps counted, for tests.
    static func edits(from old: [Unicode.Scalar], to new: [Unicode.Scalar], searches: inout Searches) -> [Edit] {
        let levels = [Tokenizer<Unicode.Scalar>(endingAt: { $0 == "\n" }),
                      Tokenizer<Unicode.Scalar>(endingAt: isWhitespace)]
        return script(keeping: keptRuns(old[...], new[...], tokenizers: levels[...], searches: &searches), oldCount: old.count, newCount: new.count)
    }

    /// Whether `scalar` is Unicode White_Space, which ends a word: ASCII
    /// without the property lookup, which took a tenth of a long line's diff.
    static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII ? scalar == " " || ("\t"..."\r").contains(scalar) : scalar.properties.isWhitespace
    }

    /// A run of elements both sequences keep: where it starts in each, and its length.
    typealias Run = (old: Int, new: Int, length: Int)

    /// The deletes and inserts around the `kept` runs, in order.
    static func script(keeping kept: [Run], oldCount: Int, newCount: Int) -> [Edit] {
        var edits: [Edit] = []
        var shift = 0            // how far insertions and deletions so far moved positions
        var oldPosition = 0
        var newPosition = 0
        for (oldStart, newStart, length) in kept + [(oldCount, newCount, 0)] {
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

    /// The runs `a` and `b` share, in order: their common prefix and
    /// suffix, and between them a shortest script's runs or, past
    /// `maxDistance`, the runs of the first of `tokenizers` whose tokens
    /// differ less, each stretch between them refined with the finer
    /// tokenizers after it; where no tokenizer helps, the runs found a
    /// search at a time from the furthest point the failed search reached.
    static func keptRuns<Element: Equatable>(_ a: ArraySlice<Element>, _ b: ArraySlice<Element>,
                                             tokenizers: ArraySlice<Tokenizer<Element>>, searches: inout Searches) -> [Run] {
        var prefix = 0
        while prefix < a.count, prefix < b.count, a[a.startIndex + prefix] == b[b.startIndex + prefix] { prefix += 1 }
        var suffix = 0
        while suffix < a.count - prefix, suffix < b.count - prefix,
              a[a.endIndex - 1 - suffix] == b[b.endIndex - 1 - suffix] { suffix += 1 }
        let middleA = a.dropFirst(prefix).dropLast(suffix)
        let middleB = b.dropFirst(prefix).dropLast(suffix)
        var runs: [Run] = prefix > 0 ? [(a.startIndex, b.startIndex, prefix)] : []
        if !middleA.isEmpty && !middleB.isEmpty {
            // Lengths further apart than `maxDistance` need more differences
            // than a search allows: it is not tried (a paste of 50,000
            // scalars spent most of its diff on it), and the search on
            // starts from the beginning if no token level helps.
            let first = abs(middleA.count - middleB.count) <= searches.maxDistance
                ? search(middleA, middleB, searches: &searches) : (runs: [], found: false, end: (old: 0, new: 0))
            runs += first.found ? first.runs
                : tokenRuns(middleA, middleB, tokenizers: tokenizers, searches: &searches)
                    ?? first.runs + runsSearchingOn(middleA, middleB, from: first.end, searches: &searches)
        }
        if suffix > 0 { runs.append((middleA.endIndex, middleB.endIndex, suffix)) }
        return runs
    }

    /// The runs of whole tokens `a` and `b` share, by the first of
    /// `tokenizers` that finds any within `maxDistance` or, too many
    /// differing, has as many tokens on both sides to pair in place, or,
    /// at the finest level, keeps any searching on a search at a time;
    /// the stretches between them refined. Nil if no tokenizer does.
    private static func tokenRuns<Element: Equatable>(_ a: ArraySlice<Element>, _ b: ArraySlice<Element>,
                                                      tokenizers: ArraySlice<Tokenizer<Element>>, searches: inout Searches) -> [Run]? {
        for (level, tokenizer) in zip(tokenizers.indices, tokenizers) {
            let (tokensA, tokensB) = tokenizer.split(a, b)
            let (idsA, idsB) = (tokensA.map(\.id)[...], tokensB.map(\.id)[...])
            let finer = tokenizers[(level + 1)...]
            /// `keptTokens` in elements, each stretch between them compared with the finer tokenizers.
            func refined(keeping keptTokens: [Run]) -> [Run] {
                var runs: [Run] = []
                var (oldPosition, newPosition) = (a.startIndex, b.startIndex)
                for (oldToken, newToken, count) in keptTokens {
                    let (oldStart, newStart) = (tokensA[oldToken].start, tokensB[newToken].start)
                    runs += keptRuns(a[oldPosition..<oldStart], b[newPosition..<newStart], tokenizers: finer, searches: &searches)
                    let length = tokensA[oldToken + count - 1].end - oldStart
                    runs.append((oldStart, newStart, length))
                    (oldPosition, newPosition) = (oldStart + length, newStart + length)
                }
                return runs + keptRuns(a[oldPosition...], b[newPosition...], tokenizers: finer, searches: &searches)
            }
            let keptTokens = search(idsA, idsB, searches: &searches)
            if keptTokens.found && !keptTokens.runs.isEmpty {
                return refined(keeping: keptTokens.runs)
            }
            // Too many tokens differ, but both sides have as many (a word
            // replaced on every line of a long note): each token is taken
            // for the one in its place, and the pair refined.
            if tokensA.count == tokensB.count && tokensA.count > 1 {
                return zip(tokensA, tokensB).flatMap { old, new in
                    keptRuns(a[old.start..<old.end], b[new.start..<new.end], tokenizers: finer, searches: &searches)
                }
            }
            // Too many of the finest tokens differ (one long line where
            // thousands of words changed): they are searched on from where
            // the failed search got furthest, as `keptRuns` does with
            // elements, but a word at a time, which takes a fraction of the
            // searches that scalars would; only the words that differ are
            // then compared scalar by scalar.
            if finer.isEmpty {
                let kept = keptTokens.runs + runsSearchingOn(idsA, idsB, from: keptTokens.end, searches: &searches)
                if !kept.isEmpty { return refined(keeping: kept) }
            }
        }
        return nil
    }

    /// Myers' greedy forward search from the starts of `a` and `b`: the
    /// runs of a shortest script (`found`) or, past `maxDistance`, of a
    /// shortest path to the furthest point it reached; `end`, that path's
    /// end in offsets into `a` and `b`, is nil if it got nowhere. Only the
    /// runs are kept, not the frontiers walked back to find them.
    private static func search<Element: Equatable>(_ a: ArraySlice<Element>, _ b: ArraySlice<Element>, searches: inout Searches)
        -> (runs: [Run], found: Bool, end: (old: Int, new: Int)?) {
        let search = Search(a, b, searches: &searches)
        let end = search.found ? (old: a.count, new: b.count) : search.furthest
        return (end.map(search.runs(endingAt:)) ?? [], search.found, end)
    }

    /// The runs `a` and `b` share from `start` (offsets into each, where a
    /// failed search got furthest) on, found a search at a time: each
    /// search that gives up past `maxDistance` keeps its path to the
    /// furthest point it reached, and the next starts there (the heuristic
    /// GNU diff and git use when a search grows too expensive). A search
    /// that gives up after D differences passes at least D elements, so
    /// the searches together cost O(`maxDistance` × (the length of both +
    /// `maxDistance`)), and none holds more than one search's frontiers.
    private static func runsSearchingOn<Element: Equatable>(_ a: ArraySlice<Element>, _ b: ArraySlice<Element>,
                                                            from start: (old: Int, new: Int)?, searches: inout Searches) -> [Run] {
        var runs: [Run] = []
        var next = start.map { (old: a.startIndex + $0.old, new: b.startIndex + $0.new) }
        while let point = next, point.old < a.endIndex, point.new < b.endIndex {
            let found = search(a[point.old...], b[point.new...], searches: &searches)
            runs += found.runs
            next = found.end.map { (old: point.old + $0.old, new: point.new + $0.new) }
        }
        return runs
    }

    /// One run of Myers' greedy forward search, up to `maxDistance`
    /// differences, with the frontier before each step kept to walk back.
    private struct Search<Element: Equatable> {
        let a: ArraySlice<Element>, b: ArraySlice<Element>
        /// Whether it reached the ends of both sequences.
        private(set) var found = false
        /// The frontier before each step, diagonals -distance-1...distance+1 only.
        private var trace: [[Int]] = []
        /// The furthest x on each diagonal after the last step.
        private var frontier: [Int]
        private let offset: Int

        init(_ a: ArraySlice<Element>, _ b: ArraySlice<Element>, searches: inout Searches) {
            (self.a, self.b) = (a, b)
            let n = a.count, m = b.count
            let limit = min(n + m, searches.maxDistance)
            var steps = 0
            defer { searches.steps += steps }
            offset = limit + 1
            frontier = [Int](repeating: 0, count: 2 * limit + 3)
            search: for distance in 0...limit {
                trace.append(Array(frontier[(offset - distance - 1)...(offset + distance + 1)]))
                // Diagonals -distance, -distance + 2, ..., distance. Not
                // `stride`: its iterator was not inlined here, and took 14%
                // of a long line's diff.
                var k = -distance
                while k <= distance {
                    var x = (k == -distance || (k != distance && frontier[offset + k - 1] < frontier[offset + k + 1]))
                        ? frontier[offset + k + 1] : frontier[offset + k - 1] + 1
                    var y = x - k
                    let snakeStart = x
                    while x < n, y < m, a[a.startIndex + x] == b[b.startIndex + y] { x += 1; y += 1 }
                    steps += 1 + x - snakeStart
                    frontier[offset + k] = x
                    if x >= n && y >= m { found = true; break search }
                    k += 2
                }
            }
        }

        /// The point within both sequences, reached by the last step, that
        /// is furthest along (the most elements of both passed); nil if it
        /// is the start.
        var furthest: (old: Int, new: Int)? {
            let distance = trace.count - 1
            let points = stride(from: -distance, through: distance, by: 2).map { k in (old: frontier[offset + k], new: frontier[offset + k] - k) }
            let best = points.filter { $0.old <= a.count && $0.new >= 0 && $0.new <= b.count }.max { $0.old + $0.new < $1.old + $1.new }
            return best.flatMap { $0.old + $0.new > 0 ? $0 : nil }
        }

        /// The runs of the path to `end`, a point the last step reached,
        /// walked back through the saved frontiers.
        func runs(endingAt end: (old: Int, new: Int)) -> [Run] {
            var runs: [Run] = []
            var (x, y) = end
            for distance in stride(from: trace.count - 1, through: 0, by: -1) {
                let previous = trace[distance]
                func reached(on k: Int) -> Int { previous[k + distance + 1] }
                let k = x - y
                let previousK = (k == -distance || (k != distance && reached(on: k - 1) < reached(on: k + 1))) ? k + 1 : k - 1
                let previousX = distance == 0 ? 0 : reached(on: previousK)
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
}

/// Splits two sequences into tokens, numbered so that equal tokens, in
/// either sequence, get equal ids.
struct Tokenizer<Element> {
    struct Token {
        var id: Int
        /// Where it starts and ends (past its last element) in the sequence.
        var start: Int, end: Int
    }

    let split: (ArraySlice<Element>, ArraySlice<Element>) -> (a: [Token], b: [Token])
}

extension Tokenizer where Element: Hashable {
    /// Tokens that each end at an element `endsToken` accepts (a newline:
    /// lines; whitespace: words), or where the sequence ends.
    init(endingAt endsToken: @escaping (Element) -> Bool) {
        split = { a, b in
            var ids: [ArraySlice<Element>: Int] = [:]
            func tokens(_ elements: ArraySlice<Element>) -> [Token] {
                var tokens: [Token] = []
                var start = elements.startIndex
                for index in elements.indices where endsToken(elements[index]) || index == elements.endIndex - 1 {
                    let token = elements[start...index]
                    let id = ids[token] ?? ids.count
                    ids[token] = id
                    tokens.append(Token(id: id, start: start, end: index + 1))
                    start = index + 1
                }
                return tokens
            }
            return (tokens(a), tokens(b))
        }
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
