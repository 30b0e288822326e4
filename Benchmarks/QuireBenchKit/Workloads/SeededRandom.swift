/// A small seeded generator (SplitMix64), so that a workload is the same
/// file for every seed on every machine: the peers read those files, they
/// never regenerate the edits themselves.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A lowercase ASCII letter: the synthetic workloads type only these (and
    /// spaces), so that positions mean the same in scalars, UTF-16 and UTF-8.
    public mutating func letter() -> Unicode.Scalar {
        Unicode.Scalar(UInt8(ascii: "a") + UInt8(Int.random(in: 0..<26, using: &self)))
    }

    public mutating func letters(_ count: Int) -> [Unicode.Scalar] {
        (0..<count).map { _ in letter() }
    }
}
