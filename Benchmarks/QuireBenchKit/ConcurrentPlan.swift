/// Which changes each replica must pull before each transaction of a
/// concurrent trace, worked out from the transaction graph alone before the
/// timed replay, so that the replay does no bookkeeping of its own.
///
/// A transaction applies to the merge of the states after its parents. Each
/// agent's transactions are made on its own replica, one after another, so a
/// replica's state is described by "the last transaction of each agent it
/// has". The state after transaction `j` is whatever its replica had then;
/// pulling agent `b`'s replica up to `b`'s latest transaction in the target
/// therefore brings everything that transaction had seen too.
public struct ConcurrentPlan: Sendable {
    public struct Pull: Sendable {
        /// The replica (agent) to pull from.
        public var agent: Int
        /// Pull up to that replica's version vector right after this transaction.
        public var upTo: Int
    }

    /// `pulls[i]`: what transaction `i`'s replica pulls before applying it.
    public var pulls: [[Pull]]

    public init(_ trace: ConcurrentTrace) throws(TraceFormatError) {
        let agents = 0..<trace.numAgents
        /// `stateAfter[i][b]`: the last transaction of agent `b` included in
        /// the state right after transaction `i` (-1: none).
        var stateAfter: [[Int]] = []
        stateAfter.reserveCapacity(trace.txns.count)
        /// The same for each replica now.
        var replicaState = Array(repeating: Array(repeating: -1, count: trace.numAgents), count: trace.numAgents)
        pulls = []
        pulls.reserveCapacity(trace.txns.count)

        for (index, txn) in trace.txns.enumerated() {
            var target = Array(repeating: -1, count: trace.numAgents)
            for parent in txn.parents {
                for b in agents { target[b] = max(target[b], stateAfter[parent][b]) }
            }
            // A replica cannot forget: if it has a transaction the parents lack,
            // one replica per agent cannot replay the trace.
            for b in agents where replicaState[txn.agent][b] > target[b] {
                throw TraceFormatError(description:
                    "txns[\(index)]: agent \(txn.agent) already has txns[\(replicaState[txn.agent][b])], which its parents do not include")
            }
            pulls.append(agents.compactMap { b in
                b != txn.agent && target[b] > replicaState[txn.agent][b] ? Pull(agent: b, upTo: target[b]) : nil
            })
            target[txn.agent] = index
            replicaState[txn.agent] = target
            stateAfter.append(target)
        }
    }
}
