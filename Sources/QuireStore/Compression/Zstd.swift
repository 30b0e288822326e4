import CZstd
import Synchronization

/// Single-frame zstd compression with bounded decompression.
///
/// `compress` makes one frame that declares its content size and, unless
/// told not to, carries a checksum of the content. `decompress` accepts exactly one such frame and
/// never allocates more than `maxSize` bytes for the output, whatever the
/// input claims: a few hostile bytes cannot expand into gigabytes.
///
///     let frame = try Zstd.compress(snapshotBytes)
///     let bytes = try Zstd.decompress(frame, maxSize: 64 << 20)
public enum Zstd {
    /// The largest window, as a power of two (128 MiB), that a frame may
    /// require. zstd's own default limit is the same; setting it explicitly
    /// keeps the bound when the library's default changes. Frames made by
    /// `compress` stay below it at every level.
    public static let windowLogMax: Int32 = 27

    /// The four bytes that start every zstd frame (little-endian ZSTD_MAGICNUMBER).
    private static let magic: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD]
    /// ZSTD_CONTENTSIZE_UNKNOWN; the C macro is an expression Swift does not import.
    private static let contentSizeUnknown = UInt64.max

    /// Compresses `bytes` into one frame. Level 3 is zstd's default;
    /// higher levels are slower and smaller, negative ones faster.
    /// `contentChecksum` false leaves out the checksum of the content (4
    /// bytes, and a pass over the content both ways) for a caller whose own
    /// checksum covers the frame. The frame comes after `prefix`, written
    /// in place: a caller that puts a header before the frame (a snapshot
    /// frame) does not copy the compressed bytes into an array of its own.
    /// `hashLog`, if given, replaces the level's size of the match finder's
    /// hash table (2^`hashLog` entries); the frame reads the same either way.
    public static func compress(_ bytes: [UInt8], level: Int = 3, hashLog: Int? = nil, contentChecksum: Bool = true,
                                after prefix: [UInt8] = []) throws -> [UInt8] {
        guard (Int(ZSTD_minCLevel())...Int(ZSTD_maxCLevel())).contains(level) else {
            throw CompressionError.invalidLevel(level)
        }
        return try compressionContexts.withContext { context in
            // A kept context still holds the last call's parameters.
            try check(ZSTD_CCtx_reset(context, ZSTD_reset_session_and_parameters))
            try check(ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, Int32(level)))
            if let hashLog { try check(ZSTD_CCtx_setParameter(context, ZSTD_c_hashLog, Int32(hashLog))) }
            // The declared size is what lets `decompress` bound its allocation.
            try check(ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, 1))
            // A checksum of the content catches damage that still decodes.
            try check(ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, contentChecksum ? 1 : 0))

            let capacity = ZSTD_compressBound(bytes.count)
            return try [UInt8](unsafeUninitializedCapacity: prefix.count + capacity) { output, count in
                _ = output.initialize(from: prefix)
                let written = bytes.withUnsafeBytes { input in
                    ZSTD_compress2(context, output.baseAddress! + prefix.count, capacity, input.baseAddress, input.count)
                }
                try check(written)
                count = prefix.count + written
            }
        }
    }

    /// Whether `bytes` begin as a zstd frame does (its magic number), which
    /// tells a frame from other data stored in its place.
    public static func isFrame(_ bytes: some Sequence<UInt8>) -> Bool {
        bytes.starts(with: magic)
    }

    /// Decompresses one frame made by `compress` (or any zstd encoder that
    /// declares the content size), refusing content larger than `maxSize`.
    ///
    /// Throws a `CompressionError` for anything else: no declared size,
    /// a size above `maxSize`, a window above `windowLogMax`, a truncated or
    /// damaged frame, a checksum mismatch, or bytes after the frame. The
    /// checks on the header come before any allocation, so the work done on
    /// a hostile input is bounded by its own length and `maxSize`.
    public static func decompress(_ frame: [UInt8], maxSize: Int) throws -> [UInt8] {
        try decompress(frame[...], maxSize: maxSize)
    }

    /// The content size `frame`'s header declares, read without
    /// decompressing anything; nil when the bytes do not start with a
    /// frame header that declares one. What `decompress` would allocate,
    /// for a caller that must decide first whether it can afford it.
    public static func declaredContentSize(_ frame: ArraySlice<UInt8>) -> UInt64? {
        guard isFrame(frame) else { return nil }
        let size = frame.withUnsafeBytes { ZSTD_getFrameContentSize($0.baseAddress, $0.count) }
        // Above it lie ZSTD_CONTENTSIZE_ERROR and ZSTD_CONTENTSIZE_UNKNOWN.
        return size < contentSizeUnknown - 1 ? size : nil
    }

    /// `decompress(_:maxSize:)` of a frame inside larger bytes, without copying it out.
    public static func decompress(_ frame: ArraySlice<UInt8>, maxSize: Int) throws -> [UInt8] {
        precondition(maxSize >= 0, "maxSize must not be negative")
        // Rules out other formats, and skippable frames, which hold no content.
        guard isFrame(frame) else { throw CompressionError.notAFrame }
        return try frame.withUnsafeBytes { input in
            // 1. The header, checked before any allocation.
            var header = ZSTD_frameHeader()
            let status = ZSTD_getFrameHeader(&header, input.baseAddress, input.count)
            if ZSTD_isError(status) != 0 { throw CompressionError.corruptFrame(errorName(status)) }
            // A positive status is the header size zstd would need to read it all.
            guard status == 0 else { throw CompressionError.corruptFrame("the frame header is truncated") }
            guard header.frameContentSize != contentSizeUnknown else { throw CompressionError.unknownContentSize }
            guard header.frameContentSize <= UInt64(maxSize) else {
                throw CompressionError.contentTooLarge(declared: header.frameContentSize, limit: maxSize)
            }
            // The one-shot decoder below writes straight into the output and
            // so ignores the window limit; check it here, so that what is
            // accepted does not depend on which decoding API is used.
            guard header.windowSize <= 1 << windowLogMax else {
                throw CompressionError.windowTooLarge(windowSize: header.windowSize, limit: 1 << windowLogMax)
            }
            // 2. Exactly one frame: its end must be the end of the input.
            let frameLength = ZSTD_findFrameCompressedSize(input.baseAddress, input.count)
            if ZSTD_isError(frameLength) != 0 { throw CompressionError.corruptFrame(errorName(frameLength)) }
            guard frameLength == input.count else {
                throw CompressionError.trailingData(byteCount: input.count - frameLength)
            }
            // 3. Decode into a buffer of exactly the declared size; zstd fails
            // rather than write past it if the frame lies about its size.
            return try decompressionContexts.withContext { context in
                try check(ZSTD_DCtx_reset(context, ZSTD_reset_session_and_parameters))
                // Set as well, so that the limit holds if decoding ever streams.
                try check(ZSTD_DCtx_setParameter(context, ZSTD_d_windowLogMax, windowLogMax))
                let size = Int(header.frameContentSize)
                return try [UInt8](unsafeUninitializedCapacity: size) { output, count in
                    let produced = ZSTD_decompressDCtx(context, output.baseAddress, size, input.baseAddress, input.count)
                    if ZSTD_isError(produced) != 0 { throw CompressionError.corruptFrame(errorName(produced)) }
                    guard produced == size else { throw CompressionError.sizeMismatch(declared: size, produced: produced) }
                    count = produced
                }
            }
        }
    }

    /// Contexts kept between calls. A new context's tables are fresh
    /// memory, which the kernel hands out a page at a time: about a twentieth
    /// of sealing automerge-paper's snapshot went to making and freeing its
    /// compression context.
    private static let compressionContexts = ContextPool(
        kind: "compression", make: { ZSTD_createCCtx() }, free: { ZSTD_freeCCtx($0) })
    private static let decompressionContexts = ContextPool(
        kind: "decompression", make: { ZSTD_createDCtx() }, free: { ZSTD_freeDCtx($0) })

    private static func check(_ result: Int) throws {
        if ZSTD_isError(result) != 0 { throw CompressionError.zstdFailed(errorName(result)) }
    }

    private static func errorName(_ result: Int) -> String {
        String(cString: ZSTD_getErrorName(result))
    }
}

/// zstd contexts (compression or decompression) for one call at a time each,
/// kept for the next call. A thread takes an idle one or makes one, and puts
/// it back after use; at most `maxIdle` are kept, so that a burst of
/// concurrent calls does not hold its contexts' memory (a context sized for
/// a large input holds a few megabytes) for good.
private final class ContextPool: Sendable {
    static let maxIdle = 4

    private let kind: String
    private let make: @Sendable () -> OpaquePointer?
    private let free: @Sendable (OpaquePointer) -> Void
    private let idle = Mutex<[Idle]>([])

    /// An idle context, handed from the call that last used it to the next
    /// (the pool's lock orders the two).
    private struct Idle: @unchecked Sendable {
        let context: OpaquePointer
    }

    init(kind: String, make: @escaping @Sendable () -> OpaquePointer?, free: @escaping @Sendable (OpaquePointer) -> Void) {
        self.kind = kind
        self.make = make
        self.free = free
    }

    /// Runs `body` with a context no other call uses meanwhile.
    func withContext<Result>(_ body: (OpaquePointer) throws -> Result) throws -> Result {
        guard let context = idle.withLock({ $0.popLast()?.context }) ?? make() else {
            throw CompressionError.zstdFailed("cannot allocate a \(kind) context")
        }
        defer {
            let kept = idle.withLock { contexts in
                guard contexts.count < Self.maxIdle else { return false }
                contexts.append(Idle(context: context))
                return true
            }
            if !kept { free(context) }
        }
        return try body(context)
    }
}
