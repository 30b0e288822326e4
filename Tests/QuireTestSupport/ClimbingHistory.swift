import QuireCore

/// `count` changes of replica 7, each on the one before, setting root key
/// `k`: the first at Lamport value `start`, each next `climb` beyond it.
/// With `climb` at the Lamport lead a store allows, a history taken in
/// steps meets the lead at every step (`Specs/storage.md`).
public func climbingHistory(count: UInt64, from start: UInt64, climbingBy climb: UInt64) -> [Change] {
    (1...count).map { counter in
        let previous = counter == 1 ? [] : [OpID(replica: ReplicaID(7), counter: counter - 1)]
        return Change(id: OpID(replica: ReplicaID(7), counter: counter), lamport: start + climb * (counter - 1), parents: previous,
                      operations: [.put(object: .root, key: "k", value: .scalar(.int(Int64(counter))), pred: previous)])
    }
}
