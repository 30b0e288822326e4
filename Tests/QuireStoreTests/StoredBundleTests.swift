import QuireCore
import QuireStore
import Testing

/// How a log row holds its bundle: as it is when small, as a zstd frame
/// when large and compressible (`Specs/storage.md`, "Store schema").
@Suite struct StoredBundleTests {
    /// A bundle of one change inserting `text`.
    static func bundle(inserting text: String) throws -> [UInt8] {
        var document = Document(replica: ReplicaID(9))
        try document.transact { tx in try tx.insertText(tx.putObject(.root, key: "body", kind: .text), at: 0, text) }
        return ChangeEncoding.encode([document.lastChange!])
    }

    @Test func aSmallBundleIsStoredAsItIs() throws {
        let bundle = try Self.bundle(inserting: "milk")
        #expect(bundle.count < StoredBundle.compressionThreshold)
        #expect(StoredBundle.stored(bundle) == bundle)
        #expect(try StoredBundle.bundle(bundle) == bundle)
    }

    @Test func aLargeBundleIsStoredAsAFrameThatReadsBack() throws {
        let bundle = try Self.bundle(inserting: String(repeating: "a line of a note, typed again. ", count: 40))
        let stored = StoredBundle.stored(bundle)
        #expect(Zstd.isFrame(stored) && stored.count < bundle.count / 4)
        #expect(try StoredBundle.bundle(stored) == bundle)
    }

    /// Incompressible bytes (inserted as a `bytes` value) gain nothing: stored as they are.
    @Test func aBundleZstdDoesNotShrinkIsStoredAsItIs() throws {
        var random = SystemRandomNumberGenerator()
        var document = Document(replica: ReplicaID(9))
        try document.transact { tx in try tx.put(.root, key: "k", .bytes((0..<2_000).map { _ in random.next() })) }
        let bundle = ChangeEncoding.encode([document.lastChange!])
        #expect(StoredBundle.stored(bundle) == bundle)
    }

    /// A frame is decompressed only up to `maxCompressedSize`, whatever it
    /// declares; a damaged one is a `DecodingError`, as a damaged bundle is.
    @Test func aDamagedOrOversizedFrameIsADecodingError() throws {
        // zstd's magic, a header declaring the size in 8 bytes (single segment), one raw block of 3 bytes.
        let declared = UInt64(StoredBundle.maxCompressedSize + 1)
        let large: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0xE0] + withUnsafeBytes(of: declared.littleEndian, Array.init)
            + [0x19, 0x00, 0x00, 1, 2, 3]
        #expect {
            _ = try StoredBundle.bundle(large)
        } throws: { error in
            "\(error)".contains("the compressed row does not decompress") && "\(error)".contains("\(StoredBundle.maxCompressedSize)")
        }
        var damaged = StoredBundle.stored(try Self.bundle(inserting: String(repeating: "abc ", count: 200)))
        damaged.removeLast(3)
        #expect(throws: DecodingError.self) { try StoredBundle.bundle(damaged) }
    }
}
