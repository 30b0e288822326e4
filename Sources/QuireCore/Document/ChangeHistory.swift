/// Every change a document applied, in the order applied (a causal order).
///
/// Changes that arrived as encoded bundles (a loaded snapshot, a full
/// catch-up) stay encoded until someone reads them, so a loaded document
/// holds its history in a few bytes per change. Changes made or applied one
/// by one afterwards are kept decoded in flat arrays (one record per change,
/// operations and parents side by side), so recording a change allocates
/// nothing; `Change` values are built only when someone asks for them.
struct ChangeHistory: Sendable {
    /// What the flat arrays hold for one change.
    struct Record: Sendable {
        var id: OpID
        var lamport: UInt64
        var time: Int64
        var width: UInt64
        /// The change's operations end here in `operations`; they start
        /// where the previous record's end.
        var operationsEnd: Int32
        /// Likewise in `parentIDs`. Unused when `parentIsPrevious`.
        var parentsEnd: Int32
        /// The parents are exactly the previous record's last id: the
        /// common case of a replica editing on its own, stored for free.
        var parentIsPrevious: Bool

        var lastID: OpID { id.advanced(by: width - 1) }
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
    var recordsPerBundle = changesPerBundle {
        didSet { precondition(recordsPerBundle >= 2, "a bundle needs a record besides the one kept decoded") }
    }

    /// How many changes the history holds.
    var count: Int { bundleCount + records.count }

    var hasRecords: Bool { !records.isEmpty }

    /// Where the operations of the next record start.
    var recordedOperationCount: Int { records.last.map { Int($0.operationsEnd) } ?? 0 }

    /// Records a change whose operations are already at the end of `operations`.
    mutating func recordAppendedOperations(id: OpID, lamport: UInt64, time: Int64, width: UInt64, parents: [OpID]) {
        let parentIsPrevious = parents.count == 1 && records.last?.lastID == parents[0]
        if !parentIsPrevious { parentIDs.append(contentsOf: parents) }
        records.append(Record(id: id, lamport: lamport, time: time, width: width,
                              operationsEnd: Int32(operations.count), parentsEnd: Int32(parentIDs.count),
                              parentIsPrevious: parentIsPrevious))
        if records.count >= recordsPerBundle {
            bundleAllButLastRecord()
        } else if records.count - indexedCount >= Self.recordsPerIndexing {
            indexRecords()
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

    /// Moves every recorded change but the last into a new bundle. The last
    /// stays decoded, so that the change just made can be read
    /// (`lastRecorded`), and bundling before the next transaction appends
    /// its operations keeps the arrays within `recordsPerBundle` records
    /// and their operations.
    private mutating func bundleAllButLastRecord() {
        let last = change(at: records.count - 1)
        records.removeLast()
        operations.removeSubrange(recordedOperationCount...)
        parentIDs.removeSubrange((records.last.map { Int($0.parentsEnd) } ?? 0)...)
        encodeRecords()
        append(last)
    }

    /// Moves every recorded change into a new bundle. The bundle leaves the
    /// inserted text out, as a snapshot's history does: the document's
    /// state holds it.
    private mutating func encodeRecords() {
        // Each replica's records are in counter order, so its last indexed
        // record has its highest counter: one version update per replica.
        indexRecords()
        var version = bundles.last?.version ?? VersionVector()
        for (replica, positions) in recordsByReplica.entries {
            let last = records[Int(positions[positions.count - 1])].lastID.counter
            if last > version[replica] { version[replica] = last }
        }
        let bundle = encodedRecords(elidingText: true)
        let count = records.count
        operations.removeAll(keepingCapacity: true)
        records.removeAll(keepingCapacity: true)
        parentIDs.removeAll(keepingCapacity: true)
        recordsByReplica = ReplicaMap()
        indexedCount = 0
        append(bundle: bundle, count: count, version: version)
    }

    /// The recorded changes (after the bundles) as one bundle, written
    /// straight from the records.
    func encodedRecords(elidingText: Bool) -> [UInt8] {
        var tables = BundleTables()
        forEachRecord { record, parents, operations in
            tables.note(record.id.replica)
            if let parents { for parent in parents { tables.note(parent.replica) } }
            tables.note(operations)
        }
        var writer = BundleWriter(tables, elidingText: elidingText)
        forEachRecord { record, parents, operations in
            writer.append(id: record.id, lamport: record.lamport, width: record.width, time: record.time,
                          parents: parents, operations: operations)
        }
        return writer.finish()
    }

    /// Calls `body` with each record, its parents (nil when they are exactly
    /// the previous record's last id) and its operations.
    private func forEachRecord(
        _ body: (Record, _ parents: UnsafeBufferPointer<OpID>?, _ operations: UnsafeBufferPointer<Operation>) -> Void
    ) {
        operations.withUnsafeBufferPointer { operations in
            parentIDs.withUnsafeBufferPointer { parentIDs in
                var operationsStart = 0, parentsStart = 0
                for record in records {
                    let operationsEnd = Int(record.operationsEnd), parentsEnd = Int(record.parentsEnd)
                    body(record, record.parentIsPrevious ? nil : UnsafeBufferPointer(rebasing: parentIDs[parentsStart..<parentsEnd]),
                         UnsafeBufferPointer(rebasing: operations[operationsStart..<operationsEnd]))
                    operationsStart = operationsEnd
                    parentsStart = parentsEnd
                }
            }
        }
    }

    mutating func append(_ change: Change) {
        operations.removeSubrange(recordedOperationCount...)
        operations.append(contentsOf: change.operations)
        recordAppendedOperations(id: change.id, lamport: change.lamport, time: change.time,
                                 width: change.width, parents: change.parents)
    }

    /// Drops operations of a transaction that was not recorded.
    mutating func discardUnrecordedOperations() {
        operations.removeSubrange(recordedOperationCount...)
    }

    /// Appends changes still encoded. Only valid while no decoded change
    /// follows the bundles (so that the order stays the order applied).
    mutating func append(bundle: [UInt8], count: Int, version: VersionVector) {
        precondition(records.isEmpty, "encoded history must come before decoded changes")
        bundles.append(Bundle(bytes: bundle, count: count, version: version))
        bundleCount += count
    }

    var canAppendBundle: Bool { records.isEmpty }

    /// The change recorded at `position` of `records`.
    func change(at position: Int) -> Change {
        let record = records[position]
        let previous = position > 0 ? records[position - 1] : nil
        let operationsStart = previous.map { Int($0.operationsEnd) } ?? 0
        let parentsStart = previous.map { Int($0.parentsEnd) } ?? 0
        let parents = record.parentIsPrevious ? [previous!.lastID] : Array(parentIDs[parentsStart..<Int(record.parentsEnd)])
        return Change(id: record.id, lamport: record.lamport, parents: parents, time: record.time,
                      operations: Array(operations[operationsStart..<Int(record.operationsEnd)]), width: record.width)
    }

    /// How many decoded records the history holds at most: all but the last
    /// then go into a bundle. Enough that an ordinary editing session never
    /// pays for the encoding (the whole automerge-paper trace is 259,779
    /// changes), few enough that the records (about 130 bytes a change)
    /// stay a few tens of MB; a bundle holds far fewer changes than one may
    /// by default (`DecodingLimits.maxChanges`), so a long-lived document
    /// reloads its history.
    static let changesPerBundle = 1 << 18

    /// The last change recorded decoded, if any.
    var lastRecorded: Change? { records.isEmpty ? nil : change(at: records.count - 1) }

    /// The changes recorded decoded (after the bundles).
    var recordedChanges: [Change] { records.indices.map(change(at:)) }

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
        bundles.isEmpty ? recordedChanges : try decoded(bundles[...], objects) + recordedChanges
    }

    /// The changes `from` lacks (and, if given, `to` holds), in the order applied.
    func changes(from: VersionVector, to: VersionVector? = nil, _ objects: ObjectTable) throws(DocumentError) -> [Change] {
        guard from.includes(start) else { throw .historyUnavailable(start: start) }
        if from == start && to == nil { return try all(objects) }
        func wanted(_ lastID: OpID) -> Bool {
            !from.contains(lastID) && (to?.contains(lastID) ?? true)
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
                if let to, !to.contains(records[Int(index)].lastID) { break }
                positions.append(Int(index))
            }
        }
        for index in indexedCount..<records.count where wanted(records[index].lastID) { positions.append(index) }
        positions.sort()
        result += positions.map(change(at:))
        return result
    }

    /// The change that holds operation `id`, if any.
    func change(containing id: OpID, _ objects: ObjectTable) throws(DocumentError) -> Change? {
        if let indices = recordsByReplica[id.replica] {
            var low = 0, high = indices.count
            while low < high {
                let mid = (low + high) / 2
                let record = records[Int(indices[mid])]
                if record.lastID.counter < id.counter { low = mid + 1 }
                else if record.id.counter > id.counter { high = mid }
                else { return change(at: Int(indices[mid])) }
            }
        }
        if let position = records[indexedCount...].firstIndex(where: {
            $0.id.replica == id.replica && $0.id.counter <= id.counter && id.counter <= $0.lastID.counter
        }) {
            return change(at: position)
        }
        // No bundle before the first whose version holds `id` can hold it.
        guard let first = bundles.firstIndex(where: { $0.version.contains(id) }) else { return nil }
        for index in bundles.indices[first...] {
            let found = try decoded(bundles[index...index], objects).first {
                $0.replica == id.replica && $0.counters.contains(id.counter)
            }
            if let found { return found }
        }
        return nil
    }
}

extension DecodingLimits {
    /// No limits: for bytes that were already checked against limits when they came in.
    static let unlimited = DecodingLimits(maxChanges: .max, maxOperations: .max, maxOperationWidth: .max)
}
