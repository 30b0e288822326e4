/// SplitMix64: a small, fast, seedable generator, so that every random test
/// can be replayed from the seed it prints.
/// Shared by every test target (one generator, so seeds mean the same everywhere).
public struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// How many seeds a fuzz test runs: `QUIRE_FUZZ_SEEDS` when set, otherwise `default`.
public func fuzzSeedCount(default count: Int) -> Int {
    seedCount(default: count, variable: "QUIRE_FUZZ_SEEDS")
}

/// How many seeds a test runs: the environment variable `variable` when
/// set to a positive number, otherwise `default`.
public func seedCount(default count: Int, variable: String) -> Int {
    guard let raw = getenv(variable), let value = Int(String(cString: raw)), value > 0 else { return count }
    return value
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Text to insert: mostly ASCII, with accents, emoji and other non-BMP scalars mixed in.
public func randomText(_ rng: inout SeededGenerator, maxLength: Int = 4) -> String {
    let alphabet: [Unicode.Scalar] = ["a", "b", "c", "d", " ", "\n", "é", "ß", "中", "😀", "👋", "𝄞", "\u{1F3FD}"]
    var result = String.UnicodeScalarView()
    for _ in 0..<Int.random(in: 1...maxLength, using: &rng) { result.append(alphabet.randomElement(using: &rng)!) }
    return String(result)
}
