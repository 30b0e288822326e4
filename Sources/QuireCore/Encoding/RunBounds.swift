/// The ends of a run: changes of one replica, each starting at the counter
/// after the previous one's last. What a log records about a run it keeps
/// encoded, known without decoding the run again (see
/// `Document.applyEncodedRun`).
public struct RunBounds: Hashable, Sendable {
    /// How many changes the run holds.
    public var count: Int
    /// The first change, whole.
    public var first: Change
    /// The last change's last operation id, last Lamport value and time.
    public var lastID: OpID
    public var lastLamport: UInt64
    public var lastTime: Int64

    public var replica: ReplicaID { first.replica }

    /// The bounds of `changes`, or nil unless they are one run.
    public init?(_ changes: some BidirectionalCollection<Change>) {
        guard let first = changes.first, let last = changes.last else { return nil }
        var previous = first
        for change in changes.dropFirst() {
            guard change.replica == first.replica, change.id.counter == previous.lastID.counter + 1 else { return nil }
            previous = change
        }
        self.init(count: changes.count, first: first, lastID: last.lastID, lastLamport: last.lastLamport, lastTime: last.time)
    }

    init(count: Int, first: Change, lastID: OpID, lastLamport: UInt64, lastTime: Int64) {
        self.count = count
        self.first = first
        self.lastID = lastID
        self.lastLamport = lastLamport
        self.lastTime = lastTime
    }
}
