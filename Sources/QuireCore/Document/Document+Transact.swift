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
            if recordAppendedOperations(id: start, lamport: startLamport, time: time, width: width) {
                objects.compactElementIndexes()
            }
        }
        // A local change builds on every head: it becomes the only one.
        // (Not `noteApplied(parents: heads)`: that would make an array of
        // the heads on every keystroke.)
        let last = start.advanced(by: width - 1)
        let lastLamport = startLamport + width - 1
        setLastCounter(last.counter, of: replica)
        maxLamport = max(maxLamport, lastLamport)
        setOnlyHead(last, lastLamport: lastLamport)
    }

    /// Records the operations a local change appended to the history, its
    /// parents the heads: the sole head, when there is one, without a walk
    /// over every replica's clock. (Inlined: a call at
    /// every commit that starts a record.)
    @inline(__always)
    private mutating func recordAppendedOperations(id: OpID, lamport: UInt64, time: Int64, width: UInt64) -> Bool {
        if let soleHead {
            return history.recordAppendedOperations(id: id, lamport: lamport, time: time, width: width, parents: CollectionOfOne(soleHead))
        }
        return history.recordAppendedOperations(id: id, lamport: lamport, time: time, width: width, parents: heads)
    }

    /// Adds an applied change to the history, version vector and heads.
    mutating func record(_ change: Change) {
        // Every few thousand changes, as the history is bundled, the id
        // indexes that grew enough since are compacted (as in `commit`).
        if history.append(change) { objects.compactElementIndexes() }
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
        maxLamport = max(maxLamport, lastLamport)
        // The replica's own head goes, whether its parents name it or not:
        // the change builds on it. Other replicas' heads go if named.
        dropHeads(namedIn: parents, besides: id.replica)
        setHead(last, lastLamport: lastLamport)
    }

    /// The same document rebuilt from its committed history, dropping edits
    /// a failed transaction made. Costs a replay; only errors take this path.
    func rebuiltWithoutUncommittedEdits() -> Document? {
        var rebuilt = Document(replica: replica)
        do {
            // The snapshot's checksum is not compared again: loading this document checked these bytes.
            if let base { rebuilt = try Document(snapshot: base, replica: replica, limits: .default, checksum: .covered) }
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
