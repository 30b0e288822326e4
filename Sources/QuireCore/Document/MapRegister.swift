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
    /// The losing entries, by ascending stamp: a write that wins (the usual
    /// case when many replicas write one key, crdt-benchmarks B3) moves the
    /// old winner to the end instead of shifting them all.
    private var losers: [RegisterEntry] = []
    /// Losing entries written below the last of `losers` (when written), by ascending
    /// stamp, merged into `losers` once they number about its square root
    /// (as `ReplicaMap` does with replicas): inserted into `losers` one by
    /// one, 80,000 writers of one key in decreasing order moved the whole
    /// array each, the square of their number in all.
    private var recent: [RegisterEntry] = []
    /// Once a write names losing entries of a register of more than
    /// `indexedLosers` (or is checked against them), each live one's
    /// Lamport value by id. An entry of `losers` or `recent` missing from
    /// it was replaced and is skipped, until they are mostly such and are
    /// dropped at once: finding and removing each entry a write names among
    /// all the others made 40,000 writes that each replace one of 40,000
    /// entries take a minute (`quire-bench writers`, "replace"). Built only
    /// then, so that keys many replicas wrote and none resolved (B3) pay
    /// nothing for it.
    private var live: [OpID: UInt64]?
    /// Entries of `losers` and `recent` that were replaced, kept until compacted.
    private var replaced = 0

    /// How many losing entries a register holds before it indexes them.
    static let indexedLosers = 32

    var count: Int {
        // Matched, not compared with nil: the comparison copied the winner
        // (its value retained and released), most of the cost of a count.
        guard case .some = winner else { return 0 }
        return 1 + losers.count + recent.count - replaced
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
            if !losers.isEmpty || !recent.isEmpty, pred.contains(where: { $0 != current.id }) { drop(pred) }
            if pred.contains(current.id) { winner = popGreatestLoser() }
        }
        guard let current = winner else {
            winner = entry
            return
        }
        // Every loser and recent entry is below the winner; each array is sorted.
        if current.stamp < entry.stamp {
            addLoser(current)
            winner = entry
        } else {
            addLoser(entry)
        }
    }

    /// The Lamport value of the entry `id` wrote, if it is here.
    func lamport(of id: OpID) -> UInt64? {
        if let winner, winner.id == id { return winner.lamport }
        if let live { return live[id] }
        return (losers.first { $0.id == id } ?? recent.first { $0.id == id })?.lamport
    }

    private mutating func addLoser(_ entry: RegisterEntry) {
        if losers.last.map({ $0.stamp < entry.stamp }) ?? true {
            losers.append(entry)
        } else {
            recent.insert(entry, at: recent.partitioningIndex { entry.stamp < $0.stamp })
            if recent.count * recent.count > losers.count { mergeRecent() }
        }
        if live != nil { live![entry.id] = entry.lamport }
    }

    /// Indexes the losing entries by id if they are more than `indexedLosers`.
    mutating func indexIfLarge() {
        guard live == nil, losers.count + recent.count > Self.indexedLosers else { return }
        var index = [OpID: UInt64](minimumCapacity: losers.count + recent.count)
        for entry in losers { index[entry.id] = entry.lamport }
        for entry in recent { index[entry.id] = entry.lamport }
        live = index
    }

    /// Drops the losing entries named in `ids`.
    private mutating func drop(_ ids: [OpID]) {
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

    private mutating func compact() {
        guard let live, replaced > 0 else { return }
        losers.removeAll { live[$0.id] == nil }
        recent.removeAll { live[$0.id] == nil }
        replaced = 0
    }

    /// Removes and returns the greatest live entry of `losers` and `recent`.
    private mutating func popGreatestLoser() -> RegisterEntry? {
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
    private func greatestIsRecent(losers loserCount: Int, recent recentCount: Int) -> Bool? {
        guard recentCount > 0 else { return loserCount > 0 ? false : nil }
        return loserCount == 0 || losers[loserCount - 1].stamp < recent[recentCount - 1].stamp
    }

    private mutating func mergeRecent() {
        guard !recent.isEmpty else { return }
        losers = .mergingSorted(losers, recent) { $0.stamp < $1.stamp }
        recent = []
    }

    /// The ids a new local write must name as `pred`: every entry now here.
    var ids: [OpID] { map(\.id) }

    func makeIterator() -> Iterator { Iterator(register: self) }

    /// The winner, then `losers` and `recent` merged from their ends.
    struct Iterator: IteratorProtocol {
        private let register: MapRegister
        private var startedWithWinner = false
        /// How many of `losers` and of `recent` are still to come.
        private var loser: Int, recent: Int

        fileprivate init(register: MapRegister) {
            self.register = register
            (loser, recent) = (register.losers.count, register.recent.count)
        }

        mutating func next() -> RegisterEntry? {
            if !startedWithWinner {
                startedWithWinner = true
                return register.winner
            }
            while let isRecent = register.greatestIsRecent(losers: loser, recent: recent) {
                let entry: RegisterEntry
                if isRecent {
                    recent -= 1
                    entry = register.recent[recent]
                } else {
                    loser -= 1
                    entry = register.losers[loser]
                }
                if register.replaced == 0 || register.live?[entry.id] != nil { return entry }
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
