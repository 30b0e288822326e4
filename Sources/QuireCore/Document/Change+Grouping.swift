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
        guard withUnsafeBufferPointer(Self.isInterleaved) else { return self }
        let order = withUnsafeBufferPointer(Self.groupedOrder)
        return order.map { self[$0] }
    }

    /// Whether some replica's changes are split by another's: a history of
    /// one writer, or of writers merged one after another, is grouped already.
    private static func isInterleaved(_ changes: UnsafeBufferPointer<Change>) -> Bool {
        var seen = ReplicaMap<Bool>()
        var previous: ReplicaID?
        for change in changes where change.id.replica != previous {
            previous = change.id.replica
            if seen[change.id.replica] != nil { return true }
            seen[change.id.replica] = true
        }
        return false
    }

    /// The positions of `changes` in the order `groupedByReplica` gives.
    private static func groupedOrder(_ changes: UnsafeBufferPointer<Change>) -> [Int] {
        // Replicas are numbered in order of appearance. A change waits for
        // its parents of other replicas that are among `changes`: those of
        // replicas numbered before it. (Its own replica's come before it.)
        var numbers = ReplicaMap<Int>()
        var numberOfChange = [Int](repeating: 0, count: changes.count)
        var nextOfReplica = [Int](repeating: changes.count, count: changes.count)
        var firstOfReplica: [Int] = [], lastOfReplica: [Int] = []
        var awaited: [(number: Int, counter: UInt64)] = []
        var awaitedEnd = [Int](repeating: 0, count: changes.count)  // where each change's awaited parents end
        for index in changes.indices {
            let replica = changes[index].id.replica
            if let number = numbers[replica] {
                nextOfReplica[lastOfReplica[number]] = index
                lastOfReplica[number] = index
                numberOfChange[index] = number
            } else {
                numbers[replica] = firstOfReplica.count
                numberOfChange[index] = firstOfReplica.count
                firstOfReplica.append(index)
                lastOfReplica.append(index)
            }
            for parent in changes[index].parents where parent.replica != replica {
                if let number = numbers[parent.replica] { awaited.append((number, parent.counter)) }
            }
            awaitedEnd[index] = awaited.count
        }
        // The highest counter of each replica placed so far; below a
        // replica's first change here, the receiver holds them all.
        var placed = firstOfReplica.map { changes[$0].id.counter - 1 }
        var isPlaced = [Bool](repeating: false, count: changes.count)
        var order: [Int] = []
        order.reserveCapacity(changes.count)
        // The earliest change not placed yet: every change before it is, so it is ready.
        var earliest = 0
        while order.count < changes.count {
            while isPlaced[earliest] { earliest += 1 }
            let number = numberOfChange[earliest]
            var index = earliest
            placing: while true {
                order.append(index)
                isPlaced[index] = true
                placed[number] = changes[index].lastID.counter
                index = nextOfReplica[index]
                guard index < changes.count else { break }
                for parent in awaited[(index == 0 ? 0 : awaitedEnd[index - 1])..<awaitedEnd[index]]
                where parent.counter > placed[parent.number] {
                    break placing
                }
            }
        }
        return order
    }
}
