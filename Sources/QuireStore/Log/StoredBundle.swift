import QuireCore

/// How a log row (`changes.data`) or a parked change (`parked_changes.data`)
/// holds its `QCHG` bundle: as it is, or, from schema version 6 on, as one
/// zstd frame of it when the bundle is at least `compressionThreshold`
/// bytes and the frame is smaller. The sync server's store (`ServerLog`,
/// its `log` and `parked` rows, from its schema version 2) does the same. A reader tells the two apart by their
/// first four bytes: a bundle begins with `QCHG`, a frame with zstd's magic
/// number. The bundle's own CRC-32 checks what a frame decompresses to, so
/// the frame leaves out zstd's checksum of the content.
///
/// Only the store sees frames: what it hands on (`changes(since:)`, the
/// outbox, sync messages, the server's pages) is decoded changes or bundles.
///
///     let data = StoredBundle.stored(ChangeEncoding.encode(changes))
///     let changes = try ChangeEncoding.decode(StoredBundle.bundle(data))
public enum StoredBundle {
    /// Bundles below this many bytes are stored as they are. A CLI edit's
    /// or a keystroke's is about 100 bytes, which zstd shrinks by 3%; from
    /// 256 bytes up it saves a fifth, from 512 half (`HISTORY.md`,
    /// "Thirty-eighth session").
    public static let compressionThreshold = 256

    /// The largest bundle stored as a frame, and the most a frame may
    /// declare: a frame declaring more is damage, refused before anything
    /// is allocated for it. A larger bundle is stored as it is.
    public static let maxCompressedSize = 512 << 20

    /// zstd's fastest level: a catch-up compresses in its transaction
    /// (rustcode's 624 KB history), and level 3 was 1.9 times as slow for
    /// 7% fewer bytes.
    static let compressionLevel = 1

    /// What a row stores for `bundle`: a frame of it when that pays, else
    /// the bundle itself.
    public static func stored(_ bundle: [UInt8]) -> [UInt8] {
        guard (compressionThreshold...maxCompressedSize).contains(bundle.count),
              let frame = try? Zstd.compress(bundle, level: compressionLevel, contentChecksum: false),
              frame.count < bundle.count else { return bundle }
        return frame
    }

    /// The bundle a row holds (`stored`'s inverse); a frame that does not
    /// decompress is a `DecodingError`, as a damaged bundle is, so that the
    /// row is reported as damaged.
    public static func bundle(_ data: [UInt8]) throws(DecodingError) -> [UInt8] {
        guard Zstd.isFrame(data) else { return data }
        do {
            return try Zstd.decompress(data, maxSize: maxCompressedSize)
        } catch {
            throw DecodingError.invalid("the compressed row does not decompress (\(error))")
        }
    }
}
