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
    /// The losing entries, by descending stamp.
    private var losers: [RegisterEntry] = []

    var startIndex: Int { 0 }
    var endIndex: Int { winner == nil ? 0 : 1 + losers.count }
    subscript(position: Int) -> RegisterEntry { position == 0 ? winner! : losers[position - 1] }

    /// Adds `entry`, dropping the entries whose ids are in `pred`.
    mutating func write(_ entry: RegisterEntry, replacing pred: [OpID]) {
        // Most writes leave the entry alone: a first write, or one that
        // replaces the only entry there was.
        if winner == nil || (losers.isEmpty && pred.contains(winner!.id)) {
            winner = entry
            return
        }
        var kept = filter { !pred.contains($0.id) }
        kept.insert(entry, at: kept.firstIndex { $0.stamp < entry.stamp } ?? kept.count)
        winner = kept[0]
        losers = Array(kept.dropFirst())
    }

    /// The ids a new local write must name as `pred`: every entry now here.
    var ids: [OpID] { map(\.id) }
}
