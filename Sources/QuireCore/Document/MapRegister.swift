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
struct MapRegister: Hashable, Sendable {
    /// Sorted by descending stamp: the winner first.
    private(set) var entries: [RegisterEntry] = []

    var winner: RegisterEntry? { entries.first }

    /// Adds `entry`, dropping the entries whose ids are in `pred`.
    mutating func write(_ entry: RegisterEntry, replacing pred: [OpID]) {
        if !pred.isEmpty { entries.removeAll { pred.contains($0.id) } }
        // Most writes go last (a first write, or one replacing all there
        // was): an append there, cheaper than the general insert.
        if let position = entries.firstIndex(where: { $0.stamp < entry.stamp }) {
            entries.insert(entry, at: position)
        } else {
            entries.append(entry)
        }
    }

    /// The ids a new local write must name as `pred`: every entry now here.
    var ids: [OpID] { entries.map(\.id) }
}
