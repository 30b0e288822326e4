import QuireCore

/// What one replay of a trace through Quire's `Document` took and found.
public struct ReplayResult: Sendable {
    /// The edits, from an empty document to the final text (all replicas merged).
    public var localNanos: UInt64
    /// A fresh document applying the whole encoded history.
    public var mergeNanos: UInt64
    /// The replayed document encoding its whole history for a peer
    /// (`encodeChanges()`), the bytes the merge applies.
    public var historyNanos: UInt64
    /// The whole encoded history, the bytes the merge applied (kept for
    /// `SentHistory`, which would otherwise encode it again).
    public var history: [UInt8]
    /// One line per failed check; empty when the replay is correct.
    public var failures: [String]
    /// The replica that made (or merged) every edit, kept so that the suite
    /// can measure its memory and snapshot.
    public var document: Document
}

/// Replays editing traces against `QuireCore.Document`.
///
/// Only the document work is inside the timed regions: traces are parsed,
/// converted and planned before, texts are checked after. Both replays throw
/// what the document API throws; wrong results are `failures`.
public enum TraceReplay {
    /// One document, one transaction per trace transaction.
    public static func replay(_ trace: SequentialTrace) throws -> ReplayResult {
        let edits = LocalEdits(trace)
        let start = CPUClock.now()
        let (doc, text) = try typeLocally(edits)
        let localNanos = CPUClock.now() - start

        var failures: [String] = []
        check(try doc.text(text), against: .exact(trace.endContent), "final text", &failures)
        return try measureMerge(of: doc, localNanos: localNanos, failures: failures) { fresh in
            try decodedTextProblem(fresh, text, .exact(trace.endContent))
        }
    }

    /// The trace typed into a new document. Never inlined, so that a
    /// profiler can single out local replay (valgrind's `--toggle-collect`).
    @inline(never)
    static func typeLocally(_ edits: LocalEdits) throws -> (Document, ObjectID) {
        var doc = Document(replica: ReplicaID(1))
        let text = try createText(in: &doc)
        var start = 0
        for end in edits.transactionEnds {
            try doc.transact { tx in
                for index in start..<end {
                    try apply(position: edits.positions[index], deleteCount: edits.deleteCounts[index],
                              inserted: edits.insertedTexts[index], to: text, in: &tx)
                }
            }
            start = end
        }
        return (doc, text)
    }

    /// A sequential trace's patches in flat arrays, made before the timed
    /// replay. Reading the trace's array of patches per transaction instead
    /// retained and released each array (atomic operations) in the timed
    /// loop, and for B4x100, whose 26 M transactions' arrays take
    /// gigabytes, missed the cache on each: costs of the harness, not of the
    /// document.
    struct LocalEdits {
        /// Where each transaction's patches end.
        var transactionEnds: [Int] = []
        var positions: [Int] = []
        var deleteCounts: [Int] = []
        var insertedTexts: [String] = []

        init(_ trace: SequentialTrace) {
            let patchCount = trace.txns.reduce(0) { $0 + $1.count }
            transactionEnds.reserveCapacity(trace.txns.count)
            positions.reserveCapacity(patchCount)
            deleteCounts.reserveCapacity(patchCount)
            insertedTexts.reserveCapacity(patchCount)
            for txn in trace.txns {
                for patch in txn {
                    positions.append(patch.position)
                    deleteCounts.append(patch.deleteCount)
                    insertedTexts.append(patch.insertedText)
                }
                transactionEnds.append(positions.count)
            }
        }
    }

    /// One replica per agent (replica ids 1...numAgents); replica 1 makes the
    /// text object in a setup change that every replica applies first. Before
    /// each transaction its agent's replica pulls, from the other replicas,
    /// exactly what the transaction's parents had (see `ConcurrentPlan`).
    /// Replicas exchange encoded changes, as the peers exchange their
    /// updates (`peers.py`): encoding and decoding are part of the exchange.
    public static func replay(_ trace: ConcurrentTrace, plan: ConcurrentPlan) throws -> ReplayResult {
        let start = CPUClock.now()
        var replicas = (1...trace.numAgents).map { Document(replica: ReplicaID(UInt64($0))) }
        let text = try createText(in: &replicas[0])
        let setup = try replicas[0].encodeChanges()
        for agent in replicas.indices.dropFirst() { try replicas[agent].applyEncoded(setup) }

        // The version vector of each transaction's replica right after it.
        var versionAfter: [VersionVector] = []
        versionAfter.reserveCapacity(trace.txns.count)
        for (txn, pulls) in zip(trace.txns, plan.pulls) {
            for pull in pulls {
                let missing = try replicas[pull.agent].changes(from: replicas[txn.agent].versionVector, to: versionAfter[pull.upTo])
                try replicas[txn.agent].applyEncoded(ChangeEncoding.encode(missing))
            }
            try apply(txn.patches, to: text, in: &replicas[txn.agent])
            versionAfter.append(replicas[txn.agent].versionVector)
        }
        for agent in replicas.indices.dropFirst() {
            try replicas[0].applyEncoded(replicas[agent].encodeChanges(since: replicas[0].versionVector))
        }
        let localNanos = CPUClock.now() - start

        var failures: [String] = []
        let merged = try replicas[0].text(text)
        check(merged, against: trace.expected, "merged text", &failures)
        // A full exchange: every other replica takes what the merged one has,
        // and all must converge on the merged text, whatever its order.
        for agent in replicas.indices.dropFirst() {
            try replicas[agent].apply(replicas[0].changes(since: replicas[agent].versionVector))
            check(try replicas[agent].text(text), against: .exact(merged), "replica \(agent + 1) after a full exchange", &failures)
        }
        return try measureMerge(of: replicas[0], localNanos: localNanos, failures: failures) { fresh in
            try decodedTextProblem(fresh, text, .exact(merged))
        }
    }

    private static func createText(in doc: inout Document) throws -> ObjectID {
        try doc.transact { tx in try tx.putObject(.root, key: "text", kind: .text) }
    }

    /// `trace` typed into `text` of `doc`, untimed: one change per trace
    /// transaction, as an editor makes them, the `index`th at `time(index)`
    /// (informational), for workloads that start from a document with the
    /// trace's history (a sync catch-up, a store of notes).
    public static func type(_ trace: SequentialTrace, into text: ObjectID, of doc: inout Document,
                            time: (Int) -> Int64 = { _ in 0 }) throws {
        for (index, patches) in trace.txns.enumerated() { try apply(patches, to: text, in: &doc, time: time(index)) }
    }

    /// One trace transaction as one document transaction.
    /// Patches are read in place, by index: copying one out retains its
    /// text and scalars, which the timed loop would count as Quire's time.
    private static func apply(_ patches: [Patch], to text: ObjectID, in doc: inout Document, time: Int64 = 0) throws {
        try doc.transact(time: time) { tx in
            for index in patches.indices {
                try apply(position: patches[index].position, deleteCount: patches[index].deleteCount,
                          inserted: patches[index].insertedText, to: text, in: &tx)
            }
        }
    }

    /// One patch: it deletes then inserts; an empty part is no operation,
    /// so it is not sent.
    @inline(__always)
    private static func apply(position: Int, deleteCount: Int, inserted: String, to text: ObjectID, in tx: inout Transaction) throws {
        if deleteCount > 0 { try tx.deleteText(text, at: position, count: deleteCount) }
        if !inserted.isEmpty { try tx.insertText(text, at: position, inserted) }
    }

    /// Times `doc` encoding its whole history, and a fresh replica loading it; `check`
    /// says what is wrong with the fresh replica's state, or nil. Never
    /// inlined, so that a profiler can single out the merge.
    @inline(never)
    static func measureMerge(
        of doc: Document, localNanos: UInt64, failures: [String], check: (Document) throws -> String?
    ) throws -> ReplayResult {
        var failures = failures
        let start = CPUClock.now()
        let encoded = try doc.encodeChanges()
        let historyNanos = CPUClock.now() - start
        let (fresh, mergeNanos) = try merge(encoded)
        if let problem = try check(fresh) { failures.append(problem) }
        return ReplayResult(localNanos: localNanos, mergeNanos: mergeNanos, historyNanos: historyNanos,
                            history: encoded, failures: failures, document: doc)
    }

    /// A fresh replica applying `encoded`, a whole encoded history, and the
    /// CPU time that took.
    public static func merge(_ encoded: [UInt8]) throws -> (Document, nanoseconds: UInt64) {
        let start = CPUClock.now()
        var fresh = Document(replica: ReplicaID(999))
        // The bytes were encoded by this process, so the limits meant for
        // bytes from elsewhere (4 M changes a bundle) do not apply: B4x100 has 26 M.
        try fresh.applyEncoded(encoded, limits: DecodingLimits(maxChanges: .max, maxOperations: .max))
        return (fresh, CPUClock.now() - start)
    }

    private static func decodedTextProblem(_ doc: Document, _ text: ObjectID, _ expected: ExpectedText) throws -> String? {
        try expected.problem(with: doc.text(text)).map { "text decoded from the encoded history: \($0)" }
    }

    private static func check(_ actual: String, against expected: ExpectedText, _ what: String, _ failures: inout [String]) {
        if let problem = expected.problem(with: actual) { failures.append("\(what): \(problem)") }
    }

}
