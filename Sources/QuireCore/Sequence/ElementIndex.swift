/// Finds the leaf that holds an element id, for remote operations and
/// `position(of:)`.
///
/// Replicas are interned: spans store a small index into `replicas`. Per
/// replica, counters map to leaves through pages of `pageSize` entries
/// (leaf index, or -1 where the sequence has no such element) kept in one
/// pool. Counters are dense per replica (they have no gaps, and most of a
/// replica's counters in a text go to that text), so this costs 4 bytes per
/// element, while a replica whose counters are spread over many objects only
/// pays for the pages it touches.
///
/// A replica's first page in a sequence starts empty and grows as it is
/// written, to 16, 64, then `pageSize` entries (entries past a page's length
/// are absent): a list element from each of 1,540 writers, or a short text,
/// takes a few entries, not a kilobyte. Its later pages are whole from the
/// start. A short page grows in place while it is the last in the pool;
/// otherwise it moves to the end of the pool at its whole size, once.
/// A page whose entries all name one leaf (typing or a paste that stayed
/// in one leaf) is stored as that leaf, outside the pool, until one of its
/// entries changes: 4 bytes an element is most of a short note's memory.
/// A page its writer has typed past is stored, once `compact` runs,
/// as its runs of entries naming one leaf, 8 bytes a run: typing puts
/// consecutive counters in few leaves (automerge-paper's pages hold 13
/// runs on average), so that the index of a long session takes a fraction
/// of the room. Leaf splits that move its elements edit its runs in place.
///
/// The page table is flat: all replicas' page numbers in one sorted array,
/// each replica owning a contiguous segment. Lookups are O(1) when a
/// replica's pages have no holes (the usual case) and a binary search within
/// its segment otherwise; nothing in a lookup touches a reference count.
@usableFromInline
struct ElementIndex: Sendable {
    static let pageBits: UInt64 = 8
    static let pageSize = 1 << pageBits
    /// Where the counters of a span given to `load` must end at the latest
    /// (checked as `SpanTree(loading:)` makes it): the start of the last
    /// page, whose end, 2^64, a `UInt64` cannot hold, and which the page
    /// loops (`setLeaf`, `first`, through which `load` records some
    /// replicas) would take for page 0. Counters come one by
    /// one from 1, and a snapshot's lie below its Lamport values (< 2^62):
    /// only made-up runs come near it.
    static let counterEndLimit = UInt64.max - UInt64(pageSize - 1)

    /// The replica ids that spans refer to by index.
    private(set) var replicas: [ReplicaID] = []
    /// Each replica's index in `replicas`. (A sorted array, not a
    /// dictionary: a merge of 1,540 writers spent more hashing their ids as
    /// the dictionary grew than interning them.)
    private var replicaIndices = ReplicaMap<UInt32>()
    /// Per replica: its segment of `pageNumbers` / `pageSlots`, and its
    /// highest counter present, which makes the duplicate check of a fresh
    /// insert O(1).
    private var segments: [Segment] = []
    /// Page numbers (counter >> pageBits), sorted within each segment.
    private var pageNumbers: [UInt64] = []
    /// Where each page is in `pool`.
    private var pageSlots: [PageSlot] = []
    /// The pages' entries. An arena, as it grows to tens of megabytes in a
    /// long session and would otherwise be copied into fresh pages at each growth.
    private var pool = Arena<Int32>()
    /// The page `setLeaf` wrote last, with its slot in `pool`: typing
    /// writes one page many times in a row, and operations on what was just
    /// typed read it. A page that moves or grows is written then, so this
    /// never goes stale.
    private var lastWritten = (replica: UInt32.max, page: UInt64.max, slot: PageSlot(start: 0, length: 0))
    private var lastLookedUp = (replica: ReplicaID(0), index: UInt32.max)
    /// Whether `compact` stored some page as runs: until it has, writes
    /// take the paths that look for none. (Declared before `compactedSize`,
    /// which keeps the index within 128 bytes: at 129, Swift copied it with a
    /// call to memcpy at each lookup, 2% of a merge's instructions.)
    private var hasRunPages = false
    /// The pool's size when `compact` last ran.
    private var compactedSize = 0

    private struct Segment: Sendable {
        var start = 0
        var count = 0
        var highestCounter: UInt64 = 0
    }

    /// Where a page's `length` entries are, in one of three forms:
    /// - whole: `pool[start..<start + length]`;
    /// - uniform, all naming one leaf: that leaf alone (`start` is then
    ///   -1 - leaf), which takes no room in `pool`;
    /// - runs, for a page of `pageSize` entries (a shorter one stored so
    ///   ends in a run of absent ones): `runCount` pairs from `pool[start]`, each
    ///   the end offset of a run of entries and the leaf they name (-1 for
    ///   absent ones), in room for `runCapacity` pairs.
    private struct PageSlot: Sendable {
        var start: Int
        private var storedLength: UInt32
        private(set) var runCount: UInt16 = 0
        private(set) var runCapacity: UInt16 = 0

        init(start: Int, length: Int) {
            self.start = start
            storedLength = UInt32(truncatingIfNeeded: length)
        }

        static func uniform(_ leaf: Int32, length: Int) -> PageSlot { PageSlot(start: -1 - Int(leaf), length: length) }
        static func runs(at start: Int, count: Int, capacity: Int) -> PageSlot {
            var slot = PageSlot(start: start, length: ElementIndex.pageSize)
            slot.runCount = UInt16(count)
            slot.runCapacity = UInt16(capacity)
            return slot
        }

        /// How many entries of `pool` it takes.
        var storedSize: Int { isUniform ? 0 : isRuns ? 2 * Int(runCapacity) : length }

        var length: Int {
            get { Int(storedLength) }
            set { storedLength = UInt32(truncatingIfNeeded: newValue) }
        }
        var isUniform: Bool { start < 0 }
        var isRuns: Bool { runCount > 0 }
        var isWhole: Bool { start >= 0 && runCount == 0 }
        /// The leaf of every entry of a uniform page.
        var uniformLeaf: Int32 { Int32(truncatingIfNeeded: -1 - start) }
    }

    init() {}

    /// The memory the index holds, for statistics.
    var byteCount: Int { pool.capacity * 4 + pageNumbers.capacity * 8 + pageSlots.capacity * 16 }

    /// Stores every page in its smallest form, in a pool with no spare
    /// room (after a load: pages of long runs, a paste or text typed in one
    /// go, take no room then).
    mutating func shrinkToFit() {
        compact()
        pageNumbers = compacted(pageNumbers)
        pageSlots = compacted(pageSlots)
    }

    /// `compact` if the pool has more than doubled since it last ran (and
    /// grown by `compactionSlack` entries): a compaction goes through every
    /// page, so it waits until as much was written as it would keep.
    mutating func compactIfGrown() {
        if pool.count > 2 * compactedSize + Self.compactionSlack { compact() }
    }

    static let compactionSlack = 1 << 14

    /// Stores each page held whole in its smallest form: one leaf, its
    /// runs, or its entries whole (past `maxRuns` runs, or while its writer
    /// types into it); and gives
    /// back the room that pages which moved left behind. Pages stored as
    /// runs take writes in place, so the pages held whole are mostly those
    /// the document's writers typed into since the last call.
    mutating func compact() {
        // No page takes more room than it had (as runs, only if that is
        // smaller), so the pool is made at that size, written through pointers.
        let old = pool
        let room = pageSlots.reduce(0) { $0 + $1.storedSize }
        var kept = Arena<Int32>(unsafeUninitializedCapacity: room) { kept, count in
            old.withUnsafeBufferPointer { old in
                for segment in segments {
                    // The page its writer types into stays whole.
                    let frontier = segment.highestCounter >> Self.pageBits
                    for index in segment.start..<segment.start + segment.count where !pageSlots[index].isUniform {
                        var slot = pageSlots[index]
                        let stored = UnsafeBufferPointer(rebasing: old[slot.start..<slot.start + slot.storedSize])
                        let runs = if slot.isRuns || stored.isEmpty {
                            0
                        } else if pageNumbers[index] == frontier {
                            Self.onlyLeaf(of: stored) == nil ? 0 : 1
                        } else {
                            Self.runCount(of: stored)
                        }
                        if runs == 1 && stored[0] >= 0 {
                            slot = .uniform(stored[0], length: slot.length)
                        } else if runs > 0 && runs <= Self.maxRuns && 2 * runs + 4 <= stored.count {
                            // Room for two more runs, as leaf splits add them.
                            slot = .runs(at: count, count: runs, capacity: runs + 2)
                            Self.writeRuns(of: stored, to: kept.baseAddress! + count)
                            (kept.baseAddress! + count + 2 * runs).initialize(repeating: -1, count: 4)
                            count += 2 * runs + 4
                            hasRunPages = true
                        } else {
                            (kept.baseAddress! + count).initialize(from: stored.baseAddress!, count: stored.count)
                            slot.start = count
                            count += stored.count
                        }
                        pageSlots[index] = slot
                    }
                }
            }
        }
        kept.shrinkToFit()
        pool = kept
        compactedSize = pool.count
        lastWritten.page = .max
    }

    /// How many runs of entries naming one leaf a page holds whose first
    /// entries are `entries` (not empty), and the rest absent.
    private static func runCount(of entries: UnsafeBufferPointer<Int32>) -> Int {
        // Eight entries at a time, each against the one before it: every
        // page of a loaded snapshot goes through here, whole.
        let base = UnsafeRawPointer(entries.baseAddress!)
        var changed = SIMD8<Int32>()
        var offset = 1
        while offset + 8 <= entries.count {
            let current = base.loadUnaligned(fromByteOffset: offset * 4, as: SIMD8<Int32>.self)
            let previous = base.loadUnaligned(fromByteOffset: (offset - 1) * 4, as: SIMD8<Int32>.self)
            changed &+= SIMD8(repeating: 0).replacing(with: 1, where: current .!= previous)
            offset += 8
        }
        var changes = Int(changed.wrappedSum())
        for offset in offset..<entries.count where entries[offset] != entries[offset - 1] { changes += 1 }
        return entries.count < pageSize && entries[entries.count - 1] != -1 ? changes + 2 : changes + 1
    }

    /// Writes the runs of a page whose first entries are `entries` (not
    /// empty), and the rest absent, as (end offset, leaf) pairs from `runs`.
    private static func writeRuns(of entries: UnsafeBufferPointer<Int32>, to runs: UnsafeMutablePointer<Int32>) {
        var written = 0
        func write(_ end: Int, _ leaf: Int32) {
            (runs + written).initialize(to: Int32(end))
            (runs + written + 1).initialize(to: leaf)
            written += 2
        }
        var runLeaf = entries[0]
        for offset in entries.indices.dropFirst() where entries[offset] != runLeaf {
            write(offset, runLeaf)
            runLeaf = entries[offset]
        }
        if entries.count < pageSize && runLeaf != -1 {
            write(entries.count, runLeaf)
            runLeaf = -1
        }
        write(pageSize, runLeaf)
    }

    // The functions that lookups call out of line (`runEntry`,
    // `firstRunEntry`, `pageIndex`) are static and take what they read, not
    // `self`: called from a mutating method (a remote insert's lookups, a
    // leaf split's `setLeaf`), a method of the index had Swift copy the
    // whole 128-byte index to the stack first, sixteen moves, and a remote
    // insert made two such copies whether or not it made the call.

    /// Run `run` of `slot`, a page stored as runs in `pool`: the offset its
    /// entries end at and the leaf they name (-1 for absent ones).
    @inline(__always)
    private static func run(_ run: Int, of slot: PageSlot, in pool: Arena<Int32>) -> (end: Int, leaf: Int32) {
        (Int(pool[slot.start + 2 * run]), pool[slot.start + 2 * run + 1])
    }

    /// The entry at `offset` of a page stored as runs. (Out of line: a
    /// merge into a fresh replica finds no such pages.)
    @inline(never)
    private static func runEntry(_ slot: PageSlot, at offset: Int, in pool: Arena<Int32>) -> Int32 {
        // The first run ending after `offset`.
        var low = 0, high = Int(slot.runCount) - 1
        while low < high {
            let mid = (low + high) / 2
            if run(mid, of: slot, in: pool).end <= offset { low = mid + 1 } else { high = mid }
        }
        return run(low, of: slot, in: pool).leaf
    }

    /// The offset of the first entry in `offsets` of a page stored as runs
    /// that is present or absent, as `firstEntry` finds it in a whole page.
    @inline(never)
    private static func firstRunEntry(present: Bool, in slot: PageSlot, offsets: Range<Int>, of pool: Arena<Int32>) -> Int? {
        var runStart = 0
        for index in 0..<Int(slot.runCount) {
            let (end, leaf) = run(index, of: slot, in: pool)
            if end > offsets.lowerBound && runStart < offsets.upperBound && (leaf >= 0) == present {
                return max(runStart, offsets.lowerBound)
            }
            if end >= offsets.upperBound { return nil }
            runStart = end
        }
        return nil
    }

    func replicaIndex(of replica: ReplicaID) -> UInt32? {
        replicaIndices[replica]
    }

    /// `replicaIndex(of:)`, remembering the answer: operations come in runs
    /// from one writer.
    mutating func cachedReplicaIndex(of replica: ReplicaID) -> UInt32? {
        if let index = lastLookedUpIndex(of: replica) { return index }
        guard let index = replicaIndex(of: replica) else { return nil }
        lastLookedUp = (replica, index)
        return index
    }

    /// The index of `replica`, added if missing, and remembered as
    /// `cachedReplicaIndex(of:)` remembers it.
    mutating func intern(_ replica: ReplicaID) -> UInt32 {
        if let index = lastLookedUpIndex(of: replica) { return index }
        let index = uncachedIntern(replica)
        lastLookedUp = (replica, index)
        return index
    }

    /// The index looked up last, if it is `replica`'s.
    @inline(__always)
    private func lastLookedUpIndex(of replica: ReplicaID) -> UInt32? {
        lastLookedUp.index != .max && lastLookedUp.replica == replica ? lastLookedUp.index : nil
    }

    private mutating func uncachedIntern(_ replica: ReplicaID) -> UInt32 {
        // One search, finding the replica or adding it.
        let next = UInt32(replicas.count)
        let index = replicaIndices.modify(replica, default: next) { $0 }
        guard index == next else { return index }
        replicas.append(replica)
        segments.append(Segment(start: pageNumbers.count))
        return index
    }

    /// The leaf holding `counter` of `replica`, or -1.
    @inline(__always)
    func leaf(replica: UInt32, counter: UInt64) -> Int32 {
        let page = counter >> Self.pageBits
        let slot: PageSlot
        if lastWritten.replica == replica && lastWritten.page == page {
            slot = lastWritten.slot
        } else {
            guard let index = pageIndex(replica, page) else { return -1 }
            slot = pageSlots[index]
        }
        let offset = Int(counter & UInt64(Self.pageSize - 1))
        guard offset < slot.length else { return -1 }
        if slot.isUniform { return slot.uniformLeaf }
        return slot.isRuns ? Self.runEntry(slot, at: offset, in: pool) : pool[slot.start + offset]
    }

    /// The first counter of `counters` that is present (`present == true`)
    /// or absent (`present == false`), or nil if there is none.
    @inline(__always)
    func first(present: Bool, replica: UInt32, counters: Range<UInt64>) -> UInt64? {
        if present && counters.lowerBound > segments[Int(replica)].highestCounter { return nil }
        if counters.upperBound - counters.lowerBound == 1 {
            // One id (checking a delete of one element): one lookup, where
            // the page loop and buffer slices cost twice as much.
            let c = counters.lowerBound
            return (leaf(replica: replica, counter: c) >= 0) == present ? c : nil
        }
        var c = counters.lowerBound
        while c < counters.upperBound {
            let pageEnd = min(((c >> Self.pageBits) + 1) << Self.pageBits, counters.upperBound)
            if let index = pageIndex(replica, c >> Self.pageBits) {
                let slot = pageSlots[index]
                let offset = Int(c & UInt64(Self.pageSize - 1))
                // Entries past the page's length are absent.
                let held = max(0, min(Int(pageEnd - c), slot.length - offset))
                let found: Int? = if held == 0 {
                    nil
                } else if slot.isUniform {
                    present ? 0 : nil
                } else if slot.isRuns {
                    Self.firstRunEntry(present: present, in: slot, offsets: offset..<offset + held, of: pool).map { $0 - offset }
                } else {
                    pool.withUnsafeBufferPointer { pool in
                        Self.firstEntry(present: present, in: UnsafeBufferPointer(rebasing: pool[slot.start + offset..<slot.start + offset + held]))
                    }
                }
                if let found { return c + UInt64(found) }
                if !present && held < Int(pageEnd - c) { return c + UInt64(held) }
            } else if !present {
                return c
            }
            c = pageEnd
        }
        return nil
    }

    /// The offset of the first entry of `entries` that is present (a leaf)
    /// or absent (-1), or nil if there is none.
    ///
    /// A range is usually all present (a delete's targets) or all absent
    /// (a fresh insert's ids), and a loop that stops at the first match
    /// does not vectorise: the sign bit of all entries ANDed (some
    /// present?) or ORed (some absent?) answers that first, several
    /// entries an instruction.
    private static func firstEntry(present: Bool, in entries: UnsafeBufferPointer<Int32>) -> Int? {
        let signs = present ? entries.reduce(-1, &) : entries.reduce(0, |)
        guard (signs < 0) != present else { return nil }
        return entries.firstIndex { ($0 >= 0) == present }.unsafelyUnwrapped
    }

    /// Records that `counters` of `replica` live in `leaf`, whether or not
    /// they were recorded already: callers that add elements have checked
    /// that they are new (`first(present:replica:counters:)`), and moving
    /// elements between leaves rewrites entries that are there.
    @inline(__always)
    mutating func setLeaf(_ leaf: Int32, replica: UInt32, counters: Range<UInt64>) {
        if counters.upperBound - 1 > segments[Int(replica)].highestCounter {
            segments[Int(replica)].highestCounter = counters.upperBound - 1
        }
        if counters.count == 1 {
            // Typing writes one entry at a time, where the page loop and
            // buffer slices cost more to set up than the work.
            let c = counters.lowerBound
            let offset = Int(c & UInt64(Self.pageSize - 1))
            let page = c >> Self.pageBits
            if lastWritten.replica == replica && lastWritten.page == page && offset < lastWritten.slot.length {
                pool[lastWritten.slot.start + offset] = leaf
            } else if !hasRunPages {
                pool[slotAfterGrowing(replica, page, reaching: offset + 1).start + offset] = leaf
            } else {
                setLeaf(leaf, replica: replica, run: counters)
                return
            }
            if offset == Self.pageSize - 1 { storeIfUniform(replica, page) }
            return
        }
        setLeaf(leaf, replica: replica, run: counters)
    }

    /// Records that the elements of `spans`, all recorded already, now live
    /// in `leaf`: the spans a leaf split moves. The index ends as
    /// `setLeaf(_:replica:counters:)` span by span leaves it, but the spans
    /// inside one page held whole are written straight into `pool`
    /// (`writeInPlace`): without that call's checks for new counters, whole
    /// pages and pages stored as runs, and under one uniqueness check of
    /// the pool for the split, not one a span.
    mutating func setLeaf(_ leaf: Int32, ofMoved spans: UnsafeBufferPointer<Span>) {
        var next = 0
        while next < spans.count {
            // Pages stored as runs have their runs edited: `setLeaf` does that.
            if !hasRunPages {
                next = Self.writeInPlace(leaf, spans, from: next, into: &pool, segments: segments,
                                         pageNumbers: pageNumbers, pageSlots: pageSlots)
                guard next < spans.count else { return }
            }
            let span = spans[next]
            setLeaf(leaf, replica: span.replica, counters: span.counter..<span.counterEnd)
            next += 1
        }
    }

    /// Writes `leaf` into the entries of `spans` from `first` on, straight
    /// into `pool`, while each span lies inside one page held whole, and
    /// returns the first that does not (or `spans.count`). Such a span
    /// changes no page's form, so the pool stays where it is for the whole
    /// loop. The others go through `setLeaf`: a span reaching its page's
    /// end may make the page one leaf or cover it whole, and a page not held
    /// whole is unpacked first.
    ///
    /// Static, taking what it reads, so that the page table can be read
    /// while the pool is written through one pointer. The page found last
    /// is tried first: a leaf's spans are often in one page.
    private static func writeInPlace(_ leaf: Int32, _ spans: UnsafeBufferPointer<Span>, from first: Int,
                                     into pool: inout Arena<Int32>, segments: [Segment],
                                     pageNumbers: [UInt64], pageSlots: [PageSlot]) -> Int {
        pool.withUnsafeMutableBufferPointer { pool in
            var found = (replica: UInt32.max, page: UInt64.max, slot: PageSlot(start: 0, length: 0))
            for index in first..<spans.count {
                let span = spans[index]
                let offset = Int(truncatingIfNeeded: span.counter & UInt64(pageSize - 1))
                let end = offset + Int(span.length)
                guard end < pageSize else { return index }
                let page = span.counter >> pageBits
                if span.replica != found.replica || page != found.page {
                    guard let pageIndex = pageIndex(page, in: segments[Int(span.replica)], of: pageNumbers),
                          pageSlots[pageIndex].isWhole else { return index }
                    found = (span.replica, page, pageSlots[pageIndex])
                    precondition(found.slot.start + found.slot.length <= pool.count, "ElementIndex: page out of the pool")
                }
                // The span's elements are recorded, so they lie within the page's length.
                precondition(end <= found.slot.length, "ElementIndex: a moved span lies past its page's length")
                (pool.baseAddress.unsafelyUnwrapped + found.slot.start + offset).update(repeating: leaf, count: Int(span.length))
            }
            return spans.count
        }
    }

    /// `setLeaf(_:replica:counters:)` for more than one counter, or in an
    /// index with pages stored as runs. Not inlined: its vectorised loop,
    /// copied into every caller, made the merge loop's code outgrow the
    /// instruction cache.
    @inline(never)
    private mutating func setLeaf(_ leaf: Int32, replica: UInt32, run counters: Range<UInt64>) {
        var c = counters.lowerBound
        while c < counters.upperBound {
            let page = c >> Self.pageBits
            let pageEnd = min((page + 1) << Self.pageBits, counters.upperBound)
            let offset = Int(c & UInt64(Self.pageSize - 1))
            let offsets = offset..<offset + Int(pageEnd - c)
            defer { c = pageEnd }
            if offsets.count == Self.pageSize {
                // The whole page (a long paste, a long span moved): one leaf.
                storeUniform(leaf, replica: replica, page: page)
                continue
            }
            // Spans a leaf split moved, whose runs change.
            if hasRunPages, let index = pageIndex(replica, page), pageSlots[index].isRuns,
               setRuns(leaf, page: index, offsets: offsets) {
                continue
            }
            let first = writableSlot(replica, page, reaching: offsets.upperBound).start + offset
            // Runs (the spans a leaf split moves) in vectorised passes.
            pool.update(first..<first + offsets.count, repeating: leaf)
        }
    }

    /// The slot of page `page` of `replica`, added if missing, held whole
    /// with room for its first `length` entries.
    @inline(__always)
    private mutating func writableSlot(_ replica: UInt32, _ page: UInt64, reaching length: Int) -> PageSlot {
        if lastWritten.replica == replica && lastWritten.page == page && length <= lastWritten.slot.length {
            return lastWritten.slot
        }
        return slotAfterGrowing(replica, page, reaching: length)
    }

    /// `writableSlot` when the page is not the one written last or is too short.
    /// Inlined: as a call it cost every text trace's merge 0.4-0.5% (review166).
    @inline(__always)
    private mutating func slotAfterGrowing(_ replica: UInt32, _ page: UInt64, reaching length: Int) -> PageSlot {
        let index = pageIndex(replica, page) ?? addPage(replica, page)
        if !pageSlots[index].isWhole { unpack(index) }
        if pageSlots[index].length < length { grow(index, toHold: length) }
        lastWritten = (replica, page, pageSlots[index])
        return pageSlots[index]
    }

    /// The most runs a page is stored as: past them, half its entries'
    /// room, it is stored whole.
    static let maxRuns = 64

    /// Sets the entries `offsets` of page `index`, stored as runs, to
    /// `leaf` in its runs: in place if its room allows, else at the end of
    /// the pool with room to spare. False, changing nothing, if that would
    /// make more than `maxRuns` runs.
    private mutating func setRuns(_ leaf: Int32, page index: Int, offsets: Range<Int>) -> Bool {
        let slot = pageSlots[index]
        let oldCount = Int(slot.runCount)
        return withUnsafeTemporaryAllocation(of: Int32.self, capacity: 2 * (oldCount + 2)) { runs in
            var count = 0
            /// Appends the run of entries up to `end` naming `leaf`, joined
            /// to the run before if that names it too.
            func append(_ end: Int, _ leaf: Int32) {
                if count > 0 && runs[2 * count - 1] == leaf {
                    runs[2 * count - 2] = Int32(end)
                } else {
                    runs[2 * count] = Int32(end)
                    runs[2 * count + 1] = leaf
                    count += 1
                }
            }
            var runStart = 0
            for index in 0..<oldCount {
                let (end, runLeaf) = Self.run(index, of: slot, in: pool)
                // The run's entries before `offsets`, then (once) `offsets`, then those after.
                if runStart < offsets.lowerBound { append(min(end, offsets.lowerBound), runLeaf) }
                if runStart < offsets.upperBound && end >= offsets.upperBound { append(offsets.upperBound, leaf) }
                if end > offsets.upperBound { append(end, runLeaf) }
                runStart = end
            }
            guard count <= Self.maxRuns else { return false }
            var (start, capacity) = (slot.start, Int(slot.runCapacity))
            if count > capacity {
                release(index)
                (start, capacity) = (pool.count, count + count / 2 + 2)
                pool.append(repeating: -1, count: 2 * capacity)
            }
            // One copy: the arena's element setter checks uniqueness at each write.
            pool.withUnsafeMutableBufferPointer { pool in
                (pool.baseAddress! + start).update(from: runs.baseAddress!, count: 2 * count)
            }
            pageSlots[index] = .runs(at: start, count: count, capacity: capacity)
            return true
        }
    }

    /// Lengthens page `index` to hold `length` entries at least: 16, then
    /// four times as many, so that typing through a first page lengthens it
    /// three times (to 16, 64 and 256), not at every keystroke.
    /// A page that is not the last in the pool moves to the end at its whole
    /// size, leaving empty entries behind.
    private mutating func grow(_ index: Int, toHold length: Int) {
        let slot = pageSlots[index]
        if slot.start + slot.length == pool.count {
            let grown = min(Self.pageSize, max(length, slot.length * 4, 16))
            pool.append(repeating: -1, count: grown - slot.length)
            pageSlots[index].length = grown
        } else {
            let entries = pool.withUnsafeBufferPointer { Array($0[slot.start..<slot.start + slot.length]) }
            pool.update(slot.start..<slot.start + slot.length, repeating: -1)
            pageSlots[index] = PageSlot(start: pool.count, length: Self.pageSize)
            entries.withUnsafeBufferPointer { pool.append(contentsOf: $0) }
            pool.append(repeating: -1, count: Self.pageSize - slot.length)
        }
    }

    /// Stores page `page` of `replica`, just typed up to its last entry, as
    /// one leaf if all its entries name that leaf: a note typed top to
    /// bottom then takes no room in `pool`. (Checked once a page, when its
    /// last entry is written.)
    private mutating func storeIfUniform(_ replica: UInt32, _ page: UInt64) {
        guard let index = pageIndex(replica, page), pageSlots[index].isWhole,
              let leaf = onlyLeaf(of: pageSlots[index]) else { return }
        let length = pageSlots[index].length
        release(index)
        pageSlots[index] = .uniform(leaf, length: length)
    }

    /// The leaf that every entry of `slot`, a whole page, names, if there
    /// is one (and the page is not empty).
    private func onlyLeaf(of slot: PageSlot) -> Int32? {
        pool.withUnsafeBufferPointer { pool in Self.onlyLeaf(of: UnsafeBufferPointer(rebasing: pool[slot.start..<slot.start + slot.length])) }
    }

    /// The leaf that all of `entries` name, if there is one.
    private static func onlyLeaf(of entries: UnsafeBufferPointer<Int32>) -> Int32? {
        guard let first = entries.first, first >= 0 else { return nil }
        // A vectorised pass: every entry is `first` when none differs in any bit.
        return entries.reduce(0) { $0 | ($1 ^ first) } == 0 ? first : nil
    }

    /// Sets every entry of page `page` of `replica` to `leaf`, as a uniform page.
    private mutating func storeUniform(_ leaf: Int32, replica: UInt32, page: UInt64) {
        let index = pageIndex(replica, page) ?? addPage(replica, page)
        release(index)
        pageSlots[index] = .uniform(leaf, length: Self.pageSize)
    }

    /// Gives back the room of page `index` in `pool`, before it becomes
    /// uniform or moves: the room itself if the page is the pool's last,
    /// else left behind, emptied, for `compact` to take back.
    private mutating func release(_ index: Int) {
        let slot = pageSlots[index]
        guard !slot.isUniform else { return }
        let size = slot.storedSize
        if slot.start + size == pool.count {
            pool.removeLast(size)
        } else {
            pool.update(slot.start..<slot.start + size, repeating: -1)
        }
        if lastWritten.slot.start == slot.start { lastWritten.page = .max }
    }

    /// Gives page `index`, uniform or stored as runs, its entries in `pool`
    /// again, at the end and whole, before one of them changes.
    private mutating func unpack(_ index: Int) {
        let slot = pageSlots[index]
        let start = pool.count
        if slot.isUniform {
            pool.append(repeating: slot.uniformLeaf, count: slot.length)
            pool.append(repeating: -1, count: Self.pageSize - slot.length)
        } else {
            var runStart = 0
            for index in 0..<Int(slot.runCount) {
                let (end, leaf) = Self.run(index, of: slot, in: pool)
                pool.append(repeating: leaf, count: end - runStart)
                runStart = end
            }
            release(index)
        }
        pageSlots[index] = PageSlot(start: start, length: Self.pageSize)
    }

    /// Where page `page` of `replica` is in `pageNumbers` and `pageSlots`, or nil.
    @inline(__always)
    private func pageIndex(_ replica: UInt32, _ page: UInt64) -> Int? {
        Self.pageIndex(page, in: segments[Int(replica)], of: pageNumbers)
    }

    /// Where page `page` of the replica owning `segment` is in
    /// `pageNumbers`, or nil. (Never inlined: inlined into the lookups, it
    /// cost friendsforever's merge 0.6% more instructions.)
    @inline(never)
    private static func pageIndex(_ page: UInt64, in segment: Segment, of pageNumbers: [UInt64]) -> Int? {
        guard segment.count > 0 else { return nil }
        // One check that the segment lies in `pageNumbers`, then reads
        // within it unchecked: this runs for most remote operations, and its
        // bounds and overflow checks were a third of its instructions.
        precondition(segment.start >= 0 && segment.start + segment.count <= pageNumbers.count, "ElementIndex: segment out of range")
        return pageNumbers.withUnsafeBufferPointer { pageNumbers in
            let numbers = pageNumbers.baseAddress.unsafelyUnwrapped + segment.start
            let lastIndex = segment.count &- 1
            let first = numbers[0]
            let last = numbers[lastIndex]
            guard page >= first && page <= last else { return nil }
            // Page numbers are distinct and sorted, so page p sits at least
            // last - p places before the end and at most p - first places after
            // the start; where the segment has no holes, exactly there. Checking
            // from the end first makes the pages after the last hole (recent
            // typing) O(1), and those before the first hole too. (The
            // differences are below the segment's count there, so they fit.)
            var low = max(0, lastIndex &- Int(truncatingIfNeeded: last &- page))
            var high = min(lastIndex, Int(truncatingIfNeeded: page &- first))
            if numbers[low] == page { return segment.start &+ low }
            if numbers[high] == page { return segment.start &+ high }
            while low < high {
                let mid = (low &+ high) &>> 1
                if numbers[mid] < page { low = mid &+ 1 } else { high = mid }
            }
            return numbers[low] == page ? segment.start &+ low : nil
        }
    }

    /// Adds the page `page` of `replica` and returns its index in `pageSlots`.
    /// A short gap after the replica's last page (counters that went to
    /// other objects or were deletes) is filled with empty pages, so that the
    /// segment stays without holes and lookups stay O(1).
    private mutating func addPage(_ replica: UInt32, _ page: UInt64) -> Int {
        let segment = segments[Int(replica)]
        let end = segment.start + segment.count
        var first = page
        if segment.count > 0, page > pageNumbers[end - 1], page - pageNumbers[end - 1] <= Self.maxFilledGap {
            first = pageNumbers[end - 1] + 1
        }
        return addPages(replica, first...page)
    }

    /// Makes room in an empty index for about `count` ids.
    mutating func reserveCapacity(_ count: Int) {
        guard pool.isEmpty else { return }
        pool.reserveCapacity(count)
    }

    /// Records where every element of a sequence being loaded lives, in an
    /// index that has its replicas interned but no pages yet. `spans` are the
    /// tree's slots in document order, leaf `l` holding the `leafCapacity`
    /// slots from `l * leafCapacity` (empty fillers included). Returns an
    /// element that two spans hold, if there is one.
    ///
    /// A replica's pages are laid out whole, one after another in `pool`,
    /// from its lowest counter's to its highest's, so that the entry of its
    /// counter `c` is at `entryOrigins[r] + c`: each span is written at its
    /// place, with no page lookup, noting which pages it writes. Then the
    /// pages that hold nothing are dropped, but for gaps of at most
    /// `maxFilledGap` pages, as `addPage` fills them: the index has the
    /// pages it had when a pass over the spans found them first and a table
    /// gave each span's page its room. A replica with more pages in that
    /// range than elements (counters spread over many objects, or hostile
    /// ones) gets none here and goes through `setLeaf`, so that the pool
    /// takes at most a page per element loaded.
    mutating func load(_ spans: UnsafeBufferPointer<Span>, leafCapacity: Int) -> (replica: UInt32, counter: UInt64)? {
        precondition(pool.isEmpty, "ElementIndex: the index has pages already")
        // Each replica's counters; its highest is known from here on.
        var counters = [LoadedCounters](repeating: LoadedCounters(), count: replicas.count)
        for span in spans where span.length > 0 { counters[Int(span.replica)].add(span) }
        var entryOrigins = [Int?](repeating: nil, count: replicas.count)
        var someReplicaLacksPages = false
        for (r, replicaCounters) in counters.enumerated() {
            segments[r].start = pageNumbers.count
            guard let pages = replicaCounters.pages else { continue }
            segments[r].highestCounter = max(segments[r].highestCounter, replicaCounters.end - 1)
            guard pages.upperBound - pages.lowerBound < replicaCounters.elementCount else {
                someReplicaLacksPages = true
                continue
            }
            // Wrapping: only the sum with a counter of the range is an entry.
            entryOrigins[r] = pageNumbers.count * Self.pageSize &- Int(truncatingIfNeeded: pages.lowerBound << Self.pageBits)
            pageNumbers.append(contentsOf: pages)
            segments[r].count = pageNumbers.count - segments[r].start
        }
        pageSlots = pageNumbers.indices.map { PageSlot(start: $0 * Self.pageSize, length: Self.pageSize) }
        pool = Arena(repeating: -1, count: pageNumbers.count * Self.pageSize)
        var written = [Bool](repeating: false, count: pageNumbers.count)
        if let duplicate = Self.fill(&pool, loading: spans, leafCapacity: leafCapacity, entryOrigins: entryOrigins,
                                     writtenPages: &written) {
            return duplicate
        }
        keepPages(writtenOrInShortGaps: written)
        // Mostly none: a pass over every span only when some replica needs it.
        guard someReplicaLacksPages else { return nil }
        for (slot, span) in spans.enumerated() where span.length > 0 && entryOrigins[Int(span.replica)] == nil {
            if let present = first(present: true, replica: span.replica, counters: span.counter..<span.counterEnd) {
                return (span.replica, present)
            }
            setLeaf(Int32(slot / leafCapacity), replica: span.replica, counters: span.counter..<span.counterEnd)
        }
        return nil
    }

    /// One replica's counters among the spans of a sequence being loaded.
    private struct LoadedCounters {
        var lowest = UInt64.max
        /// Past the highest.
        var end: UInt64 = 0
        var elementCount: UInt64 = 0

        mutating func add(_ span: Span) {
            lowest = min(lowest, span.counter)
            end = max(end, span.counterEnd)
            elementCount += UInt64(span.length)
        }

        /// The pages from the first to the last the replica uses, if any.
        var pages: ClosedRange<UInt64>? {
            elementCount > 0 ? lowest >> ElementIndex.pageBits...(end - 1) >> ElementIndex.pageBits : nil
        }
    }

    /// Writes the leaf of each of `spans`' elements whose replica has an
    /// entry origin into `pool`, for `load`. Stops at the first span, in
    /// document order, that holds an element an earlier span wrote, and
    /// returns the first such element.
    private static func fill(_ pool: inout Arena<Int32>, loading spans: UnsafeBufferPointer<Span>, leafCapacity: Int,
                             entryOrigins: [Int?], writtenPages: inout [Bool]) -> (replica: UInt32, counter: UInt64)? {
        pool.withUnsafeMutableBufferPointer { pool in
            writtenPages.withUnsafeMutableBufferPointer { writtenPages in
                entryOrigins.withUnsafeBufferPointer { entryOrigins in
                    // Leaf by leaf, its slots inside: a slot's leaf computed as
                    // slot / leafCapacity was a division per span, the largest
                    // single line of a load with many short spans.
                    for (leaf, leafStart) in stride(from: 0, to: spans.count, by: leafCapacity).enumerated() {
                        let leaf = Int32(leaf)
                        for slot in leafStart..<min(leafStart + leafCapacity, spans.count) {
                            let span = spans[slot]
                            guard span.length > 0, let origin = entryOrigins[Int(span.replica)] else { continue }
                            // Wrapping: `load` gave every counter of the replica's
                            // range its entry, so the sum lies in the pool.
                            let first = origin &+ Int(truncatingIfNeeded: span.counter)
                            // The sign bits of the entries replaced, ANDed: set
                            // while all were empty (-1). Checking and writing in
                            // one pass: this runs for every element loaded.
                            var replaced: Int32 = -1
                            let end = first &+ Int(span.length)
                            for entry in first..<end {
                                replaced &= pool[entry]
                                pool[entry] = leaf
                            }
                            if replaced >= 0 { return (span.replica, earliestRepeated(of: slot, in: spans)) }
                            // The pages of its first and last elements (pages
                            // lie `pageSize` entries apart from the pool's
                            // start); one between them it fills whole. (A loop
                            // over its pages became a call to memset per span.)
                            writtenPages[first &>> pageBits] = true
                            writtenPages[(end &- 1) &>> pageBits] = true
                        }
                    }
                    return nil
                }
            }
        }
    }

    /// Drops the pages `load` laid out that no span wrote, but for gaps of
    /// at most `maxFilledGap` pages between a replica's written pages, which
    /// `addPage` would fill too. A page was written if `fill` marked it in
    /// `written` (by index in `pageNumbers`), as a span's first or last, or
    /// holds its first entry, as one that a span covers whole. Their room in
    /// `pool` is left behind, empty, for `compact`.
    private mutating func keepPages(writtenOrInShortGaps written: [Bool]) {
        var kept = 0
        for r in segments.indices {
            let segment = segments[r]
            segments[r].start = kept
            var previous: Int?
            for index in segment.start..<segment.start + segment.count where written[index] || pool[pageSlots[index].start] >= 0 {
                let first = previous.map { index - $0 <= Int(Self.maxFilledGap) ? $0 + 1 : index } ?? index
                for page in first...index {
                    pageNumbers[kept] = pageNumbers[page]
                    pageSlots[kept] = pageSlots[page]
                    kept += 1
                }
                previous = index
            }
            segments[r].count = kept - segments[r].start
        }
        pageNumbers.removeLast(pageNumbers.count - kept)
        pageSlots.removeLast(pageSlots.count - kept)
    }

    /// The first element of `spans[slot]` that an earlier span also holds,
    /// when `fill` found one. Rare (a damaged or hostile snapshot), and out
    /// of line, so that the fill keeps only the slot for it.
    @inline(never)
    private static func earliestRepeated(of slot: Int, in spans: UnsafeBufferPointer<Span>) -> UInt64 {
        let span = spans[slot]
        let earliest = spans[..<slot].lazy
            .filter { $0.replica == span.replica && $0.counter < span.counterEnd && span.counter < $0.counterEnd }
            .map { max($0.counter, span.counter) }
            .min()
        return earliest ?? span.counter
    }

    /// Adds `pages`, which `replica` lacks and which fit between two of its
    /// pages, and returns the index in `pageSlots` of the last. A replica's
    /// first page starts empty; later pages are whole.
    private mutating func addPages(_ replica: UInt32, _ pages: ClosedRange<UInt64>) -> Int {
        let segment = segments[Int(replica)]
        var at = segment.start + segment.count
        // Pages mostly come in counter order: this usually appends.
        while at > segment.start && pageNumbers[at - 1] > pages.upperBound { at -= 1 }
        let added = pages.count
        let length = segment.count == 0 ? 0 : Self.pageSize
        if added == 1 && at == pageNumbers.count {
            // One page after every writer's pages (each writer's first, in a
            // merge of many): appended, where the general insert cost
            // several times more.
            pageNumbers.append(pages.lowerBound)
            pageSlots.append(PageSlot(start: pool.count, length: length))
        } else {
            pageNumbers.insert(contentsOf: pages, at: at)
            pageSlots.insert(contentsOf: (0..<added).lazy.map { [start = pool.count] in PageSlot(start: start + $0 * length, length: length) }, at: at)
        }
        if length > 0 { pool.append(repeating: -1, count: added * length) }
        segments[Int(replica)].count += added
        for r in (Int(replica) + 1)..<segments.count { segments[r].start += added }
        return at + added - 1
    }

    /// The most empty pages `addPage` adds to keep a segment without holes.
    static let maxFilledGap: UInt64 = 8

    /// How many ids are recorded, for invariant checks.
    var entryCount: Int {
        pageSlots.reduce(0) { count, slot in
            if slot.isUniform { return count + slot.length }
            if slot.isRuns {
                return count + (0..<Int(slot.runCount)).reduce(0) { held, index in
                    let (end, leaf) = Self.run(index, of: slot, in: pool)
                    return held + (leaf >= 0 ? end - (index == 0 ? 0 : Self.run(index - 1, of: slot, in: pool).end) : 0)
                }
            }
            return count + pool.withUnsafeBufferPointer { $0[slot.start..<slot.start + slot.length].reduce(0) { $0 + ($1 >= 0 ? 1 : 0) } }
        }
    }
}
