/// One value written at a map key, with the stamp of the write.
public struct RegisterEntry: Hashable, Sendable {
    /// The id of the operation that wrote it (and of the object, if it made one).
    public var id: OpID
    public var lamport: UInt64
    /// The value; `nil` when the write was a removal (a tombstone).
    public var value: Value?

    public var stamp: Stamp { Stamp(lamport: lamport, replica: id.replica) }
}

/// A multi-value register read as last-writer-wins.
///
/// A write replaces the entries it had seen (its `pred`); writes that did
/// not see each other stay side by side. The entry with the greatest stamp
/// is the value of the key; the others are the losing concurrent values
/// that `quire conflicts` shows. A removal is an entry with no value, so a
/// concurrent removal and write are resolved by stamp like any two writes.
///
/// Its entries, as a collection, are sorted by descending stamp: the winner first.
struct MapRegister: Hashable, Sendable, RandomAccessCollection {
    /// Held apart from the others: most keys only ever hold one entry, and
    /// an array of one would be an allocation per key (a merge of 1,540
    /// writers' keys spent a sixth of its time on them).
    private(set) var winner: RegisterEntry?
    /// The losing entries, by ascending stamp: a write that wins (the usual
    /// case when many replicas write one key, crdt-benchmarks B3) moves the
    /// old winner to the end instead of shifting them all.
    private var losers: [RegisterEntry] = []

    var startIndex: Int { 0 }
    var endIndex: Int { winner == nil ? 0 : 1 + losers.count }
    subscript(position: Int) -> RegisterEntry { position == 0 ? winner! : losers[losers.count - position] }

    /// Adds `entry`, dropping the entries whose ids are in `pred`. In
    /// place: a key that every one of thousands of replicas wrote gets a
    /// write per replica, and copying the entries each time made merging
    /// them quadratic in allocations and reference counting.
    mutating func write(_ entry: RegisterEntry, replacing pred: [OpID]) {
        if !pred.isEmpty, let current = winner {
            if !losers.isEmpty { losers.removeAll { pred.contains($0.id) } }
            if pred.contains(current.id) { winner = losers.popLast() }
        }
        guard let current = winner else {
            winner = entry
            return
        }
        if current.stamp < entry.stamp {
            losers.append(current)
            winner = entry
        } else {
            // The first loser above the entry, by binary search.
            var low = 0, high = losers.count
            while low < high {
                let middle = (low + high) / 2
                if losers[middle].stamp < entry.stamp { low = middle + 1 } else { high = middle }
            }
            losers.insert(entry, at: low)
        }
    }

    /// The ids a new local write must name as `pred`: every entry now here.
    var ids: [OpID] { map(\.id) }
}
