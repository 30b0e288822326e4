import QuireCore

// SQLite integers are signed 64-bit; replica ids and counters are unsigned.
// They are stored as the same 64 bits, so every value round-trips exactly.

extension DatabaseValue {
    /// A replica id as an INTEGER (its bit pattern).
    public static func replica(_ replica: ReplicaID) -> DatabaseValue { .integer(Int64(bitPattern: replica.rawValue)) }
    /// A counter or Lamport value as an INTEGER (its bit pattern).
    public static func unsigned(_ value: UInt64) -> DatabaseValue { .integer(Int64(bitPattern: value)) }
}

extension Row {
    public func replica(_ index: Int) throws -> ReplicaID { ReplicaID(UInt64(bitPattern: try int64(index))) }
    public func unsigned(_ index: Int) throws -> UInt64 { UInt64(bitPattern: try int64(index)) }
}
