/// The replicas and map keys a bundle's columns refer to by index: a first
/// pass over the changes notes them, and `BundleWriter` writes the tables.
struct BundleTables {
    fileprivate var replicas = ReplicaTable()
    fileprivate var keys = NotedKeys()
    /// At most the bytes the noted puts' values take, for the values'
    /// buffer's room: grown by doubling, the 1,540 5 kB strings of
    /// crdt-benchmarks B3.3 were copied about once more on every snapshot.
    /// (Not a list insert's values: reading an insert's content retained
    /// a text insert's string, 2% more instructions for rustcode's local
    /// replay, which bundles its records.)
    fileprivate var valueBytes = 0
    /// The two replicas noted last, the last first: most ids in a run of
    /// changes are one writer's, and where two write at once, the other is
    /// the writer of the text or of the element an insert follows.
    private var lastReplicas: (ReplicaID?, ReplicaID?)

    mutating func note(_ replica: ReplicaID) {
        if replica == lastReplicas.0 { return }
        if replica != lastReplicas.1 { replicas.insert(replica) }
        lastReplicas = (replica, lastReplicas.0)
    }

    /// Notes every replica and key `operations` name. (Matched in place in
    /// the buffer: copying an `Operation` out costs more than encoding it.)
    mutating func note(_ operations: UnsafeBufferPointer<Operation>) {
        for index in operations.indices {
            switch operations[index] {
            case .put(let object, let key, _, let pred), .remove(let object, let key, let pred):
                note(object)
                keys.note(key)
                for id in pred { note(id.replica) }
                if case .put(_, _, let value, _) = operations[index] { valueBytes += ByteWriter.writtenSizeBound(of: value) }
            case .insert(let object, let origin, _):
                note(.insertText(object: object, origin: origin))
            case .delete(let object, let target):
                note(.delete(object: object, target: target))
            case .increment(let object, _):
                note(object)
            }
        }
    }

    /// Notes every replica a text insert or a delete names.
    mutating func note(_ edit: ChangeDecoder.Edit) {
        switch edit {
        case .insertText(let object, let origin):
            note(object)
            if let origin { note(origin.replica) }
        case .delete(let object, let target):
            note(object)
            note(target.start.replica)
        }
    }

    private mutating func note(_ object: ObjectID) {
        if let creator = object.creator { note(creator.replica) }
    }

    /// Notes what the changes of a run name besides their replica.
    mutating func note(_ edit: RepeatedEdit) {
        switch edit {
        case .typing(let object, _):
            note(object)
        case .deleting(let object, let replica, _, _):
            note(object)
            note(replica)
        }
    }
}

/// Writes a change bundle (`ChangeEncoding`, `Specs/encoding.md`) one
/// change at a time, from whatever holds the changes: `Change` values, or a
/// history's flat records, which then need not become `Change`s first.
///
/// A history is encoded as it grows, a few dozen column values per
/// keystroke, so the columns live in memory the writer owns (it is not
/// copyable): no copy-on-write check per value.
///
/// It writes `Version`: `ChangeEncoding.Sent` (with the text) or
/// `ChangeEncoding.ElidedText` (without, for a snapshot's history).
struct BundleWriter<Version: ChangeEncoding.WrittenVersion>: ~Copyable {
    typealias Column = ChangeEncoding.Column
    typealias Kind = ChangeEncoding.Kind
    typealias OriginMode = ChangeEncoding.OriginMode

    private static var elidingText: Bool { Version.layout.elidesText }
    private let replicaTable: [ReplicaID]
    private let keyTable: [String]
    private let notedKeys: NotedKeys
    /// Each noted key's index in `keyTable`, by its number in `notedKeys`.
    private let keyIndices: [UInt64]
    private let columns: UnsafeMutablePointer<ColumnWriter<Version.Columns>>
    private var text = ByteWriter()
    /// The puts' and list inserts' values, gathered in the first
    /// `GatheringWriter.chunkSize` bytes of `room`: appended to an array
    /// one write at a time, each write paid the array's uniqueness and
    /// capacity checks, 188 instructions a put of a short string (the
    /// records of crdt-benchmarks B3.2).
    private var values: GatheringWriter
    /// The room the writer starts in, one allocation: the values' chunk,
    /// then each column's first `columnRoom` bytes. Each column allocating
    /// its own was 24 of a writer's 26 allocations, most of its setup.
    private let room: UnsafeMutablePointer<UInt8>
    private static var columnRoom: Int { 32 }
    private var changeCount = 0

    /// The last counter of each replica so far, by index in `replicaTable`
    /// (owned memory too: it is written once per change).
    private let lastCounters: UnsafeMutablePointer<UInt64>
    private var previousLast: OpID?
    private var previousLastLamport: UInt64 = 0
    private var previousTime: Int64 = 0
    private var previousDelete: UInt64 = 0
    /// Each replica's index in `replicaTable`.
    private let replicaIndices: ReplicaIndexTable
    /// The replica looked up last, with its index: one writer's history
    /// names one replica, which this finds in fewer instructions than a hash.
    private var lastLookup = (replica: ReplicaID(0), index: UInt64.max)

    /// A writer for changes that name only what `tables` noted.
    init(_ tables: BundleTables) {
        precondition(Version.Columns.form == Version.layout.columnForm, "version \(Version.version) written in another column form")
        replicaTable = tables.replicas.replicas
        replicaIndices = ReplicaIndexTable(replicaTable)
        notedKeys = tables.keys
        let keys = tables.keys.keys.map(\.string)
        let keyNumbers = KeyOrder.sortedIndices(of: keys)
        keyTable = keyNumbers.map { keys[$0] }
        var keyIndices = [UInt64](repeating: 0, count: keyNumbers.count)
        for (index, number) in keyNumbers.enumerated() { keyIndices[number] = UInt64(index) }
        self.keyIndices = keyIndices
        room = .allocate(capacity: GatheringWriter.chunkSize + Column.allCases.count * Self.columnRoom)
        values = GatheringWriter(writer: ByteWriter(reservingCapacity: tables.valueBytes), chunk: room)
        lastCounters = .allocate(capacity: replicaTable.count)
        lastCounters.initialize(repeating: 0, count: replicaTable.count)
        columns = .allocate(capacity: Column.allCases.count)
        for index in Column.allCases.indices {
            let columnRoom = room + GatheringWriter.chunkSize + index * Self.columnRoom
            (columns + index).initialize(to: ColumnWriter(room: columnRoom, capacity: Self.columnRoom))
        }
    }

    deinit {
        columns.deinitialize(count: Column.allCases.count)
        columns.deallocate()
        lastCounters.deallocate()
        room.deallocate()
    }

    @inline(__always)
    private mutating func replicaIndex(_ replica: ReplicaID) -> UInt64 {
        if lastLookup.index != .max && lastLookup.replica == replica { return lastLookup.index }
        let index = UInt64(replicaIndices.index(of: replica))
        lastLookup = (replica, index)
        return index
    }

    @inline(__always)
    private func put(_ column: Column, _ value: UInt64, count: UInt64 = 1) { columns[column.rawValue].append(value, count: count) }
    @inline(__always)
    private func put(_ column: Column, signed value: Int64, count: UInt64 = 1) { columns[column.rawValue].append(signed: value, count: count) }

    /// Appends one change. `parents` nil means exactly the previous change's
    /// last id (which a buffer holding only that id means too).
    mutating func append(id: OpID, lamport: UInt64, width: UInt64, time: Int64,
                         parents: UnsafeBufferPointer<OpID>?, operations: UnsafeBufferPointer<Operation>) {
        let replica = putChange(id: id, time: time, lamport: lamport, parents: parents, operationCount: operations.count)
        var next = id
        for index in operations.indices {
            // The last operation takes what is left of the change's width.
            let isLast = index == operations.endIndex - 1
            next = append(operations, index, id: next, widthIfLast: isLast ? id.counter &+ width &- next.counter : nil)
        }
        endChange(id: id, replica: replica, lamport: lamport, width: width, time: time)
    }

    /// Appends one change whose one operation is `edit`, `width` elements
    /// wide, as a history read from bundles holds it (`ChangeDecoder.Edit`):
    /// a text insert writes `utf8`, its text, unless the writer elides text.
    mutating func append(id: OpID, lamport: UInt64, width: UInt64, time: Int64,
                         parents: UnsafeBufferPointer<OpID>?, edit: ChangeDecoder.Edit, utf8: UnsafeBufferPointer<UInt8>?) {
        let replica = putChange(id: id, time: time, lamport: lamport, parents: parents, operationCount: 1)
        switch edit {
        case let .insertText(object, origin):
            if let utf8, !Self.elidingText {
                putText(utf8)
            } else {
                put(.textLength, width)
            }
            put(object, .insertText)
            putOrigin(origin, of: id)
        case let .delete(object, target):
            // Through the operations' path, where the delete's columns are
            // written inline: as a function of its own, called from both,
            // the records of B2.4's snapshot took 2% more instructions.
            withUnsafePointer(to: Operation.delete(object: object, target: target)) { delete in
                _ = append(UnsafeBufferPointer(start: delete, count: 1), 0, id: id, widthIfLast: width)
            }
        }
        endChange(id: id, replica: replica, lamport: lamport, width: width, time: time)
    }

    /// Writes a change's own columns, before its operations; returns its replica's index.
    private mutating func putChange(id: OpID, time: Int64, lamport: UInt64, parents: UnsafeBufferPointer<OpID>?,
                                    operationCount: Int) -> UInt64 {
        changeCount += 1
        let replica = replicaIndex(id.replica)
        put(.changeReplica, replica)
        put(.changeCounter, signed: Int64(bitPattern: id.counter &- (lastCounters[Int(replica)] &+ 1)))
        put(.changeLamport, signed: Int64(bitPattern: lamport &- (previousLastLamport &+ 1)))
        if let parents, !(parents.count == 1 && parents[0] == previousLast) {
            if Version.layout.relativeParents {
                putRelativeParents(parents, of: id, replica: replica)
            } else {
                put(.parentCount, UInt64(parents.count) + 1)
                for parent in parents {
                    put(.parentReplica, replicaIndex(parent.replica))
                    put(.parentCounter, parent.counter)
                }
            }
        } else {
            precondition(previousLast != nil, "the first change of a bundle names its parents")
            put(.parentCount, 0)
        }
        put(.changeTime, signed: time &- previousTime)
        put(.operationCount, UInt64(operationCount))
        return replica
    }

    /// Writes the explicit parents of the change `id` (of the replica at
    /// `replica` in the table) relative to their replicas' last counters,
    /// leaving out the change's own replica's last change when it is one
    /// of them: then `parentCount`'s low bit says it is implied. A merge of
    /// two writers taking turns names the writer's own last change and the
    /// other's (friendsforever: 2,258 of its 2,405 changes with explicit
    /// parents; 9.5% of its bundle). Only for parents sorted and distinct,
    /// as `crdt.md` requires, so that the reader puts it back where it sorts.
    private mutating func putRelativeParents(_ parents: UnsafeBufferPointer<OpID>, of id: OpID, replica: UInt64) {
        let ownLast = lastCounters[Int(replica)]
        var implied: Int?
        if ownLast > 0, let index = parents.firstIndex(of: OpID(replica: id.replica, counter: ownLast)),
           zip(parents, parents.dropFirst()).allSatisfy({ $0 < $1 }) {
            implied = index
        }
        let explicitCount = UInt64(parents.count - (implied == nil ? 0 : 1))
        put(.parentCount, 1 + (explicitCount << 1 | (implied == nil ? 0 : 1)))
        for index in parents.indices where index != implied {
            let parentReplica = replicaIndex(parents[index].replica)
            put(.parentReplica, parentReplica)
            // Mostly 0: a change of one writer built on what the other wrote last.
            put(.parentCounter, signed: Int64(bitPattern: lastCounters[Int(parentReplica)] &- parents[index].counter))
        }
    }

    /// Notes the change just written as the one the next follows on.
    private mutating func endChange(id: OpID, replica: UInt64, lamport: UInt64, width: UInt64, time: Int64) {
        let last = id.advanced(by: width - 1)
        lastCounters[Int(replica)] = last.counter
        previousLast = last
        previousLastLamport = lamport + width - 1
        previousTime = time
    }

    /// Appends `count` changes after the last one appended, whose one
    /// operation was `first`, each repeating it one element on
    /// (`ChangeHistory.Record.keystrokes`): typing one scalar right after
    /// the one before, or deleting the element one counter above
    /// (`deletingForward`) or below the one before, written without their
    /// text (a history's own bundle: the state holds it).
    mutating func appendKeystrokes(_ count: Int, repeating first: Operation, deletingForward: Bool) {
        guard let edit = RepeatedEdit(keystrokesRepeating: first, deletingForward: deletingForward) else {
            preconditionFailure("\(first) starts no run of keystrokes")
        }
        appendRepeats(count, edit, width: UInt64(count), timeStep: 0, utf8: nil)
    }

    /// Appends `count` changes after the last one appended, each doing
    /// `edit`, built on the change before alone, with the next counters and
    /// Lamport values and a time `timeStep` after its; together they take
    /// `width` counters. Each column gets one value `count` times, so a run
    /// costs the same whatever its length (but for the lengths of typed
    /// text that is not ASCII, counted in scalars). Unless the writer
    /// elides text, typing writes `utf8`, the text the run types.
    mutating func appendRepeats(_ count: Int, _ edit: RepeatedEdit, width: UInt64, timeStep: Int64, utf8: UnsafeBufferPointer<UInt8>?) {
        guard let last = previousLast else { preconditionFailure("a run follows a change") }
        let replica = replicaIndex(last.replica)
        let repeats = UInt64(count)
        changeCount += count
        put(.changeReplica, replica, count: repeats)
        // Each change's counter and Lamport value follow on from the
        // previous change's (deltas 0), and its parent is that change.
        for column in [Column.changeCounter, .changeLamport, .parentCount] { put(column, 0, count: repeats) }
        put(.changeTime, signed: timeStep, count: repeats)
        put(.operationCount, 1, count: repeats)
        switch edit {
        case let .typing(object, each):
            put(object, .insertText, count: repeats)
            put(.originMode, OriginMode.previousElement.rawValue, count: repeats)
            switch (Self.elidingText, each, utf8) {
            case (true, .scalars(let scalars), _):
                put(.textLength, scalars, count: repeats)
            case (false, .utf8Bytes(let bytes), let utf8?):
                put(.textLength, bytes, count: repeats)
                text.writeBytes(utf8)
            case (false, .scalars(let scalars), let utf8?):
                putTextLengths(of: utf8, changes: count, scalarsEach: scalars)
                text.writeBytes(utf8)
            default:
                preconditionFailure("typing is written with its text, counted in scalars when it is elided")
            }
        case let .deleting(object, target, step, length):
            put(object, .delete, count: repeats)
            put(.deleteReplica, replicaIndex(target), count: repeats)
            put(.deleteCounter, signed: step, count: repeats)
            put(.deleteLength, length, count: repeats)
            previousDelete = UInt64(bitPattern: Int64(bitPattern: previousDelete) &+ step &* Int64(count))
        }
        let runLast = last.advanced(by: width)
        lastCounters[Int(replica)] = runLast.counter
        previousLast = runLast
        previousLastLamport += width
        previousTime = previousTime &+ timeStep &* Int64(count)
    }

    /// The text length column of `changes` typing `scalarsEach` scalars
    /// each, whose text is `utf8`: the bytes of each change's scalars.
    private mutating func putTextLengths(of utf8: UnsafeBufferPointer<UInt8>, changes: Int, scalarsEach: UInt64) {
        if utf8.count == changes * Int(scalarsEach) {
            // ASCII: a byte a scalar.
            return put(.textLength, scalarsEach, count: UInt64(changes))
        }
        var offset = 0
        for _ in 0..<changes {
            let start = offset
            for _ in 0..<scalarsEach {
                let lead = utf8[offset]
                offset += lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
            }
            put(.textLength, UInt64(offset - start))
        }
        precondition(offset == utf8.count, "the text typed is not the run's scalars")
    }

    /// Appends `operations[index]`, whose id is `id` and, if it is the
    /// change's last, whose width is `widthIfLast`; returns the next
    /// operation's id. (Matched in place, as in `BundleTables.note`.)
    private mutating func append(_ operations: UnsafeBufferPointer<Operation>, _ index: Int, id: OpID,
                                 widthIfLast: UInt64?) -> OpID {
        var width: UInt64 = 1
        switch operations[index] {
        case let .put(object, key, value, pred):
            // The value and the pred first, the key found before them: put
            // after the object's columns, they had the compiler copy the
            // whole operation out and destroy the copy, about 100
            // instructions more a put. (Each column and the values are
            // streams of their own: the order of writes to them is free.)
            let keyIndex = keyIndices[notedKeys.number(of: key)!]
            values.writeValue(value)
            putPred(pred)
            put(object, .put)
            put(.key, keyIndex)
        case let .remove(object, key, pred):
            let keyIndex = keyIndices[notedKeys.number(of: key)!]
            putPred(pred)
            put(object, .remove)
            put(.key, keyIndex)
        case let .insert(object, origin, .text(string)):
            if !Self.elidingText {
                putText(string.utf8)
                width = UInt64(string.unicodeScalarCount)
            } else if let widthIfLast {
                // Typing: the length is the width, and the string need not be read.
                width = widthIfLast
                put(.textLength, width)
            } else {
                // Counted before anything is written: with `string` still to
                // be read after a write, the compiler copied the operation
                // and destroyed the copy, more instructions than the count.
                width = UInt64(string.unicodeScalarCount)
                put(.textLength, width)
            }
            put(object, .insertText)
            putOrigin(origin, of: id)
        case let .insert(object, origin, .values(list)):
            put(object, .insertValues)
            putOrigin(origin, of: id)
            width = UInt64(list.count)
            put(.valueCount, width)
            for value in list { values.writeValue(value) }
        case let .delete(object, target):
            put(object, .delete)
            put(.deleteReplica, replicaIndex(target.start.replica))
            put(.deleteCounter, signed: Int64(bitPattern: target.start.counter &- previousDelete))
            put(.deleteLength, UInt64(target.length))
            previousDelete = target.start.counter
            width = UInt64(target.length)
        case let .increment(object, delta):
            put(object, .increment)
            put(.incrementDelta, signed: delta)
        }
        return id.advanced(by: width)
    }

    /// The object an operation acts on and its kind: the columns every
    /// operation has (for `count` operations in a row).
    @inline(__always)
    private mutating func put(_ object: ObjectID, _ kind: Kind, count: UInt64 = 1) {
        put(.objectReplica, object.creator.map { replicaIndex($0.replica) + 1 } ?? 0, count: count)
        put(.objectCounter, object.creator?.counter ?? 0, count: count)
        put(.operationKind, kind.rawValue, count: count)
    }

    /// Writes the length and the bytes of a text insert's UTF-8.
    private mutating func putText(_ utf8: some Collection<UInt8>) {
        put(.textLength, UInt64(utf8.count))
        text.writeBytes(utf8)
    }

    private mutating func putOrigin(_ origin: OpID?, of id: OpID) {
        guard let origin else { return put(.originMode, OriginMode.head.rawValue) }
        if origin.replica == id.replica && origin.counter &+ 1 == id.counter {
            put(.originMode, OriginMode.previousElement.rawValue)
        } else {
            put(.originMode, OriginMode.explicit.rawValue)
            put(.originReplica, replicaIndex(origin.replica))
            switch Version.layout.originCounters {
            case .counter: put(.originCounter, origin.counter)
            case .insertMinusOrigin: put(.originCounter, signed: Int64(bitPattern: id.counter &- origin.counter))
            case .distanceBackOrCounter where origin.replica == id.replica:
                precondition(origin.counter < id.counter, "an insert's origin of its own replica comes before it")
                put(.originCounter, id.counter - 1 - origin.counter)
            case .distanceBackOrCounter: put(.originCounter, origin.counter)
            }
        }
    }

    private mutating func putPred(_ pred: [OpID]) {
        put(.predCount, UInt64(pred.count))
        for id in pred {
            put(.predReplica, replicaIndex(id.replica))
            put(.predCounter, id.counter)
        }
    }

    /// The bundle: tables, columns, text and values in a frame.
    mutating func finish() -> [UInt8] { finished().sealed() }

    /// The bundle's parts, written, for sealing where the caller wants it.
    mutating func finished() -> FinishedBundle {
        FinishedBundle(version: Version.version,
                       replicaTable: replicaTable, keyTable: keyTable, changeCount: changeCount,
                       columns: finishedColumns(), text: text.bytes, values: values.writtenBytes())
    }

    /// Every column, each behind its length as the bundle holds them, in
    /// one array: an array for each was 24 allocations a bundle, and 24
    /// writes again when sealed.
    private mutating func finishedColumns() -> [UInt8] {
        let columns = self.columns
        var size = 0
        for index in Column.allCases.indices {
            columns[index].finish()
            let count = columns[index].written.count
            size += ByteWriter.varintSize(UInt64(count)) + count
        }
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            var end = buffer.baseAddress!
            for index in Column.allCases.indices {
                let column = columns[index].written
                end += ByteWriter.writeVarint(UInt64(column.count), at: end)
                if let start = column.baseAddress { end.initialize(from: start, count: column.count) }
                end += column.count
            }
            initialized = end - buffer.baseAddress!
        }
    }
}

/// What each change of a run (`BundleWriter.appendRepeats`) does, one
/// operation carrying on from the change before's.
enum RepeatedEdit {
    /// Types into `object` right after the element before, as many
    /// scalars, or bytes of UTF-8, as each of the others.
    case typing(object: ObjectID, each: TypedLength)
    /// Deletes `length` elements of `replica`, `step` counters on from
    /// the first the delete before deleted.
    case deleting(object: ObjectID, replica: ReplicaID, step: Int64, length: UInt64)

    /// What each keystroke after a change whose one operation is
    /// `first` does (`ChangeHistory.Record.keystrokes`); nil if such a
    /// change starts no run.
    init?(keystrokesRepeating first: Operation, deletingForward: Bool) {
        switch first {
        case .insert(let object, _, .text):
            self = .typing(object: object, each: .scalars(1))
        case .delete(let object, let target):
            self = .deleting(object: object, replica: target.start.replica, step: deletingForward ? 1 : -1, length: 1)
        default:
            return nil
        }
    }

    enum TypedLength {
        case scalars(UInt64)
        case utf8Bytes(UInt64)
    }
}

/// A bundle whose columns, text and values are written, not yet sealed.
/// Its size is known, so that it can be sealed straight into a larger
/// encoding that has room for it: a snapshot's history, whose last
/// bundle (the recorded changes, `ChangeHistory.recordsBundle`) was
/// sealed apart and then copied in, twice the bytes moved (1,540 writers'
/// 5 kB strings: 7.7 MB a snapshot).
struct FinishedBundle {
    let version: UInt64
    let replicaTable: [ReplicaID]
    let keyTable: [String]
    let changeCount: Int
    /// The columns, each behind its length, as the body holds them.
    let columns: [UInt8]
    let text: [UInt8]
    let values: [UInt8]

    /// The body's exact size: a bundle kept in a history carries no
    /// slack, and the body is not moved once written.
    private var bodySize: Int {
        func counted(_ count: Int) -> Int { ByteWriter.varintSize(UInt64(count)) + count }
        var size = ByteWriter.varintSize(UInt64(replicaTable.count)) + replicaTable.count * 8
            + ByteWriter.varintSize(UInt64(keyTable.count)) + ByteWriter.varintSize(UInt64(changeCount))
            + columns.count + counted(text.count) + counted(values.count)
        for key in keyTable { size += counted(key.utf8.count) }
        return size
    }

    /// The bytes the sealed bundle takes.
    var sealedSize: Int { Envelope.sealedSize(magic: ChangeEncoding.magic, version: version, bodySize: bodySize) }

    /// The sealed bundle, in an array of its own.
    func sealed() -> [UInt8] {
        var writer = ByteWriter(reservingCapacity: sealedSize)
        seal(into: &writer)
        return writer.bytes
    }

    /// Appends the sealed bundle to `writer`.
    func seal(into writer: inout ByteWriter) {
        Envelope.seal(magic: ChangeEncoding.magic, version: version, bodySize: .exactly(bodySize), into: &writer) { body in
            // The tables are small writes (eight bytes a replica, 1,541
            // replicas in crdt-benchmarks B3.2's records): gathered.
            body.writeGathered { tables in
                tables.writeVarint(replicaTable.count)
                for replica in replicaTable { tables.writeUInt64(replica.rawValue) }
                tables.writeVarint(keyTable.count)
                for key in keyTable { tables.writeString(key) }
                tables.writeVarint(changeCount)
            }
            body.writeBytes(columns)
            body.writeData(text)
            body.writeData(values)
            return []
        }
    }
}

