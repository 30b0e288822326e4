import Foundation

/// Runs `body` with the path of a new empty directory, removed afterwards.
func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let path = NSTemporaryDirectory() + "quire-store-tests-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

/// Deterministic pseudo-random bytes (xorshift64*), so failures repeat.
func pseudoRandomBytes(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed | 1
    return (0..<count).map { _ in
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return UInt8(truncatingIfNeeded: (state &* 0x2545_F491_4F6C_DD1D) >> 56)
    }
}
