extension Document {
    /// Runs `body` as one local transaction and records its edits as one change.
    ///
    /// The change takes the next counters of this replica and the next
    /// Lamport values, and names the current heads as its parents. A
    /// transaction that makes no edit makes no change. If `body` throws, the
    /// document is left as it was before the call.
    ///
    /// - Parameter time: informational wall-clock time for people reading the
    ///   history (milliseconds since 1970); never used for ordering.
    @discardableResult
    public mutating func transact<Result>(
        time: Int64 = 0,
        _ body: (inout Transaction) throws -> Result
    ) throws -> Result {
        // Swap the state into the transaction rather than copying it: edits
        // then mutate the only reference to each buffer, and no buffer is
        // retained or released (the placeholder's are empty or shared).
        var transaction = Transaction(start: OpID(replica: replica, counter: versionVector[replica] + 1),
                                      startLamport: maxLamport + 1)
        swap(&self, &transaction.document)
        let result: Result
        do {
            result = try body(&transaction)
        } catch {
            if let rebuilt = transaction.document.rebuiltWithoutUncommittedEdits() {
                self = rebuilt
            } else {
                // The history kept in memory cannot be read back (damaged
                // bytes from a loaded snapshot), so the state cannot be rolled
                // back: commit what was done, keeping state and history in step.
                commit(&transaction, time: time)
            }
            throw error
        }
        commit(&transaction, time: time)
        return result
    }

    private mutating func commit(_ transaction: inout Transaction, time: Int64) {
        // Swap rather than copy, so that `self` holds the only reference to
        // each buffer and recording the change does not copy the history.
        swap(&self, &transaction.document)
        guard transaction.width > 0 else { return }
        // The transaction appended its operations to the history already.
        history.recordAppendedOperations(id: transaction.start, lamport: transaction.startLamport,
                                         time: time, width: transaction.width, parents: heads)
        // A local change builds on every head: it becomes the only one.
        // (Not `noteApplied(parents: heads)`: passing `heads` while
        // replacing it would copy its buffer on every keystroke.)
        let last = transaction.start.advanced(by: transaction.width - 1)
        let lastLamport = transaction.startLamport + transaction.width - 1
        versionVector[replica] = last.counter
        replicaLamports[replica] = lastLamport
        maxLamport = max(maxLamport, lastLamport)
        if heads.count == 1 { heads[0] = last } else { heads = [last] }
    }

    /// Stands in for a document while its state is inside a transaction;
    /// assigning it allocates nothing.
    static let placeholder = Document(replica: ReplicaID(0))

    /// Adds an applied change to the history, version vector and heads.
    mutating func record(_ change: Change) {
        history.append(change)
        noteApplied(change)
    }

    mutating func noteApplied(_ change: Change) {
        noteApplied(id: change.id, lamport: change.lamport, width: change.width, parents: change.parents)
    }

    /// Moves the version vector, heads and clocks past an applied change.
    mutating func noteApplied(id: OpID, lamport: UInt64, width: UInt64, parents: [OpID]) {
        let last = id.advanced(by: width - 1)
        let lastLamport = lamport + width - 1
        versionVector[id.replica] = last.counter
        replicaLamports[id.replica] = lastLamport
        maxLamport = max(maxLamport, lastLamport)
        if heads.count == 1, parents.count == 1, heads[0] == parents[0] {
            heads[0] = last  // the common case: a change on top of the only head
        } else {
            heads.removeAll { parents.contains($0) || $0.replica == id.replica }
            heads.append(last)
            heads.sort()
        }
    }

    /// The same document rebuilt from its committed history, dropping edits
    /// a failed transaction made. Costs a replay; only errors take this path.
    func rebuiltWithoutUncommittedEdits() -> Document? {
        var rebuilt = Document(replica: replica)
        do {
            if let base { rebuilt = try Document(snapshot: base, replica: replica) }
            rebuilt.pendingLimit = pendingLimit
            for change in try history.all(objects) { try rebuilt.integrate(change) }
        } catch {
            return nil
        }
        rebuilt.pending = pending
        return rebuilt
    }
}
