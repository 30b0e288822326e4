/// A map keyed by replica, kept as a short array sorted by replica.
///
/// Documents have few replicas, and the paths that touch these maps run once
/// per change or per operation: binary search in a small array costs a few
/// comparisons where a `Dictionary` would hash.
struct ReplicaMap<Value> {
    private(set) var entries: [(replica: ReplicaID, value: Value)] = []
    /// The entry written last. Writes come in runs for one replica (every
    /// local change writes the local replica's entries; a merge, one
    /// writer's changes in a row), so checking it first skips the search.
    private var lastWritten = 0

    /// `lastWritten`, if it is `replica`'s entry. (Inlined into every
    /// access: a local transaction reads and writes its replica's entries,
    /// and through the call to `position(of:)` that cost 40 instructions.)
    @inline(__always)
    private func lastWrittenIndex(of replica: ReplicaID) -> Int? {
        lastWritten < entries.count && entries[lastWritten].replica == replica ? lastWritten : nil
    }

    /// Where `replica` is, or would be inserted.
    func position(of replica: ReplicaID) -> (index: Int, found: Bool) {
        if let index = lastWrittenIndex(of: replica) { return (index, true) }
        // A replica new to the map most often sorts last: a bundle lists
        // the changes of many replicas in the order they were applied,
        // which is often the order of their ids (1,540 writers in B3).
        guard let last = entries.last, replica <= last.replica else { return (entries.count, false) }
        // A few entries (writers taking turns) are scanned: fewer branches
        // than halving, and no division.
        if entries.count <= 8 {
            var index = 0
            while entries[index].replica < replica { index += 1 }
            return (index, entries[index].replica == replica)
        }
        var low = 0, high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].replica < replica { low = mid + 1 } else { high = mid }
        }
        return (low, low < entries.count && entries[low].replica == replica)
    }

    subscript(replica: ReplicaID) -> Value? {
        get {
            if let index = lastWrittenIndex(of: replica) { return entries[index].value }
            let (index, found) = position(of: replica)
            return found ? entries[index].value : nil
        }
        set {
            if let value = newValue, let index = lastWrittenIndex(of: replica) {
                entries[index].value = value  // the common case, without the general path's branches
                return
            }
            let (index, found) = position(of: replica)
            lastWritten = index
            switch (found, newValue) {
            case (true, nil): entries.remove(at: index)
            case (true, let value?): entries[index].value = value
            case (false, nil): break
            case (false, let value?): insert((replica, value), at: index)
            }
        }
    }

    /// Mutates the value of `replica` in place, inserting `defaultValue` first if absent.
    mutating func modify<Result>(_ replica: ReplicaID, default defaultValue: @autoclosure () -> Value,
                                 _ body: (inout Value) -> Result) -> Result {
        var (index, found) = position(of: replica)
        lastWritten = index
        if !found {
            insert((replica, defaultValue()), at: index)
            found = true
        }
        return body(&entries[index].value)
    }

    /// Inserts an entry; at the end (where `position(of:)` most often puts
    /// a new replica) as an append, which costs a fraction of the general
    /// `insert(_:at:)`, a `replaceSubrange`.
    private mutating func insert(_ entry: (replica: ReplicaID, value: Value), at index: Int) {
        if index == entries.count { entries.append(entry) } else { entries.insert(entry, at: index) }
    }

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }
    var replicas: [ReplicaID] { entries.map(\.replica) }
}

extension ReplicaMap: Sendable where Value: Sendable {}
