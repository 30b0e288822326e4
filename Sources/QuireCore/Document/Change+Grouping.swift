extension Array where Element == Change {
    /// The same changes in a causal order that keeps each replica's changes
    /// together for as long as their parents allow.
    ///
    /// A history two people wrote together lists their keystrokes the way
    /// they met: a few of one writer's, then a few of the other's. A replica
    /// catching up applies a writer's run of typing as one insert, and every
    /// change of another writer in between ends that run. Grouped, the
    /// runs are longer: friendsforever (two writers) has 1,462 switches
    /// from one writer to the other in the order applied, 882 grouped, and
    /// its merge takes a sixth fewer instructions. (A writer's change that
    /// names the other's still has to wait for it.)
    ///
    /// `self` must be a causal order: then each replica's changes come in
    /// counter order, and a parent not among them is one the receiver holds.
    /// The result is again a causal order of the same changes.
    /// `Document.encodeChanges` and `SyncDocument(id:version:changes:)`
    /// send changes in this order.
    public func groupedByReplica() -> [Change] {
        let order = withUnsafeBufferPointer { changes in
            ReplicaGrouping.order(count: changes.count, id: { changes[$0].id }, lastCounter: { changes[$0].lastID.counter },
                                  forEachParent: { index, body in changes[index].parents.forEach(body) })
        }
        return order.map { $0.map { self[$0] } } ?? self
    }
}

/// The order `groupedByReplica` gives, worked out on positions: of changes,
/// or of runs of one replica's consecutive changes each built on the one
/// before (a history's runs of typing, `ChangeHistory.encodedWithText`).
enum ReplicaGrouping {
    /// The positions of `count` items in grouped order, read through `id`
    /// (an item's first id), `lastCounter` and `forEachParent` (its first
    /// change's parents); nil when that is the order given: no replica's
    /// items are split by another's, as in a history of one writer, or of
    /// writers merged one after another.
    static func order(count: Int, id: (Int) -> OpID, lastCounter: (Int) -> UInt64,
                      forEachParent: (Int, (OpID) -> Void) -> Void) -> [Int]? {
        guard isInterleaved(count: count, id: id) else { return nil }
        // Replicas are numbered in order of appearance. An item waits for
        // its parents of other replicas that are among the items: those of
        // replicas numbered before it. (Its own replica's come before it.)
        var numbers = ReplicaMap<Int>()
        var numberOfItem = [Int](repeating: 0, count: count)
        var nextOfReplica = [Int](repeating: count, count: count)
        var firstOfReplica: [Int] = [], lastOfReplica: [Int] = []
        var awaited: [(number: Int, counter: UInt64)] = []
        var awaitedEnd = [Int](repeating: 0, count: count)  // where each item's awaited parents end
        for index in 0..<count {
            let replica = id(index).replica
            if let number = numbers[replica] {
                nextOfReplica[lastOfReplica[number]] = index
                lastOfReplica[number] = index
                numberOfItem[index] = number
            } else {
                numbers[replica] = firstOfReplica.count
                numberOfItem[index] = firstOfReplica.count
                firstOfReplica.append(index)
                lastOfReplica.append(index)
            }
            forEachParent(index) { parent in
                if parent.replica != replica, let number = numbers[parent.replica] { awaited.append((number, parent.counter)) }
            }
            awaitedEnd[index] = awaited.count
        }
        // The highest counter of each replica placed so far; below a
        // replica's first item here, the receiver holds them all.
        var placed = firstOfReplica.map { id($0).counter - 1 }
        var isPlaced = [Bool](repeating: false, count: count)
        var order: [Int] = []
        order.reserveCapacity(count)
        // The earliest item not placed yet: every item before it is, so it is ready.
        var earliest = 0
        while order.count < count {
            while isPlaced[earliest] { earliest += 1 }
            let number = numberOfItem[earliest]
            var index = earliest
            placing: while true {
                order.append(index)
                isPlaced[index] = true
                placed[number] = lastCounter(index)
                index = nextOfReplica[index]
                guard index < count else { break }
                for parent in awaited[(index == 0 ? 0 : awaitedEnd[index - 1])..<awaitedEnd[index]]
                where parent.counter > placed[parent.number] {
                    break placing
                }
            }
        }
        return order
    }

    /// Whether some replica's items are split by another's.
    private static func isInterleaved(count: Int, id: (Int) -> OpID) -> Bool {
        var seen = ReplicaMap<Bool>()
        var previous: ReplicaID?
        for index in 0..<count {
            let replica = id(index).replica
            guard replica != previous else { continue }
            previous = replica
            if seen[replica] != nil { return true }
            seen[replica] = true
        }
        return false
    }
}
