/// How a column's runs are written, by bundle version (`Specs/encoding.md`, "column").
enum ColumnForm {
    /// Versions 1 and 2: every run a `(run length, value)` pair.
    case pairs
    /// Versions 3 and 4: a header bit tells a repeat run from a literal run.
    case literalRuns
    /// Version 5: two header bits, adding runs of the value the column's
    /// last repeat run repeated, written without it, alone or followed by
    /// one literal. A field that keeps one value but at a change here and
    /// there (a change's parents and Lamport value where two writers
    /// overlap, an insert's origin mode where typing moves) then costs two
    /// bytes an exception instead of four.
    case reusedRepeats

    /// How far a run header's length is shifted past its kind bits.
    var headerShift: UInt64 {
        switch self {
        case .pairs: 0
        case .literalRuns: 1
        case .reusedRepeats: 2
        }
    }
}

/// A `ColumnForm` that `ColumnWriter` writes, as a type: the writer is
/// compiled for each form written, which settles the form when compiling.
/// (Compiled for each bundle version instead, it made two copies of one
/// code for versions 3 and 4, which share their form; the compiler merged
/// them behind thunks, and a history's version 4 records then reached each
/// column's `endRun` through a function pointer and two thunks.)
protocol WrittenColumnForm {
    static var form: ColumnForm { get }
}

/// `ColumnForm.literalRuns`, as a type (versions 3 and 4).
enum LiteralRunColumns: WrittenColumnForm {
    static var form: ColumnForm { .literalRuns }
}

/// `ColumnForm.reusedRepeats`, as a type (version 5).
enum ReusedRepeatColumns: WrittenColumnForm {
    static var form: ColumnForm { .reusedRepeats }
}

/// A column of unsigned integers in runs: a value repeated, or values that
/// each come once ("literals"), each run behind a varint header
/// (`Specs/encoding.md`, "column"). Columns are why a history of ordinary
/// typing, where most fields repeat from one change to the next, encodes in
/// a few bytes per change; literal runs keep the fields that change at
/// every change (where concurrent edits land) from paying a run length each.
///
/// The bytes are kept in memory the writer owns (it is not copyable): a
/// history writes a dozen values a change, and appending each varint to an
/// array, with the array's uniqueness and capacity checks a byte, was a
/// quarter of encoding a snapshot's history. It writes the column form
/// `Form`, settled when compiling.
struct ColumnWriter<Form: WrittenColumnForm>: ~Copyable {
    private var bytes: UnsafeMutablePointer<UInt8>
    private var count = 0
    private var capacity: Int
    /// Whether `bytes` is this writer's own allocation, rather than room
    /// lent by its owner (`init(room:capacity:)`) until it outgrows it.
    private var ownsBytes: Bool
    /// The literal run being written, values that came once each in a
    /// row before `value`: its values are written as they come, behind a
    /// one-byte header that `closeLiterals` fills in (and widens, past 63
    /// of them, or 31 with two kind bits). Buffering them apart and
    /// copying them over cost a history of typing a sixth more to encode.
    private var literalCount: UInt64 = 0
    private var literalHeader = 0
    private var value: UInt64 = 0
    private var run: UInt64 = 0
    private static var headerShift: UInt64 { Form.form.headerShift }
    /// Whether runs of the last repeated value are written without it
    /// (`ColumnForm.reusedRepeats`).
    private static var reusesRepeats: Bool { Form.form == .reusedRepeats }
    /// Whether a run of `lastRepeated` may be written without it: in
    /// `.reusedRepeats`, once a repeat run was written with its value.
    private var reuseAllowed = false
    /// The value of the last repeat run written with its value.
    private var lastRepeated: UInt64 = 0
    /// Where the header of a run of `lastRepeated` written just before
    /// starts, if nothing came after it yet: a single value right after it
    /// rides in that header, whose kind 2 becomes 3 (the low bit of its
    /// first byte). Checked only where a literal run would start, in
    /// `.reusedRepeats` alone. Holding the run back until the next one
    /// came instead cost every value a check, and encoding 0.5-0.8% more
    /// instructions.
    private var openReuseHeader: Int?

    /// A writer with room of its own.
    init() {
        self.init(bytes: .allocate(capacity: 32), capacity: 32, owned: true)
    }

    /// A writer that starts in `room`, `capacity` bytes its caller owns
    /// and keeps while the writer lives: a bundle's columns start in one
    /// allocation (`BundleWriter`).
    init(room: UnsafeMutablePointer<UInt8>, capacity: Int) {
        self.init(bytes: room, capacity: capacity, owned: false)
    }

    private init(bytes: UnsafeMutablePointer<UInt8>, capacity: Int, owned: Bool) {
        precondition(Form.form != .pairs, "columns of (run length, value) pairs are only read")
        self.bytes = bytes
        self.capacity = capacity
        ownsBytes = owned
    }

    deinit {
        if ownsBytes { bytes.deallocate() }
    }

    /// Appends `next` `count` times.
    @inline(__always)
    mutating func append(_ next: UInt64, count: UInt64 = 1) {
        guard count > 0 else { return }
        if run > 0 && next == value {
            run += count
        } else {
            endRun()
            value = next
            run = count
        }
    }

    /// Appends `next` `count` times.
    @inline(__always)
    mutating func append(signed next: Int64, count: UInt64 = 1) { append(ByteWriter.zigzag(next), count: count) }

    /// Ends the run of `value`: once, it joins the literals (or the run of
    /// the last repeated value just before it); repeated, it is written
    /// after them.
    private mutating func endRun() {
        if run == 1 {
            if literalCount == 0 {
                if Self.reusesRepeats, let reuseHeader = openReuseHeader {
                    bytes[reuseHeader] |= 1
                    writeVarint(value)
                    openReuseHeader = nil
                    run = 0
                    return
                }
                reserve(1)
                literalHeader = count
                bytes[count] = 0
                count += 1
            }
            writeVarint(value)
            literalCount += 1
        } else if run > 1 {
            closeLiterals()
            if Self.reusesRepeats && reuseAllowed && value == lastRepeated {
                openReuseHeader = count
                writeVarint(run << 2 | 2)
            } else {
                writeVarint(run << Self.headerShift)
                writeVarint(value)
                if Self.reusesRepeats {
                    lastRepeated = value
                    reuseAllowed = true
                    openReuseHeader = nil
                }
            }
        }
        run = 0
    }

    private mutating func closeLiterals() {
        guard literalCount > 0 else { return }
        let header = literalCount << Self.headerShift | 1
        let size = ByteWriter.varintSize(header)
        if size > 1 {
            // Past 63 literals (31 in `.reusedRepeats`): the values move up to make room.
            reserve(size - 1)
            let values = literalHeader + 1
            (bytes + values + size - 1).update(from: bytes + values, count: count - values)
            count += size - 1
        }
        _ = ByteWriter.writeVarint(header, at: bytes + literalHeader)
        literalCount = 0
    }

    @inline(__always)
    private mutating func writeVarint(_ value: UInt64) {
        reserve(10)  // a UInt64's 64 bits, 7 a byte
        count += ByteWriter.writeVarint(value, at: bytes + count)
    }

    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(toHold: count + extra) }
    }

    @inline(never)
    private mutating func grow(toHold needed: Int) {
        capacity = max(needed, capacity * 2)
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        grown.moveInitialize(from: bytes, count: count)
        if ownsBytes { bytes.deallocate() }
        bytes = grown
        ownsBytes = true
    }

    /// Ends the column: `written` then holds it whole.
    mutating func finish() {
        endRun()
        closeLiterals()
    }

    /// The bytes written: the encoded column once `finish()` ends it.
    /// Valid while the writer lives and writes nothing more.
    var written: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: bytes, count: count) }
}

/// Reads a column written by `ColumnWriter`, in any `ColumnForm`.
struct ColumnReader {
    private var reader: ByteReader
    /// The column read, named in errors. (Not its name: a string, retained
    /// and released with each of a bundle's 24 readers.)
    private let column: ChangeEncoding.Column
    /// How a run header reads, by `ColumnForm`: its length is the header
    /// shifted right by `headerShift`; the `literalBit` (none in
    /// `.pairs`) marks a literal run, or with the `reuseBit` (only in
    /// `.reusedRepeats`) a run of the last repeated value followed by one
    /// literal; the `reuseBit` alone, that run without a literal. Masks and
    /// a shift, not a switch over the form, so that reading a header costs
    /// no branch for it (and `&>>`, a shift needing no check for shifts
    /// past 63).
    private let headerShift: UInt64
    private let literalBit: UInt64
    private let reuseBit: UInt64
    private var value: UInt64 = 0
    /// The values of `value`'s run not read yet (1 for a literal).
    private var run: UInt64 = 0
    /// The literals after `value` in its literal run.
    private var literalsLeft: UInt64 = 0
    /// The value of the last repeat run that wrote its value, if any.
    private var lastRepeated: UInt64?

    init(_ reader: ByteReader, column: ChangeEncoding.Column, form: ColumnForm) {
        self.reader = reader
        self.column = column
        headerShift = form.headerShift
        literalBit = form == .pairs ? 0 : 1
        reuseBit = form == .reusedRepeats ? 2 : 0
    }

    /// Inlined: a change reads a dozen values, most from a run already started.
    @inline(__always)
    mutating func next() throws(DecodingError) -> UInt64 {
        if run == 0 { try startRun() }
        run -= 1
        return value
    }

    /// Reads the next value with its run: the next literal, or a new run's
    /// header and its first (or repeated) value.
    @inline(never)
    private mutating func startRun() throws(DecodingError) {
        if literalsLeft == 0 {
            let header = try reader.readVarint("the run header of column \(column.name)")
            run = header &>> headerShift
            guard run > 0 else { try Self.emptyRun(in: column) }
            if header & reuseBit != 0 {
                guard let lastRepeated else { try Self.reuseBeforeRepeat(in: column) }
                value = lastRepeated
                if header & literalBit != 0 { literalsLeft = 1 }
                return
            }
            if header & literalBit != 0 {
                literalsLeft = run - 1
                run = 1
                value = try reader.readVarint("a value of column \(column.name)")
                return
            }
            value = try reader.readVarint("a value of column \(column.name)")
            lastRepeated = value
            return
        }
        literalsLeft -= 1
        run = 1
        value = try reader.readVarint("a value of column \(column.name)")
    }

    /// The next value and how many times in a row it comes (at least 1),
    /// without consuming anything; nil at the end of the column.
    mutating func peekRun() throws(DecodingError) -> (value: UInt64, count: UInt64)? {
        if run == 0 {
            guard literalsLeft > 0 || !reader.isAtEnd else { return nil }
            try startRun()
        }
        return (value, run)
    }

    /// The sum of the values not yet read, saturating, read from a copy:
    /// this reader consumes nothing.
    func remainingSum() throws(DecodingError) -> UInt64 {
        var reader = self
        var sum: UInt64 = 0
        while let (value, count) = try reader.peekRun() {
            let (product, overflow) = value.multipliedReportingOverflow(by: count)
            sum = overflow ? .max : sum.addingReportingOverflow(product).overflow ? .max : sum + product
            reader.skip(count)
        }
        return sum
    }

    /// How many of the values not yet read are `value`, counting up to
    /// `limit` at most, read from a copy: this reader consumes nothing.
    func remainingCount(of value: UInt64, atMost limit: UInt64) throws(DecodingError) -> UInt64 {
        var reader = self
        var found: UInt64 = 0
        while found < limit, let (next, count) = try reader.peekRun() {
            if next == value { found += min(count, limit - found) }
            reader.skip(count)
        }
        return found
    }

    /// Consumes `count` values of the current run (as `peekRun` reported it:
    /// a literal is a run of one).
    mutating func skip(_ count: UInt64) {
        precondition(count <= run, "skipping past the current run")
        run -= count
    }

    @inline(__always)
    mutating func nextSigned() throws(DecodingError) -> Int64 {
        ByteReader.unzigzag(try next())
    }

    /// A value that must be below `limit`.
    @inline(__always)
    mutating func nextIndex(below limit: Int) throws(DecodingError) -> Int {
        let value = try next()
        guard value < UInt64(limit) else { throw outOfRange(value, limit) }
        return Int(value)
    }

    /// Throws that `column` has an empty run. Apart from `startRun`,
    /// the throw included: in it, the message and the error kept across the
    /// throw's call made every run start save and restore three registers.
    @inline(never)
    private static func emptyRun(in column: ChangeEncoding.Column) throws(DecodingError) -> Never {
        throw .invalid("column \(column.name) has an empty run")
    }

    /// Throws that `column` has a run of the last repeated value before any repeat run.
    @inline(never)
    private static func reuseBeforeRepeat(in column: ChangeEncoding.Column) throws(DecodingError) -> Never {
        throw .invalid("column \(column.name) reuses a repeated value before any repeat run")
    }

    @inline(never)
    private func outOfRange(_ value: UInt64, _ limit: Int) -> DecodingError {
        .invalid("column \(column.name) holds \(value), out of range 0..<\(limit)")
    }

    /// Every value was read: no run is left half used and no bytes remain.
    func checkFinished() throws(DecodingError) {
        guard run == 0, literalsLeft == 0, reader.isAtEnd else { throw .invalid("column \(column.name) has values left over") }
    }
}

extension ByteSink {
    /// A value of a map register or list element; see `Specs/encoding.md`, "Values".
    mutating func writeValue(_ value: NewValue?) {
        switch value {
        case nil: writeByte(0)
        case .scalar(.null): writeByte(1)
        case .scalar(.bool(false)): writeByte(2)
        case .scalar(.bool(true)): writeByte(3)
        case .scalar(.int(let x)): writeByte(4); writeSigned(x)
        case .scalar(.double(let x)): writeByte(5); writeUInt64(x.bitPattern)
        case .scalar(.string(let x)): writeByte(6); writeString(x)
        case .scalar(.bytes(let x)): writeByte(7); writeData(x)
        case .object(let kind): writeByte(8); writeByte(kind.rawValue)
        }
    }
}

extension ByteWriter {
    /// The most bytes `writeValue(value)` writes: a tag, then a varint,
    /// eight bytes, a kind, or a length and the contents.
    static func writtenSizeBound(of value: NewValue) -> Int {
        switch value {
        case .scalar(.string(let string)): 1 + longestVarint + string.utf8.count
        case .scalar(.bytes(let bytes)): 1 + longestVarint + bytes.count
        default: 1 + longestVarint
        }
    }
}

extension ByteReader {
    /// Reads what `writeValue` wrote; `nil` is a removal.
    mutating func readValue() throws(DecodingError) -> NewValue? {
        switch try readByte("a value tag") {
        case 0: return nil
        case 1: return .scalar(.null)
        case 2: return .scalar(.bool(false))
        case 3: return .scalar(.bool(true))
        case 4: return .scalar(.int(try readSigned("an integer value")))
        case 5: return .scalar(.double(Double(bitPattern: try readUInt64("a double value"))))
        case 6: return .scalar(.string(try readString("a string value")))
        case 7: return .scalar(.bytes(Array(try readData("a bytes value"))))
        case 8:
            let raw = try readByte("an object kind")
            guard let kind = ObjectKind(rawValue: raw) else { throw .invalid("unknown object kind \(raw)") }
            return .object(kind)
        case let tag: throw .invalid("unknown value tag \(tag)")
        }
    }
}
