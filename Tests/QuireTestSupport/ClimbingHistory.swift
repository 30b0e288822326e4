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

/// A history sent before what it depends on: `dependency`, a change of
/// replica 8 at Lamport value 1, and `history`, two changes of replica 7
/// climbing a whole `lead` each from `lead`, the first waiting for
/// `dependency`. Given in steps, the first waits and must count for the
/// second as it does within one batch (`Specs/storage.md`).
public func historyBeforeItsDependency(lead: UInt64) -> (dependency: Change, history: [Change]) {
    let dependency = Change(id: OpID(replica: ReplicaID(8), counter: 1), lamport: 1, parents: [],
                            operations: [.put(object: .root, key: "m", value: .scalar(.int(1)), pred: [])])
    var history = climbingHistory(count: 2, from: lead, climbingBy: lead)
    history[0].parents = [dependency.id]
    return (dependency, history)
}
