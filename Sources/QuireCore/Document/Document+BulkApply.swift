extension Document {
    /// A bundle of fewer changes in fewer bytes goes into the history
    /// decoded. Kept apart, each would carry its own tables, checksum and
    /// version vector: a replica merging single changes from 1,540 others
    /// (crdt-benchmarks B3) held 29 MB of version vectors and wrote them all
    /// into its snapshot. A few changes with a lot in them (a long paste)
    /// stay encoded: their bytes outweigh the bundle's, version vector
    /// included (a replica merging 1,540 writers' strings of 5 kB, B3.3,
    /// kept a bundle and a version vector each: 44.5 MB in all for 8 MB of
    /// text; 10.7 MB with the strings' changes decoded).
    static let smallestKeptBundle = (changes: 16, bytes: 1024)

    /// Whether a bundle of `count` changes in `bytes` goes into the history
    /// decoded rather than kept encoded beside a copy of `versionVector`.
    func recordsDecoded(count: Int, bytes: Int) -> Bool {
        let versionBytes = versionVector.count * MemoryLayout<(ReplicaID, UInt64)>.stride
        return count < Self.smallestKeptBundle.changes && bytes < max(Self.smallestKeptBundle.bytes, versionBytes)
    }

    /// Applies a bundle whose changes are new and ready in the order given,
    /// as when a fresh replica catches up, straight from its columns, and
    /// keeps the bundle encoded as history (unless it is small).
    ///
    /// A history of ordinary typing is a long chain of one-operation changes
    /// by one replica: each inserts after the element the previous one
    /// inserted, or deletes next to the element the previous one deleted.
    /// Such a chain has the same effect as one insert of all its text, or
    /// one delete of all its elements, so it is applied as one. (A change
    /// in the chain may also name other replicas' changes applied before
    /// it: its writer merged them while typing.) Anything
    /// unusual (a change not ready in order, a chain whose combined operation
    /// fails, damage) hands over to `apply(_:)` for the changes not yet
    /// applied, which gives the exact answer change by change.
    ///
    /// A change of several edits applies in one pass into a fresh replica
    /// (nothing applied yet: a catch-up), each edit checking itself; a later
    /// edit refused leaves the earlier ones applied, so any error starts the
    /// bundle over from the fresh replica with `checkingLaterEdits`, which
    /// checks the edits after the first before any applies, as it does for
    /// a replica that holds something already (copying that, to start over
    /// from, would copy its storage at its first edit).
    ///
    /// - Returns: how many changes were applied, and the bundle's bounds
    ///   when it was taken whole and is one run.
    mutating func applyBundleInOrder(_ bytes: [UInt8], limits: DecodingLimits,
                                     checkingLaterEdits: Bool = false) throws -> (applied: Int, run: RunBounds?) {
        let fresh: Document? = checkingLaterEdits || !versionVector.isEmpty ? nil : self
        // Asked once: `fresh == nil` in the loop copied the optional document at every change of several edits.
        let checksLaterEdits = fresh == nil
        var decoder = try ChangeDecoder(bytes, limits: limits)
        reserveRootKeys(for: decoder)
        var current = ChangeDecoder.Current()
        var chain = Chain()
        var unnoted = UnnotedRun()
        var applied = 0  // changes fully applied, chains included
        var inOrder = true
        var first: Change?
        // Chains keep to one replica, so only the changes read one at a time can leave it.
        var isOneReplica = true
        // Room for the bundle's spans is made in the first text it inserts
        // into, if they may need more than a step of its span arena's growth
        // (`ObjectTable.reserveCapacity(in:for:)`); `applyEncodedRun` gives
        // back what the text did not use.
        var sizesText = true
        do {
            reading: while try decoder.next(into: &current) {
                if sizesText, let object = current.firstTextInsertedInto {
                    objects.reserveCapacity(in: object, for: decoder.textBounds(including: current))
                    sizesText = false
                }
                if let first { isOneReplica = isOneReplica && current.id.replica == first.replica } else { first = current.change }
                if chain.continues(with: current, known: versionVector) {
                    chain.extend(with: current, isHead: { isHead($0) })
                    try takeContinuation(after: current.edit, into: &chain, from: &decoder)
                    continue
                }
                if !chain.isEmpty {
                    guard apply(&chain, after: unnoted) else { inOrder = false; break reading }
                    unnoted.add(&chain)
                    applied += chain.count
                    chain.removeAll()
                }
                if !unnoted.isContinued(by: current) { note(&unnoted) }
                // (A change that continues `unnoted` names its last change alone.)
                let isReady = unnoted.isEmpty
                    ? Self.isReadyToStartARun(current.id, parents: current.parents, in: versionVector)
                    : current.id.counter == unnoted.lastID.counter + 1
                guard isReady else { inOrder = false; break reading }
                // A change of one edit that no later change can carry on (most
                // edits at random places) applies alone, not as a chain of one
                // kept until the next change is read.
                if let edit = current.edit, try !decoder.mayBeContinued(after: edit) {
                    guard apply(edit, id: current.id, lamport: current.lamport, text: current.text, after: unnoted)
                    else { inOrder = false; break reading }
                    unnoted.add(current)
                    applied += 1
                    continue
                }
                if chain.start(with: &current) {
                    try takeContinuation(after: current.edit, into: &chain, from: &decoder, mayBeContinued: true)
                    continue
                }
                if current.edits.isEmpty {
                    note(&unnoted)
                    try integrate(current.change, recordingHistory: false)
                } else {
                    // Edits join the run not yet noted, as chains do: noting
                    // the run, then the change, cost rustcode's merge 1.5%.
                    try applyEdits(of: current, after: unnoted, checkingLaterEdits: checksLaterEdits)
                    unnoted.add(current)
                }
                applied += 1
            }
            if inOrder && !chain.isEmpty {
                if apply(&chain, after: unnoted) {
                    unnoted.add(&chain)
                    applied += chain.count
                } else {
                    inOrder = false
                }
            }
            note(&unnoted)
            if inOrder { try decoder.finish() }
        } catch {
            if let fresh {
                self = fresh
                return try applyBundleInOrder(bytes, limits: limits, checkingLaterEdits: true)
            }
            note(&unnoted)
            try recordDecoded(bytes, count: applied)
            throw error
        }
        guard inOrder else { return (try finishOneByOne(bytes, limits: limits, applied: applied), nil) }
        if recordsDecoded(count: applied, bytes: bytes.count) {
            try recordDecoded(bytes, count: applied)
        } else {
            history.append(bundle: bytes, count: applied, version: versionVector)
        }
        // Every change was the next of its replica: one replica makes one run.
        guard let first, isOneReplica, let last = decoder.lastRead else { return (applied, nil) }
        return (applied, RunBounds(count: applied, first: first, lastID: last.id, lastLamport: last.lamport, lastTime: last.time))
    }

    /// Makes room in an empty root map for the keys the bundle writes in
    /// it: grown key by key, it hashes all its keys again each time it
    /// doubles, an eighth of a merge of 1,540 writers' keys.
    private mutating func reserveRootKeys(for decoder: borrowing ChangeDecoder) {
        guard let root = try? objects.slot(.root, .map), objects.maps[root].isEmpty else { return }
        objects.maps[root].reserveCapacity(decoder.rootKeyWrites())
    }

    /// Adds to `chain` the changes after its last, whose only operation is
    /// `edit`, that the decoder can read as one run, if they stay next to
    /// what the chain holds. (Given the edit, not the whole change: passing
    /// that copied it, once a change of edits at random places.) Inlined:
    /// its call and frame cost each change that starts a chain about 30
    /// instructions, most of a change of edits at random places.
    /// `mayBeContinued`: the decoder said so of `edit` just before.
    @inline(__always)
    private func takeContinuation(after edit: ChangeDecoder.Edit?, into chain: inout Chain,
                                  from decoder: inout ChangeDecoder, mayBeContinued: Bool = false) throws(DecodingError) {
        // The deleted range by value: a closure over `chain` would copy it.
        let (low, high) = (chain.low, chain.high)
        guard let run = try decoder.readContinuation(after: edit, lastID: chain.lastID, lastLamport: chain.lastElementLamport,
                                                     mayBeContinued: mayBeContinued, appendingTextTo: &chain.text.buffer,
                                                     if: { Chain.keepsRangeWhole($0, low: low, high: high) })
        else { return }
        chain.extend(with: run)
    }

    /// Whether a change with first id `id` and `parents`, which continues no
    /// run not yet noted, is ready: its replica's next, built on changes
    /// that `versionVector` names, given in order. Out of line, so that the
    /// version vector's lookups do not take the merge loop's registers
    /// (inlined, they cost it about 12 instructions a change, review206);
    /// static, given the version vector: as a method of the document, it
    /// copied the document at each call.
    @inline(never)
    private static func isReadyToStartARun(_ id: OpID, parents: [OpID], in versionVector: VersionVector) -> Bool {
        id.counter == versionVector[id.replica] + 1 && areSortedAndDistinct(parents) && versionVector.containsAll(parents)
    }

    /// Records the first `applied` changes of a bundle, already applied, in
    /// the history decoded, and applies the rest one by one.
    private mutating func finishOneByOne(_ bytes: [UInt8], limits: DecodingLimits, applied: Int) throws -> Int {
        try recordDecoded(bytes, count: applied)
        return try applied + apply(ChangeEncoding.decode(bytes, limits: limits).dropFirst(applied))
    }

    /// Records the first `count` changes of a bundle in the history, decoded.
    private mutating func recordDecoded(_ bytes: [UInt8], count: Int) throws {
        guard count > 0 else { return }
        var decoder = try ChangeDecoder(bytes, limits: .unlimited)
        var current = ChangeDecoder.Current()
        for _ in 0..<count where try decoder.next(into: &current) { history.append(current.change) }
    }

    /// Applies the operations of a chain (of one change or more) as one
    /// operation, after the checks `validate` would make of it, leaving the
    /// bookkeeping to the caller; `unnoted` holds the applied changes of the
    /// chain's replica not yet noted, if any. False, with nothing changed,
    /// if it cannot be applied so. (The chain is taken `inout`, and left
    /// as it is: passed by value, its 160 bytes were copied at every call,
    /// once a chain.)
    private mutating func apply(_ chain: inout Chain, after unnoted: UnnotedRun) -> Bool {
        apply(chain.edit, id: chain.firstID, lamport: chain.firstLamport, text: chain.text,
              deleting: (chain.low, chain.high), after: unnoted)
    }

    /// Applies `edit` with first id `id` and Lamport value `lamport`, as
    /// `apply(_:after:)` applies a chain's: an insert of `text`, or a
    /// delete of the counters `deleting` of its target's replica (its
    /// target, if nil).
    private mutating func apply(_ edit: ChangeDecoder.Edit, id: OpID, lamport: UInt64, text: ReusedText,
                                deleting counters: (low: UInt64, high: UInt64)? = nil, after unnoted: UnnotedRun) -> Bool {
        let previous = unnoted.isEmpty ? lastLamport(of: id.replica) : unnoted.lastElementLamport
        if previous > 0, lamport <= previous { return false }
        switch edit {
        case let .insertText(object, origin):
            guard (try? objects.insertText(object, origin: origin, id: id, lamport: lamport, contentsOf: text.buffer, text.range)) != nil
            else { return false }
        case let .delete(object, target):
            let run = counters.map { IDRun(start: OpID(replica: target.start.replica, counter: $0.low), length: Int($0.high - $0.low + 1)) }
            guard (try? objects.delete(run ?? target, from: object)) != nil else { return false }
        }
        return true
    }

    /// Applies a ready change whose operations are all `edits`, making the
    /// checks `integrate` makes, without building its `Change`, and leaves
    /// the bookkeeping to the caller; `unnoted` holds the applied changes
    /// of the change's replica not yet noted, if any.
    ///
    /// Each edit checks itself as it applies and changes nothing if it
    /// fails. With `checkingLaterEdits`, the edits after the first are
    /// checked before any applies, so that the change applies whole or not
    /// at all; without, a later edit refused leaves the earlier ones
    /// applied (see `applyBundleInOrder`). The checks cost rustcode's merge
    /// 9% of its instructions: a second lookup of every element named.
    private mutating func applyEdits(of change: ChangeDecoder.Current, after unnoted: UnnotedRun,
                                     checkingLaterEdits: Bool) throws(DocumentError) {
        try validateStamp(id: change.id, lamport: change.lamport, parents: change.parents,
                          previous: unnoted.isEmpty ? nil : unnoted.lastElementLamport)
        if checkingLaterEdits {
            var id = change.id.advanced(by: change.edits[0].width)
            let starts = change.editStarts
            for index in change.edits.indices.dropFirst() {
                try checkEdit(at: index, of: change, id: id, starts: starts)
                id = id.advanced(by: change.edits[index].width)
            }
        }
        var id = change.id
        var scalarStart = change.text.start
        for (index, (edit, width)) in change.edits.enumerated() {
            let lamport = change.lamport + (id.counter - change.id.counter)
            do {
                switch edit {
                case let .insertText(object, origin):
                    try objects.insertText(object, origin: origin, id: id, lamport: lamport,
                                           contentsOf: change.text.buffer, scalarStart..<(scalarStart + Int(width)))
                    scalarStart += Int(width)
                case let .delete(object, target):
                    try objects.delete(target, from: object, isNextEdit: index > 0)
                }
            } catch {
                guard index == 0 || !checkingLaterEdits else { preconditionFailure("a checked operation failed: \(error)") }
                throw .invalidChange(change.id, reason: "\(error)")
            }
            id = id.advanced(by: width)
        }
    }

    /// Checks, as `validate` does, that the edit at `index` of `change`,
    /// with first id `id`, can apply once the edits before it have: its
    /// object is a text (or a list, to delete from) and holds the elements
    /// it names, or the edits before insert them; an insert's stamp is
    /// above its origin's.
    private mutating func checkEdit(at index: Int, of change: ChangeDecoder.Current, id: OpID, starts: [UInt64]) throws(DocumentError) {
        func invalid(_ reason: String) -> DocumentError { .invalidChange(change.id, reason: reason) }
        switch change.edits[index].edit {
        case let .insertText(object, origin):
            guard let slot = objects.find(object) else { throw invalid("it edits object \(object), which does not exist") }
            guard slot.kind == .text else { throw invalid("its insert does not match \(object), a \(slot.kind)") }
            // An origin the change inserted has a lower stamp than this insert's.
            guard let origin, !change.isInserted(origin, into: object, before: index, starts: starts) else { return }
            guard let originLamport = objects.lamport(of: origin, in: slot) else {
                throw invalid("it inserts after \(origin), which \(object) does not hold")
            }
            let lamport = change.lamport + (id.counter - change.id.counter)
            guard lamport > originLamport else { throw invalid("its insert's Lamport value is not above its origin \(origin)'s") }
        case let .delete(object, target):
            guard let slot = objects.find(object) else { throw invalid("it edits object \(object), which does not exist") }
            guard slot.kind == .text || slot.kind == .list else { throw invalid("it deletes from \(object), a \(slot.kind)") }
            let (end, overflow) = target.start.counter.addingReportingOverflow(UInt64(target.length))
            guard !overflow else { throw invalid("its delete range is empty or overflows") }
            // The object holds none of the ids from the change's first on: the edits before insert those.
            let ownStart = target.start.replica == change.id.replica ? max(target.start.counter, change.id.counter) : end
            let heldLength = Int(min(ownStart, end) - target.start.counter)
            var missing = heldLength > 0 ? objects.firstMissing(of: IDRun(start: target.start, length: heldLength), in: slot) : nil
            if missing == nil, ownStart < end {
                missing = (ownStart..<end).lazy.map { OpID(replica: change.id.replica, counter: $0) }
                    .first { !change.isInserted($0, into: object, before: index, starts: starts) }
            }
            if let missing { throw invalid("it deletes \(missing), which \(object) does not hold") }
        }
    }

    /// Notes the changes of `run` in the version vector, clocks and heads,
    /// and empties it. Each builds on the one before: together they move
    /// the heads as one change would, from the first's parents to the last's id.
    private mutating func note(_ run: inout UnnotedRun) {
        guard !run.isEmpty else { return }
        noteApplied(id: run.lastStart, lamport: run.lastLamport, width: run.lastWidth, parents: run.outsideParents)
        run.removeAll()
    }
}

/// Applied changes of one replica, each built on the one before (and on
/// changes of other replicas applied before the run), not yet noted in the
/// version vector, clocks and heads: a replica's typing merged into a
/// fresh replica is noted once, not once a change.
private struct UnnotedRun {
    private(set) var isEmpty = true
    /// The parents its changes name outside it: its first change's, and
    /// the heads of other replicas that later ones merged. Noted as the
    /// parents of one change, they leave the heads as each change would.
    private(set) var outsideParents: [OpID] = []
    /// The last change's id, Lamport value and width.
    private(set) var lastStart = OpID(replica: ReplicaID(0), counter: 1)
    private(set) var lastLamport: UInt64 = 0
    private(set) var lastWidth: UInt64 = 0

    var lastID: OpID { lastStart.advanced(by: lastWidth - 1) }
    /// The Lamport value of the last change's last element: the next change's must be above it.
    var lastElementLamport: UInt64 { lastLamport + lastWidth - 1 }

    /// Whether `change` may join the run: its replica's, built on the last change alone.
    func isContinued(by change: ChangeDecoder.Current) -> Bool {
        !isEmpty && change.id.replica == lastStart.replica && change.parents.count == 1 && change.parents[0] == lastID
    }

    /// Adds an applied chain that continues the run (or starts it),
    /// taking its first parents' buffer when it starts the run, and the
    /// parents its later changes merged.
    mutating func add(_ chain: inout Chain) {
        if isEmpty { chain.swapFirstParents(with: &outsideParents) }
        chain.moveMergedParents(into: &outsideParents)
        isEmpty = false
        lastStart = chain.lastStart
        lastLamport = chain.lastLamport
        lastWidth = chain.lastWidth
    }

    /// Adds an applied change that continues the run (or starts it, its
    /// parents copied). (Not inlined: in the merge loop, it made the loop
    /// run more instructions for every change.)
    @inline(never)
    mutating func add(_ change: ChangeDecoder.Current) {
        if isEmpty {
            // Sized and overwritten in place: emptied and appended to,
            // cost friendsforever's merge 0.2% more.
            outsideParents.resize(to: change.parents.count, padding: change.id)
            outsideParents.withUnsafeMutableBufferPointer { _ = $0.update(fromContentsOf: change.parents) }
        }
        isEmpty = false
        lastStart = change.id
        lastLamport = change.lamport
        lastWidth = change.width
    }

    mutating func removeAll() { isEmpty = true }
}

/// A run of one-operation changes of one replica that together are one
/// insert of text or one delete of consecutive elements.
///
/// One chain is reused from one run to the next, keeping its buffers.
private struct Chain {
    /// The first change: its id, Lamport value, parents and only operation
    /// (an insert's text is in `text`). The parents' and the text's
    /// buffers are swapped with the decoder's: sharing them would make the
    /// decoder copy them when it reads the next change, and copying costs
    /// more than swapping.
    private(set) var firstID = OpID(replica: ReplicaID(0), counter: 1)
    private(set) var firstLamport: UInt64 = 0
    private(set) var firstParents: [OpID] = []
    private(set) var edit = ChangeDecoder.Edit.delete(object: .root, target: IDRun(start: OpID(replica: ReplicaID(0), counter: 1), length: 1))
    private(set) var count = 0
    /// The parents the chain's later changes name besides the change before
    /// them that are heads: other replicas' changes, applied before the
    /// chain, that noting it drops from the heads.
    private(set) var mergedParents: [OpID] = []
    /// The text inserted by an insert chain. (Runs of typing are decoded
    /// straight into its buffer.)
    fileprivate(set) var text = ReusedText()
    /// The counters deleted by a delete chain.
    private(set) var low: UInt64 = 0, high: UInt64 = 0
    /// The last change's id, Lamport value and width.
    private(set) var lastStart = OpID(replica: ReplicaID(0), counter: 1)
    private(set) var lastLamport: UInt64 = 0
    private(set) var lastWidth: UInt64 = 0

    var isEmpty: Bool { count == 0 }

    /// Empties the chain (`mergedParents` are moved out before), keeping
    /// its buffers for the next one.
    mutating func removeAll() {
        count = 0
        text.removeAll()
    }

    var lastID: OpID { lastStart.advanced(by: lastWidth - 1) }
    /// The Lamport value of the last change's last element.
    var lastElementLamport: UInt64 { lastLamport + lastWidth - 1 }

    /// Appends `mergedParents` to `parents` and empties it.
    mutating func moveMergedParents(into parents: inout [OpID]) {
        guard !mergedParents.isEmpty else { return }
        parents.append(contentsOf: mergedParents)
        mergedParents.removeAllOneByOne()
    }

    /// Trades the first change's parents for `other`'s buffer, which the
    /// next `start` swaps with the decoder's in turn.
    mutating func swapFirstParents(with other: inout [OpID]) {
        swap(&firstParents, &other)
    }

    /// Starts a chain with `change` if it can begin one, taking its parents.
    mutating func start(with change: inout ChangeDecoder.Current) -> Bool {
        guard let edit = change.edit else { return false }
        switch edit {
        case .insertText:
            swap(&text, &change.text)
        case .delete(_, let target):
            low = target.start.counter
            high = target.start.counter + UInt64(target.length) - 1
        }
        firstID = change.id
        firstLamport = change.lamport
        swap(&firstParents, &change.parents)
        self.edit = edit
        count = 1
        note(change)
        return true
    }

    /// Whether `change` carries the chain on: same replica and object, the
    /// next counters and Lamport values, built on the chain's last change
    /// (and perhaps on changes of other replicas that `known` holds),
    /// inserting after its last element or deleting next to its range.
    /// (Inlined: called for every change; left out of line, as changes
    /// elsewhere made the compiler do, it took the change by copy.)
    @inline(__always)
    func continues(with change: ChangeDecoder.Current, known: VersionVector) -> Bool {
        guard count > 0, let next = change.edit, change.id.replica == lastStart.replica,
              change.id.counter == lastID.counter + 1, change.lamport == lastLamport + lastWidth
        else { return false }
        // Most often built on the chain's last change alone.
        if change.parents.count != 1 || change.parents[0] != lastID {
            guard Self.merges(change.parents, after: lastID, known: known) else { return false }
        }
        switch (edit, next) {
        case let (.insertText(object, _), .insertText(nextObject, origin)):
            return nextObject == object && origin == lastID
        case let (.delete(object, firstTarget), .delete(nextObject, target)):
            guard nextObject == object, target.start.replica == firstTarget.start.replica else { return false }
            let end = target.start.counter + UInt64(target.length) - 1
            return end + 1 == low || target.start.counter == high + 1
        default:
            return false
        }
    }

    /// Whether `parents`, a change's, are the chain's last id and changes of
    /// other replicas that `known` holds, sorted and distinct as every
    /// change's parents must be: the writer typed on after merging those.
    private static func merges(_ parents: [OpID], after lastID: OpID, known: VersionVector) -> Bool {
        guard Document.areSortedAndDistinct(parents) else { return false }
        var namesLast = false
        for parent in parents {
            if parent == lastID {
                namesLast = true
            } else if parent.replica == lastID.replica || !known.contains(parent) {
                return false
            }
        }
        return namesLast
    }

    /// Whether a run read by `ChangeDecoder.readContinuation` keeps the
    /// range `low...high` of a delete chain in one piece (typing runs always
    /// continue).
    static func keepsRangeWhole(_ run: ChangeDecoder.Continuation, low: UInt64, high: UInt64) -> Bool {
        guard !run.isTyping else { return true }
        let (runLow, runHigh) = range(of: run)
        return runLow <= high + 1 && runHigh + 1 >= low
    }

    /// The counters a delete run deletes.
    private static func range(of run: ChangeDecoder.Continuation) -> (low: UInt64, high: UInt64) {
        let length = run.lastWidth
        let first = UInt64(bitPattern: Int64(bitPattern: run.deleteStart) &+ run.deleteStep)
        let last = UInt64(bitPattern: Int64(bitPattern: run.deleteStart) &+ run.deleteStep &* Int64(run.count))
        return (min(first, last), max(first, last) + length - 1)
    }

    /// Adds a run that `keepsRangeWhole` accepted (and whose text, if it
    /// is typing, is in `text` already).
    mutating func extend(with run: ChangeDecoder.Continuation) {
        if !run.isTyping {
            let (low, high) = Self.range(of: run)
            self.low = min(self.low, low)
            self.high = max(self.high, high)
        }
        count += run.count
        lastStart = run.lastStart
        lastLamport = run.lastLamport
        lastWidth = run.lastWidth
    }

    /// Adds a change that `continues(with:known:)` accepted, and of the
    /// other replicas' changes it merged, those that are heads, as `isHead`
    /// (`Document.isHead`) says. The others need not be kept: the heads
    /// change only when a run is noted, after the chain, and noting drops
    /// heads alone. (Kept, friendsforever's merge appended, moved and looked
    /// up 1,978 parents a merge pair to drop a few.) Given a closure, not
    /// the document: as an argument of this call, it was copied (409 bytes,
    /// a `memcpy`) at each call, every chain's change of sveltecomponent's
    /// merge read alone.
    mutating func extend(with change: ChangeDecoder.Current, isHead: (OpID) -> Bool) {
        if change.parents.count > 1 {
            for parent in change.parents where parent != lastID && isHead(parent) { mergedParents.append(parent) }
        }
        switch change.edit {
        case .insertText:
            text.buffer.append(contentsOf: change.text.buffer, change.text.range)
        case .delete(_, let target):
            low = min(low, target.start.counter)
            high = max(high, target.start.counter + UInt64(target.length) - 1)
        case nil:
            preconditionFailure("only inserts and deletes extend a chain")
        }
        count += 1
        note(change)
    }

    private mutating func note(_ change: ChangeDecoder.Current) {
        lastStart = change.id
        lastLamport = change.lamport
        lastWidth = change.width
    }
}
