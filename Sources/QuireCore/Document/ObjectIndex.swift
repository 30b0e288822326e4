/// Finds an object's slot by its id without hashing: for each replica that
/// made objects, their counters in increasing order beside their slots.
///
/// A replica makes its objects in counter order, and a document applies a
/// replica's changes in that order, so adding an object appends; finding
/// one is a search for the replica (see `ReplicaMap`) and a binary search
/// among its objects. A dictionary keyed by `ObjectID` hashed every id it
/// was asked for, and every id again each time it doubled: a tenth of a
/// merge of 1,540 writers that each make a map.
struct ObjectIndex: Sendable {
    private struct Entry: Sendable {
        var counter: UInt64
        var slot: ObjectTable.Slot
    }

    private var byReplica = ReplicaMap<[Entry]>()

    /// The slot of `object`, or nil if the document has no such object.
    subscript(object: ObjectID) -> ObjectTable.Slot? {
        guard let creator = object.creator else { return ObjectTable.rootSlot }
        guard let entries = byReplica[creator.replica] else { return nil }
        let index = Self.position(of: creator.counter, in: entries)
        return index < entries.count && entries[index].counter == creator.counter ? entries[index].slot : nil
    }

    /// Records that the object made by `creator` lives at `slot`.
    mutating func insert(_ slot: ObjectTable.Slot, madeBy creator: OpID) {
        let entry = Entry(counter: creator.counter, slot: slot)
        byReplica.modify(creator.replica, default: []) { entries in
            if entries.last.map({ $0.counter < creator.counter }) ?? true {
                entries.append(entry)
                return
            }
            let index = Self.position(of: creator.counter, in: entries)
            if entries[index].counter == creator.counter { entries[index] = entry } else { entries.insert(entry, at: index) }
        }
    }

    /// Every object but the root, in increasing order of id, with its slot.
    /// (Appended to one array: mapping each replica's entries, then joining
    /// them, made an array for each of 1,540 writers' objects, a twentieth
    /// of a snapshot of them.)
    var nestedObjects: [(id: OpID, slot: ObjectTable.Slot)] {
        let replicas = byReplica.entries
        var objects: [(id: OpID, slot: ObjectTable.Slot)] = []
        objects.reserveCapacity(replicas.reduce(0) { $0 + $1.value.count })
        for (replica, entries) in replicas {
            for entry in entries { objects.append((OpID(replica: replica, counter: entry.counter), entry.slot)) }
        }
        return objects
    }

    /// The first index of `entries` whose counter is `counter` or more.
    private static func position(of counter: UInt64, in entries: [Entry]) -> Int {
        var low = 0, high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].counter < counter { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
