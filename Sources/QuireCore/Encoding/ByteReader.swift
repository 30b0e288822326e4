/// Why bytes could not be decoded. Every decoder in Quire reports one of
/// these instead of trapping, whatever the input.
public enum DecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The input ended in the middle of `what`.
    case truncated(String)
    /// The input does not start with the expected magic number.
    case badMagic(expected: String)
    /// A format version this code cannot read.
    case unsupportedVersion(UInt64)
    /// The stored checksum does not match the content.
    case checksumMismatch
    /// A value that breaks the format's rules.
    case invalid(String)

    public var description: String {
        switch self {
        case .truncated(let what): "the data ends in the middle of \(what)"
        case .badMagic(let expected): "not \(expected) (wrong magic number)"
        case .unsupportedVersion(let version): "format version \(version) is not supported by this version of Quire"
        case .checksumMismatch: "the checksum does not match: the data is damaged"
        case .invalid(let reason): "invalid data: \(reason)"
        }
    }
}

/// Reads the primitives `ByteWriter` writes, checking every length against
/// the bytes that remain, so that hostile input fails fast without large
/// allocations.
public struct ByteReader: Sendable {
    public let bytes: [UInt8]
    public private(set) var offset: Int
    let end: Int

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        offset = 0
        end = bytes.count
    }

    init(_ bytes: [UInt8], range: Range<Int>) {
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count, "a reader's range outside its bytes")
        self.bytes = bytes
        offset = range.lowerBound
        end = range.upperBound
    }

    public var isAtEnd: Bool { offset >= end }
    /// The bytes not read yet.
    public var remainingBytes: ArraySlice<UInt8> { bytes[offset..<end] }
    public var remaining: Int { end - offset }

    /// Inlined for the one-byte values that most varints are (column runs
    /// and values, lengths), and the two-byte ones (counters and their
    /// differences up to 16,383: edits at random places); longer ones are
    /// read by `longVarint`. (Through its call, two-byte values took
    /// 1.7% of a merge of eight writers' random edits.)
    @inline(__always)
    public mutating func readVarint(_ what: @autoclosure () -> String = "a number") throws(DecodingError) -> UInt64 {
        if offset < end, case let byte = byte(at: offset), byte < 0x80 {
            offset += 1
            return UInt64(byte)
        }
        if offset &+ 1 < end, case let second = byte(at: offset &+ 1), second < 0x80 {
            let value = UInt64(byte(at: offset) & 0x7f) | UInt64(second) << 7
            offset &+= 2
            return value
        }
        let (value, next) = try longVarint(what())
        offset = next
        return value
    }

    /// The byte at `index`, which the caller has checked is below `end`,
    /// read without the array's own bounds check: `0 <= offset` and `end <=
    /// bytes.count` hold from `init` on, so that check only repeats this
    /// one. (A column's run start, two varints, paid it on every byte.)
    @inline(__always)
    private func byte(at index: Int) -> UInt8 {
        bytes.withUnsafeBufferPointer { $0[index] }
    }

    /// The varint at `offset`, of any length, and the offset after it.
    /// Not `mutating`: a reader held in a local (a snapshot's text run
    /// columns) then never has its address taken for this call, so its
    /// offset can stay in a register while the inlined paths read.
    @inline(never)
    private func longVarint(_ what: @autoclosure () -> String) throws(DecodingError) -> (value: UInt64, next: Int) {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        var offset = offset
        while true {
            guard offset < end else { throw .truncated(what()) }
            let byte = bytes[offset]
            offset += 1
            if shift == 63 && byte > 1 { throw .invalid("\(what()) does not fit in 64 bits") }
            result |= UInt64(byte & 0x7f) << shift
            if byte < 0x80 { return (result, offset) }
            shift += 7
            if shift > 63 { throw .invalid("\(what()) does not fit in 64 bits") }
        }
    }

    public mutating func readSigned(_ what: @autoclosure () -> String = "a number") throws(DecodingError) -> Int64 {
        Self.unzigzag(try readVarint(what()))
    }

    /// The signed value `ByteWriter.zigzag` wrote as `raw`.
    @inline(__always)
    static func unzigzag(_ raw: UInt64) -> Int64 { Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1) }

    /// A count of items that each take at least `minimumItemSize` bytes:
    /// rejected if the remaining input cannot hold that many.
    public mutating func readCount(_ what: @autoclosure () -> String, minimumItemSize: Int = 1) throws(DecodingError) -> Int {
        let count = try readVarint("the number of \(what())")
        guard count <= UInt64(remaining / max(minimumItemSize, 1)) else {
            throw .invalid("it claims \(count) \(what()) but only \(remaining) bytes remain")
        }
        return Int(count)
    }

    /// A varint that must be below `limit`. Inlined: snapshots read one
    /// per text run.
    @inline(__always)
    public mutating func readIndex(_ what: @autoclosure () -> String, below limit: Int) throws(DecodingError) -> Int {
        let value = try readVarint(what())
        guard value < UInt64(limit) else { throw .invalid("\(what()) \(value) is out of range (0..<\(limit))") }
        return Int(value)
    }

    public mutating func readByte(_ what: @autoclosure () -> String = "a byte") throws(DecodingError) -> UInt8 {
        guard offset < end else { throw .truncated(what()) }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func readBytes(_ count: Int, _ what: @autoclosure () -> String) throws(DecodingError) -> ArraySlice<UInt8> {
        guard count >= 0, count <= remaining else { throw .truncated(what()) }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    /// A length-prefixed byte string.
    public mutating func readData(_ what: @autoclosure () -> String) throws(DecodingError) -> ArraySlice<UInt8> {
        bytes[try readDataRange(what())]
    }

    /// Where in `bytes` a length-prefixed byte string lies, read past
    /// without slicing it out: a reader over it (a bundle's 24 columns)
    /// then retains the buffer once, not once more for a slice.
    mutating func readDataRange(_ what: @autoclosure () -> String) throws(DecodingError) -> Range<Int> {
        // At most `remaining` bytes: `readCount` checks it.
        let count = try readCount("bytes of \(what())")
        offset += count
        return (offset - count)..<offset
    }

    /// A length-prefixed UTF-8 string; invalid UTF-8 is an error.
    public mutating func readString(_ what: @autoclosure () -> String) throws(DecodingError) -> String {
        let data = try readData(what())
        guard let string = String(validatingUTF8Bytes: data) else { throw .invalid("\(what()) is not valid UTF-8") }
        return string
    }

    public mutating func readUInt32(_ what: String) throws(DecodingError) -> UInt32 {
        let data = try readBytes(4, what)
        return data.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    public mutating func readUInt64(_ what: String) throws(DecodingError) -> UInt64 {
        let data = try readBytes(8, what)
        return data.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }
}

extension String {
    /// The text `bytes` hold, or nil if they are not valid UTF-8.
    ///
    /// Decoders call this for every inserted text and every snapshot.
    /// ASCII bytes are valid as they are, and the check that they are reads
    /// them once in a loop that vectorises; the string is then copied from
    /// them without another validation (`UTF8Span(unchecked:)`), and other
    /// bytes are validated once (`UTF8Span(validating:)`). Validating in
    /// `String(decoding:)` as well cost B3.3's snapshot load (strings of
    /// kilobytes) a second pass over every string (`HISTORY.md`, review210).
    init?(validatingUTF8Bytes bytes: ArraySlice<UInt8>) {
        if #available(macOS 26, iOS 26, watchOS 26, tvOS 26, visionOS 26, *) {
            if bytes.withUnsafeBufferPointer({ $0.isASCII }) {
                self = String(copying: UTF8Span(unchecked: bytes.span, isKnownASCII: true))
                return
            }
            do { self = String(copying: try UTF8Span(validating: bytes.span)) } catch { return nil }
        } else {
            // `String(validating:as:)` runs unspecialised generic code
            // (about 1,500 instructions for a short text). Decoding is
            // specialised for UTF-8 and repairs invalid bytes into U+FFFD,
            // so the bytes were valid exactly when the text reads back as
            // the same bytes.
            let valid: String? = bytes.withUnsafeBufferPointer { buffer in
                var string = String(decoding: buffer, as: UTF8.self)
                if buffer.isASCII { return string }
                let same = string.withUTF8 { $0.count == buffer.count && sameBytes($0, buffer) }
                return same ? string : nil
            }
            guard let valid else { return nil }
            self = valid
        }
    }
}
