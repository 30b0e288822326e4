/// Where the primitives of Quire's binary formats are written: a
/// `ByteWriter`, or a `GatheringWriter` gathering small writes for one.
/// The formats' values are written through these three, so that each is
/// written by one code whichever it goes to.
///
/// Integers are LEB128 varints (7 bits a byte, low bits first); signed
/// integers are zigzag-encoded first so that small negatives stay short.
/// `Specs/encoding.md` describes every format built from these.
public protocol ByteSink {
    mutating func writeByte(_ byte: UInt8)
    mutating func writeVarint(_ value: UInt64)
    mutating func writeBytes(_ data: some Sequence<UInt8>)
}

extension ByteSink {
    /// Inlined: with the bundles' values and tables gathered too, the
    /// compiler called it from a snapshot's ids (13 instructions more an
    /// id, crdt-benchmarks B3.2's maps).
    @inline(__always)
    public mutating func writeVarint(_ value: Int) { writeVarint(UInt64(value)) }

    public mutating func writeSigned(_ value: Int64) { writeVarint(ByteWriter.zigzag(value)) }

    /// A length-prefixed byte string.
    public mutating func writeData(_ data: some Collection<UInt8>) {
        writeVarint(data.count)
        writeBytes(data)
    }

    /// A length-prefixed UTF-8 string.
    public mutating func writeString(_ string: String) {
        // A native string's UTF-8 is written without copying it first.
        if string.utf8.withContiguousStorageIfAvailable({ writeData($0) }) == nil { writeData(Array(string.utf8)) }
    }

    public mutating func writeUInt32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { writeByte(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    public mutating func writeUInt64(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { writeByte(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}

/// Appends the primitives of Quire's binary formats to a byte buffer.
public struct ByteWriter: ByteSink, Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    /// A writer whose buffer has room for `capacity` bytes: for output of a
    /// size known ahead, which is then kept without slack.
    init(reservingCapacity capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func writeVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Appends `value(index)` for each index below `count` as a varint (a
    /// column of a snapshot's run headers), stored through a pointer into
    /// a chunk on the stack and appended a chunk at a time. Appended a byte
    /// at a time, each byte paid the array's uniqueness and capacity
    /// checks. Inlined, so that `value` is too.
    @inline(__always)
    mutating func writeVarints(count: Int, _ value: (Int) -> UInt64) {
        let chunkSize = 4096
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: chunkSize) { chunk in
            var used = 0
            for index in 0..<count {
                if used > chunkSize - Self.longestVarint {
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[..<used]))
                    used = 0
                }
                // Its own loop, not `writeVarint(_:at:)`: through a pointer
                // made for each varint, sveltecomponent's snapshot encode
                // took 1.3% more instructions.
                var value = value(index)
                while value >= 0x80 {
                    chunk[used] = UInt8(truncatingIfNeeded: value) | 0x80
                    used += 1
                    value >>= 7
                }
                chunk[used] = UInt8(value)
                used += 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[..<used]))
        }
    }

    /// The most bytes a varint of 64 bits takes.
    static let longestVarint = 10

    /// Writes `value` as `writeVarint` does, at `destination`; returns how
    /// many bytes it wrote. (`writeVarint` keeps its own loop: written
    /// through this and a buffer on the stack for each varint, a snapshot's
    /// state took 45 M instructions more on B2.4.)
    @inline(__always)
    static func writeVarint(_ value: UInt64, at destination: UnsafeMutablePointer<UInt8>) -> Int {
        var value = value
        var size = 0
        while value >= 0x80 {
            destination[size] = UInt8(truncatingIfNeeded: value) | 0x80
            value >>= 7
            size += 1
        }
        destination[size] = UInt8(value)
        return size + 1
    }

    /// The bytes `writeVarint(value)` writes.
    static func varintSize(_ value: UInt64) -> Int { max(1, (64 - value.leadingZeroBitCount + 6) / 7) }

    /// A signed value as an unsigned one that is small when it is near zero.
    @inline(__always)
    static func zigzag(_ value: Int64) -> UInt64 { UInt64(bitPattern: (value << 1) ^ (value >> 63)) }

    /// Replaces the bytes in `range` with `value` as a varint, moving the
    /// bytes after them (in place: the buffer is not copied).
    mutating func replaceBytes(in range: Range<Int>, withVarint value: UInt64) {
        var varint = ByteWriter()
        varint.writeVarint(value)
        bytes.replaceSubrange(range, with: varint.bytes)
    }

    public mutating func writeByte(_ byte: UInt8) { bytes.append(byte) }

    public mutating func writeBytes(_ data: some Sequence<UInt8>) { bytes.append(contentsOf: data) }

    /// Appends the `count` bytes `write` writes into the room it is given
    /// (which it must fill): output built in place, not in an array of
    /// its own then copied.
    mutating func writeBytes(count: Int, _ write: (UnsafeMutableBufferPointer<UInt8>) -> Void) {
        guard count > 0 else { return }
        let start = bytes.count
        // Zeros first: an array has no room to write in that it has not initialized.
        bytes.append(contentsOf: repeatElement(0, count: count))
        bytes.withUnsafeMutableBufferPointer { write(UnsafeMutableBufferPointer(rebasing: $0[start...])) }
    }

    /// Calls `write` with a `GatheringWriter` whose chunks go to this
    /// writer: for many small writes.
    mutating func writeGathered<Result>(_ write: (inout GatheringWriter) -> Result) -> Result {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: GatheringWriter.chunkSize) { chunk in
            // The bytes are moved to the gathering writer and back, not
            // shared: appended to, they stay where they are.
            var gathering = GatheringWriter(writer: self, chunk: chunk.baseAddress!)
            self = ByteWriter()
            let result = write(&gathering)
            gathering.flush()
            self = gathering.writer
            return result
        }
    }
}

/// Small writes gathered in a chunk on the stack and appended to a
/// `ByteWriter` a chunk at a time (`ByteWriter.writeGathered`). Appended
/// one by one, each paid the array's uniqueness and capacity checks: a
/// snapshot's state is mostly such writes (ids, lengths, keys, short
/// values), and a snapshot of 1,540 writers' small maps (crdt-benchmarks
/// B3.2) spent about 35 instructions on a byte or varint and 166 on a
/// short string. Long byte strings go to the writer whole, not copied
/// through the chunk.
struct GatheringWriter: ByteSink {
    static let chunkSize = 4096
    /// Byte strings longer than this go to the writer whole.
    private static let longestGathered = 256

    /// The writer the chunks go to.
    fileprivate private(set) var writer: ByteWriter
    private let chunk: UnsafeMutablePointer<UInt8>
    private var used = 0

    /// Gathers writes for `writer` in `chunk`, `chunkSize` bytes that the
    /// caller keeps while this writes: on the stack
    /// (`ByteWriter.writeGathered`), or for writes spread over many calls
    /// (a bundle's values) on the heap.
    init(writer: ByteWriter, chunk: UnsafeMutablePointer<UInt8>) {
        self.writer = writer
        self.chunk = chunk
    }

    @inline(__always)
    mutating func writeByte(_ byte: UInt8) {
        if used == Self.chunkSize { flush() }
        chunk[used] = byte
        used += 1
    }

    @inline(__always)
    mutating func writeVarint(_ value: UInt64) {
        if used > Self.chunkSize - ByteWriter.longestVarint { flush() }
        used += ByteWriter.writeVarint(value, at: chunk + used)
    }

    mutating func writeBytes(_ data: some Sequence<UInt8>) {
        if data.withContiguousStorageIfAvailable({ writeBuffer($0) }) == nil {
            for byte in data { writeByte(byte) }
        }
    }

    private mutating func writeBuffer(_ buffer: UnsafeBufferPointer<UInt8>) {
        guard let source = buffer.baseAddress else { return }
        if buffer.count > Self.longestGathered {
            flush()
            writer.writeBytes(buffer)
            return
        }
        if used + buffer.count > Self.chunkSize { flush() }
        (chunk + used).initialize(from: source, count: buffer.count)
        used += buffer.count
    }

    /// Appends the bytes gathered so far to the writer.
    @inline(never)
    mutating func flush() {
        guard used > 0 else { return }
        writer.writeBytes(UnsafeBufferPointer(start: chunk, count: used))
        used = 0
    }

    /// The bytes written, once they are all written: the writer's,
    /// with those gathered so far appended.
    mutating func writtenBytes() -> [UInt8] {
        flush()
        return writer.bytes
    }

    /// Calls `body` with the writer itself, after the bytes gathered so
    /// far: for output written in chunks of its own (a text's columns).
    mutating func withWriter<Result>(_ body: (inout ByteWriter) -> Result) -> Result {
        flush()
        return body(&writer)
    }
}

extension Array where Element == UInt8 {
    /// Appends the UTF-8 of `scalars`. Appending scalars to a `String`
    /// instead takes a slow generic path that can copy the whole string on
    /// every append: seconds for a long text, minutes for a huge one.
    ///
    /// Encoded into a chunk on the stack and appended a chunk at a time:
    /// appended a byte at a time, each byte paid the array's uniqueness and
    /// capacity checks, three quarters of the snapshot encode of a text of
    /// wide scalars (rustcode.unicode).
    mutating func appendUTF8(of scalars: some Sequence<Unicode.Scalar>) {
        appendUTF8(ofScalarValues: scalars.lazy.map { $0.value })
    }

    /// Appends the UTF-8 of scalars given by their values, which must be
    /// valid scalars (a text's storage, read without making each a `Unicode.Scalar`).
    mutating func appendUTF8(ofScalarValues values: some Sequence<UInt32>) {
        let chunkSize = 512
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: chunkSize) { chunk in
            var used = 0
            for value in values {
                if used > chunkSize - 4 {
                    append(contentsOf: UnsafeBufferPointer(rebasing: chunk[..<used]))
                    used = 0
                }
                used += Unicode.Scalar.writeUTF8(of: value, at: chunk.baseAddress! + used)
            }
            append(contentsOf: UnsafeBufferPointer(rebasing: chunk[..<used]))
        }
    }
}
