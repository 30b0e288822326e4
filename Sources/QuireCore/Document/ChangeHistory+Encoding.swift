extension ChangeHistory {
    /// Every change held as one bundle that holds its text (what
    /// `Document.encodeChanges()` sends), in the order `groupedByReplica`
    /// gives: the same bytes as `ChangeEncoding.encode` of the changes
    /// regrouped.
    ///
    /// Read from the bundles and records as `HistoryUnits`, changes and runs
    /// of typing or deleting, not as `Change` values; the text comes from
    /// `objects`, the document's state, a run's in one piece. Going through
    /// `Change` values, a replayed automerge-paper (259,779 changes) took
    /// about 190 ms to encode, seven times its replay.
    func encodedWithText(_ objects: ObjectTable) throws(DocumentError) -> [UInt8] {
        var tables = BundleTables()
        var units = HistoryUnits(objects)
        do {
            for bundle in bundles {
                var body = try ChangeEncoding.open(bundle.bytes, elidedTextAllowed: true).body
                let (replicas, keys) = try ChangeEncoding.readTables(&body)
                tables.note(replicas: replicas, keys: keys)
                try units.read(bundle.bytes)
            }
        } catch {
            throw .damagedHistory(error)
        }
        forEachRecord(upTo: records.count) { record, parents, operations in
            tables.note(record.id.replica)
            if let parents { for parent in parents { tables.note(parent.replica) } }
            tables.note(operations)
            units.add(record, parents: parents, operations: operations)
        }
        var writer = BundleWriter(tables, elidingText: false)
        do {
            if let order = units.groupedOrder {
                for index in order { try units.write(index, to: &writer) }
            } else {
                for index in units.indices { try units.write(index, to: &writer) }
            }
        } catch {
            throw .damagedHistory(error)
        }
        return writer.finish()
    }
}

/// A history read into changes and runs: a run is changes of one replica
/// that each carry on from the one before (`BundleWriter.appendRepeats`),
/// and follows the change it carries on from. Their text is left in the
/// document's state until they are written.
private struct HistoryUnits {
    struct Unit {
        /// The first change's id, Lamport value and time, and the counters
        /// of all the unit's changes.
        var id: OpID
        var lamport: UInt64
        var time: Int64
        var width: UInt64
        /// For a run: how many changes, what each does, and the time between them.
        var run: (count: Int, edit: BundleWriter.RepeatedEdit, timeStep: Int64)?
        /// For a change: where its parents and operations end in `parents` and `operations`.
        var parentsEnd = 0, operationsEnd = 0
    }

    private var units: [Unit] = []
    private var parents: [OpID] = []
    private var operations: [Operation] = []
    private var state: StateText

    init(_ objects: ObjectTable) { state = StateText(objects) }

    var indices: Range<Int> { units.indices }

    /// The order `groupedByReplica` gives, or nil if it is the order read.
    var groupedOrder: [Int]? {
        units.withUnsafeBufferPointer { units in
            parents.withUnsafeBufferPointer { parents in
                ReplicaGrouping.order(
                    count: units.count, id: { units[$0].id }, lastCounter: { units[$0].id.counter + units[$0].width - 1 },
                    forEachParent: { index, body in
                        // A run's changes name only the change before.
                        guard units[index].run == nil else { return }
                        let start = index == 0 ? 0 : units[index - 1].parentsEnd
                        for parent in parents[start..<units[index].parentsEnd] { body(parent) }
                    })
            }
        }
    }

    /// Reads the changes of a bundle held.
    mutating func read(_ bytes: [UInt8]) throws(DecodingError) {
        var decoder = try ChangeDecoder(bytes, limits: .unlimited, insertedText: state.objects.insertedText, leavingTextOut: true)
        var current = ChangeDecoder.Current()
        var runText = ScalarStorage()  // unused: runs take their text from the state
        while try decoder.next(into: &current) {
            if decoder.leavesTextOut, case .insertText(let object, let origin)? = current.edit {
                let run = IDRun(start: current.id, length: Int(current.width))
                guard let text = state.withUTF8(object, run, { String(decoding: $0, as: UTF8.self) }) else { throw Self.missingText(run) }
                operations.append(.insert(object: object, origin: origin, content: .text(text)))
            } else if let edit = current.edit {
                operations.append(edit.operation(inserting: current.scalars[...]))
            } else {
                operations.append(contentsOf: current.allOperations)
            }
            parents.append(contentsOf: current.parents)
            units.append(Unit(id: current.id, lamport: current.lamport, time: current.time, width: current.width,
                              parentsEnd: parents.count, operationsEnd: operations.count))
            runText.removeAllKeepingCapacity()
            guard let edit = current.edit,
                  let run = try decoder.readContinuation(of: current, appendingTextTo: &runText, if: { _ in true })
            else { continue }
            let repeated: BundleWriter.RepeatedEdit = switch edit {
            case .insertText(let object, _):
                // The length column counts scalars when the text is left out, bytes when it is held.
                .typing(object: object, each: decoder.leavesTextOut ? .scalars(run.textLengthEach) : .utf8Bytes(run.textLengthEach))
            case .delete(let object, let target):
                .deleting(object: object, replica: target.start.replica, step: run.deleteStep, length: UInt64(target.length))
            }
            addRun(after: current.lastID, lamport: current.lastLamport + 1, time: current.time &+ run.timeStep,
                   count: run.count, width: run.width, repeated, timeStep: run.timeStep)
        }
        try decoder.finish()
    }

    /// Adds a record of the history held decoded: its first change, and
    /// its keystrokes as a run. `parents` nil means the last id of the
    /// change before.
    mutating func add(_ record: ChangeHistory.Record, parents: UnsafeBufferPointer<OpID>?, operations: UnsafeBufferPointer<Operation>) {
        if let parents { self.parents.append(contentsOf: parents) } else { self.parents.append(lastID(of: units.count - 1)) }
        self.operations.append(contentsOf: operations)
        units.append(Unit(id: record.id, lamport: record.lamport, time: record.time, width: record.firstWidth,
                          parentsEnd: self.parents.count, operationsEnd: self.operations.count))
        guard record.keystrokes > 0 else { return }
        let repeated: BundleWriter.RepeatedEdit
        switch operations[0] {
        case .insert(let object, _, .text):
            repeated = .typing(object: object, each: .scalars(1))
        case .delete(let object, let target):
            repeated = .deleting(object: object, replica: target.start.replica, step: record.deletesForward ? 1 : -1, length: 1)
        default:
            preconditionFailure("record \(record.id) holds keystrokes of no run")
        }
        let count = Int(record.keystrokes)
        addRun(after: record.firstLastID, lamport: record.lamport + record.firstWidth, time: record.time,
               count: count, width: UInt64(count), repeated, timeStep: 0)
    }

    private mutating func addRun(after last: OpID, lamport: UInt64, time: Int64, count: Int, width: UInt64,
                                 _ edit: BundleWriter.RepeatedEdit, timeStep: Int64) {
        // Parents and operations end where the change's before it do.
        units.append(Unit(id: last.advanced(by: 1), lamport: lamport, time: time, width: width, run: (count, edit, timeStep),
                          parentsEnd: parents.count, operationsEnd: operations.count))
    }

    private func lastID(of index: Int) -> OpID { units[index].id.advanced(by: units[index].width - 1) }

    /// Writes unit `index`; a run right after the unit before it of its replica.
    mutating func write(_ index: Int, to writer: inout BundleWriter) throws(DecodingError) {
        let unit = units[index]
        guard let run = unit.run else {
            let (parentsStart, operationsStart) = index == 0 ? (0, 0) : (units[index - 1].parentsEnd, units[index - 1].operationsEnd)
            parents.withUnsafeBufferPointer { parents in
                operations.withUnsafeBufferPointer { operations in
                    writer.append(id: unit.id, lamport: unit.lamport, width: unit.width, time: unit.time,
                                  parents: UnsafeBufferPointer(rebasing: parents[parentsStart..<unit.parentsEnd]),
                                  operations: UnsafeBufferPointer(rebasing: operations[operationsStart..<unit.operationsEnd]))
                }
            }
            return
        }
        guard case .typing(let object, _) = run.edit else {
            return writer.appendRepeats(run.count, run.edit, width: unit.width, timeStep: run.timeStep, utf8: nil)
        }
        let typed = IDRun(start: unit.id, length: Int(unit.width))
        let written: Void? = state.withUTF8(object, typed) { utf8 in
            writer.appendRepeats(run.count, run.edit, width: unit.width, timeStep: run.timeStep, utf8: utf8)
        }
        guard written != nil else { throw Self.missingText(typed) }
    }

    private static func missingText(_ run: IDRun) -> DecodingError { .invalid("the state holds no text for the elements \(run)") }
}

/// Inserted text read from the document's state, the last text read held
/// apart: taken out of the table for each read, a text was copied (its
/// buffers retained and released), a fifth of a history's encode.
private struct StateText {
    let objects: ObjectTable
    private var textID: ObjectID?
    private var text = RGASequence<Unicode.Scalar>()

    init(_ objects: ObjectTable) { self.objects = objects }

    /// Calls `body` with the UTF-8 that inserting the elements `run` into
    /// text `object` wrote; nil if there is no such text.
    mutating func withUTF8<Result>(_ object: ObjectID, _ run: IDRun, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        if object != textID {
            guard let slot = objects.slots[object], slot.kind == .text else { return nil }
            (textID, text) = (object, objects.texts[slot.index])
        }
        return text.withUTF8(of: run, body)
    }
}
