/// The identity of one replica: a store on one machine.
///
/// A replica id is a random 64-bit number made once per store (see
/// `Specs/crdt.md`, "Replicas"). The core never makes one itself, because it
/// has no randomness: callers pass it in.
public struct ReplicaID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// Parses the 16-digit hexadecimal form printed by `description` (in
    /// either case). Digits only: `UInt64(_:radix:)` also takes a sign, and
    /// "+00000000000001f" would be another replica, 1f.
    public init?(hex: some StringProtocol) {
        guard hex.count == 16, hex.allSatisfy(\.isHexDigit), let value = UInt64(hex, radix: 16) else { return nil }
        self.rawValue = value
    }

    public static func < (a: ReplicaID, b: ReplicaID) -> Bool { a.rawValue < b.rawValue }

    /// 16 lowercase hexadecimal digits, zero-padded.
    public var description: String {
        let digits = String(rawValue, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
