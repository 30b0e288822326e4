/// Reads the changes of a bundle (`ChangeEncoding`) one at a time into a
/// reused buffer, so that a reader that needs no `Change` values (applying a
/// long history) allocates nothing per change.
///
/// Not copyable: it owns its column readers' memory.
struct ChangeDecoder: ~Copyable {
    /// The change just read. Its arrays keep their capacity from one change to the next.
    struct Current {
        var id = OpID(replica: ReplicaID(0), counter: 0)
        var lamport: UInt64 = 0
        var parents: [OpID] = []
        var time: Int64 = 0
        /// The change's only operation when it is a text insert or a delete,
        /// the operations typing makes, read without building an `Operation`:
        /// `operations` is empty then, and an insert's text is `text`.
        var edit: Edit?
        /// The change's operations, read as `edit` is, when it has several and
        /// all are text inserts or deletes (a replacement, a paste over a
        /// selection): `operations` is empty then, and each insert's text is
        /// the next `width` scalars of `text`.
        var edits: [(edit: Edit, width: UInt64)] = []
        var text = ReusedText()
        var operations: [Operation] = []
        var width: UInt64 = 0

        var lastID: OpID { id.advanced(by: width - 1) }
        var lastLamport: UInt64 { lamport + width - 1 }
        var change: Change {
            Change(id: id, lamport: lamport, parents: parents, time: time, operations: allOperations, width: width)
        }

        /// The change's operations, however they were read. (From a decoder
        /// that `leavesTextOut`, a text insert read as `edit` has no text.)
        var allOperations: [Operation] {
            edit.map { [$0.operation(inserting: text.buffer[text.range])] } ?? (edits.isEmpty ? operations : editOperations)
        }

        /// `edits` as operations.
        private var editOperations: [Operation] {
            var scalarStart = text.start
            return edits.map { edit, width in
                let scalarEnd = if case .insertText = edit { scalarStart + Int(width) } else { scalarStart }
                defer { scalarStart = scalarEnd }
                return edit.operation(inserting: text.buffer[scalarStart..<scalarEnd])
            }
        }

        /// The text object the change inserts into first, if any.
        var firstTextInsertedInto: ObjectID? {
            if case .insertText(let object, _)? = edit { return object }
            for (edit, _) in edits { if case .insertText(let object, _) = edit { return object } }
            for case .insert(let object, _, .text(_)) in operations { return object }
            return nil
        }

        /// Adds an edit read, as the `only` operation of the change or one of its `edits`.
        mutating func add(_ edit: Edit, width: UInt64, only: Bool) {
            if only { self.edit = edit } else { edits.append((edit, width)) }
        }

        /// Turns the edits read so far into operations, when the change turns
        /// out to hold another kind of operation too.
        mutating func moveEditsToOperations() {
            guard !edits.isEmpty else { return }
            operations = editOperations
            edits.removeAllOneByOne()
        }

        /// Where each of `edits` starts, counted from `id`: `isInserted`
        /// finds an id's edit by binary search in it, since a change may hold
        /// thousands of edits (crdt-benchmarks' B2 makes each user's in one).
        /// Empty when no edit names an element of the change itself, as
        /// `isInserted` then needs none: most changes of several edits (a
        /// word replaced) name only other changes' elements, and making the
        /// array cost a merge of rustcode 2.6% of its instructions.
        var editStarts: [UInt64] {
            guard edits.contains(where: { namesOwnElement($0.edit) }) else { return [] }
            var start: UInt64 = 0
            return edits.map { _, width in
                defer { start += width }
                return start
            }
        }

        /// Whether `edit` inserts after, or deletes, an element of the change itself.
        private func namesOwnElement(_ edit: Edit) -> Bool {
            switch edit {
            case .insertText(_, let origin): origin.map(isOwn) ?? false
            case .delete(_, let target): isOwn(target.start.advanced(by: UInt64(target.length) - 1))
            }
        }

        /// Whether `element` has this change's replica and a counter from
        /// `id` on: only the change itself can have inserted it.
        private func isOwn(_ element: OpID) -> Bool {
            element.replica == id.replica && element.counter >= id.counter
        }

        /// Whether `element` is one of the elements that the edits before
        /// `index` insert into `object`; `starts` is `editStarts`.
        func isInserted(_ element: OpID, into object: ObjectID, before index: Int, starts: [UInt64]) -> Bool {
            guard isOwn(element) else { return false }
            let offset = element.counter - id.counter
            // The last edit before `index` that starts at or before `offset`.
            let low = starts[..<index].partitioningIndex { $0 > offset }
            guard low > 0, case .insertText(object, _) = edits[low - 1].edit else { return false }
            return offset - starts[low - 1] < edits[low - 1].width
        }
    }

    /// A text insert or a delete, in fields that copy without reference counting.
    enum Edit {
        case insertText(object: ObjectID, origin: OpID?)
        case delete(object: ObjectID, target: IDRun)

        var object: ObjectID {
            switch self {
            case .insertText(let object, _), .delete(let object, _): object
            }
        }

        func operation(inserting scalars: Slice<ScalarStorage>) -> Operation {
            switch self {
            case let .insertText(object, origin):
                .insert(object: object, origin: origin, content: .text(String(scalars: scalars)))
            case let .delete(object, target):
                .delete(object: object, target: target)
            }
        }
    }

    typealias Column = ChangeEncoding.Column

    let changeCount: Int
    private(set) var read = 0
    /// Where the text of inserts comes from when the bundle elides it; nil
    /// when the bundle holds its text.
    private let elidedText: ChangeEncoding.InsertedText?
    /// The bundle elides its text and the reader takes it from the state
    /// itself: a change whose one operation is a text insert, and a run of
    /// them (`readContinuation`), is read as an edit without its text, and
    /// `elidedText` serves only the inserts of changes with several operations.
    let leavesTextOut: Bool
    /// How explicit origins and parents are written (`ChangeEncoding.Layout`).
    private let originCounters: ChangeEncoding.OriginCounterForm
    private let relativeParents: Bool
    private let limits: DecodingLimits
    private let replicaTable: [ReplicaID]
    private let keyTable: [String]
    /// The column readers, in `Column` order. Behind a pointer, not in an
    /// array: each value read mutates its reader, and through an array each
    /// of the dozen reads a change takes checked the buffer's uniqueness.
    private let columns: UnsafeMutableBufferPointer<ColumnReader>
    private let textBytes: ArraySlice<UInt8>
    private var textOffset: Int
    private var values: ByteReader
    private var operationTotal = 0
    /// The last counter of each replica so far, by its index in
    /// `replicaTable` (0 for none yet), but for the replica of
    /// `previousLast`, whose last counter that is. An array, not a map by
    /// replica: changes of two writers taking turns switch replica at
    /// every other change.
    private var lastCounters: [UInt64]
    private var previousLast: OpID?
    /// The index in `replicaTable` of `previousLast`'s replica.
    private var previousReplicaIndex = 0
    private var previousLastLamport: UInt64 = 0
    private var previousTime: Int64 = 0
    private var previousDelete: UInt64 = 0

    /// A decoder of `bytes`; with `insertedText`, bundles that elide their
    /// text are accepted too, and their text is taken from it (or, with
    /// `leavingTextOut`, left to the reader: see `leavesTextOut`).
    init(_ bytes: [UInt8], limits: DecodingLimits, insertedText: ChangeEncoding.InsertedText? = nil,
         leavingTextOut: Bool = false) throws(DecodingError) {
        // Everything that can throw first, or undone when it throws: a value
        // that cannot be copied is either wholly made or not at all.
        let opened = try ChangeEncoding.open(bytes, elidedTextAllowed: insertedText != nil)
        var body = opened.body
        let tables = try ChangeEncoding.readTables(&body)
        let changeCount = try ChangeEncoding.readChangeCount(&body, limits: limits)
        // Readers over the body's own buffer (copying out 24 columns cost a
        // small bundle, a sync of one change, more than decoding it), made
        // where they stay: made in an array first, its allocation (2.5 kB,
        // past malloc's per-thread cache), its copy through the runtime's
        // generic `swift_arrayInitWithCopy` and its release took half of
        // the setup of friendsforever's 4,904 decoders (48 M instructions).
        let columns = UnsafeMutableBufferPointer<ColumnReader>.allocate(capacity: Column.allCases.count)
        var made = 0
        let textRange: Range<Int>, valuesRange: Range<Int>
        do throws(DecodingError) {
            for column in Column.allCases {
                let range = try body.readDataRange("column " + column.name)
                (columns.baseAddress! + made).initialize(to: ColumnReader(ByteReader(body.bytes, range: range), column: column,
                                                                         form: opened.layout.columnForm))
                made += 1
            }
            textRange = try body.readDataRange("the text content")
            valuesRange = try body.readDataRange("the values")
            guard body.isAtEnd else { throw .invalid("bytes follow the last column") }
        } catch {
            columns.baseAddress!.deinitialize(count: made)
            columns.deallocate()
            throw error
        }
        self.columns = columns
        elidedText = opened.layout.elidesText ? insertedText : nil
        leavesTextOut = opened.layout.elidesText && insertedText != nil && leavingTextOut
        originCounters = opened.layout.originCounters
        relativeParents = opened.layout.relativeParents
        (replicaTable, keyTable) = tables
        lastCounters = Array(repeating: 0, count: replicaTable.count)
        self.changeCount = changeCount
        self.limits = limits
        textBytes = body.bytes[textRange]
        textOffset = textRange.lowerBound
        values = ByteReader(body.bytes, range: valuesRange)
    }

    deinit {
        // Each reader taken out and dropped: `deinitialize()` destroyed
        // them through the runtime's generic `swift_arrayDestroy`, which
        // calls the type's destroy function for each.
        for index in columns.indices { _ = (columns.baseAddress! + index).move() }
        columns.deallocate()
    }

    /// The last change read so far: its last id, last Lamport value and time.
    var lastRead: (id: OpID, lamport: UInt64, time: Int64)? {
        previousLast.map { ($0, previousLastLamport, previousTime) }
    }

    /// At most how many scalars the bundle's text inserts add, and how
    /// many element ids they and its deletes take, for sizing a fresh text
    /// up front: a scalar inserted is at least a byte of text, and a delete
    /// takes as many ids as it deletes elements, which (in a fresh replica)
    /// its inserts made. Damaged columns count as nothing here; reading
    /// them throws later.
    ///
    /// The text counted is all of the bundle's, read or not: the text is
    /// sized once the change that inserts into it first is read, and that
    /// change's text (often a long paste) needs room too.
    ///
    /// `spans`: at most how many spans a fresh text holds after the bundle,
    /// from the operations of `current` (read) and of the changes after it.
    /// A text insert adds at most two (its own, and the second half of the
    /// span it lands in), a delete at most two (it cuts at most the span
    /// holding its first id and the one holding its last), other operations
    /// none; no span is empty, so there are no more spans than scalars.
    /// (All operations are counted, not the text edits alone: the counts
    /// per change are a column of long runs, and reading each operation's
    /// kind cost rustcode's merge 3%.)
    func textBounds(including current: borrowing Current) -> (scalars: Int, ids: Int, spans: Int) {
        let deleted = (try? columns[Column.deleteLength.rawValue].remainingSum()) ?? 0
        let scalars = textBytes.count
        let limit = UInt64(scalars)
        let laterOperations = (try? columns[Column.operationCount.rawValue].remainingSum()) ?? 0
        let currentOperations = UInt64((current.edit == nil ? 0 : 1) + current.edits.count + current.operations.count)
        let operations = min(laterOperations, limit) + currentOperations
        return (scalars, scalars + Int(min(deleted, limit)), Int(min(2 * operations, limit)))
    }

    /// How many keys the bundle writes in the root map (at most as many as
    /// it names), counted in the object column, where the root is code 0:
    /// the root is a map, so all its operations write keys. A damaged
    /// column counts as nothing here; reading it throws later.
    func rootKeyWrites() -> Int {
        let count = try? columns[Column.objectReplica.rawValue].remainingCount(of: 0, atMost: UInt64(keyTable.count))
        return Int(count ?? 0)
    }

    /// Checks that every column and content area was used up exactly.
    func finish() throws(DecodingError) {
        for column in columns { try column.checkFinished() }
        guard textOffset == textBytes.endIndex, values.isAtEnd else { throw .invalid("content is left over after the last change") }
    }

    // The readers below are mutating, though only what `columns` points to
    // changes: called from a mutating method, a non-mutating one took a
    // copy of the whole decoder (224 bytes, a `memcpy`) on every call.
    private mutating func next(_ column: Column) throws(DecodingError) -> UInt64 { try columns[column.rawValue].next() }
    private mutating func nextSigned(_ column: Column) throws(DecodingError) -> Int64 { try columns[column.rawValue].nextSigned() }
    // The readers of ids and objects below are inlined: a change of one
    // edit calls three or four of them, and a call each cost a merge of
    // eight writers' random edits 4.4% of its instructions.
    @inline(__always)
    private mutating func nextReplica(_ column: Column) throws(DecodingError) -> ReplicaID {
        replicaTable[try columns[column.rawValue].nextIndex(below: replicaTable.count)]
    }
    @inline(__always)
    private mutating func nextID(_ replica: Column, _ counter: Column) throws(DecodingError) -> OpID {
        let id = OpID(replica: try nextReplica(replica), counter: try next(counter))
        guard id.counter > 0 else { throw .invalid("an id has counter 0") }
        return id
    }
    /// An explicit parent of a change of the replica at `changeReplicaIndex`
    /// in `replicaTable`, whose last counter before the change is `changeReplicaLast`.
    @inline(__always)
    private mutating func nextParent(changeReplicaIndex: Int, changeReplicaLast: UInt64) throws(DecodingError) -> OpID {
        let index = try columns[Column.parentReplica.rawValue].nextIndex(below: replicaTable.count)
        // `lastCounters` holds every replica's last counter but that of the
        // replica whose changes are being read.
        let last = index == changeReplicaIndex ? changeReplicaLast : lastCounters[index]
        let counter = last &- UInt64(bitPattern: try nextSigned(.parentCounter))
        guard counter > 0 else { throw .invalid("column parentCounter names counter 0") }
        return OpID(replica: replicaTable[index], counter: counter)
    }
    /// Reads into `parents` those of a version 5 change of the replica at
    /// `replicaIndex` in `replicaTable`, whose last counter before the
    /// change is `ownLast` (0 for none). `coded` is `parentCount - 1`: the
    /// explicit parents' count shifted left by one, the low bit set when
    /// that last change is a parent too, not written out
    /// (`BundleWriter.putRelativeParents`); it goes back before the first
    /// explicit parent above it, where it sorts.
    private mutating func readRelativeParents(coded: UInt64, replicaIndex: Int, ownLast: UInt64,
                                              into parents: inout [OpID]) throws(DecodingError) {
        let explicitCount = coded >> 1
        let implies = coded & 1 != 0
        // The implied one counted, as versions before 5 count it (explicit
        // there): a change read is written again in those, for a client of
        // an older build and in a snapshot's history, whose readers refuse more.
        let count = explicitCount + (implies ? 1 : 0)
        guard count <= 4096 else { throw .invalid("a change has \(count) parents") }
        guard !implies || ownLast > 0 else {
            throw .invalid("column parentCount implies a parent of the change's own replica, which has no change before it in the bundle")
        }
        // Overwritten in place: two writers taking turns (friendsforever)
        // name two parents at every turn.
        let own = OpID(replica: replicaTable[replicaIndex], counter: ownLast)
        parents.resize(to: Int(count), padding: own)
        try parents.withUnsafeMutableBufferPointer { parents throws(DecodingError) in
            var slot = 0
            var ownLeft = implies
            for _ in 0..<explicitCount {
                let parent = try nextParent(changeReplicaIndex: replicaIndex, changeReplicaLast: ownLast)
                if ownLeft && own < parent {
                    parents[slot] = own
                    slot += 1
                    ownLeft = false
                }
                parents[slot] = parent
                slot += 1
            }
            if ownLeft { parents[slot] = own }
        }
    }

    private mutating func nextPred() throws(DecodingError) -> [OpID] {
        let count = try next(.predCount)
        guard count <= 1024 else { throw .invalid("a write replaces \(count) values") }
        var pred: [OpID] = []
        for _ in 0..<count { pred.append(try nextID(.predReplica, .predCounter)) }
        return pred
    }
    private mutating func nextKey() throws(DecodingError) -> String {
        keyTable[try columns[Column.key.rawValue].nextIndex(below: keyTable.count)]
    }

    /// Reads the next change into `current`; false when all have been read.
    mutating func next(into current: inout Current) throws(DecodingError) -> Bool {
        guard read < changeCount else { return false }
        read += 1
        let replicaIndex = try columns[Column.changeReplica.rawValue].nextIndex(below: replicaTable.count)
        let replica = replicaTable[replicaIndex]
        let lastCounter: UInt64
        if let previousLast, replicaIndex == previousReplicaIndex {
            lastCounter = previousLast.counter
        } else {
            // The previous change's replica is noted when another's comes: a
            // run of one replica's changes notes nothing.
            if let previousLast { lastCounters[previousReplicaIndex] = previousLast.counter }
            lastCounter = lastCounters[replicaIndex]
            previousReplicaIndex = replicaIndex
        }
        let counter = (lastCounter &+ 1) &+ UInt64(bitPattern: try nextSigned(.changeCounter))
        let lamport = previousLastLamport &+ 1 &+ UInt64(bitPattern: try nextSigned(.changeLamport))
        guard counter > 0, lamport > 0 else { throw .invalid("a change has counter or Lamport value 0") }
        let parentCount = try next(.parentCount)
        if parentCount == 0 {
            guard let previousLast else { throw .invalid("the first change names an implicit parent") }
            // Most changes build on the one before alone: one parent, overwritten in place.
            current.parents.resize(to: 1, padding: previousLast)
            current.parents[0] = previousLast
        } else if relativeParents {
            try readRelativeParents(coded: parentCount - 1, replicaIndex: replicaIndex, ownLast: lastCounter, into: &current.parents)
        } else {
            guard parentCount - 1 <= 4096 else { throw .invalid("a change has \(parentCount - 1) parents") }
            // Overwritten in place too: two writers taking turns
            // (friendsforever) name two parents at every turn.
            current.parents.resize(to: Int(parentCount - 1), padding: current.id)
            try current.parents.withUnsafeMutableBufferPointer { parents throws(DecodingError) in
                for index in parents.indices { parents[index] = try nextID(.parentReplica, .parentCounter) }
            }
        }
        let time = previousTime &+ (try nextSigned(.changeTime))
        let operationCount = try next(.operationCount)
        guard operationCount > 0 else { throw .invalid("a change has no operations") }
        guard operationCount <= UInt64(limits.maxOperations - operationTotal) else {
            throw .invalid("it holds more operations than the limit of \(limits.maxOperations)")
        }
        operationTotal += Int(operationCount)
        // Most are empty already: a call each to find that out cost a single
        // edit 30 instructions.
        if !current.operations.isEmpty { current.operations.removeAllOneByOne() }
        current.edit = nil
        if !current.edits.isEmpty { current.edits.removeAllKeepingCapacity() }
        current.text.removeAll()
        var id = OpID(replica: replica, counter: counter)
        for _ in 0..<operationCount {
            let width = try nextOperation(id: id, only: operationCount == 1, into: &current)
            let (advanced, overflow) = id.counter.addingReportingOverflow(width)
            guard !overflow else { throw .invalid("a change's counters overflow") }
            id.counter = advanced
        }
        current.id = OpID(replica: replica, counter: counter)
        current.lamport = lamport
        current.time = time
        current.width = id.counter - counter
        guard Document.lamportValuesFit(from: lamport, count: current.width) else { throw .invalid("a change's Lamport values reach 2^62") }
        previousLast = current.lastID
        previousLastLamport = current.lastLamport
        previousTime = time
        return true
    }

    /// Reads the operation with first id `id` into `current`, as an edit
    /// (its `edit` when it is the change's `only` operation, else one of its
    /// `edits`) while the change's operations are all edits, and returns its width.
    private mutating func nextOperation(id: OpID, only: Bool, into current: inout Current) throws(DecodingError) -> UInt64 {
        let object = try nextObject()
        let rawKind = try next(.operationKind)
        guard let kind = ChangeEncoding.Kind(rawValue: rawKind) else { throw .invalid("unknown operation kind \(rawKind)") }
        switch kind {
        case .insertText where current.operations.isEmpty && elidedText == nil:
            let origin = try nextOrigin(id: id)
            let text = try nextTextRange()
            let width: UInt64
            if text.count == 1, case let byte = textBytes[text.lowerBound], byte < 0x80 {
                // A keystroke, most inserts: appended as it is, without the
                // slice (retained and released) and the call of the general case.
                current.text.buffer.append(Unicode.Scalar(byte))
                width = 1
            } else {
                let scalarStart = current.text.buffer.count
                guard appendText(text, textLength: text.count, to: &current.text.buffer) != nil else {
                    throw .invalid("inserted text is not valid UTF-8")
                }
                width = UInt64(current.text.buffer.count - scalarStart)
            }
            current.add(.insertText(object: object, origin: origin), width: width, only: only)
            return width
        case .insertText where only && leavesTextOut:
            let origin = try nextOrigin(id: id)
            let width = try nextElidedTextLength(at: id)
            current.add(.insertText(object: object, origin: origin), width: width, only: true)
            return width
        case .delete where current.operations.isEmpty:
            let target = try nextDeleteTarget()
            current.add(.delete(object: object, target: target), width: UInt64(target.length), only: only)
            return UInt64(target.length)
        default:
            // A change's operations are all edits or none is.
            current.moveEditsToOperations()
            let operation = try nextOperation(id: id, object: object, kind: kind)
            current.operations.append(operation)
            return UInt64(operation.width)
        }
    }

    @inline(__always)
    private mutating func nextObject() throws(DecodingError) -> ObjectID {
        let objectCode = try next(.objectReplica)
        let objectCounter = try next(.objectCounter)
        if objectCode == 0 {
            guard objectCounter == 0 else { throw .invalid("the root object has a counter") }
            return .root
        }
        guard objectCode <= UInt64(replicaTable.count), objectCounter > 0 else { throw .invalid("an object id is out of range") }
        return ObjectID(OpID(replica: replicaTable[Int(objectCode - 1)], counter: objectCounter))
    }

    @inline(__always)
    private mutating func nextOrigin(id: OpID) throws(DecodingError) -> OpID? {
        let rawMode = try next(.originMode)
        switch ChangeEncoding.OriginMode(rawValue: rawMode) {
        case .head: return nil
        case .previousElement:
            guard id.counter > 1 else { throw .invalid("an insert's origin precedes counter 1") }
            return OpID(replica: id.replica, counter: id.counter - 1)
        case .explicit:
            let replica = try nextReplica(.originReplica)
            let written = try next(.originCounter)
            let counter: UInt64
            switch originCounters {
            case .counter, .insertMinusOrigin:
                counter = originCounters == .counter ? written : id.counter &- UInt64(bitPattern: ByteReader.unzigzag(written))
                // No element of the insert's own replica at or past its id
                // exists when it applies, and version 5 cannot write such an
                // origin (a distance back): read, a store or the sync server
                // parking the change would write it so, and trap.
                guard replica != id.replica || counter < id.counter else {
                    throw .invalid("the insert at \(id) names \(OpID(replica: replica, counter: counter)) as its origin, "
                        + "of its own replica but not before it")
                }
            case .distanceBackOrCounter where replica == id.replica:
                // `id.counter` is at least 1; the origin must be at 1 or more.
                guard written < id.counter - 1 else { throw .invalid("column originCounter goes back past counter 1") }
                return OpID(replica: replica, counter: id.counter - 1 - written)
            case .distanceBackOrCounter: counter = written
            }
            guard counter > 0 else { throw .invalid("column originCounter names counter 0") }
            return OpID(replica: replica, counter: counter)
        case nil: throw .invalid("unknown origin mode \(rawMode)")
        }
    }

    /// The scalars the next text insert of a bundle that elides its text inserts at `id`.
    private mutating func nextElidedTextLength(at id: OpID) throws(DecodingError) -> UInt64 {
        let count = try next(.textLength)
        guard count > 0, count <= UInt64(limits.maxOperationWidth) else {
            throw .invalid("the text insert at \(id) has \(count) scalars, none or more than the limit")
        }
        return count
    }

    /// The UTF-8 bytes of the next text insert, not yet validated.
    private mutating func nextText() throws(DecodingError) -> ArraySlice<UInt8> {
        textBytes[try nextTextRange()]
    }

    /// Where in `textBytes` the next text insert's UTF-8 bytes are.
    /// (Inlined: read once a text insert.)
    @inline(__always)
    private mutating func nextTextRange() throws(DecodingError) -> Range<Int> {
        let length = try next(.textLength)
        guard length > 0, length <= UInt64(textBytes.endIndex - textOffset) else {
            throw .invalid("a text insert runs past the text content")
        }
        textOffset += Int(length)
        return (textOffset - Int(length))..<textOffset
    }

    /// Appends to `scalars` the texts of `textLength` bytes each in `range`
    /// of `textBytes` (see `ScalarStorage.append(decodingUTF8:textLength:)`),
    /// over the bytes' buffer: a slice of them, made for the call, was
    /// retained and released, 40 instructions a text.
    private func appendText(_ range: Range<Int>, textLength: Int, to scalars: inout ScalarStorage) -> Int? {
        textBytes.withUnsafeBufferPointer { buffer in
            let start = range.lowerBound - textBytes.startIndex
            return scalars.append(decodingUTF8: UnsafeBufferPointer(rebasing: buffer[start..<(start + range.count)]),
                                  textLength: textLength)
        }
    }

    @inline(__always)
    private mutating func nextDeleteTarget() throws(DecodingError) -> IDRun {
        let targetReplica = try nextReplica(.deleteReplica)
        let start = previousDelete &+ UInt64(bitPattern: try nextSigned(.deleteCounter))
        let length = try next(.deleteLength)
        guard start > 0, length > 0 else { throw .invalid("a delete has counter 0 or length 0") }
        guard length <= UInt64(limits.maxOperationWidth) else { throw .invalid("a delete of \(length) elements exceeds the limit") }
        // No element's counter is above 2^64 - 3 (a change's counters end
        // below 2^64 - 1), so a range past it names none; and the paths
        // that apply deletes add lengths to starts unchecked.
        guard start < UInt64.max - length else { throw .invalid("a delete's range runs past the last counter") }
        previousDelete = start
        return IDRun(start: OpID(replica: targetReplica, counter: start), length: Int(length))
    }

    private mutating func nextOperation(id: OpID, object: ObjectID, kind: ChangeEncoding.Kind) throws(DecodingError) -> Operation {
        switch kind {
        case .put:
            let key = try nextKey()
            let pred = try nextPred()
            guard let value = try values.readValue() else { throw .invalid("a put writes a removal") }
            return .put(object: object, key: key, value: value, pred: pred)
        case .remove:
            return .remove(object: object, key: try nextKey(), pred: try nextPred())
        case .insertText:
            let origin = try nextOrigin(id: id)
            if let elidedText {
                let count = try nextElidedTextLength(at: id)
                guard let text = elidedText(object, IDRun(start: id, length: Int(count))) else {
                    throw .invalid("the state holds no text for the \(count) scalars inserted at \(id)")
                }
                return .insert(object: object, origin: origin, content: .text(text))
            }
            guard let string = String(validatingUTF8Bytes: try nextText()) else { throw .invalid("inserted text is not valid UTF-8") }
            return .insert(object: object, origin: origin, content: .text(string))
        case .insertValues:
            let origin = try nextOrigin(id: id)
            let count = try next(.valueCount)
            guard count > 0, count <= UInt64(values.remaining) else { throw .invalid("a list insert has \(count) values") }
            var list: [NewValue] = []
            for _ in 0..<count {
                guard let value = try values.readValue() else { throw .invalid("a list insert holds a removal") }
                list.append(value)
            }
            return .insert(object: object, origin: origin, content: .values(list))
        case .delete:
            return .delete(object: object, target: try nextDeleteTarget())
        case .increment:
            return .increment(object: object, delta: try nextSigned(.incrementDelta))
        }
    }
}

extension ChangeDecoder {
    /// Changes that carry on the one just read as ordinary typing (each
    /// inserting after the last element the previous inserted) or deleting
    /// (each deleting next to what the previous deleted), taken together.
    struct Continuation {
        /// How many changes, and the elements (counters) they take together.
        var count: Int
        var width: UInt64
        /// Typing (their text is appended to the caller's storage, unless
        /// the decoder `leavesTextOut`), not deleting.
        var isTyping: Bool
        /// Deleting: the counters deleted, first to last change.
        var deleteStart: UInt64 = 0
        var deleteStep: Int64 = 0
        /// The last change: its first id, Lamport value and width.
        var lastStart: OpID
        var lastLamport: UInt64
        var lastWidth: UInt64
        /// How much later each change's time is than the one's before.
        var timeStep: Int64 = 0
        /// Typing: the text length of each change, in bytes of UTF-8, or
        /// in scalars when the decoder `leavesTextOut`.
        var textLengthEach: UInt64 = 0
    }

    /// Reads, all at once, the changes after `current` that continue it as
    /// a chain (see `Continuation`), when the columns say so: typing and
    /// deleting encode as the same value repeated in every column, so a
    /// whole chain is as many runs side by side. Typing appends its text to
    /// `text` (decoded there, not in a buffer of its own to copy from).
    /// Nil, reading and appending nothing, when the next changes do not
    /// continue it so or `accept` turns them down.
    ///
    /// Inlined, to turn down at the cost of a column read the changes that
    /// do not continue at all (every change of edits at random places):
    /// through the whole reader's call, that cost merges of such edits 4%.
    @inline(__always)
    mutating func readContinuation(of current: Current, appendingTextTo text: inout ScalarStorage,
                                   if accept: (Continuation) -> Bool) throws(DecodingError) -> Continuation? {
        try readContinuation(after: current.edit, lastID: current.lastID, lastLamport: current.lastLamport,
                             appendingTextTo: &text, if: accept)
    }

    /// `readContinuation(of:appendingTextTo:if:)` given only what it reads
    /// of the change: its `edit`, `lastID` and `lastLamport`. (A merge's
    /// loop passes these, not its whole `Current`, which it copied at every
    /// change of edits at random places.) `mayBeContinued` true for `edit`
    /// just before: a change is left to read and an insert's next origin is
    /// the element before, so they are not peeked again.
    @inline(__always)
    mutating func readContinuation(after edit: Edit?, lastID: OpID, lastLamport: UInt64, mayBeContinued: Bool = false,
                                   appendingTextTo text: inout ScalarStorage,
                                   if accept: (Continuation) -> Bool) throws(DecodingError) -> Continuation? {
        guard let edit, mayBeContinued || read < changeCount else { return nil }
        // The columns that turn most changes down, before the call: the next
        // insert's origin; the next delete's length, and where it starts
        // from this one's start. (Deletes at random places passed the length
        // and were turned down inside `readRun`, at a call each: 4% of a
        // merge of eight writers' random edits.)
        var deleteStep: Int64 = 0
        switch edit {
        case .insertText where !mayBeContinued:
            guard try columns[Column.originMode.rawValue].peekRun()?.value == ChangeEncoding.OriginMode.previousElement.rawValue
            else { return nil }
        case .insertText:
            break
        case .delete(_, let target):
            guard try columns[Column.deleteLength.rawValue].peekRun()?.value == UInt64(target.length),
                  let rawStep = try columns[Column.deleteCounter.rawValue].peekRun()?.value else { return nil }
            deleteStep = ByteReader.unzigzag(rawStep)
            // Only steps that keep each delete next to the one before.
            guard deleteStep == -Int64(target.length) || deleteStep == Int64(target.length) else { return nil }
        }
        return try readRun(continuing: edit, lastID: lastID, lastLamport: lastLamport, deleteStep: deleteStep,
                           appendingTextTo: &text, if: accept)
    }

    /// Whether a change after the one just read, whose only operation is
    /// `edit`, may carry it on as a chain (`Document.applyBundleInOrder`'s):
    /// false when the columns show that none can, because the next insert's
    /// origin is not the element before it, or the next delete does not
    /// start next to `edit`'s target (nor end next to it). True does not
    /// mean that the next change does, only that it may.
    @inline(__always)
    mutating func mayBeContinued(after edit: Edit) throws(DecodingError) -> Bool {
        guard read < changeCount else { return false }
        switch edit {
        case .insertText:
            return try columns[Column.originMode.rawValue].peekRun()?.value == ChangeEncoding.OriginMode.previousElement.rawValue
        case .delete(_, let target):
            guard let nextLength = try columns[Column.deleteLength.rawValue].peekRun()?.value,
                  let rawStep = try columns[Column.deleteCounter.rawValue].peekRun()?.value else { return false }
            let step = ByteReader.unzigzag(rawStep)
            return step == Int64(target.length) || step == 0 &- Int64(bitPattern: nextLength)
        }
    }

    /// `readContinuation` once the first columns allow it; a delete's run
    /// moves by `deleteStep` a change. Finds how many changes from here
    /// share every column, reads what they do, checks them against the
    /// limits and `accept`, and only then consumes them.
    @inline(never)
    private mutating func readRun(continuing edit: Edit, lastID: OpID, lastLamport: UInt64, deleteStep: Int64,
                                  appendingTextTo text: inout ScalarStorage,
                                  if accept: (Continuation) -> Bool) throws(DecodingError) -> Continuation? {
        guard let (count, timeDelta) = try runOfSameColumns(continuing: edit, lastID: lastID) else { return nil }
        let textStart = text.count
        guard let (built, textEnd) = try continuationFromRun(of: edit, count: count, lastID: lastID, lastLamport: lastLamport,
                                                             deleteStep: deleteStep, appendingTextTo: &text, from: textStart)
        else { return nil }
        var continuation = built
        continuation.timeStep = ByteReader.unzigzag(timeDelta)
        guard operationTotal <= limits.maxOperations - continuation.count,
              !lastID.counter.addingReportingOverflow(continuation.width).overflow,
              // (The last change's Lamport values fit, so the one after its last does not overflow.)
              Document.lamportValuesFit(from: lastLamport + 1, count: continuation.width),
              accept(continuation) else {
            text.removeSubrange(textStart...)
            return nil
        }
        consumeRun(of: continuation, textEnd: textEnd)
        return continuation
    }

    /// How many of the next changes repeat, column by column, a change
    /// like `edit` after `lastID` (the columns they step in aside), and the
    /// time delta they share; nil when the next one does not.
    @inline(__always)
    private mutating func runOfSameColumns(continuing edit: Edit, lastID: OpID) throws(DecodingError)
        -> (count: UInt64, timeDelta: UInt64)? {
        var count = UInt64(changeCount - read)
        // The operation's own columns first, those concurrent edits break
        // most often: most calls find no continuation. (The values of the
        // columns `readContinuation` checked are read again for their runs.)
        switch edit {
        case .insertText:
            guard elidedText == nil || leavesTextOut, try sameValue(.originMode, narrowing: &count) != nil,
                  try sameValue(.operationKind, ChangeEncoding.Kind.insertText.rawValue, narrowing: &count) != nil else { return nil }
        case .delete(_, let target):
            guard try sameValue(.deleteCounter, narrowing: &count) != nil, try sameValue(.deleteLength, narrowing: &count) != nil,
                  try sameValue(.operationKind, ChangeEncoding.Kind.delete.rawValue, narrowing: &count) != nil,
                  try sameReplica(.deleteReplica, target.start.replica, narrowing: &count)
            else { return nil }
        }
        guard try sameValue(.parentCount, 0, narrowing: &count) != nil,
              try sameReplica(.changeReplica, lastID.replica, narrowing: &count),
              try sameValue(.changeCounter, 0, narrowing: &count) != nil, try sameValue(.changeLamport, 0, narrowing: &count) != nil,
              let timeDelta = try sameValue(.changeTime, narrowing: &count), try sameValue(.operationCount, 1, narrowing: &count) != nil
        else { return nil }
        if let object = edit.object.creator {
            guard try sameReplica(.objectReplica, object.replica, codedFrom: 1, narrowing: &count),
                  try sameValue(.objectCounter, object.counter, narrowing: &count) != nil else { return nil }
        } else {
            guard try sameValue(.objectReplica, 0, narrowing: &count) != nil,
                  try sameValue(.objectCounter, 0, narrowing: &count) != nil else { return nil }
        }
        return (count, timeDelta)
    }

    /// The next value of `column`, which must be `expected` (if given);
    /// narrows `count` to the changes that share it. (Inlined: called
    /// for a dozen columns, and as a call it cost a merge of typing 4%.)
    @inline(__always)
    private mutating func sameValue(_ column: Column, _ expected: UInt64? = nil,
                                    narrowing count: inout UInt64) throws(DecodingError) -> UInt64? {
        guard let (value, run) = try columns[column.rawValue].peekRun(), expected.map({ $0 == value }) ?? true else { return nil }
        count = min(count, run)
        return value
    }

    /// Whether the next value of `column` codes `replica`, as its index in
    /// `replicaTable` plus `codedFrom` (the object column codes the root as
    /// 0); narrows `count` to the changes that share it. The replica is
    /// compared in the table, which names each replica once (it is
    /// sorted): not looked up in an index of the table, two arrays that
    /// every decoder made for its continuations alone.
    @inline(__always)
    private mutating func sameReplica(_ column: Column, _ replica: ReplicaID, codedFrom first: UInt64 = 0,
                                      narrowing count: inout UInt64) throws(DecodingError) -> Bool {
        guard let (value, run) = try columns[column.rawValue].peekRun(), value &- first < UInt64(replicaTable.count),
              replicaTable[Int(value &- first)] == replica else { return false }
        count = min(count, run)
        return true
    }

    /// What the run of at most `count` changes like `edit` does (a typing
    /// run's text appended to `text` after `textStart`), and where the
    /// text column's bytes it takes end; nil when its text length does not
    /// repeat or does not fit.
    @inline(__always)
    private mutating func continuationFromRun(of edit: Edit, count: UInt64, lastID: OpID, lastLamport: UInt64, deleteStep: Int64,
                                              appendingTextTo text: inout ScalarStorage, from textStart: Int) throws(DecodingError)
        -> (continuation: Continuation, textEnd: Int)? {
        var count = count
        switch edit {
        case .insertText where leavesTextOut:
            // The length column counts scalars, the width of each change.
            guard let widthEach = try sameValue(.textLength, narrowing: &count), widthEach > 0,
                  widthEach <= UInt64(limits.maxOperationWidth),
                  case let (width, overflow) = widthEach.multipliedReportingOverflow(by: count), !overflow
            else { return nil }
            return (Continuation(count: Int(count), width: width, isTyping: true,
                                 lastStart: lastID.advanced(by: width - widthEach + 1),
                                 lastLamport: lastLamport + width - widthEach + 1, lastWidth: widthEach,
                                 textLengthEach: widthEach), textOffset)
        case .insertText:
            guard let bytesEach = try sameValue(.textLength, narrowing: &count), bytesEach > 0,
                  bytesEach.multipliedReportingOverflow(by: count).partialValue <= UInt64(textBytes.endIndex - textOffset),
                  !bytesEach.multipliedReportingOverflow(by: count).overflow
            else { return nil }
            let textEnd = textOffset + Int(bytesEach * count)
            guard let lastCount = appendText(textOffset..<textEnd, textLength: Int(bytesEach), to: &text) else {
                text.removeSubrange(textStart...)
                throw .invalid("inserted text is not valid UTF-8")
            }
            let width = UInt64(text.count - textStart)
            let lastWidth = UInt64(lastCount)
            return (Continuation(count: Int(count), width: width, isTyping: true,
                                 lastStart: lastID.advanced(by: width - lastWidth + 1),
                                 lastLamport: lastLamport + width - lastWidth + 1, lastWidth: lastWidth,
                                 textLengthEach: bytesEach), textEnd)
        case .delete(_, let target):
            // The decoder checked `target.length` against the limit when it read it.
            let length = UInt64(target.length)
            let span = length.multipliedReportingOverflow(by: count)
            let lastDelete = Int64(bitPattern: previousDelete) &+ deleteStep &* Int64(count)
            guard !span.overflow, lastDelete > 0 else { return nil }
            return (Continuation(count: Int(count), width: span.partialValue, isTyping: false,
                                 deleteStart: previousDelete, deleteStep: deleteStep,
                                 lastStart: lastID.advanced(by: span.partialValue - length + 1),
                                 lastLamport: lastLamport + span.partialValue - length + 1, lastWidth: length), textOffset)
        }
    }

    /// Consumes the runs of a continuation checked whole, its text up to
    /// `textEnd`, and moves on past its last change.
    @inline(__always)
    private mutating func consumeRun(of continuation: Continuation, textEnd: Int) {
        let count = UInt64(continuation.count)
        for column in [Column.changeReplica, .changeCounter, .changeLamport, .parentCount, .changeTime, .operationCount,
                       .objectReplica, .objectCounter, .operationKind] {
            columns[column.rawValue].skip(count)
        }
        if continuation.isTyping {
            for column in [Column.originMode, .textLength] { columns[column.rawValue].skip(count) }
            textOffset = textEnd
        } else {
            for column in [Column.deleteReplica, .deleteCounter, .deleteLength] { columns[column.rawValue].skip(count) }
            previousDelete = UInt64(bitPattern: Int64(bitPattern: previousDelete) &+ continuation.deleteStep &* Int64(count))
        }
        read += continuation.count
        operationTotal += continuation.count
        previousLast = continuation.lastStart.advanced(by: continuation.lastWidth - 1)
        previousLastLamport = continuation.lastLamport + continuation.lastWidth - 1
        previousTime = previousTime &+ continuation.timeStep &* Int64(count)
    }
}

extension Array {
    /// Empties the array, keeping its buffer. Decoding does this to a change's
    /// one or two operations and parents for every change, where
    /// `removeAll(keepingCapacity: true)` goes through the general
    /// `replaceSubrange` at over a hundred instructions a call.
    mutating func removeAllOneByOne() {
        while !isEmpty { removeLast() }
    }

    /// Makes the array `count` elements long, keeping its buffer, for its
    /// elements to be overwritten in place: removed from the end or
    /// `padding` appended. (Emptied and refilled, the parents of a change
    /// read alone checked the buffer's uniqueness at every removal and
    /// every append, and `removeAll(keepingCapacity:)` costs over a
    /// hundred instructions.)
    @inline(__always)
    mutating func resize(to count: Int, padding: Element) {
        while self.count > count { removeLast() }
        while self.count < count { append(padding) }
    }

    /// Empties the array, keeping its buffer: one by one if it holds a few
    /// elements (a keystroke's scalars), else at once (a paste's, where one
    /// by one cost 18 M instructions of a 254 M merge). An empty array is
    /// left without a call (a merge's delete chain has no text to empty:
    /// the call cost every change of edits at random places about 10
    /// instructions).
    mutating func removeAllKeepingCapacity() {
        if count > 8 { removeAll(keepingCapacity: true) } else if !isEmpty { removeAllOneByOne() }
    }
}
