import QuireCore

/// The stored form of a document snapshot: a small header, a checksum, and
/// the zstd-compressed `Document.encodeSnapshot(includeHistory: false)`.
///
/// `Specs/storage.md`, "Snapshot frame", gives the layout byte by byte:
///
///     offset  size  field
///     0       4     magic "QSNP"
///     4       2     format version, u16 little-endian (1)
///     6       8     change count: changes the snapshot covers, u64 LE (informational)
///     14      8     uncompressed size of the QDOC encoding, u64 LE
///     22      4     CRC-32 of bytes 0..<22 and of the payload, u32 LE
///     26      ...   payload: one zstd frame (no content checksum)
///
/// `open` refuses anything else with a `SnapshotFrame.Error`; it never traps.
public enum SnapshotFrame {
    public static let magic = Array("QSNP".utf8)
    public static let formatVersion: UInt16 = 1
    /// Where the header's CRC-32 lies: after the magic, version, change count and size it covers.
    static let checksumOffset = 22
    static let headerSize = checksumOffset + 4
    /// The largest uncompressed snapshot accepted: 512 MiB. A frame may not
    /// declare more, so a damaged or hostile frame cannot make the store
    /// allocate more than this.
    public static let maxUncompressedSize = 512 << 20

    public struct Error: Swift.Error, Hashable, Sendable, DescribedError {
        public let reason: String
        public var description: String { "invalid snapshot frame: \(reason)" }
    }

    /// Encodings up to this size are compressed at zstd level 2, larger ones
    /// at level 3 (`compressionLevel(forEncodingOf:)`).
    static let levelTwoLimit = 4 << 20

    /// The zstd level a snapshot of `count` bytes is compressed at. Level 2
    /// writes automerge-paper's 316,576 bytes in about 70% of level 3's time
    /// for 3.4% more bytes, and no measured snapshot up to 1.9 MB slower (at
    /// most 11% larger, B3.1's); B3.3's 15.6 MB (1,540 overwritten 5 kB
    /// strings) is both written and read faster at level 3 (`HISTORY.md`,
    /// "Thirtieth session").
    /// A reader accepts any level.
    static func compressionLevel(forEncodingOf count: Int) -> Int {
        count <= levelTwoLimit ? 2 : 3
    }

    /// Encodings up to this size (zstd's own bracket of small inputs) are
    /// compressed with a hash table of 2^`smallHashLog` entries.
    static let smallEncodingLimit = 16 << 10
    static let smallHashLog = 13

    /// The hash table's size (as a power of two) a snapshot of `count` bytes
    /// is compressed with; nil for the level's own. Level 2 gives an input
    /// of at most 16 KiB a table of 2^15 entries: a fresh compression
    /// context clears those 128 KiB before its first frame, and each frame
    /// then walks the larger table. 2^13 made no measured snapshot larger
    /// (crdt-benchmarks B1.1, B1.2, B1.6, B2.1, merge-k2-m1000: the same
    /// bytes or up to 8 fewer) and took merge-k2-m1000's compression 3% fewer
    /// instructions in a kept context, 20% fewer in a fresh one (`HISTORY.md`,
    /// review219). A reader does not depend on it.
    static func hashLog(forEncodingOf count: Int) -> Int? {
        count <= smallEncodingLimit ? smallHashLog : nil
    }

    /// Frames a document encoding (`Document.encodeSnapshot`).
    public static func seal(_ encoding: [UInt8], changeCount: UInt64) throws -> [UInt8] {
        try seal(encoding, changeCount: changeCount, level: compressionLevel(forEncodingOf: encoding.count),
                 hashLog: hashLog(forEncodingOf: encoding.count))
    }

    /// `seal` at a given zstd level (and hash table); for tests of frames other levels wrote.
    static func seal(_ encoding: [UInt8], changeCount: UInt64, level: Int, hashLog: Int? = nil) throws -> [UInt8] {
        // Without zstd's checksum of the content: the frame's CRC-32 covers
        // the payload and the encoding has its own, and zstd's took 3% of
        // compressing automerge-paper's snapshot and 9% of decompressing it
        // (`HISTORY.md`, "Thirty-third session"). Frames written with it open as before.
        // The payload is compressed straight after the header, whose
        // checksum is filled in once the payload it covers is there.
        var header = ByteWriter()
        header.writeBytes(magic)
        header.writeBytes([UInt8(formatVersion & 0xFF), UInt8(formatVersion >> 8)])
        header.writeUInt64(changeCount)
        header.writeUInt64(UInt64(encoding.count))
        header.writeUInt32(0)
        var frame = try Zstd.compress(encoding, level: level, hashLog: hashLog, contentChecksum: false, after: header.bytes)
        let checksum = Self.checksum(of: frame)
        frame.withUnsafeMutableBytes { $0.storeBytes(of: checksum.littleEndian, toByteOffset: checksumOffset, as: UInt32.self) }
        return frame
    }

    /// The CRC-32 a frame's header holds: of the header before it, then the payload after it.
    private static func checksum(of frame: [UInt8]) -> UInt32 {
        CRC32.checksum(frame[headerSize...], continuing: CRC32.checksum(frame[..<checksumOffset]))
    }

    /// The document a frame holds, to be edited as `replica`: the encoding
    /// `open` gives, decoded without comparing its own CRC-32, which the
    /// frame's, over the payload it was decompressed from, covers
    /// (`Specs/storage.md`, "Which check covers a snapshot"). Throws `Error`
    /// for a frame that fails its checks, the decoder's `DecodingError`
    /// for an encoding that fails its.
    public static func document(in frame: [UInt8], replica: ReplicaID, limits: DecodingLimits) throws -> Document {
        try Document(snapshot: open(frame).encoding, replica: replica, limits: limits, checksum: .covered)
    }

    /// The document encoding inside a frame, after checking the magic, the
    /// version, the checksum and the declared size, and decompressing with
    /// that size as the bound.
    public static func open(_ frame: [UInt8]) throws(Error) -> (encoding: [UInt8], changeCount: UInt64) {
        guard frame.count > headerSize else { throw Error(reason: "\(frame.count) bytes, shorter than a frame") }
        guard Array(frame[0..<4]) == magic else { throw Error(reason: "wrong magic number") }
        var reader = ByteReader(Array(frame[4..<headerSize]))
        let version: UInt16
        let changeCount: UInt64
        let size: UInt64
        let checksum: UInt32
        do {
            let low = try reader.readByte(), high = try reader.readByte()
            version = UInt16(low) | UInt16(high) << 8
            changeCount = try reader.readUInt64("the change count")
            size = try reader.readUInt64("the uncompressed size")
            checksum = try reader.readUInt32("the checksum")
        } catch {
            throw Error(reason: error.description)
        }
        guard version == formatVersion else { throw Error(reason: "format version \(version), expected \(formatVersion)") }
        let payload = frame[headerSize...]
        guard Self.checksum(of: frame) == checksum else {
            throw Error(reason: "checksum mismatch")
        }
        guard size <= UInt64(maxUncompressedSize) else { throw Error(reason: "declares \(size) bytes, above the limit") }
        do {
            let encoding = try Zstd.decompress(payload, maxSize: Int(size))
            guard encoding.count == Int(size) else { throw Error(reason: "holds \(encoding.count) bytes, declares \(size)") }
            return (encoding, changeCount)
        } catch let error as Error {
            throw error
        } catch {
            throw Error(reason: "\(error)")
        }
    }
}
