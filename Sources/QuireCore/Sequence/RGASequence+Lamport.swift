extension RGASequence {
    /// The Lamport value of an element, tombstones included; nil if the
    /// sequence has no such element. Checking a remote insert needs it: an
    /// element's stamp must be above its origin's. Mutating because it
    /// finds the element as remote operations do (`SpanTree.locateNearHint`):
    /// the origin is mostly next to what the last remote operation found.
    mutating func lamport(of id: OpID) -> UInt64? {
        guard let (leaf, slot) = tree.locateNearHint(id) else { return nil }
        let span = tree.span(leaf, slot)
        return span.lamport + (id.counter - span.counter)
    }

    /// The first id of `run` this sequence does not hold (tombstones count
    /// as held), or nil if it holds them all. Checking a remote delete
    /// needs it; the id index answers for a whole page at a time.
    public func firstMissing(of run: IDRun) -> OpID? {
        var sequence = self  // the struct's references, not its storage
        return sequence.firstMissingInPlace(of: run)
    }

    /// `firstMissing(of:)`, mutating so that a call on an element of the
    /// document's texts reaches it in place (a non-mutating call there
    /// copies the whole struct first: a memcpy and a retain per array, for
    /// every delete a merge checks), and so that the id index remembers the
    /// replica it looked up, which the delete checked then names again.
    mutating func firstMissingInPlace(of run: IDRun) -> OpID? {
        guard run.length > 0 else { return nil }
        let (end, overflow) = run.start.counter.addingReportingOverflow(UInt64(run.length))
        guard !overflow, let replica = tree.ids.cachedReplicaIndex(of: run.start.replica) else { return run.start }
        return tree.ids.first(present: false, replica: replica, counters: run.start.counter..<end)
            .map { OpID(replica: run.start.replica, counter: $0) }
    }
}
