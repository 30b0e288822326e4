extension ChangeHistory {
    /// Every change held, in the order applied, as one bundle that holds
    /// its text (what `Document.encodeChanges()` sends), or nil if
    /// `groupedByReplica` would put them in another order (`GroupedOrder`),
    /// which it does from `Change` values.
    ///
    /// Written straight from the bundles and records, without `Change`
    /// values: a run of typing or deleting is read and written as one, and
    /// its text is read from `objects`, the document's state, in one piece.
    /// Going through `Change` values, a replayed automerge-paper (259,779
    /// changes) took about 190 ms to encode, seven times its replay. The
    /// bytes are those `ChangeEncoding.encode` writes for the same changes.
    func encodedWithText(_ objects: ObjectTable) throws(DocumentError) -> [UInt8]? {
        var tables = BundleTables()
        do {
            for bundle in bundles {
                var body = try ChangeEncoding.open(bundle.bytes, elidedTextAllowed: true).body
                let (replicas, keys) = try ChangeEncoding.readTables(&body)
                tables.note(replicas: replicas, keys: keys)
            }
        } catch {
            throw .damagedHistory(error)
        }
        forEachRecord(upTo: records.count) { record, parents, operations in
            tables.note(record.id.replica)
            if let parents { for parent in parents { tables.note(parent.replica) } }
            tables.note(operations)
        }
        var writer = BundleWriter(tables, elidingText: false)
        var order = GroupedOrder()
        var state = StateText(objects)
        do {
            for bundle in bundles {
                guard try write(bundle.bytes, to: &writer, order: &order, &state) else { return nil }
            }
        } catch {
            throw .damagedHistory(error)
        }
        var isGrouped = true
        var previousLast: OpID?
        forEachRecord(upTo: records.count) { record, parents, operations in
            let admitted = parents.map { order.admits(record.id, parents: $0) }
                ?? previousLast.map { last in withUnsafePointer(to: last) { order.admits(record.id, parents: UnsafeBufferPointer(start: $0, count: 1)) } }
            guard isGrouped, admitted ?? true else { return isGrouped = false }
            previousLast = record.lastID
            order.wrote(record.lastID)
            writer.append(id: record.id, lamport: record.lamport, width: record.firstWidth, time: record.time,
                          parents: parents, operations: operations)
            guard record.keystrokes > 0 else { return }
            let typed = IDRun(start: record.firstLastID.advanced(by: 1), length: Int(record.keystrokes))
            var utf8: [UInt8]?
            if case .insert(let object, _, .text) = operations[0] {
                utf8 = state.utf8(object, typed)
                precondition(utf8 != nil, "the document's state lacks the text typed by \(typed)")
            }
            (utf8 ?? []).withUnsafeBufferPointer { buffer in
                writer.appendKeystrokes(Int(record.keystrokes), repeating: operations[0], deletingForward: record.deletesForward,
                                        utf8: utf8 == nil ? nil : buffer)
            }
        }
        return isGrouped ? writer.finish() : nil
    }

    /// Writes the changes of a bundle held to `writer`; false, at the first
    /// change that `order` does not admit, if there is one.
    private func write(_ bytes: [UInt8], to writer: inout BundleWriter, order: inout GroupedOrder,
                       _ state: inout StateText) throws(DecodingError) -> Bool {
        var decoder = try ChangeDecoder(bytes, limits: .unlimited, insertedText: state.objects.insertedText, leavingTextOut: true)
        var current = ChangeDecoder.Current()
        var runText = ScalarStorage()
        var insert: [Operation] = []  // a change's one insert, its text from the state
        func missingText(_ run: IDRun) -> DecodingError { .invalid("the state holds no text for the elements \(run)") }
        while try decoder.next(into: &current) {
            guard current.parents.withUnsafeBufferPointer({ order.admits(current.id, parents: $0) }) else { return false }
            order.wrote(current.lastID)
            let operations: [Operation]
            if decoder.leavesTextOut, case .insertText(let object, let origin)? = current.edit {
                let run = IDRun(start: current.id, length: Int(current.width))
                guard let utf8 = state.utf8(object, run) else { throw missingText(run) }
                insert.removeAll(keepingCapacity: true)
                insert.append(.insert(object: object, origin: origin, content: .text(String(decoding: utf8, as: UTF8.self))))
                operations = insert
            } else {
                operations = current.allOperations
            }
            current.parents.withUnsafeBufferPointer { parents in
                operations.withUnsafeBufferPointer { operations in
                    writer.append(id: current.id, lamport: current.lamport, width: current.width, time: current.time,
                                  parents: parents, operations: operations)
                }
            }
            runText.removeAllKeepingCapacity()
            guard let edit = current.edit,
                  let run = try decoder.readContinuation(of: current, appendingTextTo: &runText, if: { _ in true })
            else { continue }
            switch edit {
            case .insertText(let object, _):
                let typed = IDRun(start: current.lastID.advanced(by: 1), length: Int(run.width))
                // Left out, the text is counted in scalars; held, in bytes.
                let utf8 = decoder.leavesTextOut ? state.utf8(object, typed) : runText.utf8(of: [0..<runText.count])
                guard let utf8 else { throw missingText(typed) }
                let each: BundleWriter.TypedLength = decoder.leavesTextOut ? .scalars(run.lastWidth) : .utf8Bytes(UInt64(utf8.count / run.count))
                utf8.withUnsafeBufferPointer { utf8 in
                    writer.appendRepeats(run.count, .typing(object: object, each: each), width: run.width, timeStep: run.timeStep, utf8: utf8)
                }
            case .delete(let object, let target):
                writer.appendRepeats(run.count, .deleting(object: object, replica: target.start.replica, step: run.deleteStep,
                                                          length: UInt64(target.length)),
                                     width: run.width, timeStep: run.timeStep, utf8: nil)
            }
            order.wrote(run.lastStart.advanced(by: run.lastWidth - 1))
        }
        try decoder.finish()
        return true
    }
}

/// Inserted text read from the document's state, the last text read held
/// apart: taken out of the table for each read, a text was copied (its
/// buffers retained and released), a fifth of a history's encode.
private struct StateText {
    let objects: ObjectTable
    private var textID: ObjectID?
    private var text = RGASequence<Unicode.Scalar>()

    init(_ objects: ObjectTable) { self.objects = objects }

    /// The UTF-8 that inserting the elements `run` into text `object` wrote.
    mutating func utf8(_ object: ObjectID, _ run: IDRun) -> [UInt8]? {
        if object != textID {
            guard let slot = objects.slots[object], slot.kind == .text else { return nil }
            (textID, text) = (object, objects.texts[slot.index])
        }
        return text.utf8(of: run)
    }
}

/// Whether changes written in the order held come in the order that
/// `groupedByReplica` would give them, which writes on with a replica's
/// next change while its parents are written, and otherwise goes on with
/// the earliest change not yet written.
///
/// A replica's changes that another's split are in that order when the
/// replica's next change had to wait: it names a change of another
/// replica written after the replica's run before it ended (as when
/// writers take turns, each merging the other's work). Changes
/// made concurrently and applied as they met are not: those are regrouped.
private struct GroupedOrder {
    /// The highest counter written of each replica.
    private var written = VersionVector()
    /// The first counter of each replica written, and what had been written
    /// when its last run of changes ended.
    private var replicas = ReplicaMap<(first: UInt64, atRunEnd: VersionVector)>()
    private var last: ReplicaID?
    /// Past this many replicas, a replica coming back is left to
    /// `groupedByReplica`: each run's end keeps a copy of `written`.
    private static let maxReplicas = 64

    /// Whether the change `id`, naming `parents`, comes next.
    mutating func admits(_ id: OpID, parents: UnsafeBufferPointer<OpID>) -> Bool {
        guard id.replica != last else { return true }
        if let last { replicas[last]?.atRunEnd = written }
        last = id.replica
        guard let known = replicas[id.replica] else {
            replicas[id.replica] = (id.counter, VersionVector())
            return true
        }
        guard written.count <= Self.maxReplicas else { return false }
        // It waited if a parent of another replica written here was not
        // written yet when its run ended.
        return parents.contains { parent in
            guard parent.replica != id.replica, let other = replicas[parent.replica] else { return false }
            return parent.counter > max(known.atRunEnd[parent.replica], other.first - 1)
        }
    }

    /// Notes a change or run written, up to `lastID`.
    mutating func wrote(_ lastID: OpID) {
        written[lastID.replica] = lastID.counter
    }
}
