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
    @inlinable @discardableResult
    public mutating func transact<Result>(
        time: Int64 = 0,
        _ body: (inout Transaction) throws -> Result
    ) throws -> Result {
        // Inlinable so that each caller gets it specialised for its closure
        // and result: a keystroke is small enough that the generic version's
        // overhead showed in its cost.
        try withUnsafeMutablePointer(to: &self) { document in
            var transaction = Transaction(editing: document)
            let result: Result
            do {
                result = try body(&transaction)
            } catch {
                document.pointee.abandon(transaction, time: time)
                throw error
            }
            document.pointee.commit(transaction, time: time)
            return result
        }
    }

    /// Undoes what a transaction whose closure threw did.
    @usableFromInline
    mutating func abandon(_ transaction: borrowing Transaction, time: Int64) {
        if let rebuilt = rebuiltWithoutUncommittedEdits() {
            self = rebuilt
        } else {
            // The history kept in memory cannot be read back (damaged
            // bytes from a loaded snapshot), so the state cannot be rolled
            // back: commit what was done, keeping state and history in step.
            commit(transaction, time: time)
        }
    }

    /// Records a transaction's operations, which it appended to the
    /// history already (but for a keystroke it holds), as one change.
    @usableFromInline
    mutating func commit(_ transaction: borrowing Transaction, time: Int64) {
        let (start, startLamport, width) = (transaction.start, transaction.startLamport, transaction.width)
        guard width > 0 else { return }
        let keystroke = transaction.keystroke
        let isInRun = keystroke.map { history.extendRun(with: $0, time: time) } ?? false
        if !isInRun {
            if let keystroke { history.operations.append(history.operation(of: keystroke)) }
            history.recordAppendedOperations(id: start, lamport: startLamport, time: time, width: width, parents: heads)
        }
        // A local change builds on every head: it becomes the only one.
        // (Not `noteApplied(parents: heads)`: passing `heads` while
        // replacing it would copy its buffer on every keystroke.)
        let last = start.advanced(by: width - 1)
        let lastLamport = startLamport + width - 1
        setLastCounter(last.counter, of: replica)
        localLamport = lastLamport
        maxLamport = max(maxLamport, lastLamport)
        if heads.count == 1 { heads[0] = last } else { heads = [last] }
    }

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
        setLastCounter(last.counter, of: id.replica)
        replicaLamports[id.replica] = lastLamport
        maxLamport = max(maxLamport, lastLamport)
        if heads.count == 1, parents.count == 1, heads[0] == parents[0] {
            heads[0] = last  // the common case: a change on top of the only head
        } else {
            // Heads are sorted: binary search finds what goes and where the
            // new head goes, where a pass over all of them and a sort took
            // n log n per change as 1,540 concurrent writers added heads.
            // The replica's own head, replaced in place, is most often the only parent.
            for parent in parents where parent.replica != id.replica {
                let index = heads.position(of: parent)
                if index < heads.count, heads[index] == parent { heads.remove(at: index) }
            }
            // A replica new to the heads most often sorts last (see `ReplicaMap.position(of:)`).
            if heads.last.map({ $0.replica < id.replica }) ?? true {
                heads.append(last)
                return
            }
            let start = heads.position(of: OpID(replica: id.replica, counter: 0))
            var end = start
            while end < heads.count, heads[end].replica == id.replica { end += 1 }
            if end == start + 1 { heads[start] = last } else { heads.replaceSubrange(start..<end, with: CollectionOfOne(last)) }
        }
    }

    /// The same document rebuilt from its committed history, dropping edits
    /// a failed transaction made. Costs a replay; only errors take this path.
    func rebuiltWithoutUncommittedEdits() -> Document? {
        var rebuilt = Document(replica: replica)
        do {
            if let base { rebuilt = try Document(snapshot: base, replica: replica) }
            rebuilt.pendingLimit = pendingLimit
            rebuilt.history.bundleSize = history.bundleSize
            for change in try history.all(objects) { try rebuilt.integrate(change) }
        } catch {
            return nil
        }
        rebuilt.pending = pending
        return rebuilt
    }
}

extension [OpID] {
    /// Where `id` is or would go in these sorted ids: the first index whose id is not below it.
    func position(of id: OpID) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if self[mid] < id { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
