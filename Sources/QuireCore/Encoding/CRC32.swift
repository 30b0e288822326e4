#if arch(x86_64)
import CarrylessCRC32
#endif

/// CRC-32 (IEEE 802.3, the checksum of zlib and PNG), which every Quire
/// binary format ends with to detect damage.
///
/// A store's snapshots are sealed (the encoding, then its frame) every time
/// one is saved and their frames checked every time a document loads, so
/// the checksum is on both paths. On an x86-64 processor
/// with PCLMULQDQ the whole 16-byte blocks of an input of 64 bytes or more
/// are folded with the carry-less multiply (`CarrylessCRC32`, about half
/// an instruction a byte); elsewhere, and for the bytes left, tables:
/// sixteen bytes at a time ("slicing by 16"), and on a long input over
/// three thirds at once, joined at the end, as one chain of table lookups
/// waits on the last where three keep the processor busy.
public enum CRC32 {
    /// `tables[k][b]`: the CRC of byte `b` followed by `k` zero bytes.
    static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 16 * 256)
        for index in 0..<256 {
            var crc = UInt32(index)
            for _ in 0..<8 { crc = crc & 1 == 1 ? polynomial ^ (crc >> 1) : crc >> 1 }
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

    /// The polynomial, bit-reversed: bit 31 is x^0.
    static let polynomial: UInt32 = 0xEDB8_8320

    /// Below this many bytes a third, joining the thirds costs more than it saves.
    static let shortestThird = 4096

    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    /// The checksum of `bytes`, or, given the checksum of what precedes
    /// them, of the two together: a checksum over pieces without joining them.
    public static func checksum(_ bytes: ArraySlice<UInt8>, continuing previous: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, continuing: previous) }
    }

    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
        guard let folded = foldedRegister(after: ~previous, bytes) else {
            return checksumWithTables(bytes, continuing: previous)
        }
        return checksumWithTables(UnsafeRawBufferPointer(rebasing: bytes[folded.count...]), continuing: ~folded.register)
    }

    /// The register after the whole 16-byte blocks of `bytes` and how many
    /// bytes that is, folded with the carry-less multiply; nil where the
    /// processor has none or `bytes` is too short for it.
    static func foldedRegister(after register: UInt32, _ bytes: UnsafeRawBufferPointer) -> (register: UInt32, count: Int)? {
        #if arch(x86_64)
        guard bytes.count >= CarrylessCRC32.shortestInput, CarrylessCRC32.isAvailable else { return nil }
        let count = bytes.count / 16 * 16
        return (CarrylessCRC32.register(after: register, UnsafeRawBufferPointer(rebasing: bytes[..<count])), count)
        #else
        return nil
        #endif
    }

    /// `checksum(_:continuing:)` with the tables alone, as on a processor
    /// without the carry-less multiply.
    static func checksumWithTables(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
        tables.withUnsafeBufferPointer { table in
            var crc = ~previous
            var index = 0
            let count = bytes.count
            let third = count / 48 * 16
            if third >= shortestThird {
                // The second and third thirds start from zero; shifting a
                // CRC past n more bytes is a product with x^(8n) mod P.
                var second: UInt32 = 0, last: UInt32 = 0
                while index < third {
                    crc = sixteenBytes(at: index, of: bytes, after: crc, table)
                    second = sixteenBytes(at: third + index, of: bytes, after: second, table)
                    last = sixteenBytes(at: 2 * third + index, of: bytes, after: last, table)
                    index += 16
                }
                let shift = powerOfX(eightTimes: third)
                crc = product(product(crc, shift) ^ second, shift) ^ last
                index = 3 * third
            }
            while index + 16 <= count {
                crc = sixteenBytes(at: index, of: bytes, after: crc, table)
                index += 16
            }
            while index < count {
                crc = table[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
                index += 1
            }
            return ~crc
        }
    }

    /// The checksum of any bytes followed by their own checksum (little-endian).
    static let residue: UInt32 = 0x2144_DF1C

    /// The checksum of `bytes`, in which each of `selfChecked` (ascending,
    /// apart) ends with the checksum of the rest of it, as a sealed Quire
    /// encoding does: those pieces are not read, their checksum being
    /// `residue`. A snapshot's body is mostly its history's sealed bundles.
    public static func checksum(_ bytes: UnsafeRawBufferPointer, selfChecked: [Range<Int>]) -> UInt32 {
        var crc: UInt32 = 0
        var start = 0
        for piece in selfChecked {
            crc = checksum(UnsafeRawBufferPointer(rebasing: bytes[start..<piece.lowerBound]), continuing: crc)
            // The checksum of two pieces joined: the first's shifted past the second, plus the second's.
            crc = product(crc, powerOfX(eightTimes: piece.count)) ^ residue
            start = piece.upperBound
        }
        return checksum(UnsafeRawBufferPointer(rebasing: bytes[start...]), continuing: crc)
    }

    /// The CRC register after the sixteen bytes at `offset`: byte k goes
    /// through the table of the 15 - k zero bytes that follow it, and the
    /// register so far joins the first four.
    @inline(__always)
    private static func sixteenBytes(at offset: Int, of bytes: UnsafeRawBufferPointer, after crc: UInt32,
                                     _ table: UnsafeBufferPointer<UInt32>) -> UInt32 {
        let low = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) ^ UInt64(crc)
        let high = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
        var next: UInt32 = 0
        for k in 0..<8 {
            next ^= table[(15 - k) * 256 + Int(truncatingIfNeeded: low >> UInt64(8 * k)) & 0xFF]
            next ^= table[(7 - k) * 256 + Int(truncatingIfNeeded: high >> UInt64(8 * k)) & 0xFF]
        }
        return next
    }

    /// `a * b mod P`, both bit-reversed polynomials.
    static func product(_ a: UInt32, _ b: UInt32) -> UInt32 {
        var a = a, b = b, product: UInt32 = 0
        while a != 0 {
            if a & 0x8000_0000 != 0 { product ^= b }
            a <<= 1
            b = b & 1 != 0 ? (b >> 1) ^ polynomial : b >> 1
        }
        return product
    }

    /// `x^(8n) mod P`: the product of `powersOfX` for the bits set in n.
    static func powerOfX(eightTimes n: Int) -> UInt32 {
        var result: UInt32 = 0x8000_0000  // x^0
        var bit = 0
        var n = n
        while n > 0 {
            if n & 1 != 0 { result = product(result, powersOfX[bit]) }
            n >>= 1
            bit += 1
        }
        return result
    }

    /// `powersOfX[k]`: x^(8 * 2^k) mod P, each the square of the one before.
    static let powersOfX: [UInt32] = {
        var powers: [UInt32] = [0x0080_0000]  // x^8
        for _ in 1..<Int.bitWidth { powers.append(product(powers.last!, powers.last!)) }
        return powers
    }()
}
