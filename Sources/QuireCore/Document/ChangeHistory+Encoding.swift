extension ChangeHistory {
    /// The changes held that `from` lacks, as one bundle that holds its text
    /// (what `Document.encodeChanges(since:)` sends), in the order
    /// `groupedByReplica` gives: the same bytes as `ChangeEncoding.encode`
    /// of `changes(from:)` regrouped.
    ///
    /// Read from the bundles and records as `HistoryUnits`, changes and runs
    /// of typing or deleting, not as `Change` values; the text comes from
    /// `objects`, the document's state, a run's in one piece. Going through
    /// `Change` values, a replayed automerge-paper (259,779 changes) took
    /// about 190 ms to encode, seven times its replay.
    func encodedWithText(from: VersionVector, _ objects: ObjectTable) throws(DocumentError) -> [UInt8] {
        guard from.includes(start) else { throw .historyUnavailable(start: start) }
        var units = HistoryUnits(objects)
        do {
            // Bundles up to the last one whose changes (with those before it) `from` has are not read.
            for bundle in bundles.drop(while: { from.includes($0.version) }) { try units.read(bundle.bytes) }
            forEachRecord(upTo: records.count) { record, parents, operations in
                units.add(record, parents: parents, operations: operations)
            }
            try units.dropChanges(in: from)
            var writer = BundleWriter<ChangeEncoding.Sent>(units.tables)
            if let order = units.groupedOrder {
                for index in order { try units.write(index, to: &writer) }
            } else {
                for index in units.indices { try units.write(index, to: &writer) }
            }
            return writer.finish()
        } catch {
            throw .damagedHistory(error)
        }
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
        /// A change's parents in `parents` (none for a run).
        var parents: Range<Int32> = 0..<0
        var content: Content

        var lastCounter: UInt64 { id.counter + width - 1 }
        var parentRange: Range<Int> { parents.intRange }
    }

    /// What a unit holds, by position in the arrays beside the units:
    /// a unit is 64 bytes, not the 230 it took holding them, and growing
    /// the array of a history's units copied them all each time.
    enum Content {
        /// A change: its operations in `operations`.
        case change(operations: Range<Int32>)
        /// A change whose one operation is a text insert or a delete, read
        /// from a bundle that leaves its text out: `edits[index]`, its text
        /// left in the state (a `String` made for each, and the `Operation`
        /// holding it, cost more than writing the change).
        case edit(Int32)
        /// `runs[index]`.
        case run(Int32)
    }

    struct Run {
        var count: Int
        var edit: RepeatedEdit
        var timeStep: Int64
        /// The counters each change takes, when they are the same for all
        /// (nil for typing read with its text whose changes each insert as
        /// many bytes but not as many scalars: see `changeWidths`).
        var changeWidth: UInt64?
        /// Deleting: the first counter the change before the run deletes
        /// (as read: a run is cut once at most, and the writer follows its
        /// deletes on).
        var deleteBefore: UInt64 = 0
    }

    private var units: [Unit] = []
    private var parents: [OpID] = []
    private var operations: [Operation] = []
    private var edits: [ChangeDecoder.Edit] = []
    private var runs: [Run] = []
    private var state: StateText

    init(_ objects: ObjectTable) { state = StateText(objects) }

    var indices: Range<Int> { units.indices }

    /// The replicas and keys the units name.
    var tables: BundleTables {
        var tables = BundleTables()
        parents.withUnsafeBufferPointer { parents in
            operations.withUnsafeBufferPointer { operations in
                for unit in units {
                    tables.note(unit.id.replica)
                    for parent in parents[unit.parentRange] { tables.note(parent.replica) }
                    switch unit.content {
                    case .change(let range): tables.note(UnsafeBufferPointer(rebasing: operations[range.intRange]))
                    case .edit(let index): tables.note(edits[Int(index)])
                    case .run(let index): tables.note(runs[Int(index)].edit)
                    }
                }
            }
        }
        return tables
    }

    /// The order `groupedByReplica` gives, or nil if it is the order read.
    var groupedOrder: [Int]? {
        units.withUnsafeBufferPointer { units in
            parents.withUnsafeBufferPointer { parents in
                ReplicaGrouping.order(
                    count: units.count, id: { units[$0].id }, lastCounter: { units[$0].lastCounter },
                    forEachParent: { index, body in
                        // A run's changes name only the change before.
                        for parent in parents[units[index].parentRange] { body(parent) }
                    })
            }
        }
    }

    /// Reads the changes of a bundle held.
    mutating func read(_ bytes: [UInt8]) throws(DecodingError) {
        var decoder = try ChangeDecoder(bytes, limits: .unlimited, insertedText: state.objects.insertedText, leavingTextOut: true)
        var current = ChangeDecoder.Current()
        var runText = ScalarStorage()  // runs take their text from the state, but for counting it
        while try decoder.next(into: &current) {
            let content: Content
            if decoder.leavesTextOut, let edit = current.edit {
                content = .edit(Int32(edits.count))
                edits.append(edit)
            } else {
                let operationsStart = operations.count
                operations.append(contentsOf: current.allOperations)
                content = .change(operations: Int32(operationsStart)..<Int32(operations.count))
            }
            let parentsStart = parents.count
            parents.append(contentsOf: current.parents)
            units.append(Unit(id: current.id, lamport: current.lamport, time: current.time, width: current.width,
                              parents: Int32(parentsStart)..<Int32(parents.count), content: content))
            runText.removeAllKeepingCapacity()
            guard let edit = current.edit,
                  let continuation = try decoder.readContinuation(of: current, appendingTextTo: &runText, if: { _ in true })
            else { continue }
            let run: Run
            switch edit {
            case .insertText(let object, _):
                // The length column counts scalars when the text is left out, bytes when it is held.
                let each = continuation.textLengthEach
                let isEven = decoder.leavesTextOut || runText.count == continuation.count * Int(continuation.lastWidth)
                run = Run(count: continuation.count, edit: .typing(object: object, each: decoder.leavesTextOut ? .scalars(each) : .utf8Bytes(each)),
                          timeStep: continuation.timeStep, changeWidth: isEven ? continuation.lastWidth : nil)
            case .delete(let object, let target):
                let length = UInt64(target.length)
                run = Run(count: continuation.count, edit: .deleting(object: object, replica: target.start.replica, step: continuation.deleteStep, length: length),
                          timeStep: continuation.timeStep, changeWidth: length, deleteBefore: continuation.deleteStart)
            }
            addRun(run, after: current.lastID, lamport: current.lastLamport + 1, time: current.time &+ continuation.timeStep,
                   width: continuation.width)
        }
        try decoder.finish()
    }

    /// Adds a record of the history held decoded: its first change, and
    /// its keystrokes as a run. `parents` nil means the last id of the
    /// change before.
    mutating func add(_ record: ChangeHistory.Record, parents: UnsafeBufferPointer<OpID>?, operations: UnsafeBufferPointer<Operation>) {
        let (parentsStart, operationsStart) = (self.parents.count, self.operations.count)
        if let parents { self.parents.append(contentsOf: parents) } else { self.parents.append(lastID(of: units.count - 1)) }
        self.operations.append(contentsOf: operations)
        units.append(Unit(id: record.id, lamport: record.lamport, time: record.time, width: record.firstWidth,
                          parents: Int32(parentsStart)..<Int32(self.parents.count),
                          content: .change(operations: Int32(operationsStart)..<Int32(self.operations.count))))
        guard record.keystrokes > 0 else { return }
        let count = Int(record.keystrokes)
        guard let edit = RepeatedEdit(keystrokesRepeating: operations[0], deletingForward: record.deletesForward) else {
            preconditionFailure("record \(record.id) holds keystrokes of no run")
        }
        var run = Run(count: count, edit: edit, timeStep: 0, changeWidth: 1)
        if case .delete(_, let target) = operations[0] { run.deleteBefore = target.start.counter }
        addRun(run, after: record.firstLastID, lamport: record.lamport + record.firstWidth, time: record.time, width: UInt64(count))
    }

    private mutating func addRun(_ run: Run, after last: OpID, lamport: UInt64, time: Int64, width: UInt64) {
        units.append(Unit(id: last.advanced(by: 1), lamport: lamport, time: time, width: width, content: .run(Int32(runs.count))))
        runs.append(run)
    }

    private func lastID(of index: Int) -> OpID { units[index].id.advanced(by: units[index].width - 1) }

    /// Drops the changes `from` holds: whole units, or the first changes of
    /// a run, whose first change kept then becomes a change of its own,
    /// naming the one before (as does the first change of a run whose
    /// change before is dropped).
    mutating func dropChanges(in from: VersionVector) throws(DecodingError) {
        guard !from.isEmpty else { return }
        var kept: [Unit] = []
        kept.reserveCapacity(units.count)
        var previousKept = false
        for unit in units {
            let known = from[unit.id.replica]
            defer { previousKept = unit.lastCounter > known }
            guard unit.lastCounter > known else { continue }
            guard case .run(let runIndex) = unit.content, !previousKept || known >= unit.id.counter else {
                kept.append(unit)
                continue
            }
            let run = runs[Int(runIndex)]
            // The first change kept, the first whose last counter `from`
            // lacks: `offset` counters into the run, `width` counters wide.
            var (first, offset, width) = (0, UInt64(0), run.changeWidth ?? 0)
            if let changeWidth = run.changeWidth {
                first = known >= unit.id.counter ? Int((known - unit.id.counter + 1) / changeWidth) : 0
                offset = UInt64(first) * changeWidth
            } else {
                let widths = try changeWidths(of: unit, run)
                while unit.id.counter + offset + widths[first] - 1 <= known {
                    offset += widths[first]
                    first += 1
                }
                width = widths[first]
            }
            let id = unit.id.advanced(by: offset)
            let operation: Operation
            switch run.edit {
            case .typing(let object, _):
                let typed = IDRun(start: id, length: Int(width))
                operation = .insert(object: object, origin: OpID(replica: id.replica, counter: id.counter - 1),
                                    content: .text(try text(of: object, typed)))
            case .deleting(let object, let replica, let step, let length):
                let start = UInt64(bitPattern: Int64(bitPattern: run.deleteBefore) &+ step &* Int64(first + 1))
                operation = .delete(object: object, target: IDRun(start: OpID(replica: replica, counter: start), length: Int(length)))
            }
            let time = unit.time &+ run.timeStep &* Int64(first)
            parents.append(OpID(replica: id.replica, counter: id.counter - 1))
            operations.append(operation)
            kept.append(Unit(id: id, lamport: unit.lamport + offset, time: time, width: width,
                             parents: Int32(parents.count - 1)..<Int32(parents.count),
                             content: .change(operations: Int32(operations.count - 1)..<Int32(operations.count))))
            runs[Int(runIndex)].count -= first + 1
            if runs[Int(runIndex)].count > 0 {
                kept.append(Unit(id: id.advanced(by: width), lamport: unit.lamport + offset + width, time: time &+ run.timeStep,
                                 width: unit.width - offset - width, content: unit.content))
            }
        }
        units = kept
    }

    /// The scalars each change of a run of typing inserts, for a run
    /// whose changes each insert as many bytes but not as many scalars:
    /// counted on its text, one change's bytes at a time.
    private mutating func changeWidths(of unit: Unit, _ run: Run) throws(DecodingError) -> [UInt64] {
        guard case .typing(let object, .utf8Bytes(let bytesEach)) = run.edit else {
            preconditionFailure("only typing read with its text has changes of different widths")
        }
        let typed = IDRun(start: unit.id, length: Int(unit.width))
        let widths = state.withUTF8(object, typed) { utf8 -> [UInt64]? in
            guard Self.fits(utf8, run) else { return nil }
            let widths = stride(from: 0, to: utf8.count, by: Int(bytesEach)).map { start in
                UInt64(UnsafeBufferPointer(rebasing: utf8[start..<(start + Int(bytesEach))]).unicodeScalarCount)
            }
            // Each change's bytes start a scalar if the text is the one typed.
            return widths.contains(0) ? nil : widths
        }
        guard let widths else { throw Self.missingText(typed) }
        guard let widths else { throw Self.mismatchedText(typed) }
        return widths
    }

    /// Writes unit `index`; a run right after the unit before it of its replica.
    mutating func write(_ index: Int, to writer: inout BundleWriter<ChangeEncoding.Sent>) throws(DecodingError) {
        let unit = units[index]
        let run: Run
        switch unit.content {
        case .change(let range):
            parents.withUnsafeBufferPointer { parents in
                operations.withUnsafeBufferPointer { operations in
                    writer.append(id: unit.id, lamport: unit.lamport, width: unit.width, time: unit.time,
                                  parents: UnsafeBufferPointer(rebasing: parents[unit.parentRange]),
                                  operations: UnsafeBufferPointer(rebasing: operations[range.intRange]))
                }
            }
            return
        case .edit(let index):
            return try write(unit, edits[Int(index)], to: &writer)
        case .run(let index):
            run = runs[Int(index)]
        }
        guard case .typing(let object, _) = run.edit else {
            return writer.appendRepeats(run.count, run.edit, width: unit.width, timeStep: run.timeStep, utf8: nil)
        }
        let typed = IDRun(start: unit.id, length: Int(unit.width))
        let written: Bool? = state.withUTF8(object, typed) { utf8 in
            guard Self.fits(utf8, run) else { return false }
            writer.appendRepeats(run.count, run.edit, width: unit.width, timeStep: run.timeStep, utf8: utf8)
            return true
        }
        guard let written else { throw Self.missingText(typed) }
        guard written else { throw Self.mismatchedText(typed) }
    }

    /// Writes `unit`, a change whose one operation is `edit`, with the text it inserts read from the state.
    private mutating func write(_ unit: Unit, _ edit: ChangeDecoder.Edit, to writer: inout BundleWriter<ChangeEncoding.Sent>) throws(DecodingError) {
        func append(_ utf8: UnsafeBufferPointer<UInt8>?) {
            parents.withUnsafeBufferPointer { parents in
                writer.append(id: unit.id, lamport: unit.lamport, width: unit.width, time: unit.time,
                              parents: UnsafeBufferPointer(rebasing: parents[unit.parentRange]), edit: edit, utf8: utf8)
            }
        }
        guard case .insertText(let object, _) = edit else { return append(nil) }
        let inserted = IDRun(start: unit.id, length: Int(unit.width))
        guard state.withUTF8(object, inserted, { append($0) }) != nil else { throw Self.missingText(inserted) }
    }

    /// Whether `utf8`, read from the state, is as many bytes as a run of
    /// typing read with its text says each change typed. (A snapshot's
    /// history may hold such a run, and its state is not made from it.)
    private static func fits(_ utf8: UnsafeBufferPointer<UInt8>, _ run: Run) -> Bool {
        guard case .typing(_, .utf8Bytes(let bytesEach)) = run.edit else { return true }
        return utf8.count == run.count * Int(bytesEach)
    }

    /// The text inserting the elements `run` into `object` wrote.
    private mutating func text(of object: ObjectID, _ run: IDRun) throws(DecodingError) -> String {
        guard let text = state.withUTF8(object, run, { String(decoding: $0, as: UTF8.self) }) else { throw Self.missingText(run) }
        return text
    }

    private static func missingText(_ run: IDRun) -> DecodingError { .invalid("the state holds no text for the elements \(run)") }
    private static func mismatchedText(_ run: IDRun) -> DecodingError {
        .invalid("the state's text for the elements \(run) is not the text the history typed")
    }
}

private extension Range<Int32> {
    var intRange: Range<Int> { Int(lowerBound)..<Int(upperBound) }
}

/// Inserted text read from the document's state, the last text read held
/// apart: taken out of the table for each read, a text was copied (its
/// buffers retained and released), a fifth of a history's encode. A text
/// read many times is read through its spans in id order.
private struct StateText {
    let objects: ObjectTable
    private var textID: ObjectID?
    private var text = RGASequence<Unicode.Scalar>()
    /// How many spans past their first the runs read from `text` by id
    /// were found in, and its spans in id order once it has them; other
    /// texts', while another is read.
    private var textLaterSpans = 0
    private var textSpans: IDOrderedSpans?
    private var otherTexts: [ObjectID: (laterSpans: Int, spans: IDOrderedSpans?)] = [:]

    init(_ objects: ObjectTable) { self.objects = objects }

    /// Calls `body` with the UTF-8 that inserting the elements `run` into
    /// text `object` wrote; nil if there is no such text.
    mutating func withUTF8<Result>(_ object: ObjectID, _ run: IDRun, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        if object != textID {
            guard let slot = objects.slots[object], slot.kind == .text else { return nil }
            if let textID { otherTexts[textID] = (textLaterSpans, textSpans) }
            (textID, text) = (object, objects.texts[slot.index])
            (textLaterSpans, textSpans) = otherTexts.removeValue(forKey: object) ?? (0, nil)
        }
        if textSpans == nil {
            textSpans = text.idOrderedSpans(afterLaterSpans: textLaterSpans)
        }
        guard textSpans != nil else { return text.withUTF8(of: run, countingLaterSpansIn: &textLaterSpans, body) }
        return text.withUTF8(of: run, in: &textSpans!, body)
    }
}
