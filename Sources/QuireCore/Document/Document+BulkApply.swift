extension Document {
    /// Applies changes that are ready in the order given (the caller checked
    /// that with `appliesInOrder`), without recording them in the history.
    ///
    /// A history of ordinary typing is a long chain of one-operation changes
    /// by one replica: each inserts after the element the previous one
    /// inserted, or deletes next to the element the previous one deleted.
    /// Such a chain has the same effect as one insert of all its text, or
    /// one delete of all its elements, so it is applied as one; anything else,
    /// or a chain whose combined operation fails, goes change by change.
    ///
    /// - Returns: how many changes were applied; on error, the changes
    ///   before the failing one are applied and `error` says why.
    mutating func integrateInOrder(_ changes: [Change]) -> (applied: Int, error: DocumentError?) {
        var scalars: [Unicode.Scalar] = []
        var index = 0
        while index < changes.count {
            let end = chainEnd(changes, from: index)
            if end - index > 1, applyChain(changes[index..<end], scalars: &scalars) {
                noteApplied(changes[index])
                noteApplied(changes[end - 1])
                index = end
                continue
            }
            do {
                try integrate(changes[index], recordingHistory: false)
            } catch {
                return (index, error)
            }
            index += 1
        }
        return (changes.count, nil)
    }

    /// The end of the chain of typing (or deleting) that starts at `start`.
    private func chainEnd(_ changes: [Change], from start: Int) -> Int {
        let first = changes[start]
        guard first.operations.count == 1 else { return start + 1 }
        var previous = first
        var low: UInt64 = 0, high: UInt64 = 0  // deleted counters so far, for delete chains
        if case let .delete(_, target) = first.operations[0] {
            low = target.start.counter
            high = target.start.counter + UInt64(target.length) - 1
        }
        var end = start + 1
        while end < changes.count {
            let next = changes[end]
            guard next.operations.count == 1, next.replica == first.replica,
                  next.lamport == previous.lastLamport + 1, next.parents.count == 1, next.parents[0] == previous.lastID
            else { break }
            switch (first.operations[0], next.operations[0]) {
            case let (.insert(object, _, .text), .insert(nextObject, origin, .text)):
                guard nextObject == object, origin == previous.lastID else { return end }
            case let (.delete(object, firstTarget), .delete(nextObject, target)):
                guard nextObject == object, target.start.replica == firstTarget.start.replica else { return end }
                let targetEnd = target.start.counter + UInt64(target.length) - 1
                if targetEnd + 1 == low { low = target.start.counter }          // deleting backwards
                else if target.start.counter == high + 1 { high = targetEnd }  // deleting forwards
                else { return end }
            default:
                return end
            }
            previous = next
            end += 1
        }
        return end
    }

    /// Applies a chain found by `chainEnd` as one operation, after the
    /// checks `validate` would make of it. False, with nothing changed, if
    /// it cannot be applied so.
    private mutating func applyChain(_ chain: ArraySlice<Change>, scalars: inout [Unicode.Scalar]) -> Bool {
        let first = chain.first!
        if case let previous = replicaLamports[first.replica], previous > 0, first.lamport <= previous { return false }
        switch first.operations[0] {
        case let .insert(object, origin, .text):
            guard let slot = try? objects.editableSlot(object, .text) else { return false }
            if let origin, let originLamport = objects.texts[slot].lamport(of: origin), first.lamport <= originLamport { return false }
            scalars.removeAll(keepingCapacity: true)
            for change in chain {
                guard case let .insert(_, _, .text(string)) = change.operations[0] else { return false }
                scalars.append(contentsOf: string.unicodeScalars)
            }
            guard !scalars.isEmpty,
                  (try? objects.texts[slot].insertRemote(origin: origin, id: first.id, lamport: first.lamport, contentsOf: scalars)) != nil
            else { return false }
            return true
        case let .delete(object, target):
            guard let slot = objects.find(object), slot.kind == .text || slot.kind == .list else { return false }
            var low = target.start.counter, high = target.start.counter + UInt64(target.length) - 1
            for change in chain.dropFirst() {
                guard case let .delete(_, next) = change.operations[0] else { return false }
                low = min(low, next.start.counter)
                high = max(high, next.start.counter + UInt64(next.length) - 1)
            }
            let run = IDRun(start: OpID(replica: target.start.replica, counter: low), length: Int(high - low + 1))
            do {
                if slot.kind == .text { try objects.texts[slot.index].deleteRemote(run) }
                else { try objects.lists[slot.index].deleteRemote(run) }
            } catch {
                return false
            }
            return true
        default:
            return false
        }
    }
}
