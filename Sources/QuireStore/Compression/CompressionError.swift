/// Why `Zstd.compress` or `Zstd.decompress` failed.
///
/// Decompression errors mean the input is damaged or hostile; none of them
/// leaves anything half-decoded behind.
public enum CompressionError: Error, Equatable, DescribedError, Sendable {
    /// The level is outside zstd's range (`ZSTD_minCLevel()...ZSTD_maxCLevel()`).
    case invalidLevel(Int)
    /// zstd failed to compress, or to set up a (de)compression context; the
    /// reason is zstd's.
    case zstdFailed(String)
    /// The input does not start with a zstd frame header.
    case notAFrame
    /// The frame header does not say how large the content is, so its size
    /// cannot be checked before decoding.
    case unknownContentSize
    /// The frame says its content is larger than the caller allows.
    case contentTooLarge(declared: UInt64, limit: Int)
    /// The frame needs a larger window (history buffer) than `Zstd.windowLogMax` allows.
    case windowTooLarge(windowSize: UInt64, limit: UInt64)
    /// Bytes follow the end of the frame (garbage, or a second frame).
    case trailingData(byteCount: Int)
    /// The frame is cut short or damaged; the reason is zstd's.
    case corruptFrame(String)
    /// The frame decoded to another size than its header declared.
    case sizeMismatch(declared: Int, produced: Int)

    public var description: String {
        switch self {
        case .invalidLevel(let level):
            "zstd compression level \(level) is out of range"
        case .zstdFailed(let reason):
            "zstd failed: \(reason)"
        case .notAFrame:
            "not a zstd frame: the input is too short or does not start with the zstd magic number"
        case .unknownContentSize:
            "the zstd frame does not declare its content size, so it cannot be decompressed safely"
        case .contentTooLarge(let declared, let limit):
            "the zstd frame declares \(declared) bytes of content, more than the limit of \(limit) bytes"
        case .windowTooLarge(let windowSize, let limit):
            "the zstd frame needs a window of \(windowSize) bytes, more than the limit of \(limit) bytes"
        case .trailingData(let byteCount):
            "\(byteCount) unexpected bytes follow the zstd frame"
        case .corruptFrame(let reason):
            "the zstd frame is truncated or corrupt: \(reason)"
        case .sizeMismatch(let declared, let produced):
            "the zstd frame declared \(declared) bytes but decoded to \(produced)"
        }
    }
}
