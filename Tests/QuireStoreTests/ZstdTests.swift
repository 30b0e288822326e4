import CZstd
import QuireStore
import Testing

/// The CompressionError thrown by `body`, or nil (and a test failure) if it threw something else.
private func compressionError(_ body: () throws -> Void) -> CompressionError? {
    #expect(throws: CompressionError.self) { try body() }
}

/// A hand-made frame with one raw block, to state any header we like.
///
/// `descriptor` is the Frame_Header_Descriptor byte (RFC 8878, 3.1.1.1.1);
/// `window` the Window_Descriptor byte, if the descriptor asks for one;
/// `contentSize` the Frame_Content_Size field, little-endian.
private func craftedFrame(descriptor: UInt8, window: UInt8?, contentSize: [UInt8], block: [UInt8]) -> [UInt8] {
    let magic: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD]
    // Block header: Last_Block = 1, Block_Type = raw (0), Block_Size.
    let blockHeader = UInt32(1) | UInt32(block.count) << 3
    return magic + [descriptor] + (window.map { [$0] } ?? []) + contentSize
        + [UInt8(blockHeader & 0xFF), UInt8(blockHeader >> 8 & 0xFF), UInt8(blockHeader >> 16)]
        + block
}

/// Compresses with zstd's streaming API, `chunk` repeated `count` times,
/// declaring the total size only if `pledge` is set; nothing is held in
/// memory but one chunk and the (small) output.
private func streamCompress(chunk: [UInt8], count: Int, pledge: Bool) throws -> [UInt8] {
    let context = try #require(ZSTD_createCCtx())
    defer { ZSTD_freeCCtx(context) }
    if pledge { ZSTD_CCtx_setPledgedSrcSize(context, UInt64(chunk.count * count)) }
    var frame: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: ZSTD_CStreamOutSize())
    for index in 0..<count {
        let mode = index == count - 1 ? ZSTD_e_end : ZSTD_e_continue
        try chunk.withUnsafeBytes { source in
            var input = ZSTD_inBuffer(src: source.baseAddress, size: source.count, pos: 0)
            var remaining = 0
            repeat {
                try buffer.withUnsafeMutableBytes { target in
                    var output = ZSTD_outBuffer(dst: target.baseAddress, size: target.count, pos: 0)
                    remaining = ZSTD_compressStream2(context, &output, &input, mode)
                    try #require(ZSTD_isError(remaining) == 0)
                    frame += target.prefix(output.pos)
                }
            } while input.pos < input.size || (mode == ZSTD_e_end && remaining != 0)
        }
    }
    return frame
}

/// `Zstd.compress`'s frame made with a context of its own, as zstd's one-shot call does.
private func freshContextFrame(_ bytes: [UInt8], level: Int32) throws -> [UInt8] {
    let context = try #require(ZSTD_createCCtx())
    defer { ZSTD_freeCCtx(context) }
    ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level)
    ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1)
    var frame = [UInt8](repeating: 0, count: ZSTD_compressBound(bytes.count))
    let written = frame.withUnsafeMutableBytes { output in
        bytes.withUnsafeBytes { ZSTD_compress2(context, output.baseAddress, output.count, $0.baseAddress, $0.count) }
    }
    try #require(ZSTD_isError(written) == 0)
    return Array(frame.prefix(written))
}

@Suite struct ZstdTests {
    @Test(arguments: [0, 1, 1000, 300_000])
    func randomBytesRoundTrip(count: Int) throws {
        let bytes = pseudoRandomBytes(count: count, seed: UInt64(count))
        let frame = try Zstd.compress(bytes)
        #expect(try Zstd.decompress(frame, maxSize: count) == bytes)
    }

    @Test func largeCompressibleInputRoundTrips() throws {
        let bytes = [UInt8]((0..<8_000_000).map { UInt8(truncatingIfNeeded: $0 / 1000) })
        let frame = try Zstd.compress(bytes, level: 1)
        #expect(frame.count < bytes.count / 100)
        #expect(try Zstd.decompress(frame, maxSize: 8_000_000) == bytes)
    }

    /// A frame written after a prefix (a snapshot frame's header) is the
    /// frame written alone, the prefix before it untouched.
    @Test func aFrameAfterAPrefixIsTheFrameAlone() throws {
        let prefix: [UInt8] = Array("header".utf8)
        for bytes in [[], pseudoRandomBytes(count: 1000, seed: 7), [UInt8](repeating: 42, count: 300_000)] {
            let alone = try Zstd.compress(bytes, level: 2, contentChecksum: false)
            let after = try Zstd.compress(bytes, level: 2, contentChecksum: false, after: prefix)
            #expect(after == prefix + alone)
            #expect(try Zstd.decompress(after[prefix.count...], maxSize: bytes.count) == bytes)
        }
    }

    @Test func levelsOutOfRangeAreRejected() throws {
        #expect(compressionError { _ = try Zstd.compress([1], level: 1000) } == .invalidLevel(1000))
        #expect(try Zstd.decompress(Zstd.compress([1, 2], level: 19), maxSize: 2) == [1, 2])
    }

    @Test func contentLargerThanTheLimitIsRejected() throws {
        let frame = try Zstd.compress([UInt8](repeating: 7, count: 1000))
        #expect(compressionError { _ = try Zstd.decompress(frame, maxSize: 999) } == .contentTooLarge(declared: 1000, limit: 999))
        #expect(try Zstd.decompress(frame, maxSize: 1000).count == 1000)
    }

    @Test func truncatedFramesAreRejected() throws {
        let frame = try Zstd.compress(pseudoRandomBytes(count: 2000, seed: 1))
        for length in [0, 1, 3, 4, 5, 8, frame.count / 2, frame.count - 4, frame.count - 1] {
            let error = compressionError { _ = try Zstd.decompress(Array(frame.prefix(length)), maxSize: 2000) }
            #expect(error != nil, "prefix of \(length) bytes")
        }
    }

    @Test func bitFlipsAreDetected() throws {
        let original = Array("a short note, a short note, with some repetition".utf8)
        let frame = try Zstd.compress(original)
        for bit in 0..<frame.count * 8 {
            var damaged = frame
            damaged[bit / 8] ^= 1 << (bit % 8)
            // The content checksum leaves two outcomes: an error, or (for a
            // flip in a bit the decoder ignores) the original content.
            if let decoded = try? Zstd.decompress(damaged, maxSize: 1 << 20) {
                #expect(decoded == original, "flipped bit \(bit)")
            }
        }
    }

    @Test func trailingBytesAndSecondFramesAreRejected() throws {
        let frame = try Zstd.compress([1, 2, 3])
        #expect(compressionError { _ = try Zstd.decompress(frame + [0, 0, 0], maxSize: 3) } == .trailingData(byteCount: 3))
        #expect(compressionError { _ = try Zstd.decompress(frame + frame, maxSize: 6) } == .trailingData(byteCount: frame.count))
    }

    @Test func otherInputsAreNotFrames() {
        #expect(compressionError { _ = try Zstd.decompress([], maxSize: 10) } == .notAFrame)
        #expect(compressionError { _ = try Zstd.decompress(Array("plain text".utf8), maxSize: 10) } == .notAFrame)
        // A skippable frame (magic 0x184D2A50) holds no content.
        let skippable: [UInt8] = [0x50, 0x2A, 0x4D, 0x18, 2, 0, 0, 0, 9, 9]
        #expect(compressionError { _ = try Zstd.decompress(skippable, maxSize: 10) } == .notAFrame)
    }

    @Test func aFrameWithoutContentSizeIsRejected() throws {
        let frame = try streamCompress(chunk: [1, 2, 3], count: 2, pledge: false)
        #expect(compressionError { _ = try Zstd.decompress(frame, maxSize: 1 << 20) } == .unknownContentSize)
    }

    @Test func aBombIsRejectedBeforeDecoding() throws {
        // 200 MB of zeros compress to a few kilobytes.
        let bomb = try streamCompress(chunk: [UInt8](repeating: 0, count: 1 << 20), count: 200, pledge: true)
        #expect(bomb.count < 100_000)
        #expect(compressionError { _ = try Zstd.decompress(bomb, maxSize: 64 << 20) } == .contentTooLarge(declared: 200 << 20, limit: 64 << 20))
        // A 20-byte frame claiming an exabyte (8-byte content size field).
        let claim = craftedFrame(descriptor: 0xE0, window: nil, contentSize: [0, 0, 0, 0, 0, 0, 0, 0x10], block: [1, 2, 3])
        #expect(compressionError { _ = try Zstd.decompress(claim, maxSize: 1 << 30) } == .contentTooLarge(declared: 1 << 60, limit: 1 << 30))
    }

    @Test func aFrameAskingForAHugeWindowIsRejected() throws {
        let block = [UInt8](repeating: 5, count: 256)
        // Descriptor 0x40: 2-byte content size (value - 256 = 0), window descriptor present.
        let small = craftedFrame(descriptor: 0x40, window: 0x00, contentSize: [0, 0], block: block)
        #expect(try Zstd.decompress(small, maxSize: 256) == block)  // the crafted frame is valid
        // Window exponent 18: a 256 MiB window (2^28), just beyond windowLogMax.
        let huge = craftedFrame(descriptor: 0x40, window: 18 << 3, contentSize: [0, 0], block: block)
        #expect(compressionError { _ = try Zstd.decompress(huge, maxSize: 256) } == .windowTooLarge(windowSize: 1 << 28, limit: 1 << 27))
    }

    // Contexts are kept between calls (`Zstd`'s pool): what one call set or
    // left behind must not reach the next.
    @Test func aFrameDoesNotDependOnTheCallsBeforeIt() throws {
        let bytes = pseudoRandomBytes(count: 5000, seed: 3) + [UInt8](repeating: 1, count: 5000)
        let first = try Zstd.compress(bytes, level: 1)
        _ = try Zstd.compress(pseudoRandomBytes(count: 300_000, seed: 4), level: 19)
        #expect(try Zstd.compress(bytes, level: 1) == first)
        #expect(try Zstd.compress(bytes, level: 1) == freshContextFrame(bytes, level: 1))
    }

    @Test func aFailedDecompressionLeavesTheNextOneWhole() throws {
        let bytes = pseudoRandomBytes(count: 3000, seed: 5) + [UInt8](repeating: 2, count: 3000)
        let frame = try Zstd.compress(bytes)
        for offset in stride(from: 8, to: frame.count - 4, by: 7) {
            var damaged = frame
            damaged[offset] ^= 0xFF
            _ = try? Zstd.decompress(damaged, maxSize: bytes.count)
            #expect(try Zstd.decompress(frame, maxSize: bytes.count) == bytes, "after damage at \(offset)")
        }
    }

    @Test func concurrentCallsEachGetTheirOwnContext() async throws {
        let inputs = (0..<16).map { pseudoRandomBytes(count: 20_000 + $0 * 1000, seed: UInt64($0)) + [UInt8](repeating: 9, count: 4000) }
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for input in inputs {
                group.addTask {
                    for level in [1, 3, 1] {
                        let frame = try Zstd.compress(input, level: level)
                        guard try Zstd.decompress(frame, maxSize: input.count) == input else { return false }
                    }
                    return true
                }
            }
            for try await roundTripped in group { #expect(roundTripped) }
        }
    }

    @Test func aFrameLyingAboutItsSizeIsRejected() throws {
        let block = [UInt8](repeating: 5, count: 200)
        // Descriptor 0x20: single segment, 1-byte content size.
        #expect(try Zstd.decompress(craftedFrame(descriptor: 0x20, window: nil, contentSize: [200], block: block), maxSize: 255) == block)
        for declared: UInt8 in [100, 250] {
            let lying = craftedFrame(descriptor: 0x20, window: nil, contentSize: [declared], block: block)
            #expect(compressionError { _ = try Zstd.decompress(lying, maxSize: 255) } != nil, "declares \(declared)")
        }
    }
}
