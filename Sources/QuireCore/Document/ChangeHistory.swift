/// Every change a document applied, in the order applied (a causal order).
///
/// Changes that arrived as encoded bundles (a loaded snapshot, a full
/// catch-up) stay encoded until someone reads them, so a loaded document
/// holds its history in a few bytes per change. Changes made or applied one
/// by one afterwards are kept decoded in flat arrays (one record per change,
/// or per run of keystrokes; operations and parents side by side), so
/// recording a change allocates nothing; `Change` values are built only
/// when someone asks for them.
struct ChangeHistory: Sendable {
    /// What the flat arrays hold for one change, and the keystrokes made
    /// right after it.
    struct Record: Sendable {
        var id: OpID
        var lamport: UInt64
        var time: Int64
        /// The counters of the change and of its keystrokes.
        var width: UInt64
        /// The change's operations end here in `operations`; they start
        /// where the previous record's end.
        var operationsEnd: Int32
        /// Likewise in `parentIDs`. Unused when `parentIsPrevious`.
        var parentsEnd: Int32
        /// How many changes follow the first in this record, each repeating
        /// its one operation one element on (`Keystroke`): typing one scalar
        /// right after the one the change before typed (a text insert whose
        /// origin is that change's last id), or deleting the one element
        /// whose counter is one below (backspace) or one above (the delete
        /// key, `deletesForward`) the one the change before deleted.
        /// Each one's parent is the change before, its counter and Lamport
        /// value follow on and its time is the same. (A run of typing is so
        /// held in one record; its text is in the document's state.)
        var keystrokes: Int32
        /// The parents are exactly the previous record's last id: the
        /// common case of a replica editing on its own, stored for free.
        var parentIsPrevious: Bool
        /// Whether a run of deletes goes up in counters rather than down.
        var deletesForward = false

        var lastID: OpID { id.advanced(by: width - 1) }
        var changeCount: Int { 1 + Int(keystrokes) }
        /// The width of the first change, before its keystrokes.
        var firstWidth: UInt64 { width - UInt64(keystrokes) }
        /// The last id of the first change.
        var firstLastID: OpID { id.advanced(by: firstWidth - 1) }
    }

    /// Changes held encoded, oldest first.
    struct Bundle: Sendable {
        var bytes: [UInt8]
        var count: Int
        /// Holds every change of this bundle and of those before it (the
        /// version they bring a document to, or more: a loaded snapshot
        /// knows only the version of its whole history).
        var version: VersionVector
    }

    /// The oldest changes, as encoded bundles.
    private(set) var bundles: [Bundle] = []
    private(set) var bundleCount = 0

    private(set) var records: [Record] = []
    /// The changes `records` hold, keystrokes included.
    private var recordedChangeCount = 0
    /// The run of keystrokes the last record may go on with, if its first
    /// change's one operation starts one.
    private var keystrokeRun: KeystrokeRun?

    private enum KeystrokeRun {
        /// Typing into a text.
        case typing(ObjectID)
        /// Deleting one element after another from a text or list, each
        /// next to the one before in id order, from `first` on.
        case deleting(ObjectID, first: OpID)
    }

    /// A one-operation change that may go on in the last record's run,
    /// held by a transaction without its operation.
    enum Keystroke {
        case typing(Unicode.Scalar)
        /// Deleting the element one counter above the last one deleted
        /// (`forward`, the delete key), or one below (backspace).
        case deleting(forward: Bool)
    }

    /// The element that keystroke `n` (from 1) of a run of deletes from
    /// `first` deletes.
    private static func deleted(byKeystroke n: UInt64, from first: OpID, forward: Bool) -> IDRun {
        IDRun(start: OpID(replica: first.replica, counter: forward ? first.counter + n : first.counter - n), length: 1)
    }
    /// The operations of the recorded changes, and of a transaction being
    /// built (past the last record's end).
    var operations: [Operation] = []
    private var parentIDs: [OpID] = []
    /// For each replica, the positions in `records` of its changes, in
    /// counter order, for the first `indexedCount` records. Recording a
    /// change leaves it alone (updating it cost a twentieth of a keystroke):
    /// records are indexed `recordsPerIndexing` at a time, and lookups scan
    /// the few after them.
    private var recordsByReplica = ReplicaMap<[Int32]>()
    private var indexedCount = 0
    static let recordsPerIndexing = 256

    /// The version before the first change held: empty unless the document
    /// was loaded from a snapshot without history.
    var start = VersionVector()

    /// `changesPerBundle`, lowered by tests. Past it, a long editing session
    /// holds its history in about a byte per change, as a loaded document
    /// does, rather than in about a hundred and thirty.
    var bundleSize = changesPerBundle {
        didSet { precondition(bundleSize >= 2, "a bundle needs a change besides the one kept decoded") }
    }

    /// How many changes the history holds.
    var count: Int { bundleCount + recordedChangeCount }

    var hasRecords: Bool { !records.isEmpty }

    /// Where the operations of the next record start.
    var recordedOperationCount: Int { records.last.map { Int($0.operationsEnd) } ?? 0 }

    /// Records a change whose operations are already at the end of
    /// `operations`. True if that bundled the records before it.
    @discardableResult
    mutating func recordAppendedOperations(id: OpID, lamport: UInt64, time: Int64, width: UInt64, parents: some Collection<OpID>) -> Bool {
        let parentIsPrevious = parents.count == 1 && records.last?.lastID == parents.first
        if !parentIsPrevious { parentIDs.append(contentsOf: parents) }
        let operationsStart = recordedOperationCount
        records.append(Record(id: id, lamport: lamport, time: time, width: width,
                              operationsEnd: Int32(operations.count), parentsEnd: Int32(parentIDs.count),
                              keystrokes: 0, parentIsPrevious: parentIsPrevious))
        recordedChangeCount += 1
        keystrokeRun = operations.withUnsafeBufferPointer { operations in
            // Matched in place: copying an `Operation` out retains what it holds.
            guard operations.count == operationsStart + 1 else { return nil }
            switch operations[operationsStart] {
            case .insert(let object, _, .text): return .typing(object)
            case .delete(let object, let target) where target.length == 1: return .deleting(object, first: target.start)
            default: return nil
            }
        }
        if (recordedChangeCount >= bundleSize || records.count >= Self.recordsPerBundle) && records.count > 1 {
            bundleAllButLastRecord()
            return true
        }
        if records.count - indexedCount >= Self.recordsPerIndexing { indexRecords() }
        return false
    }

    /// Whether a change typing one scalar into `object` after `origin`
    /// would continue the last record's run of typing: into the same text,
    /// right after the record's last change, on it alone, with the next
    /// counter and Lamport value. Such a keystroke is recorded by
    /// `extendRun(time:)` (if made at the record's time), without its
    /// operation: the document's state holds its text. (Inlined: called
    /// on a document through a transaction, it copied the whole history.)
    @inline(__always)
    func continuesRun(typingInto object: ObjectID, origin: OpID?, id: OpID, lamport: UInt64, soleParent: OpID?) -> Bool {
        guard case .typing(let runObject)? = keystrokeRun, let origin, object == runObject else { return false }
        return follows(id: id, lamport: lamport, soleParent: soleParent) && origin == records[records.count - 1].lastID
    }

    /// The keystroke a change deleting `target` from `object` would be in
    /// the last record's run of deletes, if it continues it, as
    /// `continuesRun(typingInto:...)` for typing: one element, next in id
    /// order to the one deleted last, in the run's direction.
    @inline(__always)
    func keystroke(deleting target: IDRun, from object: ObjectID, id: OpID, lamport: UInt64, soleParent: OpID?) -> Keystroke? {
        guard case .deleting(let runObject, let first)? = keystrokeRun, object == runObject, target.length == 1,
              target.start.replica == first.replica, follows(id: id, lamport: lamport, soleParent: soleParent) else { return nil }
        let last = records[records.count - 1]
        let (counter, next) = (target.start.counter, UInt64(last.keystrokes) + 1)
        // As `deleted(byKeystroke:...)` would give, compared without its
        // subtraction, which a target below the run's would underflow.
        let forward = counter == first.counter &+ next, backward = counter &+ next == first.counter
        // The second change of the run sets its direction.
        guard last.keystrokes == 0 ? forward || backward : last.deletesForward ? forward : backward else { return nil }
        return .deleting(forward: forward)
    }

    /// The keystroke a one-operation change of width 1, applied from
    /// elsewhere, is in the last record's run, if it continues it.
    private func keystroke(continuingRunWith change: Change) -> Keystroke? {
        switch change.operations[0] {
        case .insert(let object, let origin, .text(let text)):
            continuesRun(typingInto: object, origin: origin, id: change.id, lamport: change.lamport, soleParent: change.soleParent)
                ? .typing(text.unicodeScalars[text.unicodeScalars.startIndex]) : nil
        case .delete(let object, let target):
            keystroke(deleting: target, from: object, id: change.id, lamport: change.lamport, soleParent: change.soleParent)
        default:
            nil
        }
    }

    /// Whether a change comes right after the last record's last change, on it alone.
    @inline(__always)
    private func follows(id: OpID, lamport: UInt64, soleParent: OpID?) -> Bool {
        guard let last = records.last else { return false }
        return id == last.lastID.advanced(by: 1) && lamport == last.lamport + last.width && soleParent == last.lastID
    }

    /// Records a keystroke that continues the last record's run (see
    /// `continuesRun` and `keystroke(deleting:...)`), made at `time`, in
    /// that record, if its changes were made at the same time and its run is
    /// not full. Returns whether it did.
    mutating func extendRun(with keystroke: Keystroke, time: Int64) -> Bool {
        let bundleSize = bundleSize
        let extended = records.withUnsafeMutableBufferPointer { records in
            // A run stops at `bundleSize` keystrokes, so that a bundle holds at
            // most about twice that many changes (`bundleAllButLastRecord`).
            guard let last = records.indices.last, records[last].time == time,
                  Int(records[last].keystrokes) < bundleSize else { return false }
            if case .deleting(let forward) = keystroke { records[last].deletesForward = forward }
            records[last].width += 1
            records[last].keystrokes += 1
            return true
        }
        if extended { recordedChangeCount += 1 }
        return extended
    }

    /// The operation of a keystroke that continues the last record's run,
    /// for when it has to be recorded as a change of its own after all.
    func operation(of keystroke: Keystroke) -> Operation {
        let last = records[records.count - 1]
        switch (keystroke, keystrokeRun) {
        case (.typing(let scalar), .typing(let object)?):
            return .insert(object: object, origin: last.lastID, content: .text(String(scalar)))
        case (.deleting(let forward), .deleting(let object, let first)?):
            return .delete(object: object, target: Self.deleted(byKeystroke: UInt64(last.keystrokes) + 1, from: first, forward: forward))
        default:
            preconditionFailure("\(keystroke) does not continue the last record's run")
        }
    }

    /// Adds the records after `indexedCount` to `recordsByReplica`, a run
    /// of one replica's records at a time.
    private mutating func indexRecords() {
        var start = indexedCount
        while start < records.count {
            let replica = records[start].id.replica
            let end = records.withUnsafeBufferPointer { records in
                records[(start + 1)...].firstIndex { $0.id.replica != replica } ?? records.endIndex
            }
            // Written out in a plain loop and appended in one copy: appending
            // the range went element by element, at 17 instructions each.
            let positions = [Int32](unsafeUninitializedCapacity: end - start) { buffer, initialized in
                for offset in 0..<buffer.count { buffer[offset] = Int32(start + offset) }
                initialized = buffer.count
            }
            recordsByReplica.modify(replica, default: []) { $0.append(contentsOf: positions) }
            start = end
        }
        indexedCount = records.count
    }

    /// Moves every recorded change but the last record's into a new
    /// bundle. The last record stays decoded, so that the change just made
    /// can be read (`lastRecorded`) and typing can go on in it, and
    /// bundling before the next transaction appends its operations keeps
    /// the arrays within `bundleSize` changes and their operations.
    private mutating func bundleAllButLastRecord() {
        let kept = records.count - 1
        // Each replica's records are in counter order, so its last indexed
        // record before the kept one has its highest counter: one version
        // update per replica.
        indexRecords()
        var version = bundles.last?.version ?? VersionVector()
        for (replica, positions) in recordsByReplica.entries {
            guard let position = positions.last(where: { $0 < kept }) else { continue }
            let last = records[Int(position)].lastID.counter
            if last > version[replica] { version[replica] = last }
        }
        let bundle = encodedRecords(upTo: kept)
        var record = records[kept]
        let previous = records[kept - 1]
        // Fresh arrays, not emptied ones: capacity kept for 2^14 changes'
        // operations was three quarters of sveltecomponent's history (1.64 MB).
        operations = Array(operations[Int(previous.operationsEnd)...])
        record.operationsEnd -= previous.operationsEnd
        parentIDs = Array(parentIDs[Int(previous.parentsEnd)...])
        record.parentsEnd -= previous.parentsEnd
        if record.parentIsPrevious {
            // Its parent goes into the bundle: name it.
            parentIDs.append(previous.lastID)
            record.parentsEnd = Int32(parentIDs.count)
            record.parentIsPrevious = false
        }
        records.removeAll()
        recordsByReplica = ReplicaMap()
        indexedCount = 0
        append(bundle: bundle, count: recordedChangeCount - record.changeCount, version: version)
        records.append(record)
        recordedChangeCount = record.changeCount
    }

    /// The first `end` records (all by default) as one bundle, written
    /// straight from the records. The bundle leaves the inserted text out,
    /// as a snapshot's history does: the document's state holds it.
    func encodedRecords(upTo end: Int? = nil) -> [UInt8] { recordsBundle(upTo: end).sealed() }

    /// `encodedRecords(upTo:)` finished but not sealed: a snapshot seals
    /// it straight into its history.
    func recordsBundle(upTo end: Int? = nil) -> FinishedBundle {
        let end = end ?? records.count
        var tables = BundleTables()
        forEachRecord(upTo: end) { record, parents, operations in
            tables.note(record.id.replica)
            if let parents { for parent in parents { tables.note(parent.replica) } }
            tables.note(operations)
        }
        var writer = BundleWriter<ChangeEncoding.ElidedText>(tables)
        forEachRecord(upTo: end) { record, parents, operations in
            writer.append(id: record.id, lamport: record.lamport, width: record.firstWidth, time: record.time,
                          parents: parents, operations: operations)
            if record.keystrokes > 0 {
                writer.appendKeystrokes(Int(record.keystrokes), repeating: operations[0], deletingForward: record.deletesForward)
            }
        }
        return writer.finished()
    }

    /// Calls `body` with each of the first `end` records, its parents (nil
    /// when they are exactly the previous record's last id) and its operations.
    func forEachRecord(
        upTo end: Int,
        _ body: (Record, _ parents: UnsafeBufferPointer<OpID>?, _ operations: UnsafeBufferPointer<Operation>) -> Void
    ) {
        operations.withUnsafeBufferPointer { operations in
            parentIDs.withUnsafeBufferPointer { parentIDs in
                var operationsStart = 0, parentsStart = 0
                for record in records[..<end] {
                    let operationsEnd = Int(record.operationsEnd), parentsEnd = Int(record.parentsEnd)
                    body(record, record.parentIsPrevious ? nil : UnsafeBufferPointer(rebasing: parentIDs[parentsStart..<parentsEnd]),
                         UnsafeBufferPointer(rebasing: operations[operationsStart..<operationsEnd]))
                    operationsStart = operationsEnd
                    parentsStart = parentsEnd
                }
            }
        }
    }

    /// Records an applied change. True if that bundled the records before it.
    @discardableResult
    mutating func append(_ change: Change) -> Bool {
        operations.removeSubrange(recordedOperationCount...)
        if change.width == 1, change.operations.count == 1, let keystroke = keystroke(continuingRunWith: change),
           extendRun(with: keystroke, time: change.time) {
            return false
        }
        operations.append(contentsOf: change.operations)
        return recordAppendedOperations(id: change.id, lamport: change.lamport, time: change.time,
                                        width: change.width, parents: change.parents)
    }

    /// Appends changes still encoded. Only valid while no decoded change
    /// follows the bundles (so that the order stays the order applied).
    mutating func append(bundle: [UInt8], count: Int, version: VersionVector) {
        precondition(records.isEmpty, "encoded history must come before decoded changes")
        bundles.append(Bundle(bytes: bundle, count: count, version: version))
        bundleCount += count
    }

    var canAppendBundle: Bool { records.isEmpty }

    /// Appends to `changes` those changes of record `position` whose last
    /// counters are in `wanted` (all by default). The text its keystrokes
    /// typed, if they typed, is read from `objects`, the document's state.
    private func appendChanges(
        ofRecord position: Int, lastCounters wanted: ClosedRange<UInt64> = 0...UInt64.max,
        to changes: inout [Change], _ objects: ObjectTable
    ) {
        let record = records[position]
        let previous = position > 0 ? records[position - 1] : nil
        let operationsStart = previous.map { Int($0.operationsEnd) } ?? 0
        let firstLast = record.firstLastID
        if wanted.contains(firstLast.counter) {
            let parentsStart = previous.map { Int($0.parentsEnd) } ?? 0
            let parents = record.parentIsPrevious ? [previous!.lastID] : Array(parentIDs[parentsStart..<Int(record.parentsEnd)])
            changes.append(Change(id: record.id, lamport: record.lamport, parents: parents, time: record.time,
                                  operations: Array(operations[operationsStart..<Int(record.operationsEnd)]), width: record.firstWidth))
        }
        let (firstKeystroke, lastKeystroke) = (max(firstLast.counter + 1, wanted.lowerBound), min(record.lastID.counter, wanted.upperBound))
        guard firstKeystroke <= lastKeystroke else { return }
        let replica = record.id.replica
        func append(_ counter: UInt64, _ operation: Operation) {
            changes.append(Change(id: OpID(replica: replica, counter: counter), lamport: record.lamport + (counter - record.id.counter),
                                  parents: [OpID(replica: replica, counter: counter - 1)], time: record.time,
                                  operations: [operation], width: 1))
        }
        switch operations[operationsStart] {
        case .insert(let object, _, .text):
            let run = IDRun(start: OpID(replica: replica, counter: firstKeystroke), length: Int(lastKeystroke - firstKeystroke + 1))
            guard let text = objects.insertedText(object, run) else {
                preconditionFailure("the document's state lacks the text typed by \(run)")
            }
            for (counter, scalar) in zip(firstKeystroke..., text.unicodeScalars) {
                append(counter, .insert(object: object, origin: OpID(replica: replica, counter: counter - 1), content: .text(String(scalar))))
            }
        case .delete(let object, let first):
            for counter in firstKeystroke...lastKeystroke {
                let target = Self.deleted(byKeystroke: counter - firstLast.counter, from: first.start, forward: record.deletesForward)
                append(counter, .delete(object: object, target: target))
            }
        default:
            preconditionFailure("record \(record.id) holds keystrokes of no run")
        }
    }

    /// The change of record `position` that holds operation `id`.
    private func change(inRecord position: Int, containing id: OpID, _ objects: ObjectTable) -> Change {
        let firstLast = records[position].firstLastID.counter
        let last = max(id.counter, firstLast)
        var changes: [Change] = []
        appendChanges(ofRecord: position, lastCounters: last...last, to: &changes, objects)
        return changes[0]
    }

    /// How many changes the history holds decoded before all but the last
    /// record's go into a bundle. Held decoded, a change costs about a
    /// hundred bytes; encoded, about one, and a snapshot then copies the
    /// bundle instead of encoding the records again. At 2^14, a replayed
    /// automerge-paper (259,779 changes) holds 2.63 MB where it held 4.58 MB
    /// with the whole history decoded, and sealing its snapshot takes 38% fewer
    /// instructions; bundling as it goes costs its local replay about 5% more
    /// instructions and its snapshot 2% more bytes (each bundle starts its
    /// columns afresh). A bundle holds far fewer changes than one may by
    /// default (`DecodingLimits.maxChanges`), so a long-lived document
    /// reloads its history.
    static let changesPerBundle = 1 << 14

    /// How many records the history holds decoded before bundling, even
    /// with fewer than `changesPerBundle` changes: a record and its
    /// operations take about 130 bytes, where a keystroke that goes on in a
    /// record's run takes none. Changes that each start a record (B1.7's
    /// 6,000 random edits, each a change of its own) held 1.39 MB with the
    /// bound at 2^14 changes alone, and hold 0.58 MB with this one.
    static let recordsPerBundle = 1 << 12

    /// The last change recorded decoded, if any. `objects` is the
    /// document's state, which holds the text of keystrokes.
    func lastRecorded(_ objects: ObjectTable) -> Change? {
        guard let last = records.last else { return nil }
        return change(inRecord: records.count - 1, containing: last.lastID, objects)
    }

    /// The changes recorded decoded (after the bundles).
    func recordedChanges(_ objects: ObjectTable) -> [Change] {
        var changes: [Change] = []
        changes.reserveCapacity(recordedChangeCount)
        for position in records.indices { appendChanges(ofRecord: position, to: &changes, objects) }
        return changes
    }

    /// The history as one bundle that can be sent as it is, if it is held so:
    /// it arrived as one bundle that holds its text.
    var wholeHistoryBundle: [UInt8]? {
        guard bundles.count == 1, records.isEmpty, !ChangeEncoding.elidesText(checked: bundles[0].bytes) else { return nil }
        return bundles[0].bytes
    }

    /// Decodes `bundles`; those that elide inserted text (a snapshot's
    /// history, the document's own) take it from the document's `objects`.
    /// They were checked when they came in or were made here, so a failure
    /// means the bytes were damaged.
    private func decoded(_ bundles: ArraySlice<Bundle>, _ objects: ObjectTable) throws(DocumentError) -> [Change] {
        var changes: [Change] = []
        changes.reserveCapacity(bundles.reduce(0) { $0 + $1.count })
        do {
            for bundle in bundles {
                changes += try ChangeEncoding.decode(bundle.bytes, limits: .unlimited, insertedText: objects.insertedText)
            }
        } catch {
            throw .damagedHistory(error)
        }
        return changes
    }

    /// All changes held, in the order applied. `objects` is the document's
    /// state, for the text that encoded changes leave out.
    func all(_ objects: ObjectTable) throws(DocumentError) -> [Change] {
        bundles.isEmpty ? recordedChanges(objects) : try decoded(bundles[...], objects) + recordedChanges(objects)
    }

    /// The changes `from` lacks (and, if given, `to` holds), in the order applied.
    func changes(from: VersionVector, to: VersionVector? = nil, _ objects: ObjectTable) throws(DocumentError) -> [Change] {
        guard from.includes(start) else { throw .historyUnavailable(start: start) }
        if from == start && to == nil { return try all(objects) }
        func wanted(_ lastID: OpID) -> Bool {
            !from.contains(lastID) && (to?.contains(lastID) ?? true)
        }
        /// Whether some change of `record` is wanted: its changes' last
        /// counters run from its first change's to its own.
        func wantsSome(_ record: Record) -> Bool {
            !from.contains(record.lastID) && (to?.contains(record.firstLastID) ?? true)
        }
        // The bundles up to the last one whose changes (with those before
        // it) `from` has are left encoded.
        let firstWanted = bundles.firstIndex { !from.includes($0.version) } ?? bundles.endIndex
        var result = try decoded(bundles[firstWanted...], objects).filter { wanted($0.lastID) }
        // Each replica's records are in counter order: find the first one
        // `from` lacks by binary search, then merge by position.
        var positions: [Int] = []
        for (replica, indices) in recordsByReplica.entries {
            let seen = from[replica]
            var low = 0, high = indices.count
            while low < high {
                let mid = (low + high) / 2
                if records[Int(indices[mid])].lastID.counter <= seen { low = mid + 1 } else { high = mid }
            }
            for index in indices[low...] {
                if let to, !to.contains(records[Int(index)].firstLastID) { break }
                positions.append(Int(index))
            }
        }
        for index in indexedCount..<records.count where wantsSome(records[index]) { positions.append(index) }
        positions.sort()
        for position in positions {
            // The last counters of the replica's changes that are wanted
            // (`from` lacks this record's last change, so adding 1 stays in range).
            let replica = records[position].id.replica
            let (lowest, highest) = (from[replica] + 1, to?[replica] ?? .max)
            if lowest <= highest { appendChanges(ofRecord: position, lastCounters: lowest...highest, to: &result, objects) }
        }
        return result
    }

    /// The bundles a caller has decoded to look changes up in, kept while
    /// it looks up several. A peer that sends again what it sent makes a
    /// run of duplicates, each compared with the change held: decoding a
    /// bundle for each took 2,000 duplicates of a 100,000-keystroke history
    /// 3 s, and 99 s once loaded from a snapshot (whose bundles all carry
    /// the snapshot's version, so that a lookup decodes every bundle up to
    /// the one that holds the change).
    struct BundleLookup {
        fileprivate var decoded: [Int: DecodedBundle] = [:]
    }

    /// A bundle's changes, and their positions sorted by first id.
    fileprivate struct DecodedBundle {
        let changes: [Change]
        let byID: [Int32]

        init(_ changes: [Change]) {
            self.changes = changes
            byID = changes.indices.map(Int32.init).sorted { changes[Int($0)].id < changes[Int($1)].id }
        }

        func change(containing id: OpID) -> Change? {
            // The last change whose first id is at most `id`.
            var low = 0, high = byID.count
            while low < high {
                let mid = (low + high) / 2
                if changes[Int(byID[mid])].id <= id { low = mid + 1 } else { high = mid }
            }
            guard low > 0, case let change = changes[Int(byID[low - 1])],
                  change.replica == id.replica, change.counters.contains(id.counter) else { return nil }
            return change
        }
    }

    /// The change that holds operation `id`, if any.
    func change(containing id: OpID, _ objects: ObjectTable) throws(DocumentError) -> Change? {
        var lookup = BundleLookup()
        return try change(containing: id, objects, lookup: &lookup)
    }

    /// The change that holds operation `id`, if any, decoding the bundles
    /// that `lookup` does not hold yet.
    func change(containing id: OpID, _ objects: ObjectTable, lookup: inout BundleLookup) throws(DocumentError) -> Change? {
        if let indices = recordsByReplica[id.replica] {
            var low = 0, high = indices.count
            while low < high {
                let mid = (low + high) / 2
                let record = records[Int(indices[mid])]
                if record.lastID.counter < id.counter { low = mid + 1 }
                else if record.id.counter > id.counter { high = mid }
                else { return change(inRecord: Int(indices[mid]), containing: id, objects) }
            }
        }
        if let position = records[indexedCount...].firstIndex(where: {
            $0.id.replica == id.replica && $0.id.counter <= id.counter && id.counter <= $0.lastID.counter
        }) {
            return change(inRecord: position, containing: id, objects)
        }
        // No bundle before the first whose version holds `id` can hold it.
        guard let first = bundles.firstIndex(where: { $0.version.contains(id) }) else { return nil }
        for index in bundles.indices[first...] {
            if lookup.decoded[index] == nil { lookup.decoded[index] = DecodedBundle(try decoded(bundles[index...index], objects)) }
            if let found = lookup.decoded[index]?.change(containing: id) { return found }
        }
        return nil
    }
}

extension DecodingLimits {
    /// No limits: for bytes that were already checked against limits when
    /// they came in, or that were made locally (a store's own log).
    public static let unlimited = DecodingLimits(maxChanges: .max, maxOperations: .max, maxOperationWidth: .max)
}
