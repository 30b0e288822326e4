/// Each replica's position in a sorted table of replicas (a bundle's or a
/// snapshot's), found in a few instructions: a change or a snapshot names
/// replicas over and over, and a binary search or a `Dictionary` for each
/// cost a sixth of encoding several writers' history, a tenth of a
/// snapshot of 1,540 writers' keys.
///
/// Open addressing: a replica sits at its hash slot or the first free slot
/// after it (wrapping), in a table at least twice as big as the replicas.
struct ReplicaIndexTable {
    private let keys: [ReplicaID]
    /// Each slot's replica's index + 1; 0 for an empty slot.
    private let values: [UInt32]
    private let mask: Int

    init(_ replicas: [ReplicaID]) {
        var slotCount = 2
        while slotCount < replicas.count * 2 { slotCount <<= 1 }
        var keys = [ReplicaID](repeating: ReplicaID(0), count: slotCount)
        var values = [UInt32](repeating: 0, count: slotCount)
        for (index, replica) in replicas.enumerated() {
            var slot = Self.hashSlot(of: replica, mask: slotCount - 1)
            while values[slot] != 0 { slot = (slot + 1) & (slotCount - 1) }
            keys[slot] = replica
            values[slot] = UInt32(index + 1)
        }
        (self.keys, self.values, mask) = (keys, values, slotCount - 1)
    }

    /// Replica ids are random: the high bits of one product spread them.
    @inline(__always)
    private static func hashSlot(of replica: ReplicaID, mask: Int) -> Int {
        Int(truncatingIfNeeded: (replica.rawValue &* 0x9E37_79B9_7F4A_7C15) >> 32) & mask
    }

    /// The index of `replica`, which must be in the table.
    @inline(__always)
    func index(of replica: ReplicaID) -> Int {
        var slot = Self.hashSlot(of: replica, mask: mask)
        while true {
            let value = values[slot]
            precondition(value != 0, "replica \(replica) is not in the table")
            if keys[slot] == replica { return Int(value) - 1 }
            slot = (slot + 1) & mask
        }
    }
}
