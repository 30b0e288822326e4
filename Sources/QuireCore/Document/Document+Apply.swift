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
        // Shared by the duplicates of this call: they often come in runs.
        var lookup = ChangeHistory.BundleLookup()
        for change in changes {
            switch try readiness(of: change, lookup: &lookup) {
            case .duplicate:
                continue
            case .waiting:
                // One parked already is a repeat: it takes no new place.
                guard !pending.contains(change) else { continue }
                guard pending.count < pendingLimit else { throw .tooManyPendingChanges(limit: pendingLimit) }
                pending.append(change)
            case .ready:
                try integrate(change)
                applied += 1
                applied += try applyReadyPending(lookup: &lookup)
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

    /// Whether `change` can apply now, waits for others, or is held already;
    /// `lookup` keeps the history bundles read to compare a duplicate with
    /// the change held.
    func readiness(of change: Change, lookup: inout ChangeHistory.BundleLookup) throws(DocumentError) -> Readiness {
        guard !change.operations.isEmpty else { throw .invalidChange(change.id, reason: "it has no operations") }
        guard change.id.counter > 0 else { throw .invalidChange(change.id, reason: "counters start at 1") }
        let (end, overflow) = change.id.counter.addingReportingOverflow(change.width)
        guard !overflow, end < UInt64.max, change.lamport > 0, Self.lamportValuesFit(from: change.lamport, count: change.width) else {
            throw .invalidChange(change.id, reason: "its counters overflow or its Lamport values reach 2^62")
        }
        let seen = versionVector[change.replica]
        if change.lastID.counter <= seen {
            if let existing = try? history.change(containing: change.id, objects, lookup: &lookup), existing != change {
                throw .conflictingChange(change.id)
            }
            return .duplicate
        }
        if change.id.counter <= seen { throw .conflictingChange(change.id) }
        let isReady = change.id.counter == seen + 1 && versionVector.containsAll(change.parents)
        // This replica's next local operations take the counters after `seen`:
        // a change of its own left waiting would clash with them.
        guard isReady || change.replica != replica else {
            throw .invalidChange(change.id, reason: "it is under this replica's own id but does not follow on from its changes, "
                + "so its next edits would take the same counters")
        }
        return isReady ? .ready : .waiting
    }

    /// Applies every pending change that has become ready, repeatedly.
    mutating func applyReadyPending(lookup: inout ChangeHistory.BundleLookup) throws(DocumentError) -> Int {
        var applied = 0
        var progress = !pending.isEmpty
        while progress {
            progress = false
            var index = 0
            while index < pending.count {
                let change = pending[index]
                let readiness: Readiness
                do { readiness = try self.readiness(of: change, lookup: &lookup) } catch .conflictingChange {
                    // Another change took its id (it came from another document,
                    // or a damaged peer): it can never apply, and is no reason
                    // to refuse the change that did.
                    readiness = .duplicate
                }
                switch readiness {
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
        // A change of one operation (most of them) needs no separate pass
        // over its elements: applying an operation checks them first and
        // changes nothing if they are missing.
        let single = change.operations.count == 1
        try validate(change, checkingElements: !single)
        var id = change.id
        var lamport = change.lamport
        for operation in change.operations {
            do {
                try objects.apply(operation, id: id, lamport: lamport)
            } catch {
                guard single else { preconditionFailure("a validated operation failed: \(error)") }
                throw .invalidChange(change.id, reason: "\(error)")
            }
            let width = UInt64(operation.width)
            id = id.advanced(by: width)
            lamport += width
        }
        if recordingHistory { record(change) } else { noteApplied(change) }
    }

    /// Checks a ready change's Lamport value and parents, what `validate`
    /// checks before its operations. (Inlined: called from a mutating
    /// method, it took a copy of the whole document.)
    /// (`previous`: the replica's last Lamport value, when changes of it
    /// applied but not yet noted hold it.)
    @inline(__always)
    func validateStamp(id: OpID, lamport: UInt64, parents: [OpID], previous: UInt64? = nil) throws(DocumentError) {
        // Stamps are unique: a replica's Lamport values only go up.
        if case let previous = previous ?? lastLamport(of: id.replica), previous > 0, lamport <= previous {
            throw .invalidChange(id, reason: "its Lamport value \(lamport) does not advance on its replica's previous \(previous)")
        }
        guard Self.areSortedAndDistinct(parents) else { throw .invalidChange(id, reason: "its parents are not sorted and distinct") }
    }

    /// Whether `parents` are in increasing order, each once, as a change
    /// must name them: heads are kept so, and found by binary search.
    static func areSortedAndDistinct(_ parents: [OpID]) -> Bool {
        // A loop over indices: `zip` with `dropFirst` cost a merge of two
        // writers' typing, which checks every run's first change, 0.9%.
        var index = 1
        while index < parents.count {
            guard parents[index - 1] < parents[index] else { return false }
            index += 1
        }
        return true
    }

    /// The applied change that contains operation `id`.
    public func change(containing id: OpID) throws(DocumentError) -> Change? {
        try history.change(containing: id, objects)
    }

    /// Checks the rules a ready change must meet before anything of it is
    /// applied. With `checkingElements` false, the operations' objects and
    /// elements, and inserts' stamps against their origins', are left for
    /// `ObjectTable.apply` to check.
    mutating func validate(_ change: Change, checkingElements: Bool) throws(DocumentError) {
        try validateStamp(id: change.id, lamport: change.lamport, parents: change.parents)
        var madeEarlier = MadeEarlierInChange()
        var id = change.id
        for (position, operation) in change.operations.enumerated() {
            let object = operation.object
            // An object made by this change is not in the table yet: no need to look it up.
            let createdKind = madeEarlier.objectKinds.isEmpty ? nil : madeEarlier.objectKinds[object]
            let slot = createdKind == nil ? objects.find(object) : nil
            guard let objectKind = slot?.kind ?? createdKind else {
                throw .invalidChange(change.id, reason: "it edits object \(object), which does not exist")
            }
            let place = OperationInChange(change: change.id, id: id, lamport: change.lamport + (id.counter - change.id.counter),
                                          object: object, slot: slot, kind: objectKind,
                                          isLast: position == change.operations.count - 1)
            switch operation {
            case .put(_, let key, _, let pred), .remove(_, let key, let pred):
                guard objectKind == .map else { throw place.invalid("it writes key \(key) of \(object), a \(objectKind)") }
                try validateReplacing(pred, at: key, by: place)
                if case .put(_, _, .object(let newKind), _) = operation {
                    try noteNewObject(of: newKind, id: id, by: place, &madeEarlier)
                }
            case let .insert(_, origin, content):
                try validateInsert(content, after: origin, by: place, checkingElements: checkingElements, &madeEarlier)
            case let .delete(_, target):
                try validateDelete(target, by: place, checkingElements: checkingElements, madeEarlier.inserted)
            case .increment:
                guard objectKind == .counter else { throw place.invalid("it increments \(object), a \(objectKind)") }
            }
            id = id.advanced(by: UInt64(operation.width))
        }
    }

    /// Checks that a write to `key` of a map replaces the entries `pred`
    /// names with a greater stamp.
    @inline(__always)
    private mutating func validateReplacing(_ pred: [OpID], at key: String, by place: OperationInChange) throws(DocumentError) {
        // A write's stamp is above the stamps of the entries it
        // replaces. (A first write to a key replaces none: it need
        // not look the key up; nor need a write above the winner.
        // Each id named is looked up, by hash in a register of many
        // entries: scanning the entries was quadratic in a key's
        // concurrent entries.)
        guard !pred.isEmpty, let slot = place.slot, let entry = objects.maps[slot.index].index(forKey: MapKey(key)),
              let winner = objects.maps[slot.index].values[entry].winner, winner.lamport >= place.lamport else { return }
        // The key hashed once: indexed in place, then read.
        objects.maps[slot.index].values[entry].indexIfLarge()
        let register = objects.maps[slot.index].values[entry]
        for named in pred {
            if let replaced = register.lamport(of: named), replaced >= place.lamport {
                throw place.invalid("it replaces \(named) at key \(key) without a greater Lamport value")
            }
        }
    }

    /// Checks an insert's content against its object, and (with
    /// `checkingElements`) its origin; notes what it makes for later operations.
    @inline(__always)
    private mutating func validateInsert(_ content: InsertContent, after origin: OpID?, by place: OperationInChange,
                                         checkingElements: Bool, _ madeEarlier: inout MadeEarlierInChange) throws(DocumentError) {
        let count: Int
        switch (place.kind, content) {
        case (.text, .text(let string)): count = string.unicodeScalarCount
        case (.list, .values(let values)):
            count = values.count
            for (offset, value) in values.enumerated() {
                guard case .object(let newKind) = value else { continue }
                try noteNewObject(of: newKind, id: place.id.advanced(by: UInt64(offset)), by: place, &madeEarlier)
            }
        default: throw place.invalid("its insert does not match \(place.object), a \(place.kind)")
        }
        guard count > 0 else { throw place.invalid("it inserts nothing") }
        // An element's stamp is above its origin's: the RGA ordering rule depends on it.
        // An origin this change inserted has a lower stamp than this insert's.
        if checkingElements, let origin, !madeEarlier.inserted.contains(origin, in: place.object) {
            guard let originLamport = objects.lamport(of: origin, in: place.slot) else {
                throw place.invalid("it inserts after \(origin), which \(place.object) does not hold")
            }
            guard place.lamport > originLamport else { throw place.invalid("its insert's Lamport value is not above its origin \(origin)'s") }
        }
        if !place.isLast { madeEarlier.inserted.append(IDRun(start: place.id, length: count), in: place.object) }
    }

    /// Checks a delete's range, and (with `checkingElements`) that its
    /// object holds every element of it.
    @inline(__always)
    private mutating func validateDelete(_ target: IDRun, by place: OperationInChange, checkingElements: Bool,
                                         _ inserted: InsertedRuns) throws(DocumentError) {
        let object = place.object
        guard place.kind == .text || place.kind == .list else { throw place.invalid("it deletes from \(object), a \(place.kind)") }
        guard target.length > 0, !target.start.counter.addingReportingOverflow(UInt64(target.length)).overflow else {
            throw place.invalid("its delete range is empty or overflows")
        }
        guard checkingElements else { return }
        // The whole run at once, unless this change inserted into
        // the object already: those elements are not in it yet.
        var missing: OpID?
        if inserted.objects.contains(object) {
            for element in (0..<UInt64(target.length)).lazy.map(target.start.advanced(by:))
            where !inserted.contains(element, in: object) && objects.lamport(of: element, in: place.slot) == nil {
                missing = element
                break
            }
        } else {
            missing = objects.firstMissing(of: target, in: place.slot)
        }
        if let missing { throw place.invalid("it deletes \(missing), which \(object) does not hold") }
    }

    /// Refuses a new object (id `id`, of `kind`) in `place.object` past the
    /// depth a snapshot allows, and notes it and its depth for later operations.
    @inline(__always)
    private func noteNewObject(of kind: ObjectKind, id: OpID, by place: OperationInChange,
                               _ madeEarlier: inout MadeEarlierInChange) throws(DocumentError) {
        let depth = madeEarlier.depths[place.object] ?? objects.depth(of: place.object)
        guard depth < SnapshotEncoding.maxDepth else {
            throw place.invalid("it nests objects deeper than \(SnapshotEncoding.maxDepth) levels")
        }
        madeEarlier.depths[ObjectID(id)] = depth + 1
        if !place.isLast { madeEarlier.objectKinds[ObjectID(id)] = kind }
    }
}

/// One operation of a change being validated, and where it goes.
private struct OperationInChange {
    /// The change's id, which its errors name.
    let change: OpID
    /// The operation's first id, and its Lamport value.
    let id: OpID
    let lamport: UInt64
    /// The object it edits: its slot in the table (nil for one made
    /// earlier in the change) and its kind.
    let object: ObjectID
    let slot: ObjectTable.Slot?
    let kind: ObjectKind
    /// The change's last operation: what it makes, no later one uses.
    let isLast: Bool

    func invalid(_ reason: String) -> DocumentError { .invalidChange(change, reason: reason) }
}

/// What earlier operations of a change being validated made, which later
/// ones may use. Looked up by hash and by binary search: a change may hold
/// thousands of operations.
private struct MadeEarlierInChange {
    /// The kinds of the objects made.
    var objectKinds: [ObjectID: ObjectKind] = [:]
    /// The depths of the objects made that may hold others; the rest (their
    /// parents at the limit) are refused before they are.
    var depths: [ObjectID: Int] = [:]
    var inserted = InsertedRuns()
}

/// The elements that earlier operations of a change being validated
/// inserted, in the order of their ids (a change's ids only grow).
private struct InsertedRuns {
    private var runs: [(object: ObjectID, run: IDRun)] = []
    /// The objects they went into.
    private(set) var objects: Set<ObjectID> = []

    mutating func append(_ run: IDRun, in object: ObjectID) {
        runs.append((object, run))
        objects.insert(object)
    }

    /// Whether `element` is one of them, inserted into `object`.
    func contains(_ element: OpID, in object: ObjectID) -> Bool {
        // The last run that starts at or before `element`.
        let low = runs.partitioningIndex { $0.run.start.counter > element.counter }
        return low > 0 && runs[low - 1].object == object && runs[low - 1].run.contains(element)
    }
}

extension IDRun {
    /// Whether `id` is one of the run's ids.
    public func contains(_ id: OpID) -> Bool {
        id.replica == start.replica && id.counter >= start.counter && id.counter - start.counter < UInt64(length)
    }
}

extension ObjectTable {
    /// The Lamport value of a list or text element, if the object at `slot`
    /// holds it. (By slot: a check runs per element, and hashing the
    /// object's id each time cost more than the lookup itself.)
    ///
    /// These checks reach the sequence in place, through a mutable buffer
    /// pointer and mutating methods: a non-mutating method called on
    /// `texts[index]`, or on an element of a buffer, copies the whole
    /// sequence struct first (a memcpy and a retain per array, every check).
    mutating func lamport(of element: OpID, in slot: Slot?) -> UInt64? {
        switch slot?.kind {
        case .text: texts.withUnsafeMutableBufferPointer { $0[slot!.index].lamport(of: element) }
        case .list: lists.withUnsafeMutableBufferPointer { $0[slot!.index].lamport(of: element) }
        case .map, .counter, nil: nil
        }
    }

    /// The first id of `run` that the list or text at `slot` does not hold
    /// (tombstones count as held); nil if it holds them all.
    mutating func firstMissing(of run: IDRun, in slot: Slot?) -> OpID? {
        switch slot?.kind {
        case .text: texts.withUnsafeMutableBufferPointer { $0[slot!.index].firstMissingInPlace(of: run) }
        case .list: lists.withUnsafeMutableBufferPointer { $0[slot!.index].firstMissingInPlace(of: run) }
        case .map, .counter, nil: run.start
        }
    }

    /// Applies a remote operation. It throws, changing nothing, if its
    /// object or the elements it names are missing, or if it inserts after
    /// an element whose stamp is not below its own.
    mutating func apply(_ operation: Operation, id: OpID, lamport: UInt64) throws {
        switch operation {
        case let .put(object, key, value, pred):
            let slot = try editableSlot(object, .map)
            let stored = materialize(value, id: id, parent: object, key: key)
            maps[slot][MapKey(key), default: MapRegister()].write(RegisterEntry(id: id, lamport: lamport, value: stored), replacing: pred)
        case let .remove(object, key, pred):
            let slot = try editableSlot(object, .map)
            maps[slot][MapKey(key), default: MapRegister()].write(RegisterEntry(id: id, lamport: lamport, value: nil), replacing: pred)
        case let .insert(object, origin, .text(string)):
            try texts[editableSlot(object, .text)].insertRemote(origin: origin, id: id, lamport: lamport,
                                                                contentsOf: string.unicodeScalars, checkingOriginStamp: true)
        case let .insert(object, origin, .values(values)):
            let slot = try editableSlot(object, .list)
            // Check before creating nested objects, so a failure leaves none behind.
            if let origin {
                guard let originLamport = lists[slot].lamport(of: origin) else { throw SequenceError.unknownElement(origin) }
                guard lamport > originLamport else { throw SequenceError.stampNotAboveOrigin(origin) }
            }
            for case let (offset, .object(kind)) in values.enumerated() {
                create(kind, id: id.advanced(by: UInt64(offset)), parent: object, key: nil)
            }
            // The elements read from the operation's values as they go in:
            // an array of them cost an allocation per insert.
            let elements = values.indices.lazy.map { Value(values[$0], writtenBy: id.advanced(by: UInt64($0))) }
            try lists[slot].insertRemote(origin: origin, id: id, lamport: lamport, contentsOf: elements)
        case let .delete(object, target):
            try delete(target, from: object)
        case let .increment(object, delta):
            counters[try editableSlot(object, .counter)] &+= delta
        }
    }

    /// Applies a remote insert of the scalars in `range` of `scalars` (a
    /// merge's decoded text), checking it as `apply(_:id:lamport:)` does.
    /// (Inlined: merges call it for most changes.)
    @inline(__always)
    mutating func insertText(_ object: ObjectID, origin: OpID?, id: OpID, lamport: UInt64,
                             contentsOf scalars: ScalarStorage, _ range: Range<Int>) throws {
        try texts[editableSlot(object, .text)].insertRemote(origin: origin, id: id, lamport: lamport,
                                                            contentsOf: scalars, range, checkingOriginStamp: true)
    }

    /// Makes room in the text `object` for what a bundle inserts
    /// (`ChangeDecoder.textBounds(including:)`), as
    /// `RGASequence.reserveCapacity(_:ids:spans:)` says: a replica catching
    /// up on a large bundle otherwise grows the text's content, id index
    /// and spans step by step, copying them each time. The spans' room is a
    /// bound, given back by `giveBackSpareSpanRoom(ofEveryText:)` after the
    /// bundle, or after the last of several (`Document.applyEncodedRun`);
    /// a text noted before, of an earlier bundle, gets its room given back
    /// here, so that only one is noted.
    mutating func reserveCapacity(in object: ObjectID, for bounds: (scalars: Int, ids: Int, spans: Int)) {
        guard let slot = find(object), slot.kind == .text,
              texts[slot.index].reserveCapacity(bounds.scalars, ids: bounds.ids, spans: bounds.spans) else { return }
        if let textWithSpanRoom, textWithSpanRoom != slot.index { texts[textWithSpanRoom].giveBackSpareSpanRoom() }
        textWithSpanRoom = slot.index
    }

    /// Gives back the room past the spans of the text
    /// `reserveCapacity(in:for:)` made room in; with `everyText`, of every
    /// text (after a fresh replica's first bundle, which made them all, the
    /// others grown step by step).
    mutating func giveBackSpareSpanRoom(ofEveryText everyText: Bool) {
        if everyText {
            for index in texts.indices { texts[index].giveBackSpareSpanRoom() }
        } else if let textWithSpanRoom {
            texts[textWithSpanRoom].giveBackSpareSpanRoom()
        }
        textWithSpanRoom = nil
    }

    /// Applies a remote delete from a text or list, checking it as `apply(_:id:lamport:)` does
    /// (`isNextEdit`: see `RGASequence.deleteRemote`).
    @inline(__always)
    mutating func delete(_ target: IDRun, from object: ObjectID, isNextEdit: Bool = false) throws {
        guard let slot = find(object) else { throw DocumentError.unknownObject(object) }
        if slot.kind == .text { try texts[slot.index].deleteRemote(target, isNextEdit: isNextEdit) }
        else { try lists[try self.slot(object, .list)].deleteRemote(target, isNextEdit: isNextEdit) }
    }
}
