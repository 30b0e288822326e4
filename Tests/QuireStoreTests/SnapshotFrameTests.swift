import QuireCore
import Testing
@testable import QuireStore

@Suite struct SnapshotFrameTests {
    static func sampleDocument() throws -> Document {
        var document = Document(replica: ReplicaID(3))
        try document.transact { tx in
            let text = try tx.putObject(.root, key: "body", kind: .text)
            try tx.insertText(text, at: 0, "Hello, wörld 😀")
            try tx.put(.root, key: "title", .string("greeting"))
        }
        try document.transact { tx in try tx.remove(.root, key: "title") }
        return document
    }

    @Test func roundTrip() throws {
        let encoding = try Self.sampleDocument().encodeSnapshot(includeHistory: false)
        let frame = try SnapshotFrame.seal(encoding, changeCount: 2)
        #expect(Array(frame[0..<4]) == Array("QSNP".utf8))
        let opened = try SnapshotFrame.open(frame)
        #expect(opened.encoding == encoding)
        #expect(opened.changeCount == 2)
    }

    /// The header of `Specs/storage.md`'s "Snapshot frame" table, byte by
    /// byte: magic, version 1 (u16 LE), change count (u64 LE), the encoding's
    /// size (u64 LE), CRC-32 of bytes 0..<22 then the payload (u32 LE), and a
    /// payload of one zstd frame without zstd's content checksum.
    @Test func theHeaderIsLaidOutAsTheSpecSays() throws {
        let encoding = try Self.sampleDocument().encodeSnapshot(includeHistory: false)
        let frame = try SnapshotFrame.seal(encoding, changeCount: 0x0102)
        let size = UInt64(encoding.count)
        #expect(Array(frame[0..<6]) == [0x51, 0x53, 0x4E, 0x50, 1, 0])
        #expect(Array(frame[6..<14]) == [0x02, 0x01, 0, 0, 0, 0, 0, 0])
        #expect(Array(frame[14..<22]) == (0..<8).map { UInt8(truncatingIfNeeded: size >> (8 * $0)) })
        let payload = Array(frame[26...])
        let crc = CRC32.checksum(frame[26...], continuing: CRC32.checksum(frame[0..<22]))
        #expect(Array(frame[22..<26]) == (0..<4).map { UInt8(truncatingIfNeeded: crc >> (8 * UInt32($0))) })
        #expect(try Zstd.decompress(payload, maxSize: encoding.count) == encoding)
        #expect(payload[4] & 0b100 == 0)  // the frame header's Content_Checksum_flag
    }

    @Test func everyBitFlipAndEveryTruncationIsRejected() throws {
        let frame = try SnapshotFrame.seal(Self.sampleDocument().encodeSnapshot(includeHistory: false), changeCount: 2)
        for bit in 0..<(frame.count * 8) {
            var damaged = frame
            damaged[bit / 8] ^= 1 << (bit % 8)
            #expect(throws: SnapshotFrame.Error.self) { try SnapshotFrame.open(damaged) }
        }
        for length in 0..<frame.count {
            #expect(throws: SnapshotFrame.Error.self) { try SnapshotFrame.open(Array(frame[0..<length])) }
        }
        #expect(throws: SnapshotFrame.Error.self) { try SnapshotFrame.open(frame + [0]) }
    }

    /// `Specs/storage.md`, "Which check covers a snapshot": `document(in:)`,
    /// the store's way in, refuses a frame damaged anywhere, header or
    /// payload, with the frame's error, before the encoding is read: the
    /// frame's CRC-32 is the check there (a history's bundles included).
    @Test func aFrameDamagedAnywhereIsRefusedWithTheFramesError() throws {
        let frame = try SnapshotFrame.seal(Self.sampleDocument().encodeSnapshot(includeHistory: true), changeCount: 2)
        for index in frame.indices {
            for bit in [0, 5] {
                var damaged = frame
                damaged[index] ^= 1 << bit
                #expect(throws: SnapshotFrame.Error.self, "byte \(index)") {
                    try SnapshotFrame.document(in: damaged, replica: ReplicaID(4), limits: .default)
                }
            }
        }
        #expect(throws: SnapshotFrame.Error.self) {
            try SnapshotFrame.document(in: Array(frame.dropLast()), replica: ReplicaID(4), limits: .default)
        }
    }

    /// The frame's CRC-32, over the payload the encoding is decompressed
    /// from, covers every byte of it, so the encoding's own is not compared
    /// again: one sealed in a frame with its own checksum wrong loads
    /// through the frame, while the same encoding handed in alone is refused.
    @Test func theFramesChecksumStandsForTheEncodingsOwn() throws {
        let document = try Self.sampleDocument()
        var encoding = document.encodeSnapshot(includeHistory: false)
        encoding[encoding.count - 1] ^= 0x01
        #expect(throws: DecodingError.checksumMismatch) { try Document(snapshot: encoding, replica: ReplicaID(4)) }
        let frame = try SnapshotFrame.seal(encoding, changeCount: 2)
        let loaded = try SnapshotFrame.document(in: frame, replica: ReplicaID(4), limits: .default)
        #expect(loaded.encodeSnapshot(includeHistory: false) == document.encodeSnapshot(includeHistory: false))
    }

    /// Text-like bytes: words of a small vocabulary in a pseudo-random
    /// order, which zstd's levels compress differently (random bytes would
    /// be stored raw at every level).
    static func wordSoup(count: Int, seed: UInt64) -> [UInt8] {
        let words = ["the", "snapshot", "of", "a", "document", "holds", "its", "history", "and", "state", "text"].map { Array("\($0) ".utf8) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 16)
        for choice in pseudoRandomBytes(count: count, seed: seed) where bytes.count < count {
            bytes += words[Int(choice) % words.count]
        }
        return Array(bytes.prefix(count))
    }

    /// Level 2 writes a snapshot faster than level 3 for a few percent more
    /// bytes; past `levelTwoLimit` level 3 is the faster one.
    @Test func theLevelFollowsTheEncodingsSize() throws {
        for count in [300_000, SnapshotFrame.levelTwoLimit, SnapshotFrame.levelTwoLimit + 1] {
            let encoding = Self.wordSoup(count: count, seed: UInt64(count))
            let payload = Array(try SnapshotFrame.seal(encoding, changeCount: 1)[SnapshotFrame.headerSize...])
            let level = count <= SnapshotFrame.levelTwoLimit ? 2 : 3
            #expect(payload == (try Zstd.compress(encoding, level: level, contentChecksum: false)), "\(count) bytes")
            #expect(payload != (try Zstd.compress(encoding, level: 5 - level, contentChecksum: false)), "\(count) bytes")
        }
    }

    /// An encoding of at most 16 KiB is compressed with a hash table of
    /// 2^13 entries, not level 2's 2^15; a larger one with its level's own.
    /// The frames open to the encoding either way. (Up to 4 KiB zstd
    /// shrinks the table to 2^13 or less by itself: the same frame.)
    @Test func smallEncodingsAreCompressedWithASmallerHashTable() throws {
        for count in [6_000, 16 << 10, (16 << 10) + 1] {
            let encoding = Self.wordSoup(count: count, seed: UInt64(count))
            let frame = try SnapshotFrame.seal(encoding, changeCount: 1)
            let payload = Array(frame[SnapshotFrame.headerSize...])
            let hashLog = count <= 16 << 10 ? 13 : nil
            #expect(payload == (try Zstd.compress(encoding, level: 2, hashLog: hashLog, contentChecksum: false)), "\(count) bytes")
            if hashLog != nil {
                #expect(payload != (try Zstd.compress(encoding, level: 2, contentChecksum: false)), "\(count) bytes")
            }
            #expect(try SnapshotFrame.open(frame).encoding == encoding)
        }
    }

    /// Frames written before the level followed the size (level 3 for every
    /// snapshot) still open, as do frames of any other level.
    @Test func framesOfEveryLevelOpen() throws {
        let encoding = try Self.sampleDocument().encodeSnapshot(includeHistory: false) + Self.wordSoup(count: 100_000, seed: 7)
        for level in [-5, 1, 2, 3, 19] {
            let frame = try SnapshotFrame.seal(encoding, changeCount: 2, level: level)
            let opened = try SnapshotFrame.open(frame)
            #expect(opened.encoding == encoding, "level \(level)")
            #expect(opened.changeCount == 2)
        }
    }

    /// The payload leaves out zstd's checksum of the content (bit 2 of the
    /// zstd frame's header descriptor, after its 4-byte magic number): the
    /// frame's CRC-32 covers the payload, and the encoding has its own.
    @Test func thePayloadCarriesNoContentChecksum() throws {
        let encoding = try Self.sampleDocument().encodeSnapshot(includeHistory: false)
        let frame = try SnapshotFrame.seal(encoding, changeCount: 2)
        #expect(frame[SnapshotFrame.headerSize + 4] & 0b100 == 0)
        #expect(try Zstd.compress(encoding, level: 2).count == frame.count - SnapshotFrame.headerSize + 4)
    }

    /// Frames written before, whose payload carries zstd's checksum of the
    /// content, still open; one whose content no longer matches that
    /// checksum is refused.
    @Test func framesWithAContentChecksumOpen() throws {
        let encoding = try Self.sampleDocument().encodeSnapshot(includeHistory: false)
        let payload = try Zstd.compress(encoding, level: 2)
        #expect(payload[4] & 0b100 != 0)
        let frame = Self.frame(payload: payload, declaring: UInt64(encoding.count))
        #expect(try SnapshotFrame.open(frame).encoding == encoding)
        var damaged = payload
        damaged[damaged.count - 1] ^= 1  // the checksum's last byte
        #expect(throws: SnapshotFrame.Error.self) {
            try SnapshotFrame.open(Self.frame(payload: damaged, declaring: UInt64(encoding.count)))
        }
    }

    /// A frame around `payload`, as `seal` lays it out, that declares
    /// `size` uncompressed bytes and format `version`, with its checksum right.
    static func frame(payload: [UInt8], declaring size: UInt64, version: UInt16 = SnapshotFrame.formatVersion) -> [UInt8] {
        var header = SnapshotFrame.magic + [UInt8(version & 0xFF), UInt8(version >> 8)]
        for value in [0, size] {
            for index in 0..<8 { header.append(UInt8(truncatingIfNeeded: value >> (8 * index))) }
        }
        let checksum = CRC32.checksum(header + payload)
        for index in 0..<4 { header.append(UInt8(truncatingIfNeeded: checksum >> (8 * index))) }
        return header + payload
    }

    /// A frame of [1, 2, 3] that declares `size` uncompressed bytes and
    /// format `version`, with its checksum right.
    static func frame(declaring size: UInt64 = 3, version: UInt16 = SnapshotFrame.formatVersion) throws -> [UInt8] {
        let sealed = try SnapshotFrame.seal([1, 2, 3], changeCount: 0)
        return frame(payload: Array(sealed[SnapshotFrame.headerSize...]), declaring: size, version: version)
    }

    /// A frame whose checksum is right but which declares more than the cap
    /// is refused before anything is decompressed or allocated.
    @Test func anOversizedDeclarationIsRefused() throws {
        let size = UInt64(SnapshotFrame.maxUncompressedSize + 1)
        #expect(throws: SnapshotFrame.Error(reason: "declares \(size) bytes, above the limit")) {
            try SnapshotFrame.open(Self.frame(declaring: size))
        }
    }

    /// A frame must hold exactly the size it declares, even with its
    /// checksum right: less is refused, and more stops the decompression at
    /// the declared size.
    @Test func aFrameHoldingOtherThanItDeclaresIsRefused() throws {
        #expect(try SnapshotFrame.open(Self.frame(declaring: 3)).encoding == [1, 2, 3])
        #expect(throws: SnapshotFrame.Error(reason: "holds 3 bytes, declares 4")) { try SnapshotFrame.open(Self.frame(declaring: 4)) }
        #expect(throws: SnapshotFrame.Error.self) { try SnapshotFrame.open(Self.frame(declaring: 2)) }
    }

    /// A frame of another format version is refused by name, not read as
    /// this one, even with its checksum right.
    @Test func aFrameOfAnotherFormatVersionIsRefused() throws {
        #expect(throws: SnapshotFrame.Error(reason: "format version 2, expected 1")) { try SnapshotFrame.open(Self.frame(version: 2)) }
    }
}
