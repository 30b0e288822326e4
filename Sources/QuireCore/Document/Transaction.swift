/// Local edits that become one `Change` when the transaction's closure returns.
///
/// Get one from `Document.transact(time:_:)`. Every method checks its
/// arguments before it changes anything and throws `DocumentError` on a bad
/// object id or index, or a new object nested deeper than a document may
/// hold (`nestedTooDeep`). Reads inside the closure see the edits made so far.
///
/// A transaction edits the document in place through a pointer that is
/// valid only while `transact` runs; it is not copyable, so it cannot
/// outlive that call. (Moving the whole document into the transaction and
/// back instead costs a retain and a release of each of its buffers per
/// transaction, a third of the time of a keystroke.)
public struct Transaction: ~Copyable {
    private let documentPointer: UnsafeMutablePointer<Document>

    /// The document as edited so far.
    public internal(set) var document: Document {
        unsafeAddress { UnsafePointer(documentPointer) }
        unsafeMutableAddress { documentPointer }
    }
    /// The first counter and Lamport value of the change being built.
    let start: OpID
    let startLamport: UInt64
    /// Counters taken so far; 0 while the transaction has made no operation.
    /// (The operations themselves go straight into the history's buffer,
    /// and become a change when the transaction commits.)
    var width: UInt64 = 0
    /// The transaction's only edit so far, when that edit is a keystroke
    /// that continues the history's run of typing or deleting
    /// (`ChangeHistory.continuesRun`, `keystroke(deleting:...)`): held
    /// here rather than as an operation, as the run records it without one.
    var keystroke: ChangeHistory.Keystroke?

    /// A transaction editing the document `documentPointer` points to,
    /// which must stay valid and otherwise untouched while it lives. Its
    /// change takes the replica's next counter and the next Lamport value.
    @usableFromInline
    init(editing documentPointer: UnsafeMutablePointer<Document>) {
        self.documentPointer = documentPointer
        // Through the pointer, field by field: copying the document would
        // retain every buffer it holds.
        let replica = documentPointer.pointee.replica
        self.start = OpID(replica: replica, counter: documentPointer.pointee.localCounter + 1)
        self.startLamport = documentPointer.pointee.maxLamport + 1
    }

    /// The id and Lamport value the next operation gets.
    var nextID: OpID { start.advanced(by: width) }
    var nextLamport: UInt64 { startLamport + width }

    mutating func record(_ operation: Operation, width operationWidth: Int) {
        if let keystroke {
            // Another edit follows the keystroke: the change is not one of the run.
            document.history.operations.append(document.history.operation(of: keystroke))
            self.keystroke = nil
        }
        document.history.operations.append(operation)
        width += UInt64(operationWidth)
    }

    /// Throws unless the `count` elements from `index` on are among the
    /// `length` visible ones, naming the start if it is outside them, else
    /// the end. The end is not `index + count` when that overflows: Apple's
    /// `NSNotFound`, a range's location when nothing was found, is `Int.max`.
    @inline(__always)
    static func checkRange(at index: Int, count: Int, within length: Int) throws(DocumentError) {
        guard index >= 0, index <= length else { throw .indexOutOfRange(index: index, count: length) }
        guard count >= 0, count <= length - index else {
            let (end, overflow) = index.addingReportingOverflow(count)
            throw .indexOutOfRange(index: overflow ? .max : end, count: length)
        }
    }

    // MARK: Maps

    /// Sets `key` of a map to a scalar value.
    public mutating func put(_ map: ObjectID, key: String, _ value: ScalarValue) throws(DocumentError) {
        _ = try write(map, key: key, value: .scalar(value))
    }

    /// Sets `key` of a map to a new, empty object and returns its id.
    public mutating func putObject(_ map: ObjectID, key: String, kind: ObjectKind) throws(DocumentError) -> ObjectID {
        try write(map, key: key, value: .object(kind))
    }

    /// Removes `key` from a map (a tombstone write; see `Specs/crdt.md`).
    public mutating func remove(_ map: ObjectID, key: String) throws(DocumentError) {
        let slot = try document.objects.editableSlot(map, .map)
        let pred = document.objects.maps[slot][MapKey(key)]?.ids ?? []
        let id = nextID
        document.objects.maps[slot][MapKey(key), default: MapRegister()]
            .write(RegisterEntry(id: id, lamport: nextLamport, value: nil), replacing: pred)
        record(.remove(object: map, key: key, pred: pred), width: 1)
    }

    @discardableResult
    mutating func write(_ map: ObjectID, key: String, value: NewValue) throws(DocumentError) -> ObjectID {
        let slot = try document.objects.editableSlot(map, .map)
        try checkRoom(for: value, in: map)
        let pred = document.objects.maps[slot][MapKey(key)]?.ids ?? []
        let id = nextID
        let stored = document.objects.materialize(value, id: id, parent: map, key: key)
        document.objects.maps[slot][MapKey(key), default: MapRegister()]
            .write(RegisterEntry(id: id, lamport: nextLamport, value: stored), replacing: pred)
        record(.put(object: map, key: key, value: value, pred: pred), width: 1)
        return ObjectID(id)
    }

    /// Throws if `value` is a new object that `parent` is too deep to hold.
    private func checkRoom(for value: NewValue, in parent: ObjectID) throws(DocumentError) {
        guard case .object = value, !document.objects.mayHoldNewObject(parent) else { return }
        throw .nestedTooDeep(parent: parent, limit: SnapshotEncoding.maxDepth)
    }

    // MARK: Text

    /// Inserts `string` into a text object before the scalar at `index`.
    @inlinable
    public mutating func insertText(_ text: ObjectID, at index: Int, _ string: some StringProtocol) throws(DocumentError) {
        // Converted where the caller's type is known, so that what follows
        // is concrete code, not generic.
        try insertText(text, at: index, String(string))
    }

    /// Inserts `string` into a text object before the scalar at `index`.
    public mutating func insertText(_ text: ObjectID, at index: Int, _ string: String) throws(DocumentError) {
        let slot = try document.objects.editableSlot(text, .text)
        let utf8Count = string.utf8.count
        if utf8Count == 0 { return }
        // A keystroke is mostly one ASCII byte: appended as one scalar, it
        // skips the string's scalar view (80 instructions of a 1,400-instruction
        // keystroke; decoding the first scalar of the view cost as much).
        let keystrokeScalar = utf8Count == 1 ? Unicode.Scalar(string.utf8[string.utf8.startIndex]) : nil
        let origin: OpID?
        let inserted: Int
        do {
            if let keystrokeScalar {
                origin = try document.objects.texts[slot].insertLocal(at: index, id: nextID, lamport: nextLamport,
                                                                      contentsOf: CollectionOfOne(keystrokeScalar))
                inserted = 1
            } else {
                // The scalars inserted, counted by the sequence rather than
                // by decoding the string a second time.
                let countBefore = document.objects.texts[slot].count
                origin = try document.objects.texts[slot].insertLocal(at: index, id: nextID, lamport: nextLamport,
                                                                      contentsOf: string.unicodeScalars)
                inserted = document.objects.texts[slot].count - countBefore
            }
        } catch {
            // A failed insert changes nothing: the count is the one it saw.
            throw .indexOutOfRange(index: index, count: document.objects.texts[slot].count)
        }
        if inserted == 1 && width == 0
            && document.history.continuesRun(typingInto: text, origin: origin, id: start, lamport: startLamport, soleParent: document.soleHead) {
            keystroke = .typing(keystrokeScalar ?? string.unicodeScalars[string.unicodeScalars.startIndex])
            width = 1
            return
        }
        record(.insert(object: text, origin: origin, content: .text(string)), width: inserted)
    }

    /// Deletes `count` scalars of a text object from `index` on.
    public mutating func deleteText(_ text: ObjectID, at index: Int, count: Int) throws(DocumentError) {
        let slot = try document.objects.editableSlot(text, .text)
        let length = document.objects.texts[slot].count
        try Self.checkRange(at: index, count: count, within: length)
        if count == 0 { return }
        let runs: DeletedRuns
        do { runs = try document.objects.texts[slot].deleteLocal(index..<(index + count)) }
        catch { throw .indexOutOfRange(index: index + count, count: length) }
        if count == 1 && width == 0,
           let deletion = document.history.keystroke(deleting: runs[0], from: text, id: start, lamport: startLamport, soleParent: document.soleHead) {
            keystroke = deletion
            width = 1
            return
        }
        for run in runs { record(.delete(object: text, target: run), width: run.length) }
    }

    /// Replaces the scalars in `range` of a text object with `string`.
    public mutating func replaceText(_ text: ObjectID, range: Range<Int>, with string: some StringProtocol) throws(DocumentError) {
        // Checked before `range.count`, which traps on bounds further apart
        // than an `Int` holds (`-1..<Int.max`); from 0 on, none are.
        guard range.lowerBound >= 0 else {
            throw .indexOutOfRange(index: range.lowerBound, count: try document.textCount(text))
        }
        try deleteText(text, at: range.lowerBound, count: range.count)
        try insertText(text, at: range.lowerBound, string)
    }

    /// Inserts `string` at a UTF-16 offset, as Apple text views count.
    public mutating func insertText(_ text: ObjectID, utf16Offset: Int, _ string: some StringProtocol) throws(DocumentError) {
        try insertText(text, at: document.textIndex(text, utf16Offset: utf16Offset), string)
    }

    /// Deletes the scalars covering a UTF-16 range: a bound inside a
    /// surrogate pair takes in the whole pair, so that no half of one is
    /// left behind and no covered scalar is kept.
    ///
    ///     // "a😀b": "a" is 0..<1, the pair 1..<3, "b" 3..<4
    ///     try tx.deleteText(text, utf16Range: 0..<2)   // "b"
    public mutating func deleteText(_ text: ObjectID, utf16Range: Range<Int>) throws(DocumentError) {
        let range = try scalarRange(text, utf16Range: utf16Range)
        try deleteText(text, at: range.lowerBound, count: range.count)
    }

    /// Replaces the scalars covering a UTF-16 range with `string`, as a
    /// text view reports an edit (an `NSRange` and its replacement): the
    /// range covers what `deleteText(_:utf16Range:)` deletes, and `string`
    /// goes where it began. (Deleting, then inserting at the range's
    /// `lowerBound` as a UTF-16 offset, would insert after the next scalar
    /// when that bound lies inside a surrogate pair.)
    ///
    ///     // "a😀b": a range from inside the pair replaces all of it
    ///     try tx.replaceText(text, utf16Range: 2..<3, with: "!")   // "a!b"
    public mutating func replaceText(_ text: ObjectID, utf16Range: Range<Int>, with string: some StringProtocol) throws(DocumentError) {
        try replaceText(text, range: scalarRange(text, utf16Range: utf16Range), with: string)
    }

    /// The scalars a UTF-16 range of a text object covers, even in part.
    private func scalarRange(_ text: ObjectID, utf16Range: Range<Int>) throws(DocumentError) -> Range<Int> {
        let start = try document.textIndex(text, utf16Offset: utf16Range.lowerBound)
        var end = try document.textIndex(text, utf16Offset: utf16Range.upperBound)
        // `textIndex` maps an offset inside a pair to the pair's index: the
        // end of a range that ends there lies after the pair.
        if !utf16Range.isEmpty, try document.utf16Offset(text, index: end) < utf16Range.upperBound { end += 1 }
        return start..<end
    }

    // MARK: Lists

    /// Inserts a scalar value into a list before the element at `index`.
    public mutating func insert(_ list: ObjectID, at index: Int, _ value: ScalarValue) throws(DocumentError) {
        _ = try insertValue(list, at: index, .scalar(value))
    }

    /// Inserts a new, empty object into a list and returns its id.
    public mutating func insertObject(_ list: ObjectID, at index: Int, kind: ObjectKind) throws(DocumentError) -> ObjectID {
        try insertValue(list, at: index, .object(kind))
    }

    mutating func insertValue(_ list: ObjectID, at index: Int, _ value: NewValue) throws(DocumentError) -> ObjectID {
        let slot = try document.objects.editableSlot(list, .list)
        let count = document.objects.lists[slot].count
        guard index >= 0, index <= count else { throw .indexOutOfRange(index: index, count: count) }
        try checkRoom(for: value, in: list)
        let id = nextID
        let stored = document.objects.materialize(value, id: id, parent: list, key: nil)
        let origin: OpID?
        do {
            origin = try document.objects.lists[slot].insertLocal(at: index, id: id, lamport: nextLamport, contentsOf: CollectionOfOne(stored))
        } catch {
            throw .indexOutOfRange(index: index, count: count)
        }
        record(.insert(object: list, origin: origin, content: .values([value])), width: 1)
        return ObjectID(id)
    }

    /// Deletes `count` elements of a list from `index` on.
    public mutating func delete(_ list: ObjectID, at index: Int, count: Int = 1) throws(DocumentError) {
        let slot = try document.objects.editableSlot(list, .list)
        let length = document.objects.lists[slot].count
        try Self.checkRange(at: index, count: count, within: length)
        if count == 0 { return }
        let runs: DeletedRuns
        do { runs = try document.objects.lists[slot].deleteLocal(index..<(index + count)) }
        catch { throw .indexOutOfRange(index: index + count, count: length) }
        for run in runs { record(.delete(object: list, target: run), width: run.length) }
    }

    // MARK: Counters

    /// Adds `delta` (which may be negative) to a counter.
    public mutating func increment(_ counter: ObjectID, by delta: Int64) throws(DocumentError) {
        let slot = try document.objects.editableSlot(counter, .counter)
        document.objects.counters[slot] &+= delta
        record(.increment(object: counter, delta: delta), width: 1)
    }
}
