/// The frame around every Quire binary format:
/// `magic (4 bytes) | version (varint) | body length (varint) | body | CRC-32 (4 bytes, little-endian)`,
/// the checksum covering everything before it.
///
///     let bytes = Envelope.seal(magic: Array("QSYN".utf8), version: 1, body: body)
///     var reader = try Envelope.open(bytes, magic: Array("QSYN".utf8), name: "a sync message", version: 1)
public enum Envelope {
    public static func seal(magic: [UInt8], version: UInt64, body: [UInt8]) -> [UInt8] {
        seal(magic: magic, version: version, bodySize: .exactly(body.count)) { $0.writeBytes(body); return [] }
    }

    /// The size of a body `seal(magic:version:bodySize:writingBody:)` writes.
    enum BodySize {
        /// Known ahead: the length is written first, and the sealed bytes,
        /// often kept for long, carry no spare capacity.
        case exactly(Int)
        /// An estimate: room is left for its length's varint, and the body
        /// is moved in place if its length's varint is of another size.
        case about(Int)
    }

    /// Seals the body `writeBody` writes straight into the sealed bytes, so
    /// that a large body (a snapshot, a history's bundle) is not built
    /// apart and copied. `writeBody` returns where it wrote sealed
    /// encodings whole (offsets in the writer's bytes), which the checksum
    /// need not read (`CRC32.checksum(_:selfChecked:)`).
    static func seal(magic: [UInt8], version: UInt64, bodySize: BodySize,
                     writingBody writeBody: (inout ByteWriter) -> [Range<Int>]) -> [UInt8] {
        let capacity = switch bodySize { case .exactly(let size), .about(let size): size }
        // Room for the frame at its largest (two 10-byte varints).
        var writer = ByteWriter(reservingCapacity: magic.count + 10 + 10 + capacity + 4)
        seal(magic: magic, version: version, bodySize: bodySize, into: &writer, writingBody: writeBody)
        return writer.bytes
    }

    /// The bytes `seal` writes for a body of exactly `bodySize` bytes.
    static func sealedSize(magic: [UInt8], version: UInt64, bodySize: Int) -> Int {
        magic.count + ByteWriter.varintSize(version) + ByteWriter.varintSize(UInt64(bodySize)) + bodySize + 4
    }

    /// `seal(magic:version:bodySize:writingBody:)` appending the sealed
    /// bytes to `writer`, which the caller has sized: a sealed piece of a
    /// larger encoding (a snapshot's history bundle) written in place
    /// rather than sealed apart and copied in.
    static func seal(magic: [UInt8], version: UInt64, bodySize: BodySize, into writer: inout ByteWriter,
                     writingBody writeBody: (inout ByteWriter) -> [Range<Int>]) {
        let start = writer.bytes.count
        writer.writeBytes(magic)
        writer.writeVarint(version)
        var selfChecked: [Range<Int>]
        switch bodySize {
        case .exactly(let size):
            writer.writeVarint(size)
            let bodyStart = writer.bytes.count
            selfChecked = writeBody(&writer)
            precondition(writer.bytes.count - bodyStart == size, "the body is not the size announced")
        case .about(let size):
            // Room for the estimate's length: the body moves (a copy of all
            // of it) only if its own length takes more or fewer bytes.
            let lengthStart = writer.bytes.count, room = ByteWriter.varintSize(UInt64(size))
            writer.writeBytes(repeatElement(0, count: room))
            selfChecked = writeBody(&writer)
            let bodySize = UInt64(writer.bytes.count - lengthStart - room)
            writer.replaceBytes(in: lengthStart..<lengthStart + room, withVarint: bodySize)
            let moved = ByteWriter.varintSize(bodySize) - room
            if moved != 0 { selfChecked = selfChecked.map { $0.lowerBound + moved..<$0.upperBound + moved } }
        }
        let sealed = selfChecked.map { $0.lowerBound - start..<$0.upperBound - start }
        let checksum = writer.bytes.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[start...]), selfChecked: sealed) }
        assert(checksum == CRC32.checksum(writer.bytes[start...]), "a piece said to be sealed does not end with its checksum")
        writer.writeUInt32(checksum)
    }

    /// Checks the frame and returns a reader over the body.
    public static func open(_ bytes: [UInt8], magic: [UInt8], name: String, version: UInt64) throws(DecodingError) -> ByteReader {
        try open(bytes, magic: magic, name: name, versions: version...version).body
    }

    /// Checks the frame, accepting any of `versions`, and returns a reader
    /// over the body and the version found.
    public static func open(_ bytes: [UInt8], magic: [UInt8], name: String,
                            versions: ClosedRange<UInt64>) throws(DecodingError) -> (body: ByteReader, version: UInt64) {
        let frame = try openLeavingChecksum(bytes, magic: magic, name: name, versions: versions)
        try frame.checkChecksum()
        return (frame.body, frame.version)
    }

    /// A frame whose layout is checked but whose checksum is not compared
    /// yet: a reader that checks sealed pieces of the body on its own (a
    /// snapshot's history bundles) then compares it without reading them
    /// again, `checkChecksum(selfChecked:)`.
    struct FrameLeavingChecksum {
        let body: ByteReader
        let version: UInt64
        let storedChecksum: UInt32

        /// Throws `.checksumMismatch` unless the stored checksum is that of
        /// the bytes before it. Each of `selfChecked` (offsets in the
        /// frame's bytes, ascending, apart) must have been found to end
        /// with its own checksum: it is not read again.
        func checkChecksum(selfChecked: [Range<Int>] = []) throws(DecodingError) {
            let checksummed = body.bytes.withUnsafeBytes {
                CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[..<body.end]), selfChecked: selfChecked)
            }
            guard storedChecksum == checksummed else { throw .checksumMismatch }
        }
    }

    /// Checks the frame but for its checksum, which the caller must check
    /// (`FrameLeavingChecksum.checkChecksum`) before trusting the body.
    static func openLeavingChecksum(_ bytes: [UInt8], magic: [UInt8], name: String,
                                    versions: ClosedRange<UInt64>) throws(DecodingError) -> FrameLeavingChecksum {
        guard bytes.count >= magic.count, bytes.prefix(magic.count).elementsEqual(magic) else {
            throw .badMagic(expected: name)
        }
        var reader = ByteReader(bytes)
        _ = try reader.readBytes(magic.count, "the magic number")
        let found = try reader.readVarint("the format version")
        guard versions.contains(found) else { throw .unsupportedVersion(found) }
        let length = try reader.readVarint("the body length")
        guard length <= UInt64(reader.remaining), reader.remaining - Int(length) >= 4 else {
            throw .truncated("the body of \(name)")
        }
        let bodyStart = reader.offset
        let bodyEnd = bodyStart + Int(length)
        guard bytes.count == bodyEnd + 4 else { throw .invalid("\(bytes.count - bodyEnd - 4) byte(s) follow \(name)") }
        var tail = ByteReader(bytes, range: bodyEnd..<bytes.count)
        let stored = try tail.readUInt32("the checksum")
        return FrameLeavingChecksum(body: ByteReader(bytes, range: bodyStart..<bodyEnd), version: found, storedChecksum: stored)
    }
}

/// Caps on what a decoder accepts, so that a small hostile input cannot make
/// it build a huge history. Raise them for large trusted inputs.
public struct DecodingLimits: Sendable {
    public var maxChanges: Int
    public var maxOperations: Int
    /// The most counters (elements) one delete, or one insert whose text
    /// is left out (a snapshot's history), may take, and the longest run a
    /// snapshot may hold: counts no bytes of the input back. (An insert's
    /// text or values are bounded by their bytes.)
    public var maxOperationWidth: Int

    public init(maxChanges: Int = 1 << 22, maxOperations: Int = 1 << 23, maxOperationWidth: Int = 1 << 24) {
        self.maxChanges = maxChanges
        self.maxOperations = maxOperations
        self.maxOperationWidth = maxOperationWidth
    }

    public static let `default` = DecodingLimits()
}
