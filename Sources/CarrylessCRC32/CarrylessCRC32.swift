// CRC-32 (the polynomial of QuireCore's `CRC32`) by folding with the
// carry-less multiply (PCLMULQDQ), after "Fast CRC Computation for Generic
// Polynomials Using PCLMULQDQ Instruction" (Gopal, Ozturk et al., Intel,
// 2009): about half an instruction a byte, where the tables take 3.5.
//
// This is the only module compiled for a feature beyond the x86-64 baseline
// (Package.swift adds +pclmul to it alone), and the only one that imports
// `Builtin`: Swift has no per-function target attribute, clang's
// `_mm_clmulepi64_si128` is a macro Swift cannot import, and an
// `@_silgen_name("llvm.x86.pclmulqdq")` declaration loses the intrinsic's
// `immarg`, so only `Builtin.int_x86_pclmulqdq` in a module built with the
// feature compiles. The feature lets LLVM select the instruction where the
// code asks for it (in the release build `objdump -d` finds it in
// `register(after:_:)` alone). Callers go through `isAvailable` first, so a
// processor without PCLMULQDQ never runs `register(after:_:)`. Everything
// else it does is SSE2, the x86-64 baseline.

#if arch(x86_64)
import Builtin
import _Builtin_intrinsics.intel.cpuid

public enum CarrylessCRC32 {
    /// Whether this processor has PCLMULQDQ (CPUID leaf 1, ECX bit 1).
    public static let isAvailable: Bool = {
        var eax: UInt32 = 0, ebx: UInt32 = 0, ecx: UInt32 = 0, edx: UInt32 = 0
        guard __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 else { return false }
        return ecx & (1 << 1) != 0
    }()

    /// The fewest bytes `register(after:_:)` takes: four 16-byte blocks, the
    /// four folds it runs side by side.
    public static let shortestInput = 64

    /// The CRC register (not inverted) after `bytes`, from `register`.
    /// `bytes.count` is a multiple of 16, at least `shortestInput`. Only
    /// when `isAvailable`.
    ///
    /// Never inlined: its body must stay in this module, the one built with
    /// PCLMULQDQ.
    @inline(never)
    public static func register(after register: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        let count = bytes.count
        precondition(count >= shortestInput && count % 16 == 0, "whole 16-byte blocks, at least four")
        func block(at offset: Int) -> Pair { bytes.loadUnaligned(fromByteOffset: offset, as: Pair.self) }
        // Four 128-bit remainders over interleaved blocks, each folded 64
        // bytes forward per step, so four multiplies are in flight at once.
        var first = block(at: 0) ^ Pair(UInt64(register), 0)
        var second = block(at: 16), third = block(at: 32), fourth = block(at: 48)
        var offset = 64
        while offset + 64 <= count {
            first = fold(first, by: past64Bytes, onto: block(at: offset))
            second = fold(second, by: past64Bytes, onto: block(at: offset + 16))
            third = fold(third, by: past64Bytes, onto: block(at: offset + 32))
            fourth = fold(fourth, by: past64Bytes, onto: block(at: offset + 48))
            offset += 64
        }
        var remainder = fold(first, by: past16Bytes, onto: second)
        remainder = fold(remainder, by: past16Bytes, onto: third)
        remainder = fold(remainder, by: past16Bytes, onto: fourth)
        while offset < count {
            remainder = fold(remainder, by: past16Bytes, onto: block(at: offset))
            offset += 16
        }
        // 128 bits to 64, then 64 to the 32-bit register by Barrett reduction.
        remainder = Pair(remainder[1], 0) ^ product(remainder, past16Bytes, .lowByHigh)
        remainder = product(remainder & low32Bits, past8Bytes, .lowByLow) ^ shiftedRight32(remainder)
        let quotient = product(remainder & low32Bits, barrett, .lowByHigh) & low32Bits
        remainder ^= product(quotient, barrett, .lowByLow)
        return UInt32(truncatingIfNeeded: remainder[0] >> 32)
    }

    /// A 128-bit register as two 64-bit halves, low first.
    typealias Pair = SIMD2<UInt64>

    // The paper's constants for the bit-reflected polynomial 0x1DB710641, as
    // Linux's crc32-pclmul and Chromium's zlib have them: k1 and k2 carry a
    // remainder's halves 64 bytes on, k3 and k4 16 bytes, k5 the last 8.
    static let past64Bytes = Pair(0x1_5444_2BD4, 0x1_C6E4_1596)
    static let past16Bytes = Pair(0x1_7519_97D0, 0x0_CCAA_009E)
    static let past8Bytes = Pair(0x1_63CD_6124, 0)
    /// P itself and floor(x^64 / P), for the last reduction.
    static let barrett = Pair(0x1_DB71_0641, 0x1_F701_1641)
    static let low32Bits = Pair(0xFFFF_FFFF, 0xFFFF_FFFF)

    /// `remainder` carried 16·k bytes on (the distance `constants` are for) and added to `next`.
    @inline(__always)
    static func fold(_ remainder: Pair, by constants: Pair, onto next: Pair) -> Pair {
        product(remainder, constants, .lowByLow) ^ product(remainder, constants, .highByHigh) ^ next
    }

    /// Which 64-bit halves of its operands PCLMULQDQ multiplies, `a`'s first.
    enum Halves { case lowByLow, highByHigh, lowByHigh }

    /// The carry-less product of a half of `a` and a half of `b`. The
    /// instruction takes the choice as an immediate (bit 0: a's high half,
    /// bit 4: b's), a constant in the code: a literal in each case, not a
    /// value passed down.
    @inline(__always)
    static func product(_ a: Pair, _ b: Pair, _ halves: Halves) -> Pair {
        let (a, b) = (a._storage._value, b._storage._value)
        var product = Pair()
        switch halves {
        case .lowByLow: product._storage._value = Builtin.int_x86_pclmulqdq(a, b, Int8(0x00)._value)
        case .highByHigh: product._storage._value = Builtin.int_x86_pclmulqdq(a, b, Int8(0x11)._value)
        case .lowByHigh: product._storage._value = Builtin.int_x86_pclmulqdq(a, b, Int8(0x10)._value)
        }
        return product
    }

    /// The 128 bits shifted right by 32.
    @inline(__always)
    static func shiftedRight32(_ x: Pair) -> Pair {
        Pair(x[0] >> 32 | x[1] << 32, x[1] >> 32)
    }
}
#endif
