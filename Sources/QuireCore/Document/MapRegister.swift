/// One value written at a map key, with the stamp of the write.
public struct RegisterEntry: Hashable, Sendable {
    /// The id of the operation that wrote it (and of the object, if it made one).
    public var id: OpID
    /// The Lamport value of that operation: of concurrent writes, the one
    /// with the greater `stamp` wins.
    public var lamport: UInt64
    /// The value; `nil` when the write was a removal (a tombstone).
    public var value: Value?

    /// The write's place in the order of writes: its Lamport value, ties
    /// broken by replica.
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
/// Its entries, as a sequence, come by descending stamp: the winner first.
struct MapRegister: Hashable, Sendable, Sequence {
    /// Held apart from the others: most keys only ever hold one entry, and
    /// an array of one would be an allocation per key (a merge of 1,540
    /// writers' keys spent a sixth of its time on them).
    private(set) var winner: RegisterEntry?
    /// The losing entries, nil until a write loses. In a box of their own
    /// (copied before a write while shared): held beside the winner, their
    /// two arrays and index made every copy of a register retain and
    /// release each, and a snapshot copies each register it writes out of
    /// its map twice (about 330 instructions for each field of 1,540
    /// writers' objects, crdt-benchmarks B3.2, whose registers never lose).
    private var losing: Losing?

    /// How many losing entries a register holds before it indexes them.
    static let indexedLosers = 32

    var count: Int {
        // Matched, not compared with nil: the comparison copied the winner
        // (its value retained and released), most of the cost of a count.
        guard case .some = winner else { return 0 }
        return 1 + (losing?.liveCount ?? 0)
    }

    /// Adds `entry`, dropping the entries whose ids are in `pred`. In
    /// place: a key that every one of thousands of replicas wrote gets a
    /// write per replica, and copying the entries each time made merging
    /// them quadratic in allocations and reference counting.
    ///
    /// A write that names the winner alone (a writer that saw no other
    /// entry, writing again and again) leaves the losers be; one that names
    /// others finds them through `live` once they are many: by scanning
    /// every loser per id named, a key with 20,000 concurrent entries took
    /// 14 s to resolve in a debug build, and 20,000 writes naming the
    /// winner alone 58 s.
    mutating func write(_ entry: RegisterEntry, replacing pred: [OpID]) {
        if !pred.isEmpty, let current = winner {
            if losing?.isEmpty == false, pred.contains(where: { $0 != current.id }) { uniqueLosing().drop(pred) }
            if pred.contains(current.id) { winner = losing == nil ? nil : uniqueLosing().popGreatest() }
        }
        guard let current = winner else {
            winner = entry
            return
        }
        // Every loser and recent entry is below the winner; each array is sorted.
        if current.stamp < entry.stamp {
            uniqueLosing().add(current)
            winner = entry
        } else {
            uniqueLosing().add(entry)
        }
    }

    /// The Lamport value of the entry `id` wrote, if it is here.
    func lamport(of id: OpID) -> UInt64? {
        if let winner, winner.id == id { return winner.lamport }
        return losing?.lamport(of: id)
    }

    /// Indexes the losing entries by id if they are more than `indexedLosers`.
    mutating func indexIfLarge() {
        if losing?.needsIndex == true { uniqueLosing().indexIfLarge() }
    }

    /// `losing`, made first or copied if it is shared, for a write.
    private mutating func uniqueLosing() -> Losing {
        if !isKnownUniquelyReferenced(&losing) { losing = losing.map(Losing.init(copying:)) ?? Losing() }
        return losing!
    }

    /// The ids a new local write must name as `pred`: every entry now here.
    var ids: [OpID] { map(\.id) }

    func makeIterator() -> Iterator { Iterator(winner: winner, losing: losing) }

    /// The winner, then `losers` and `recent` merged from their ends.
    struct Iterator: IteratorProtocol {
        private var winner: RegisterEntry?
        private let losing: Losing?
        private var startedWithWinner = false
        /// How many of `losers` and of `recent` are still to come.
        private var loser: Int, recent: Int

        fileprivate init(winner: RegisterEntry?, losing: Losing?) {
            (self.winner, self.losing) = (winner, losing)
            (loser, recent) = (losing?.losers.count ?? 0, losing?.recent.count ?? 0)
        }

        mutating func next() -> RegisterEntry? {
            if !startedWithWinner {
                startedWithWinner = true
                return winner
            }
            guard let losing else { return nil }
            while let isRecent = losing.greatestIsRecent(losers: loser, recent: recent) {
                let entry: RegisterEntry
                if isRecent {
                    recent -= 1
                    entry = losing.recent[recent]
                } else {
                    loser -= 1
                    entry = losing.losers[loser]
                }
                if losing.replaced == 0 || losing.live?[entry.id] != nil { return entry }
            }
            return nil
        }
    }

    // Equal entries, however they are split between `losers` and `recent`.
    static func == (a: MapRegister, b: MapRegister) -> Bool { a.count == b.count && a.elementsEqual(b) }

    func hash(into hasher: inout Hasher) {
        for entry in self { hasher.combine(entry) }
    }
}

/// A register's losing entries. Changed only through a register that
/// holds it alone (`MapRegister.uniqueLosing`), so sharing it is safe.
private final class Losing: @unchecked Sendable {
    /// The losing entries, by ascending stamp: a write that wins (the usual
    /// case when many replicas write one key, crdt-benchmarks B3) moves the
    /// old winner to the end instead of shifting them all.
    var losers: [RegisterEntry] = []
    /// Losing entries written below the last of `losers` (when written), by ascending
    /// stamp, merged into `losers` once they number about its square root
    /// (as `ReplicaMap` does with replicas): inserted into `losers` one by
    /// one, 80,000 writers of one key in decreasing order moved the whole
    /// array each, the square of their number in all.
    var recent: [RegisterEntry] = []
    /// Once a write names losing entries of a register of more than
    /// `indexedLosers` (or is checked against them), each live one's
    /// Lamport value by id. An entry of `losers` or `recent` missing from
    /// it was replaced and is skipped, until they are mostly such and are
    /// dropped at once: finding and removing each entry a write names among
    /// all the others made 40,000 writes that each replace one of 40,000
    /// entries take a minute (`quire-bench writers`, "replace"). Built only
    /// then, so that keys many replicas wrote and none resolved (B3) pay
    /// nothing for it.
    var live: [OpID: UInt64]?
    /// Entries of `losers` and `recent` that were replaced, kept until compacted.
    var replaced = 0

    init() {}

    init(copying other: Losing) {
        (losers, recent, live, replaced) = (other.losers, other.recent, other.live, other.replaced)
    }

    var liveCount: Int { losers.count + recent.count - replaced }
    var isEmpty: Bool { losers.isEmpty && recent.isEmpty }
    var needsIndex: Bool { live == nil && losers.count + recent.count > MapRegister.indexedLosers }

    func lamport(of id: OpID) -> UInt64? {
        if let live { return live[id] }
        return (losers.first { $0.id == id } ?? recent.first { $0.id == id })?.lamport
    }

    func add(_ entry: RegisterEntry) {
        if losers.last.map({ $0.stamp < entry.stamp }) ?? true {
            losers.append(entry)
        } else {
            recent.insert(entry, at: recent.partitioningIndex { entry.stamp < $0.stamp })
            if recent.count * recent.count > losers.count { mergeRecent() }
        }
        if live != nil { live![entry.id] = entry.lamport }
    }

    func indexIfLarge() {
        guard needsIndex else { return }
        var index = [OpID: UInt64](minimumCapacity: losers.count + recent.count)
        for entry in losers { index[entry.id] = entry.lamport }
        for entry in recent { index[entry.id] = entry.lamport }
        live = index
    }

    /// Drops the losing entries named in `ids`.
    func drop(_ ids: [OpID]) {
        indexIfLarge()
        guard live != nil else {
            // At most `indexedLosers` entries, each looked for among the ids.
            losers.removeAll { ids.contains($0.id) }
            recent.removeAll { ids.contains($0.id) }
            return
        }
        for id in ids where live!.removeValue(forKey: id) != nil { replaced += 1 }
        // Dropped at once when they are most: each entry is dropped once.
        if replaced > live!.count { compact() }
    }

    private func compact() {
        guard let live, replaced > 0 else { return }
        losers.removeAll { live[$0.id] == nil }
        recent.removeAll { live[$0.id] == nil }
        replaced = 0
    }

    /// Removes and returns the greatest live entry of `losers` and `recent`.
    func popGreatest() -> RegisterEntry? {
        while let isRecent = greatestIsRecent(losers: losers.count, recent: recent.count) {
            let entry = isRecent ? recent.removeLast() : losers.removeLast()
            guard live != nil else { return entry }
            if live!.removeValue(forKey: entry.id) != nil { return entry }
            replaced -= 1
        }
        return nil
    }

    /// Whether the greatest of the first `loserCount` entries of `losers`
    /// and the first `recentCount` of `recent` is recent's last (true) or
    /// losers' (false); nil if there are none. (A recent entry may be above
    /// the last loser once losers have been taken.)
    func greatestIsRecent(losers loserCount: Int, recent recentCount: Int) -> Bool? {
        guard recentCount > 0 else { return loserCount > 0 ? false : nil }
        return loserCount == 0 || losers[loserCount - 1].stamp < recent[recentCount - 1].stamp
    }

    private func mergeRecent() {
        guard !recent.isEmpty else { return }
        losers = .mergingSorted(losers, recent) { $0.stamp < $1.stamp }
        recent = []
    }
}
