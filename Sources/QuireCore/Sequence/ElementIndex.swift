/// Finds the leaf that holds an element id, for remote operations and
/// `position(of:)`.
///
/// Replicas are interned: spans store a small index into `replicas`. Per
/// replica, counters map to leaves through pages of `pageSize` entries
/// (leaf index, or -1 where the sequence has no such element) kept in one
/// pool. Counters are dense per replica (they have no gaps, and most of a
/// replica's counters in a text go to that text), so this costs 4 bytes per
/// element, while a replica whose counters are spread over many objects only
/// pays for the pages it touches. Lookups are O(1) when a replica's pages are
/// contiguous (the usual case) and a binary search over its pages otherwise.
@usableFromInline
struct ElementIndex: Sendable {
    static let pageBits: UInt64 = 8
    static let pageSize = 1 << pageBits

    /// The replica ids that spans refer to by index.
    private(set) var replicas: [ReplicaID] = []
    private var replicaIndices: [ReplicaID: UInt32] = [:]
    private var pages: [ReplicaPages] = []
    private var pool: [Int32] = []

    private struct ReplicaPages: Sendable {
        /// Sorted page numbers (counter >> pageBits) that have a page.
        var numbers: [UInt64] = []
        /// Where each of those pages starts in `pool`.
        var starts: [Int] = []
    }

    init() {}

    /// The memory the index holds, for statistics.
    var byteCount: Int {
        pool.capacity * 4 + pages.reduce(0) { $0 + $1.numbers.capacity * 8 + $1.starts.capacity * 8 }
    }

    func replicaIndex(of replica: ReplicaID) -> UInt32? {
        // Documents have few writers: a scan beats hashing for the common case.
        if replicas.count <= 8 {
            for (i, r) in replicas.enumerated() where r == replica { return UInt32(i) }
            return nil
        }
        return replicaIndices[replica]
    }

    mutating func intern(_ replica: ReplicaID) -> UInt32 {
        if let index = replicaIndex(of: replica) { return index }
        let index = UInt32(replicas.count)
        replicas.append(replica)
        replicaIndices[replica] = index
        pages.append(ReplicaPages())
        return index
    }

    /// The leaf holding `counter` of `replica`, or -1.
    func leaf(replica: UInt32, counter: UInt64) -> Int32 {
        guard let start = pageStart(replica, counter >> Self.pageBits) else { return -1 }
        return pool[start + Int(counter & UInt64(Self.pageSize - 1))]
    }

    func contains(replica: UInt32, counter: UInt64) -> Bool {
        leaf(replica: replica, counter: counter) >= 0
    }

    /// The first counter of `counters` that is present (`present == true`)
    /// or absent (`present == false`), or nil if there is none.
    func first(present: Bool, replica: UInt32, counters: Range<UInt64>) -> UInt64? {
        var c = counters.lowerBound
        while c < counters.upperBound {
            let pageEnd = min(((c >> Self.pageBits) + 1) << Self.pageBits, counters.upperBound)
            if let start = pageStart(replica, c >> Self.pageBits) {
                let mask = UInt64(Self.pageSize - 1)
                for k in c..<pageEnd where (pool[start + Int(k & mask)] >= 0) == present { return k }
            } else if !present {
                return c
            }
            c = pageEnd
        }
        return nil
    }

    /// Records that `counters` of `replica` live in `leaf`.
    mutating func setLeaf(_ leaf: Int32, replica: UInt32, counters: Range<UInt64>) {
        let mask = UInt64(Self.pageSize - 1)
        var c = counters.lowerBound
        while c < counters.upperBound {
            let page = c >> Self.pageBits
            let start = pageStart(replica, page) ?? addPage(replica, page)
            let pageEnd = min((page + 1) << Self.pageBits, counters.upperBound)
            for k in c..<pageEnd { pool[start + Int(k & mask)] = leaf }
            c = pageEnd
        }
    }

    private func pageStart(_ replica: UInt32, _ page: UInt64) -> Int? {
        let entry = pages[Int(replica)]
        guard let first = entry.numbers.first, page >= first else { return nil }
        // Page numbers are distinct and sorted, so page p sits at index <= p - first;
        // for a replica without holes it sits exactly there.
        let guess = page - first
        if guess < UInt64(entry.numbers.count), entry.numbers[Int(guess)] == page {
            return entry.starts[Int(guess)]
        }
        var low = 0
        var high = Int(min(guess, UInt64(entry.numbers.count)))
        while low < high {
            let mid = (low + high) / 2
            if entry.numbers[mid] < page { low = mid + 1 } else { high = mid }
        }
        return low < entry.numbers.count && entry.numbers[low] == page ? entry.starts[low] : nil
    }

    private mutating func addPage(_ replica: UInt32, _ page: UInt64) -> Int {
        let start = pool.count
        pool.append(contentsOf: repeatElement(-1, count: Self.pageSize))
        // Pages are mostly added in counter order, so this usually appends.
        var at = pages[Int(replica)].numbers.count
        while at > 0 && pages[Int(replica)].numbers[at - 1] > page { at -= 1 }
        pages[Int(replica)].numbers.insert(page, at: at)
        pages[Int(replica)].starts.insert(start, at: at)
        return start
    }

    /// Every recorded (replica, counter) -> leaf entry, for invariant checks.
    func forEachEntry(_ body: (UInt32, UInt64, Int32) -> Void) {
        for (r, entry) in pages.enumerated() {
            for (number, start) in zip(entry.numbers, entry.starts) {
                for k in 0..<Self.pageSize where pool[start + k] >= 0 {
                    body(UInt32(r), number << Self.pageBits + UInt64(k), pool[start + k])
                }
            }
        }
    }
}
