/// The id of one operation: the replica that made it and that replica's counter.
///
/// Counters start at 1 and have no gaps, so "the highest counter seen per
/// replica" (a `VersionVector`) names exactly which operations a replica has.
/// An operation that covers several elements (inserting a run of characters,
/// deleting a run) takes one counter per element.
public struct OpID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var replica: ReplicaID
    public var counter: UInt64

    public init(replica: ReplicaID, counter: UInt64) {
        self.replica = replica
        self.counter = counter
    }

    /// The id `n` counters later from the same replica.
    @inlinable
    public func advanced(by n: UInt64) -> OpID { OpID(replica: replica, counter: counter + n) }

    /// Ids order by replica, then counter. This order is only for sorting
    /// and tables; operations are ordered by `Stamp`, never by id.
    public static func < (a: OpID, b: OpID) -> Bool {
        (a.replica, a.counter) < (b.replica, b.counter)
    }

    /// `counter@replica`, the form the command-line tool prints and parses.
    public var description: String { "\(counter)@\(replica)" }

    /// Parses `counter@replica` as printed by `description`.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, let counter = Self.counter(parts[0]), counter > 0,
              let replica = ReplicaID(hex: parts[1]) else { return nil }
        self.init(replica: replica, counter: counter)
    }

    /// A counter as the printed forms (`counter@replica`, `replica:counter`)
    /// give it: decimal digits only, where `UInt64(_:)` also takes a sign ("+5").
    static func counter(_ text: some StringProtocol) -> UInt64? {
        guard text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return UInt64(text)
    }
}

/// A Lamport stamp: the total order of operations.
///
/// Every operation has `lamport = 1 + the highest lamport its replica had
/// seen`. Stamps order by lamport, then by replica id, so two different
/// operations never tie. Wall clocks never order anything.
public struct Stamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var lamport: UInt64
    public var replica: ReplicaID

    @inlinable
    public init(lamport: UInt64, replica: ReplicaID) {
        self.lamport = lamport
        self.replica = replica
    }

    @inlinable
    public static func < (a: Stamp, b: Stamp) -> Bool {
        a.lamport != b.lamport ? a.lamport < b.lamport : a.replica < b.replica
    }

    public var description: String { "(\(lamport), \(replica))" }

    /// Above every stamp an operation can have (Lamport values stay below 2^62).
    static let highest = Stamp(lamport: .max, replica: ReplicaID(.max))
}
