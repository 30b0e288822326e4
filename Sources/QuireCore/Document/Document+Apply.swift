extension Document {
    /// Applies remote changes, in any order.
    ///
    /// A change whose parents or previous change (same replica) are missing
    /// waits in `pending` until they arrive; one already applied is ignored.
    /// Each change is checked against the rules of `Specs/crdt.md` before any
    /// of it is applied, so an invalid change leaves the document unchanged.
    ///
    /// - Returns: how many changes were applied by this call (including
    ///   previously pending ones that became ready).
    /// - Throws: `DocumentError.invalidChange` or `.conflictingChange` for a
    ///   change that breaks the rules (changes before it in the sequence stay
    ///   applied), `.tooManyPendingChanges` when more than `pendingLimit`
    ///   changes would wait.
    @discardableResult
    public mutating func apply(_ changes: some Sequence<Change>) throws(DocumentError) -> Int {
        var applied = 0
        for change in changes {
            switch try readiness(of: change) {
            case .duplicate:
                continue
            case .waiting:
                guard pending.count < pendingLimit else { throw .tooManyPendingChanges(limit: pendingLimit) }
                if !pending.contains(change) { pending.append(change) }
            case .ready:
                try integrate(change)
                applied += 1
                applied += try applyReadyPending()
            }
        }
        return applied
    }

    /// Applies one remote change; see `apply(_:)`.
    @discardableResult
    public mutating func apply(_ change: Change) throws(DocumentError) -> Int {
        try apply(CollectionOfOne(change))
    }

    enum Readiness { case ready, waiting, duplicate }

    func readiness(of change: Change) throws(DocumentError) -> Readiness {
        guard !change.operations.isEmpty else { throw .invalidChange(change.id, reason: "it has no operations") }
        guard change.id.counter > 0 else { throw .invalidChange(change.id, reason: "counters start at 1") }
        let (end, overflow) = change.id.counter.addingReportingOverflow(change.width)
        guard !overflow, end < UInt64.max, change.lamport > 0,
              !change.lamport.addingReportingOverflow(change.width).overflow else {
            throw .invalidChange(change.id, reason: "its counters or Lamport values overflow")
        }
        let seen = versionVector[change.replica]
        if change.lastID.counter <= seen {
            if let existing = try? history.change(containing: change.id), existing != change {
                throw .conflictingChange(change.id)
            }
            return .duplicate
        }
        if change.id.counter <= seen { throw .conflictingChange(change.id) }
        if change.id.counter != seen + 1 { return .waiting }
        return change.parents.allSatisfy(versionVector.contains) ? .ready : .waiting
    }

    /// Applies every pending change that has become ready, repeatedly.
    mutating func applyReadyPending() throws(DocumentError) -> Int {
        var applied = 0
        var progress = !pending.isEmpty
        while progress {
            progress = false
            var index = 0
            while index < pending.count {
                let change = pending[index]
                switch try readiness(of: change) {
                case .ready:
                    pending.remove(at: index)
                    try integrate(change)
                    applied += 1
                    progress = true
                case .duplicate:
                    pending.remove(at: index)
                case .waiting:
                    index += 1
                }
            }
        }
        return applied
    }

    /// Checks and applies a change that is causally ready, and records it
    /// in the history unless the caller keeps it encoded.
    mutating func integrate(_ change: Change, recordingHistory: Bool = true) throws(DocumentError) {
        try validate(change)
        var id = change.id
        var lamport = change.lamport
        for operation in change.operations {
            objects.applyChecked(operation, id: id, lamport: lamport)
            let width = UInt64(operation.width)
            id = id.advanced(by: width)
            lamport += width
        }
        if recordingHistory { record(change) } else { noteApplied(change) }
    }

    /// The applied change that contains operation `id`.
    public func change(containing id: OpID) throws(DocumentError) -> Change? {
        try history.change(containing: id)
    }

    /// Checks every rule a ready change must meet, before anything of it is applied.
    func validate(_ change: Change) throws(DocumentError) {
        func invalid(_ reason: String) -> DocumentError { .invalidChange(change.id, reason: reason) }
        // Stamps are unique: a replica's Lamport values only go up.
        if case let previous = replicaLamports[change.replica], previous > 0, change.lamport <= previous {
            throw invalid("its Lamport value \(change.lamport) does not advance on its replica's previous \(previous)")
        }
        guard change.parents == change.parents.sorted(), Set(change.parents).count == change.parents.count else {
            throw invalid("its parents are not sorted and distinct")
        }
        // Operations: objects exist with the right kind, referenced elements exist.
        var created: [ObjectID: ObjectKind] = [:]
        var inserted: [ObjectID: [IDRun]] = [:]
        func kind(_ object: ObjectID) -> ObjectKind? { created[object] ?? objects.slots[object]?.kind }
        func holds(_ object: ObjectID, _ element: OpID) -> Bool {
            if inserted[object]?.contains(where: { $0.contains(element) }) == true { return true }
            guard let slot = objects.slots[object] else { return false }
            switch slot.kind {
            case .text: return objects.texts[slot.index].contains(element)
            case .list: return objects.lists[slot.index].contains(element)
            case .map, .counter: return false
            }
        }
        // A write's stamp is above the stamps of the entries it replaces.
        func checkAbove(_ pred: [OpID], _ object: ObjectID, _ key: String, lamport: UInt64) throws(DocumentError) {
            guard let slot = objects.slots[object], slot.kind == .map, let register = objects.maps[slot.index][key] else { return }
            for entry in register.entries where pred.contains(entry.id) && entry.lamport >= lamport {
                throw invalid("it replaces \(entry.id) at key \(key) without a greater Lamport value")
            }
        }
        var id = change.id
        for operation in change.operations {
            let object = operation.object
            guard let objectKind = kind(object) else { throw invalid("it edits object \(object), which does not exist") }
            switch operation {
            case .put(_, let key, let value, let pred):
                guard objectKind == .map else { throw invalid("it puts a key into \(object), a \(objectKind)") }
                try checkAbove(pred, object, key, lamport: change.lamport + id.counter - change.id.counter)
                if case .object(let newKind) = value { created[ObjectID(id)] = newKind }
            case .remove(_, let key, let pred):
                guard objectKind == .map else { throw invalid("it removes a key from \(object), a \(objectKind)") }
                try checkAbove(pred, object, key, lamport: change.lamport + id.counter - change.id.counter)
            case let .insert(_, origin, content):
                switch (objectKind, content) {
                case (.text, .text): break
                case (.list, .values(let values)):
                    for (offset, value) in values.enumerated() {
                        if case .object(let newKind) = value { created[ObjectID(id.advanced(by: UInt64(offset)))] = newKind }
                    }
                default: throw invalid("its insert does not match \(object), a \(objectKind)")
                }
                guard content.count > 0 else { throw invalid("it inserts nothing") }
                if let origin {
                    guard holds(object, origin) else { throw invalid("it inserts after \(origin), which \(object) does not hold") }
                    // An element's stamp is above its origin's: the RGA ordering rule depends on it.
                    if let originLamport = objects.lamport(of: origin, in: object), change.lamport + id.counter - change.id.counter <= originLamport {
                        throw invalid("its insert's Lamport value is not above its origin \(origin)'s")
                    }
                }
                inserted[object, default: []].append(IDRun(start: id, length: content.count))
            case let .delete(_, target):
                guard objectKind == .text || objectKind == .list else { throw invalid("it deletes from \(object), a \(objectKind)") }
                guard target.length > 0, !target.start.counter.addingReportingOverflow(UInt64(target.length)).overflow else {
                    throw invalid("its delete range is empty or overflows")
                }
                for offset in 0..<UInt64(target.length) where !holds(object, target.start.advanced(by: offset)) {
                    throw invalid("it deletes \(target.start.advanced(by: offset)), which \(object) does not hold")
                }
            case .increment:
                guard objectKind == .counter else { throw invalid("it increments \(object), a \(objectKind)") }
            }
            id = id.advanced(by: UInt64(operation.width))
        }
    }
}

extension IDRun {
    /// Whether `id` is one of the run's ids.
    public func contains(_ id: OpID) -> Bool {
        id.replica == start.replica && id.counter >= start.counter && id.counter - start.counter < UInt64(length)
    }
}

extension ObjectTable {
    /// The Lamport value of a list or text element, if `object` holds it.
    func lamport(of element: OpID, in object: ObjectID) -> UInt64? {
        guard let slot = slots[object] else { return nil }
        switch slot.kind {
        case .text: return texts[slot.index].lamport(of: element)
        case .list: return lists[slot.index].lamport(of: element)
        case .map, .counter: return nil
        }
    }

    /// Applies an operation that `Document.validate` accepted.
    mutating func applyChecked(_ operation: Operation, id: OpID, lamport: UInt64) {
        do {
            try apply(operation, id: id, lamport: lamport)
        } catch {
            preconditionFailure("a validated operation failed: \(error)")
        }
    }

    mutating func apply(_ operation: Operation, id: OpID, lamport: UInt64) throws {
        switch operation {
        case let .put(object, key, value, pred):
            let slot = try slot(object, .map)
            let stored = materialize(value, id: id, parent: object, key: key)
            maps[slot][key, default: MapRegister()].write(RegisterEntry(id: id, lamport: lamport, value: stored), replacing: pred)
        case let .remove(object, key, pred):
            let slot = try slot(object, .map)
            maps[slot][key, default: MapRegister()].write(RegisterEntry(id: id, lamport: lamport, value: nil), replacing: pred)
        case let .insert(object, origin, .text(string)):
            try texts[slot(object, .text)].insertRemote(origin: origin, id: id, lamport: lamport, contentsOf: string.unicodeScalars)
        case let .insert(object, origin, .values(values)):
            let slot = try slot(object, .list)
            var stored: [Value] = []
            stored.reserveCapacity(values.count)
            for (offset, value) in values.enumerated() {
                stored.append(materialize(value, id: id.advanced(by: UInt64(offset)), parent: object, key: nil))
            }
            try lists[slot].insertRemote(origin: origin, id: id, lamport: lamport, contentsOf: stored)
        case let .delete(object, target):
            guard let slot = slots[object] else { throw DocumentError.unknownObject(object) }
            if slot.kind == .text { try texts[slot.index].deleteRemote(target) }
            else { try lists[try self.slot(object, .list)].deleteRemote(target) }
        case let .increment(object, delta):
            counters[try slot(object, .counter)] &+= delta
        }
    }
}
