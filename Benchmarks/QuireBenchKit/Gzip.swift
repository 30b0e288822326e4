import CZlib

/// Why gzip data could not be decompressed.
public struct GzipError: Error, Equatable, CustomStringConvertible {
    public var description: String
}

/// gunzip through the system zlib.
public enum Gzip {
    /// Output cap: the traces are a few MB, and a hostile or corrupt file must
    /// not be able to expand into all of memory.
    public static let defaultOutputLimit = 1 << 30

    /// True when `bytes` starts with the gzip magic number (1f 8b).
    public static func hasMagic(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b
    }

    /// Decompresses a gzip file's bytes. Several gzip members one after the
    /// other (what `cat a.gz b.gz` makes) decompress to their concatenation,
    /// as with `gzip -d`.
    public static func decompress(_ input: [UInt8], outputLimit: Int = defaultOutputLimit) throws(GzipError) -> [UInt8] {
        guard hasMagic(input) else { throw GzipError(description: "not gzip data (no 1f 8b magic number)") }
        var stream = z_stream()
        // 16 + MAX_WBITS: expect a gzip header and trailer, not a raw zlib stream.
        // `inflateInit2` is a C macro, so call the function it expands to.
        guard inflateInit2_(&stream, 16 + MAX_WBITS, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw GzipError(description: "zlib failed to initialise")
        }
        defer { inflateEnd(&stream) }

        var output: [UInt8] = []
        output.reserveCapacity(min(outputLimit, input.count * 8))
        let chunkSize = 1 << 16
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        var status: Int32 = Z_OK

        try input.withUnsafeBufferPointer { (inputBuffer) throws(GzipError) in
            stream.next_in = UnsafeMutablePointer(mutating: inputBuffer.baseAddress)
            stream.avail_in = UInt32(inputBuffer.count)
            while true {
                let produced = chunk.withUnsafeMutableBufferPointer { chunkBuffer -> Int in
                    stream.next_out = chunkBuffer.baseAddress
                    stream.avail_out = UInt32(chunkSize)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return chunkSize - Int(stream.avail_out)
                }
                guard output.count + produced <= outputLimit else {
                    throw GzipError(description: "decompressed data exceeds the limit of \(outputLimit) bytes")
                }
                output.append(contentsOf: chunk[0..<produced])

                switch status {
                case Z_STREAM_END:
                    // Another member may follow; anything else after the end is an error.
                    guard stream.avail_in > 0 else { return }
                    let rest = UnsafeBufferPointer(start: stream.next_in, count: Int(stream.avail_in))
                    guard rest.count >= 2, rest[0] == 0x1f, rest[1] == 0x8b else {
                        throw GzipError(description: "unexpected data after the end of the gzip stream")
                    }
                    inflateReset(&stream)
                case Z_OK:
                    continue
                case Z_BUF_ERROR where stream.avail_in == 0:
                    // No progress possible and no input left: the stream stops early.
                    throw GzipError(description: "truncated gzip data (the stream ends before its trailer)")
                default:
                    let detail = stream.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                    throw GzipError(description: "corrupt gzip data (\(detail))")
                }
            }
        }
        return output
    }
}
