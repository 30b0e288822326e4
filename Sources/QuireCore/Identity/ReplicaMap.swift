/// A map keyed by replica, kept as a short array sorted by replica.
///
/// Documents have few replicas, and the paths that touch these maps run once
/// per change or per operation: binary search in a small array costs a few
/// comparisons where a `Dictionary` would hash.
///
/// A replica new to a large map that sorts before its last goes into a
/// second sorted array, `recent`, merged into the first once it holds about
/// the square root of its size: inserted into the middle one by one (a
/// bundle of changes from thousands of writers, in decreasing id order),
/// each would move the whole array, the square of their number in all.
struct ReplicaMap<Value> {
    typealias Entry = (replica: ReplicaID, value: Value)

    /// Sorted by replica.
    private var sorted: [Entry] = []
    /// Sorted by replica; no replica is in both arrays.
    private var recent: [Entry] = []
    /// The entry of `sorted` written last. Writes come in runs for one
    /// replica (every local change writes the local replica's entries; a
    /// merge, one writer's changes in a row), so checking it first skips
    /// the search.
    private var lastWritten: UInt32 = 0
    /// The entry written last before `lastWritten`'s: two writers taking
    /// turns (friendsforever) read and write the two entries in turn, and
    /// each access to the other one searched. Checked after `lastWritten`,
    /// inline by the getter and the setter (checked in a call, each turn's
    /// three map writes at the other writer's entry cost a call each). A
    /// hit does not move the two, so both writers' entries stay remembered.
    /// (The two share the word `lastWritten` had alone: eight bytes more in
    /// every map made the structs holding one, the span tree's among them,
    /// copied through `memcpy` calls, a merge's instructions up 1-2%. An
    /// index past `UInt32` wraps to another entry, which the checks of the
    /// replica then miss.)
    private var previousWritten: UInt32 = 0

    /// Up to this size, a new replica goes straight into `sorted`: moving
    /// a few thousand entries costs less than merging a second array.
    private static var directInsertLimit: Int { 2_048 }

    /// `lastWritten`, if it is `replica`'s entry. (Inlined into every
    /// access: a local transaction reads and writes its replica's entries,
    /// and through the call to `position(of:)` that cost 40 instructions.)
    @inline(__always)
    private func lastWrittenIndex(of replica: ReplicaID) -> Int? {
        Self.index(Int(lastWritten), in: sorted, holds: replica) ? Int(lastWritten) : nil
    }

    /// `previousWritten`, if it is `replica`'s entry.
    @inline(__always)
    private func previousWrittenIndex(of replica: ReplicaID) -> Int? {
        Self.index(Int(previousWritten), in: sorted, holds: replica) ? Int(previousWritten) : nil
    }

    /// Whether `index` is that of `replica`'s entry in `entries`.
    @inline(__always)
    private static func index(_ index: Int, in entries: [Entry], holds replica: ReplicaID) -> Bool {
        index < entries.count && entries[index].replica == replica
    }

    /// Notes that the entry at `index` of `sorted` was written.
    @inline(__always)
    private mutating func noteWritten(_ index: Int) {
        let index = UInt32(truncatingIfNeeded: index)
        if index != lastWritten { (previousWritten, lastWritten) = (lastWritten, index) }
    }

    /// `lastWritten` or `previousWritten`, whichever is `replica`'s entry.
    @inline(__always)
    private func rememberedIndex(of replica: ReplicaID) -> Int? {
        lastWrittenIndex(of: replica) ?? previousWrittenIndex(of: replica)
    }

    /// Where `replica` is, or would be inserted, in `sorted`.
    @inline(__always)
    private func position(of replica: ReplicaID) -> (index: Int, found: Bool) {
        if let index = rememberedIndex(of: replica) { return (index, true) }
        return searchedPosition(of: replica)
    }

    /// `position(of:)` found by a search alone, for a replica whose entry
    /// is neither remembered one. (Out of line, and without those checks:
    /// the getter has made them inline, and a miss made them again in the
    /// call, which many writers' merges, where both miss, paid at every read.)
    @inline(never)
    private func searchedPosition(of replica: ReplicaID) -> (index: Int, found: Bool) {
        // A replica new to the map most often sorts last: a bundle lists
        // the changes of many replicas in the order they were applied,
        // which is often the order of their ids (1,540 writers in B3).
        guard let last = sorted.last, replica <= last.replica else { return (sorted.count, false) }
        // A few entries (writers taking turns) are scanned: fewer branches
        // than halving, and no division.
        if sorted.count <= 8 {
            var index = 0
            while sorted[index].replica < replica { index += 1 }
            return (index, sorted[index].replica == replica)
        }
        return sorted.search(for: replica)
    }

    /// `replica`'s index in `recent`, if it is there. (Inlined: with
    /// `recent` empty, as it mostly is, it is one branch.)
    @inline(__always)
    private func recentIndex(of replica: ReplicaID) -> Int? {
        guard !recent.isEmpty else { return nil }
        let (index, found) = recent.search(for: replica)
        return found ? index : nil
    }

    /// What is not in `sorted` is a call of its own (`recent` is rare), so
    /// that the rest stays small: every local keystroke writes the version
    /// vector, and a merge of many writers looks each one up.
    subscript(replica: ReplicaID) -> Value? {
        // Inlined, the search a call: a merge reads the version vector to
        // check each writer's turn, and the call was most of a read.
        @inline(__always) get {
            if let index = rememberedIndex(of: replica) { return sorted[index].value }
            return searchedValue(of: replica)
        }
        // Inlined: every local keystroke writes the version vector, and
        // as a call the write cost automerge-paper's replay 1.4% of its instructions.
        @inline(__always) set {
            if let value = newValue, let index = rememberedIndex(of: replica) {
                sorted[index].value = value  // the common cases, without the general path's branches
                return
            }
            set(replica, to: newValue)
        }
    }

    /// Sets `replica`'s value, as the subscript's setter does, and returns
    /// the value it replaces, nil if the map held none. (Inlined as the
    /// setter is: a merge notes each run of changes so, and a local commit.)
    @inline(__always)
    mutating func updateValue(_ value: Value, for replica: ReplicaID) -> Value? {
        if let index = rememberedIndex(of: replica) {
            defer { sorted[index].value = value }
            return sorted[index].value
        }
        let replaced = self[replica]
        set(replica, to: value)
        return replaced
    }

    /// The subscript's setter but for a value written into a remembered
    /// entry, which the setter checked (a removal it did not check for is
    /// found by the search).
    private mutating func set(_ replica: ReplicaID, to newValue: Value?) {
        let (index, found) = searchedPosition(of: replica)
        if found {
            noteWritten(index)
            if let value = newValue { sorted[index].value = value } else { sorted.remove(at: index) }
        } else {
            setMissing(replica, to: newValue, at: index)
        }
    }

    /// The getter's value for a replica whose entry is neither remembered one.
    @inline(never)
    private func searchedValue(of replica: ReplicaID) -> Value? {
        let (index, found) = searchedPosition(of: replica)
        if found { return sorted[index].value }
        return recentIndex(of: replica).map { recent[$0].value }
    }

    /// Sets the entry of `replica`, which `sorted` lacks (it would go at `index`).
    private mutating func setMissing(_ replica: ReplicaID, to newValue: Value?, at index: Int) {
        if let recentIndex = recentIndex(of: replica) {
            if let value = newValue { recent[recentIndex].value = value } else { recent.remove(at: recentIndex) }
        } else if let value = newValue {
            insert((replica, value), at: index)
        }
    }

    /// Mutates the value of `replica` in place, inserting `defaultValue` first if absent.
    mutating func modify<Result>(_ replica: ReplicaID, default defaultValue: @autoclosure () -> Value,
                                 _ body: (inout Value) -> Result) -> Result {
        let (index, found) = position(of: replica)
        if found {
            noteWritten(index)
            return body(&sorted[index].value)
        }
        if let recentIndex = recentIndex(of: replica) { return body(&recent[recentIndex].value) }
        var value = defaultValue()
        let result = body(&value)
        insert((replica, value), at: index)
        return result
    }

    /// Inserts a new replica's entry, which belongs at `index` of `sorted`:
    /// at the end (where `position(of:)` most often puts a new replica) as
    /// an append, which costs a fraction of the general `insert(_:at:)`, a
    /// `replaceSubrange`; into the middle of a large map, into `recent`.
    @inline(__always)
    private mutating func insert(_ entry: Entry, at index: Int) {
        if index == sorted.count {
            sorted.append(entry)
            noteWritten(index)
        } else {
            insertBeforeLast(entry, at: index)
        }
    }

    private mutating func insertBeforeLast(_ entry: Entry, at index: Int) {
        if sorted.count <= Self.directInsertLimit {
            sorted.insert(entry, at: index)
            noteWritten(index)
        } else {
            recent.insert(entry, at: recent.search(for: entry.replica).index)
            if recent.count * recent.count > sorted.count { mergeRecent() }
        }
    }

    /// Moves `recent` into `sorted`, in one pass.
    private mutating func mergeRecent() {
        sorted = Self.merging(sorted, recent)
        recent = []
        lastWritten = 0
    }

    private static func merging(_ a: [Entry], _ b: [Entry]) -> [Entry] {
        .mergingSorted(a, b) { $0.replica < $1.replica }
    }

    /// Every entry, sorted by replica.
    var entries: [Entry] { recent.isEmpty ? sorted : Self.merging(sorted, recent) }
    /// Mutates every value in place.
    mutating func modifyEach(_ body: (inout Value) -> Void) {
        for index in sorted.indices { body(&sorted[index].value) }
        for index in recent.indices { body(&recent[index].value) }
    }

    var isEmpty: Bool { sorted.isEmpty && recent.isEmpty }
    var count: Int { sorted.count + recent.count }
    var replicas: [ReplicaID] { entries.map(\.replica) }
}

extension ReplicaMap: Sendable where Value: Sendable {}

extension ReplicaMap {
    /// A map of `entries`, sorted by replica, one each: a snapshot's
    /// clocks, set at once rather than entry by entry (`Document.setLoadedClocks`).
    init(sorted entries: [Entry]) {
        self.init()
        sorted = entries
    }
}

extension Array {
    /// Where `replica` is, or would be inserted, in these entries sorted by replica.
    @inline(__always)
    fileprivate func search<Value>(for replica: ReplicaID) -> (index: Int, found: Bool) where Element == (replica: ReplicaID, value: Value) {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if self[mid].replica < replica { low = mid + 1 } else { high = mid }
        }
        return (low, low < count && self[low].replica == replica)
    }
}
