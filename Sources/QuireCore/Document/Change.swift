/// One local transaction: a run of consecutive counters of one replica,
/// its operations, and the heads of the document when it was made.
///
/// Changes are the unit of history, of storage and of sync. A change is
/// applied only when its parents and its replica's previous change are
/// present (causal readiness); applying it twice is a no-op.
public struct Change: Hashable, Sendable, CustomStringConvertible {
    /// The id of its first operation.
    public var id: OpID
    /// The Lamport value of its first operation; each next counter adds 1.
    public var lamport: UInt64
    /// The heads of the document when the change was made (the ids of the
    /// last operations of those changes), sorted. Empty for the first change.
    public var parents: [OpID]
    /// Informational wall-clock time, milliseconds since 1970 (0 if unknown).
    /// Never used to order anything.
    public var time: Int64
    /// What the change did, in order, numbered from `id` on.
    public var operations: [Operation] {
        didSet { width = Self.width(of: operations) }
    }
    /// How many counters the change takes: the sum of its operations'
    /// widths. Stored, because every step of applying a change reads it.
    public private(set) var width: UInt64

    public init(id: OpID, lamport: UInt64, parents: [OpID], time: Int64 = 0, operations: [Operation]) {
        self.init(id: id, lamport: lamport, parents: parents, time: time, operations: operations,
                  width: Self.width(of: operations))
    }

    /// For callers that counted the width while building the operations.
    init(id: OpID, lamport: UInt64, parents: [OpID], time: Int64, operations: [Operation], width: UInt64) {
        self.id = id
        self.lamport = lamport
        self.parents = parents
        self.time = time
        self.operations = operations
        self.width = width
    }

    private static func width(of operations: [Operation]) -> UInt64 {
        operations.reduce(0) { $0 + UInt64($1.width) }
    }

    /// The id of its last operation: how heads and parents name this change.
    public var lastID: OpID { id.advanced(by: width - 1) }

    /// The Lamport value of its last operation.
    public var lastLamport: UInt64 { lamport + width - 1 }

    /// The replica that made it.
    public var replica: ReplicaID { id.replica }

    /// The only parent, if the change has one alone.
    var soleParent: OpID? { parents.count == 1 ? parents[0] : nil }

    /// The counters it covers.
    public var counters: ClosedRange<UInt64> { id.counter...(id.counter + width - 1) }

    public var description: String {
        "change \(id)...\(lastID.counter) lamport \(lamport) parents \(parents) ops \(operations.count)"
    }
}
