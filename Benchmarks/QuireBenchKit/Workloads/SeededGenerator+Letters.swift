import QuireTestSupport

/// Workloads come from the seeded generator tests use too (SplitMix64), so
/// a workload is the same file for every seed on every machine: the peers
/// read those files, they never regenerate the edits themselves.
extension SeededGenerator {
    /// A lowercase ASCII letter: the synthetic workloads type only these (and
    /// spaces), so that positions mean the same in scalars, UTF-16 and UTF-8.
    mutating func letter() -> Unicode.Scalar {
        Unicode.Scalar(UInt8(ascii: "a") + UInt8(Int.random(in: 0..<26, using: &self)))
    }

    mutating func letters(_ count: Int) -> [Unicode.Scalar] {
        (0..<count).map { _ in letter() }
    }
}
