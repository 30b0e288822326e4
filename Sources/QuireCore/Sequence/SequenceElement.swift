/// What an `RGASequence` can hold: anything that knows how many UTF-16 code
/// units and UTF-8 bytes it takes, so that the sequence can convert the
/// offsets that text views count in. List values use widths 1 and 1.
/// Both widths are at least 1: a span whose widths equal its length is known
/// to be one unit per element without looking at the content.
public protocol SequenceElement: Sendable {
    /// Where a sequence keeps the values of its elements: an array unless
    /// the type has a more compact form.
    associatedtype Storage: ElementStorage<Self> = [Self]

    var utf16Width: Int { get }
    var utf8Width: Int { get }
}

/// The values of a sequence's elements, in the order they were inserted
/// (deleted ones stay): a buffer that is only appended to, read by
/// position. `RGASequence` uses nothing else of it.
public protocol ElementStorage<Element>: Sendable {
    associatedtype Element: SequenceElement
    init()
    /// A storage holding `elements` and no spare capacity (a loaded document).
    init(compacting elements: [Element])
    var count: Int { get }
    /// The memory held, spare capacity included, for statistics.
    var byteCount: Int { get }
    subscript(position: Int) -> Element { get }
    mutating func append(_ element: Element)
    mutating func append(contentsOf elements: some Collection<Element>)
    /// Removes the elements from `start` on.
    mutating func removeSubrange(_ range: PartialRangeFrom<Int>)
    /// The elements in `range`, as an array slice (whose indices need not
    /// be the storage's).
    func slice(_ range: Range<Int>) -> ArraySlice<Element>

    /// The storage's memory as `widths` reads it: buffer pointers, valid
    /// only inside `withUnsafeView`. Measuring through it needs no
    /// reference counting, which matters on every edit.
    associatedtype UnsafeView
    func withUnsafeView<Result, Failure>(_ body: (UnsafeView) throws(Failure) -> Result) throws(Failure) -> Result
    /// The UTF-16 units and UTF-8 bytes of `count` elements from `start`.
    static func widths(_ view: UnsafeView, _ start: Int, _ count: Int) -> (utf16: Int, utf8: Int)
}

extension Array: ElementStorage where Element: SequenceElement {
    // `append(contentsOf:)` is Array's own.

    @inlinable
    public init(compacting elements: [Element]) { self = compacted(elements) }

    @inlinable
    public var byteCount: Int { capacity * MemoryLayout<Element>.stride }

    @inlinable
    public func slice(_ range: Range<Int>) -> ArraySlice<Element> { self[range] }

    @inlinable
    public func withUnsafeView<Result, Failure>(_ body: (UnsafeBufferPointer<Element>) throws(Failure) -> Result) throws(Failure) -> Result {
        try withUnsafeBufferPointer(body)
    }

    @inlinable
    public static func widths(_ view: UnsafeBufferPointer<Element>, _ start: Int, _ count: Int) -> (utf16: Int, utf8: Int) {
        view[start..<start + count].widths
    }
}

extension Sequence where Element: SequenceElement {
    /// The UTF-16 units and UTF-8 bytes of the elements.
    @inlinable
    var widths: (utf16: Int, utf8: Int) {
        var utf16 = 0
        var utf8 = 0
        for element in self {
            utf16 += element.utf16Width
            utf8 += element.utf8Width
        }
        return (utf16, utf8)
    }
}

/// Text is a sequence of Unicode scalars: the unit every replica agrees on,
/// whatever encoding its text view counts in.
extension Unicode.Scalar: SequenceElement {
    public typealias Storage = ScalarStorage

    @inlinable
    public var utf16Width: Int { Self.utf16Width(of: value) }

    @inlinable
    public var utf8Width: Int { Self.utf8Width(of: value) }

    /// The widths of the scalar with value `value`, in arithmetic without
    /// branches or comparisons, so that loops over stored values (a wide
    /// text's, `ScalarStorage.widths`) vectorise: `(limit &- value) >> 31`
    /// is 1 when `value` is above `limit`, as scalar values are below 2^31.
    /// (Written as comparisons, the compiler made them branches, and the
    /// loops ran a scalar at a time.)
    @inlinable
    static func utf16Width(of value: UInt32) -> Int { Int(truncatingIfNeeded: 1 &+ (0xFFFF &- value) >> 31) }

    @inlinable
    static func utf8Width(of value: UInt32) -> Int {
        Int(truncatingIfNeeded: 1 &+ (0x7F &- value) >> 31 &+ (0x7FF &- value) >> 31 &+ (0xFFFF &- value) >> 31)
    }

    /// Writes the UTF-8 of `value`, a valid scalar's, at `target`, which
    /// has room for it; returns how many bytes that is.
    @inline(__always)
    static func writeUTF8(of value: UInt32, at target: UnsafeMutablePointer<UInt8>) -> Int {
        if value < 0x80 {
            target[0] = UInt8(truncatingIfNeeded: value)
            return 1
        }
        if value < 0x800 {
            target[0] = UInt8(truncatingIfNeeded: 0xC0 | value >> 6)
            target[1] = UInt8(truncatingIfNeeded: 0x80 | value & 0x3F)
            return 2
        }
        if value < 0x1_0000 {
            target[0] = UInt8(truncatingIfNeeded: 0xE0 | value >> 12)
            target[1] = UInt8(truncatingIfNeeded: 0x80 | (value >> 6) & 0x3F)
            target[2] = UInt8(truncatingIfNeeded: 0x80 | value & 0x3F)
            return 3
        }
        target[0] = UInt8(truncatingIfNeeded: 0xF0 | value >> 18)
        target[1] = UInt8(truncatingIfNeeded: 0x80 | (value >> 12) & 0x3F)
        target[2] = UInt8(truncatingIfNeeded: 0x80 | (value >> 6) & 0x3F)
        target[3] = UInt8(truncatingIfNeeded: 0x80 | value & 0x3F)
        return 4
    }
}

/// A text's scalars in a byte each while all of them are below U+0100
/// (Latin-1: ASCII text and most Western European text), in two bytes each
/// while all are below U+10000 (the Basic Multilingual Plane: most other
/// text), in four bytes each from the first one that is not. Texts are
/// mostly such text, and their content, tombstones included, is most of a
/// large document's memory: one curly quote made rustcode.unicode's whole
/// text four bytes a scalar before the two-byte form.
///
/// Every form lives in one byte array, so that reading or measuring the
/// content retains one buffer, not two: every edit does it.
public struct ScalarStorage: ElementStorage, RandomAccessCollection {
    /// The scalars, in `form`: one byte each, or the scalar's value in two
    /// or four bytes (in the machine's byte order).
    @usableFromInline var bytes: [UInt8] = []
    @usableFromInline var form = Form.oneByte

    /// How many bytes each stored scalar takes: the fewest that hold every
    /// scalar stored so far. Storage only ever widens (until emptied).
    @usableFromInline
    enum Form: UInt8, Comparable, Sendable {
        /// Below U+0100.
        case oneByte = 0
        /// Below U+10000. No scalar is a surrogate, so none takes two
        /// UTF-16 units here: each value is its one.
        case twoBytes = 1
        /// Any scalar.
        case fourBytes = 2

        /// The narrowest form that holds a scalar of value `value`.
        @inlinable
        static func needed(for value: UInt32) -> Form {
            value < 0x100 ? .oneByte : value < 0x1_0000 ? .twoBytes : .fourBytes
        }

        /// A count of scalars shifted left by this is one of bytes.
        @inlinable
        var shift: Int { Int(truncatingIfNeeded: rawValue) }

        @inlinable
        static func < (lhs: Form, rhs: Form) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    @inlinable
    public init() {}

    public init(compacting scalars: [Unicode.Scalar]) {
        form = .needed(for: scalars.reduce(0) { Swift.max($0, $1.value) })
        bytes.reserveCapacity(scalars.count << form.shift)
        scalars.withUnsafeBufferPointer { $0.withMemoryRebound(to: UInt32.self) { append(converting: $0) } }
    }

    /// Makes room in empty storage for at least `count` scalars, if they take a byte each.
    mutating func reserveCapacity(_ count: Int) {
        guard bytes.isEmpty else { return }
        bytes.reserveCapacity(count)
    }

    /// The scalars UTF-8 `bytes` encode, without spare capacity, or nil if
    /// they are not valid UTF-8. ASCII, the usual case, is taken as it is.
    init?(utf8 bytes: ArraySlice<UInt8>) {
        self.init()
        guard append(decodingUTF8: bytes, textLength: bytes.count) != nil else { return nil }
        releaseSpareCapacity()
    }

    /// Drops the buffer's spare capacity (a loaded document's text is not
    /// appended to until it is edited).
    mutating func releaseSpareCapacity() {
        bytes = compacted(bytes)
    }

    @inlinable @inline(__always)
    public var count: Int { bytes.count &>> form.shift }

    @inlinable
    public var startIndex: Int { 0 }

    @inlinable
    public var endIndex: Int { count }

    @inlinable
    public var byteCount: Int { bytes.capacity }

    @inlinable
    public subscript(position: Int) -> Unicode.Scalar {
        guard form != .oneByte else { return Unicode.Scalar(bytes[position]) }
        precondition(position >= 0 && position < count, "ScalarStorage index out of range")
        return bytes.withUnsafeBytes { Self.scalar(in: $0, at: position, form: form) }
    }

    /// The scalar at `position` of the bytes of storage in `form`.
    @inlinable
    static func scalar(in bytes: UnsafeRawBufferPointer, at position: Int, form: Form) -> Unicode.Scalar {
        let value = switch form {
        case .oneByte: UInt32(bytes[position])
        case .twoBytes: UInt32(bytes.loadUnaligned(fromByteOffset: position * 2, as: UInt16.self))
        case .fourBytes: bytes.loadUnaligned(fromByteOffset: position * 4, as: UInt32.self)
        }
        // Only valid scalars were stored.
        return Unicode.Scalar(value).unsafelyUnwrapped
    }

    @inlinable
    public mutating func append(_ scalar: Unicode.Scalar) {
        if form == .oneByte && scalar.value < 0x100 {
            bytes.reserveGrowingByAThird(adding: 1)
            bytes.append(UInt8(truncatingIfNeeded: scalar.value))
        } else {
            appendWidening(scalar)
        }
    }

    /// Checks whether the storage must widen once for all of `scalars`, not
    /// for each, and copies another storage's scalars (a merge's decoded
    /// text) or an array of them in one go.
    @inlinable
    public mutating func append(contentsOf scalars: some Collection<Unicode.Scalar>) {
        // (The casts cost nothing: each specialisation knows its answer.)
        if let slice = scalars as? Slice<ScalarStorage> { return append(contentsOf: slice.base, slice.startIndex..<slice.endIndex) }
        if let storage = scalars as? ScalarStorage { return append(contentsOf: storage, 0..<storage.count) }
        if form == .oneByte, scalars.withContiguousStorageIfAvailable({ appendNarrow($0) }) == true { return }
        // A keystroke's scalar or few cost less through the iterator below
        // than through the string's UTF-8 buffer.
        if let view = scalars as? String.UnicodeScalarView, case var string = String(view), string.utf8.count >= 16 {
            // A string's UTF-8 is valid: decoding it cannot fail.
            _ = string.withUTF8 { append(decodingUTF8: $0, textLength: $0.count) }
            return
        }
        var iterator = scalars.makeIterator()
        if form == .oneByte {
            while let scalar = iterator.next() {
                guard scalar.value < 0x100 else { appendWidening(scalar); break }
                bytes.reserveGrowingByAThird(adding: 1)
                bytes.append(UInt8(truncatingIfNeeded: scalar.value))
            }
        }
        while let scalar = iterator.next() { append(scalar) }
    }

    /// Appends the scalars in `range` of `other`: a copy of their bytes
    /// when both storages are in the same form.
    @usableFromInline
    mutating func append(contentsOf other: ScalarStorage, _ range: Range<Int>) {
        if form == .oneByte && other.form == .oneByte {
            bytes.reserveGrowingByAThird(adding: range.count)
            if range.count <= 4 {
                // A keystroke's scalar or few: the generic copy of a slice
                // cost a random insert 100 instructions.
                for position in range { bytes.append(other.bytes[position]) }
            } else {
                bytes.append(contentsOf: other.bytes[range])
            }
            return
        }
        // Widened once, if a scalar needs it, then copied: a scalar at a
        // time, every one after the first wider scalar went through
        // `appendWidening`, at a hundred instructions each.
        if other.form > form { widen(to: other.narrowestForm(of: range), addingCapacity: range.count << other.form.shift) }
        other.bytes.withUnsafeBytes { stored in
            let values = UnsafeRawBufferPointer(rebasing: stored[(range.lowerBound << other.form.shift)..<(range.upperBound << other.form.shift)])
            // An array's storage is aligned for any of the forms.
            switch other.form {
            case .oneByte: values.withMemoryRebound(to: UInt8.self) { append(converting: $0) }
            case .twoBytes: values.withMemoryRebound(to: UInt16.self) { append(converting: $0) }
            case .fourBytes: values.withMemoryRebound(to: UInt32.self) { append(converting: $0) }
            }
        }
    }

    /// The narrowest form that holds the scalars in `range`.
    private func narrowestForm(of range: Range<Int>) -> Form {
        bytes.withUnsafeBytes { stored in
            let values = UnsafeRawBufferPointer(rebasing: stored[(range.lowerBound << form.shift)..<(range.upperBound << form.shift)])
            let largest = switch form {
            case .oneByte: UInt32(values.reduce(0, Swift.max))
            case .twoBytes: UInt32(values.withMemoryRebound(to: UInt16.self) { $0.reduce(0, Swift.max) })
            case .fourBytes: values.withMemoryRebound(to: UInt32.self) { $0.reduce(0, Swift.max) }
            }
            return .needed(for: largest)
        }
    }

    /// Appends scalar values that the storage's form holds, in that form.
    @inline(__always)
    private mutating func append<Value: FixedWidthInteger & UnsignedInteger>(converting values: UnsafeBufferPointer<Value>) {
        switch form {
        case .oneByte: append(converting: values, to: UInt8.self)
        case .twoBytes: append(converting: values, to: UInt16.self)
        case .fourBytes: append(converting: values, to: UInt32.self)
        }
    }

    /// Appends `values` as `Stored` values: copied as they are when they
    /// are already, else converted in a scratch buffer, by a loop that
    /// vectorises, then copied in one go. (Through `append(_:)` a scalar at
    /// a time cost a tenth of a merge once a text held one emoji;
    /// zero-filling the array with `repeatElement` first and storing into
    /// it, 6 % of one.)
    @inline(__always)
    private mutating func append<Value: FixedWidthInteger & UnsignedInteger, Stored: FixedWidthInteger & UnsignedInteger>(
        converting values: UnsafeBufferPointer<Value>, to _: Stored.Type
    ) {
        bytes.reserveGrowingByAThird(adding: values.count * MemoryLayout<Stored>.size)
        if Value.self == Stored.self {
            UnsafeRawBufferPointer(values).withMemoryRebound(to: UInt8.self) { bytes.append(contentsOf: $0) }
            return
        }
        withUnsafeTemporaryAllocation(of: Stored.self, capacity: values.count) { converted in
            for offset in values.indices { converted[offset] = Stored(truncatingIfNeeded: values[offset]) }
            converted.withMemoryRebound(to: UInt8.self) { bytes.append(contentsOf: $0) }
        }
    }

    /// Appends the scalars of `utf8`, the UTF-8 of consecutive texts of
    /// `textLength` bytes each, and returns how many the last text holds;
    /// nil, with some appended perhaps, unless every text is valid UTF-8 on
    /// its own.
    ///
    /// One pass validates, counts and decodes, where making a `String`
    /// and reading its scalars back would go over the bytes three times.
    mutating func append(decodingUTF8 utf8: ArraySlice<UInt8>, textLength: Int) -> Int? {
        if utf8.count == 1, textLength == 1, let byte = utf8.first, byte < 0x80, form == .oneByte {
            // A keystroke, most inserts: half the cost of the copy below.
            bytes.append(byte)
            return 1
        }
        return utf8.withUnsafeBufferPointer { append(decodingUTF8: $0, textLength: textLength) }
    }

    /// `append(decodingUTF8:textLength:)` over a buffer (a string's UTF-8, a
    /// paste, comes so: scalar by scalar cost tens of instructions each).
    @usableFromInline
    mutating func append(decodingUTF8 buffer: UnsafeBufferPointer<UInt8>, textLength: Int) -> Int? {
        guard buffer.isEmpty || (textLength > 0 && buffer.count % textLength == 0) else { return nil }
        if form == .oneByte, buffer.isASCII {
            // ASCII, most text: a byte a scalar, copied in one go (here,
            // not through `append(converting:)`: a call a keystroke costs).
            bytes.reserveGrowingByAThird(adding: buffer.count)
            bytes.append(contentsOf: buffer)
            return buffer.isEmpty ? 0 : textLength
        }
        // A scalar from U+0100 on (lead byte 0xC4 or above) needs two bytes,
        // one from U+10000 on (lead byte 0xF0 or above) four: widened now,
        // with room for a scalar per byte, the storage is not grown again
        // scalar by scalar. (A snapshot's text with an em dash in it regrew
        // its wide copy at each of its other scalars.)
        if form != .fourBytes {
            let largest = buffer.reduce(0, Swift.max)
            let needed: Form = largest >= 0xF0 ? .fourBytes : largest >= 0xC4 ? .twoBytes : .oneByte
            widen(to: needed, addingCapacity: buffer.count << needed.shift)
        }
        var offset = 0, textEnd = textLength, lastCount = 0
        let lastStart = buffer.count - textLength
        while offset < buffer.count {
            if buffer[offset] < 0x80 {
                // ASCII, most of a paste that holds a few other scalars (or
                // of any text once the storage is wider): the run up to the
                // next other scalar or the text's end, a scalar a byte, in
                // one go. (Scalar by scalar, a wide paste cost 24 instructions a scalar.)
                let runEnd = buffer.endOfASCII(from: offset + 1, upTo: textEnd)
                append(converting: UnsafeBufferPointer(rebasing: buffer[offset..<runEnd]))
                if offset >= lastStart { lastCount += runEnd - offset }
                offset = runEnd
                if offset == textEnd { textEnd += textLength }
                continue
            }
            var parser = Unicode.UTF8.ForwardParser()
            var iterator = buffer[offset...].makeIterator()
            guard case .valid(let encoded) = parser.parseScalar(from: &iterator) else { return nil }
            let scalar = Unicode.UTF8.decode(encoded)
            let length = encoded.count
            // A scalar across the end of a text: that text alone is not valid.
            if offset + length > textEnd { return nil }
            if offset >= lastStart { lastCount += 1 }
            offset += length
            if offset == textEnd { textEnd += textLength }
            append(scalar)
        }
        return lastCount
    }

    /// Empties the storage, keeping its buffer (a decoder's, reused for
    /// every change).
    mutating func removeAllKeepingCapacity() {
        bytes.removeAllKeepingCapacity()
        form = .oneByte
    }

    /// Appends `scalars` a byte each if every one is below U+0100; returns
    /// false, appending nothing, if one is not.
    @usableFromInline
    mutating func appendNarrow(_ scalars: UnsafeBufferPointer<Unicode.Scalar>) -> Bool {
        guard scalars.allSatisfy({ $0.value < 0x100 }) else { return false }
        bytes.reserveGrowingByAThird(adding: scalars.count)
        bytes.append(contentsOf: scalars.lazy.map { UInt8(truncatingIfNeeded: $0.value) })
        return true
    }

    /// Appends a scalar that does not fit in a byte, or to storage that
    /// is wider than a byte a scalar, widening the storage first if the
    /// scalar needs it.
    @usableFromInline
    mutating func appendWidening(_ scalar: Unicode.Scalar) {
        widen(to: .needed(for: scalar.value), addingCapacity: 4)
        withUnsafePointer(to: scalar.value) { append(converting: UnsafeBufferPointer(start: $0, count: 1)) }
    }

    /// Makes the storage `wider`, if it is narrower, with room for `extra` more bytes.
    private mutating func widen(to wider: Form, addingCapacity extra: Int) {
        guard wider > form else { return }
        let narrow = bytes
        let growth = 1 << (wider.shift - form.shift)
        // Room for as many wider scalars as it had for narrow ones (a merge
        // reserves room for its whole text), if it uses at least half of it:
        // scratch storage, emptied and refilled, keeps room it does not
        // need, which carried over at each widening would grow each time.
        let keptRoom = narrow.count * 2 >= narrow.capacity ? narrow.capacity * growth : 0
        // Widened straight into the new buffer: through `append(converting:)`
        // a large text (a merge's, once its first wider scalar comes) went
        // through a scratch copy as large first.
        bytes = narrow.withUnsafeBytes { narrow in
            [UInt8](unsafeUninitializedCapacity: Swift.max(narrow.count * growth + extra, keptRoom)) { wide, initialized in
                initialized = narrow.count * growth
                // An array's storage is aligned for any of the forms.
                let target = UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(wide)[..<initialized])
                switch (form, wider) {
                case (.oneByte, .twoBytes): Self.storeWidened(narrow, as: UInt8.self, into: target, as: UInt16.self)
                case (.oneByte, .fourBytes): Self.storeWidened(narrow, as: UInt8.self, into: target, as: UInt32.self)
                default: Self.storeWidened(narrow, as: UInt16.self, into: target, as: UInt32.self)
                }
            }
        }
        form = wider
    }

    /// Stores each of the `Narrow` values in `narrow` as a `Wide` one in `wide`, which has room for them.
    @inline(__always)
    private static func storeWidened<Narrow: FixedWidthInteger & UnsignedInteger, Wide: FixedWidthInteger & UnsignedInteger>(
        _ narrow: UnsafeRawBufferPointer, as _: Narrow.Type, into wide: UnsafeMutableRawBufferPointer, as _: Wide.Type
    ) {
        narrow.withMemoryRebound(to: Narrow.self) { narrow in
            wide.withMemoryRebound(to: Wide.self) { wide in
                for offset in narrow.indices { wide[offset] = Wide(narrow[offset]) }
            }
        }
    }

    @inlinable
    public mutating func removeSubrange(_ range: PartialRangeFrom<Int>) {
        bytes.removeSubrange((range.lowerBound << form.shift)...)
    }

    @inlinable
    public func slice(_ range: Range<Int>) -> ArraySlice<Unicode.Scalar> {
        guard form != .oneByte else { return bytes[range].map(Unicode.Scalar.init)[...] }
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "ScalarStorage range out of bounds")
        return bytes.withUnsafeBytes { bytes in range.map { Self.scalar(in: bytes, at: $0, form: form) } }[...]
    }

    /// Calls `body` with the scalars in `range` as they are stored, if they
    /// are ASCII: then they are their UTF-8. Nil otherwise.
    func withASCII<Result>(_ range: Range<Int>, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "ScalarStorage range out of bounds")
        guard form == .oneByte else { return nil }
        return bytes.withUnsafeBufferPointer { bytes in
            let scalars = UnsafeBufferPointer(rebasing: bytes[range])
            return scalars.isASCII ? body(scalars) : nil
        }
    }

    /// Writes the UTF-8 of the scalars in `ranges`, one range after
    /// another, to `writer` as one length-prefixed string (a snapshot's
    /// text: its runs' scalars in document order). ASCII a byte a scalar,
    /// the usual text, is its own UTF-8, of a length known ahead: each
    /// range is copied straight into the writer's bytes, not gathered into
    /// an array first.
    func writeUTF8(of ranges: [Range<Int>], to writer: inout ByteWriter) {
        checkBounds(of: ranges)
        let wroteASCII = bytes.withUnsafeBufferPointer { buffer in
            // A snapshot's ranges cover the whole storage: checked in one
            // pass when it is all ASCII, not range by range (short runs of
            // typing: that check was most of the text's cost).
            guard form == .oneByte && (buffer.isASCII || isASCII(ranges, of: buffer)) else { return false }
            let count = ranges.reduce(0) { $0 + $1.count }
            writer.writeVarint(count)
            writer.writeBytes(count: count) { target in _ = Self.copy(ranges, of: buffer, to: target) }
            return true
        }
        if !wroteASCII { writer.writeData(utf8(of: ranges)) }
    }

    /// The UTF-8 of the scalars in `ranges`, one range after another.
    /// (Callers copy ASCII a byte a scalar themselves, without this array.)
    func utf8(of ranges: [Range<Int>]) -> [UInt8] {
        checkBounds(of: ranges)
        // An array's storage is aligned for any of the forms.
        return bytes.withUnsafeBytes { stored in
            switch form {
            case .oneByte: stored.withMemoryRebound(to: UInt8.self) { Self.utf8(of: ranges, in: $0) }
            case .twoBytes: stored.withMemoryRebound(to: UInt16.self) { Self.utf8(of: ranges, in: $0) }
            case .fourBytes: stored.withMemoryRebound(to: UInt32.self) { Self.utf8(of: ranges, in: $0) }
            }
        }
    }

    /// Calls `body` with `utf8(of: ranges)`, gathered in temporary memory
    /// (on the stack when it is small) if they are ASCII a byte a scalar:
    /// a history's encode reads each run of typing that later edits split
    /// so, and an array for each cost a third of reading it.
    func withUTF8<Result>(of ranges: [Range<Int>], _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        checkBounds(of: ranges)
        let gathered: Result? = bytes.withUnsafeBufferPointer { buffer in
            guard isASCII(ranges, of: buffer) else { return nil }
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: ranges.reduce(0) { $0 + $1.count }) { target in
                body(UnsafeBufferPointer(rebasing: target[..<Self.copy(ranges, of: buffer, to: target)]))
            }
        }
        return gathered ?? utf8(of: ranges).withUnsafeBufferPointer(body)
    }

    private func checkBounds(of ranges: [Range<Int>]) {
        for range in ranges {
            precondition(range.lowerBound >= 0 && range.upperBound <= count, "ScalarStorage range out of bounds")
        }
    }

    /// Whether the scalars in `ranges` of `buffer`, the storage, are ASCII a byte a scalar: their own UTF-8.
    private func isASCII(_ ranges: [Range<Int>], of buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        form == .oneByte && ranges.allSatisfy { UnsafeBufferPointer(rebasing: buffer[$0]).isASCII }
    }

    /// Copies the bytes in `ranges` of `buffer` one range after another to
    /// `target`, which has room; returns how many.
    private static func copy(_ ranges: [Range<Int>], of buffer: UnsafeBufferPointer<UInt8>, to target: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var written = 0
        for range in ranges where !range.isEmpty {
            (target.baseAddress! + written).initialize(from: buffer.baseAddress! + range.lowerBound, count: range.count)
            written += range.count
        }
        return written
    }

    /// The UTF-8 of the scalar values in `ranges` of `values`, written in
    /// one pass into an array with room for the longest it can be (pages
    /// the writing does not reach are not touched). A snapshot's runs are
    /// short, a few dozen scalars: measured first, range by range, its
    /// text's UTF-8 took longer than writing it; appended range by range
    /// through a scratch buffer, longer than zstd took to compress it.
    /// Inlined, so that each caller gets it for its own `Value`: as a
    /// generic call, it went a value at a time through the protocols.
    @inline(__always)
    private static func utf8<Value: FixedWidthInteger & UnsignedInteger>(
        of ranges: [Range<Int>], in values: UnsafeBufferPointer<Value>
    ) -> [UInt8] {
        // Two bytes at most a scalar below U+0100 (one byte a scalar), three below U+10000, four above.
        let longest = ranges.reduce(0) { $0 + $1.count } * Swift.min(Value.bitWidth / 8 + 1, 4)
        return [UInt8](unsafeUninitializedCapacity: longest) { target, written in
            var end = target.baseAddress!
            for range in ranges {
                let values = UnsafeBufferPointer(rebasing: values[range])
                let step = 8
                var index = 0
                // Eight scalars a step, stored as bytes when all are ASCII
                // (one test and one narrowing store, which vectorise): wide
                // text is mostly ASCII beside a few wider scalars, and a
                // scalar at a time through `writeUTF8` took a quarter of
                // rustcode.unicode's snapshot encode.
                while index + step <= values.count {
                    var any: Value = 0
                    for offset in 0..<step { any |= values[index + offset] }
                    if any < 0x80 {
                        for offset in 0..<step { end[offset] = UInt8(truncatingIfNeeded: values[index + offset]) }
                        end += step
                    } else {
                        for offset in 0..<step { end += Unicode.Scalar.writeUTF8(of: UInt32(values[index + offset]), at: end) }
                    }
                    index += step
                }
                for value in values[index...] {
                    end += Unicode.Scalar.writeUTF8(of: UInt32(value), at: end)
                }
            }
            written = end - target.baseAddress!
        }
    }

    /// The storage's bytes, and their form.
    public struct UnsafeView {
        @usableFromInline let bytes: UnsafeBufferPointer<UInt8>
        @usableFromInline let form: Form

        @inlinable
        init(bytes: UnsafeBufferPointer<UInt8>, form: Form) {
            self.bytes = bytes
            self.form = form
        }
    }

    @inlinable @inline(__always)
    public func withUnsafeView<Result, Failure>(_ body: (UnsafeView) throws(Failure) -> Result) throws(Failure) -> Result {
        let form = form
        return try bytes.withUnsafeBufferPointer { bytes throws(Failure) in try body(UnsafeView(bytes: bytes, form: form)) }
    }

    @inlinable
    public static func widths(_ view: UnsafeView, _ start: Int, _ count: Int) -> (utf16: Int, utf8: Int) {
        guard view.form == .oneByte else { return widerWidths(view, start, count) }
        // Below U+0100: one UTF-16 unit, and one UTF-8 byte below U+0080, else two.
        let bytes = UnsafeBufferPointer(rebasing: view.bytes[start..<start + count])
        // Text of some length is mostly ASCII, which `isASCII` finds in a
        // loop that vectorises (counted a byte a step, 4.5% of rustcode's
        // merge); a keystroke's few bytes are counted, cheaper than the
        // vector loop's set-up.
        if count > 8, bytes.isASCII { return (count, count) }
        var utf8 = count
        for byte in bytes where byte >= 0x80 { utf8 += 1 }
        return (count, utf8)
    }

    /// `widths` of storage of two or four bytes a scalar: not inlined, so
    /// that its two vector loops do not weigh on inlining the edits that
    /// measure ASCII. (Inlined, and `count` not forced inline, they left a
    /// local insert out of line in `Transaction.insertText`: rustcode's
    /// local replay ran 2.3% more instructions.)
    @usableFromInline @inline(never)
    static func widerWidths(_ view: UnsafeView, _ start: Int, _ count: Int) -> (utf16: Int, utf8: Int) {
        precondition(start >= 0 && (start + count) << view.form.shift <= view.bytes.count, "ScalarStorage range out of bounds")
        // The stored values themselves, as a typed buffer (an array's
        // storage is aligned for any of the forms): loaded one by one
        // from raw bytes, a wide snapshot's load spent a fifth of its
        // time here.
        let stored = UnsafeRawBufferPointer(view.bytes)
        return view.form == .twoBytes
            ? stored.withMemoryRebound(to: UInt16.self) { widths(of: UnsafeBufferPointer(rebasing: $0[start..<start + count])) }
            : stored.withMemoryRebound(to: UInt32.self) { widths(of: UnsafeBufferPointer(rebasing: $0[start..<start + count])) }
    }

    /// The UTF-16 units and UTF-8 bytes of the scalar values `values`,
    /// counted as the scalars above U+007F, U+07FF and U+FFFF, each in 32
    /// bits (four to a vector register, not two), in a loop that
    /// vectorises: summed as `Int` widths, the loop ran about 10
    /// instructions a scalar, 4% of rustcode.unicode's merge (its text wide
    /// after a U+0192). A count stays below 2^32: a text's scalars are far fewer.
    @inline(__always)
    private static func widths<Value: FixedWidthInteger & UnsignedInteger>(of values: UnsafeBufferPointer<Value>) -> (utf16: Int, utf8: Int) {
        var above7F: UInt32 = 0, above7FF: UInt32 = 0, aboveFFFF: UInt32 = 0
        for value in values {
            let value = UInt32(truncatingIfNeeded: value)
            above7F &+= (0x7F &- value) >> 31
            above7FF &+= (0x7FF &- value) >> 31
            aboveFFFF &+= (0xFFFF &- value) >> 31
        }
        return (values.count + Int(aboveFFFF), values.count + Int(above7F) + Int(above7FF) + Int(aboveFFFF))
    }
}

public enum SequenceError: Error, Equatable {
    /// An operation names an element (origin or delete target) this sequence does not have.
    case unknownElement(OpID)
    /// An insert (or a snapshot run) reuses an id that is already present.
    case duplicateElement(OpID)
    /// A visible index outside the sequence.
    case indexOutOfRange(Int)
    /// A run that cannot exist: no elements, or counters or lamports that overflow.
    case invalidRun(OpID)
    /// A remote insert whose Lamport value is not above its origin's (named
    /// here), when the caller asks for that check: the RGA order relies on it.
    case stampNotAboveOrigin(OpID)
}

/// Ids `start, start+1, ..., start+length-1`: consecutive counters of one replica.
public struct IDRun: Hashable, Sendable {
    public var start: OpID
    public var length: Int

    @inlinable
    public init(start: OpID, length: Int) {
        self.start = start
        self.length = length
    }
}

/// The ids a local delete removed, in document order, as runs. Deleting
/// within one typed stretch (nearly every keystroke) gives one run, which is
/// kept inline so that the delete allocates nothing; only more runs go to an array.
public struct DeletedRuns: RandomAccessCollection, Equatable, ExpressibleByArrayLiteral, Sendable {
    private var firstRun: IDRun?
    /// Nil until a second run comes: most deletes are one run (a
    /// keystroke), and dropping even an empty array costs a release call.
    private var laterRuns: [IDRun]?

    public init() {}

    public init(arrayLiteral runs: IDRun...) {
        for run in runs { append(run) }
    }

    mutating func append(_ run: IDRun) {
        if firstRun == nil {
            firstRun = run
        } else if laterRuns == nil {
            laterRuns = [run]
        } else {
            laterRuns!.append(run)
        }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { firstRun == nil ? 0 : 1 + (laterRuns?.count ?? 0) }
    public subscript(position: Int) -> IDRun {
        precondition(position >= 0 && position < endIndex, "DeletedRuns index out of range")
        return position == 0 ? firstRun! : laterRuns![position - 1]
    }
}

/// A maximal stretch of elements with consecutive ids and lamports and the
/// same deleted flag, as `RGASequence.forEachRun` reports them (snapshots).
public struct SequenceRun<Element> {
    public var id: OpID
    public var lamport: UInt64
    public var isDeleted: Bool
    public var elements: ArraySlice<Element>

    @inlinable
    public init(id: OpID, lamport: UInt64, isDeleted: Bool, elements: ArraySlice<Element>) {
        self.id = id
        self.lamport = lamport
        self.isDeleted = isDeleted
        self.elements = elements
    }
}

extension SequenceRun: Equatable where Element: Equatable {}
extension SequenceRun: Sendable where Element: Sendable {}

/// A run without its elements, as a snapshot stores it: `RGASequence.init(content:runs:)`
/// takes the elements of every run in one buffer.
public struct RunHeader: Equatable, Sendable {
    public var id: OpID
    public var lamport: UInt64
    public var isDeleted: Bool
    public var count: Int

    @inlinable
    public init(id: OpID, lamport: UInt64, isDeleted: Bool, count: Int) {
        self.id = id
        self.lamport = lamport
        self.isDeleted = isDeleted
        self.count = count
    }
}
