/// CRC-32 (IEEE 802.3, the checksum of zlib and PNG), which every Quire
/// binary format ends with to detect damage.
///
/// Computed sixteen bytes at a time ("slicing by 16"): snapshots are checked
/// every time a document loads, so this runs at memory speed rather than a
/// table lookup per byte.
public enum CRC32 {
    /// `tables[k][b]`: the CRC of byte `b` followed by `k` zero bytes.
    static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 16 * 256)
        for index in 0..<256 {
            var crc = UInt32(index)
            for _ in 0..<8 { crc = crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
            tables[index] = crc
        }
        for slice in 1..<16 {
            for index in 0..<256 {
                let previous = tables[(slice - 1) * 256 + index]
                tables[slice * 256 + index] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    /// The checksum of `bytes`, or, given the checksum of what precedes
    /// them, of the two together: a checksum over pieces without joining them.
    public static func checksum(_ bytes: ArraySlice<UInt8>, continuing previous: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, continuing: previous) }
    }

    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
        tables.withUnsafeBufferPointer { table in
            var crc = ~previous
            var index = 0
            let count = bytes.count
            while index + 16 <= count {
                // Byte k of the sixteen goes through the table of the 15 - k
                // zero bytes that follow it; the CRC so far joins the first four.
                let low = crc ^ (UInt32(bytes[index]) | UInt32(bytes[index + 1]) << 8
                                 | UInt32(bytes[index + 2]) << 16 | UInt32(bytes[index + 3]) << 24)
                var next = table[15 * 256 + Int(low & 0xFF)] ^ table[14 * 256 + Int((low >> 8) & 0xFF)]
                    ^ table[13 * 256 + Int((low >> 16) & 0xFF)] ^ table[12 * 256 + Int(low >> 24)]
                for k in 4..<16 { next ^= table[(15 - k) * 256 + Int(bytes[index + k])] }
                crc = next
                index += 16
            }
            while index < count {
                crc = table[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
                index += 1
            }
            return ~crc
        }
    }
}
