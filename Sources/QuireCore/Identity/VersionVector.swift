/// For each replica, the highest counter seen from it.
///
/// Because counters are gap-free and changes are applied in causal order, a
/// version vector names exactly the set of operations a replica holds: every
/// `(replica, counter)` with `counter <= vector[replica]`. Sync compares
/// vectors to find what each side lacks.
///
/// ```swift
/// var mine = VersionVector()
/// mine[ReplicaID(1)] = 10
/// let theirs: VersionVector = [ReplicaID(1): 4, ReplicaID(2): 7]
/// mine.includes(theirs)        // false: they have 7 operations of replica 2
/// mine.merged(with: theirs)    // [1: 10, 2: 7]
/// ```
public struct VersionVector: Hashable, Sendable, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// Counters above 0 only, so equal sets of operations give equal values.
    private var entries = ReplicaMap<UInt64>()

    public init() {}

    public init(dictionaryLiteral elements: (ReplicaID, UInt64)...) {
        for (replica, counter) in elements { self[replica] = counter }
    }

    public init(_ counters: [ReplicaID: UInt64]) {
        for (replica, counter) in counters { self[replica] = counter }
    }

    /// The vector of `entries`, sorted by replica, one each, every counter
    /// above 0: a snapshot's, set at once (`Document.setLoadedClocks`).
    init(sortedEntries entries: [(replica: ReplicaID, value: UInt64)]) {
        self.entries = ReplicaMap(sorted: entries)
    }

    public static func == (a: VersionVector, b: VersionVector) -> Bool {
        a.entries.entries.elementsEqual(b.entries.entries) { $0.replica == $1.replica && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for entry in entries.entries {
            hasher.combine(entry.replica)
            hasher.combine(entry.value)
        }
    }

    /// The highest counter seen from `replica`, 0 if none.
    public subscript(replica: ReplicaID) -> UInt64 {
        get { entries[replica] ?? 0 }
        set { entries[replica] = newValue == 0 ? nil : newValue }
    }

    /// The counters per replica.
    public var counters: [ReplicaID: UInt64] {
        Dictionary(uniqueKeysWithValues: entries.entries.map { ($0.replica, $0.value) })
    }

    public var isEmpty: Bool { entries.isEmpty }

    /// How many replicas it names.
    var count: Int { entries.count }

    /// The replicas with at least one operation, sorted.
    public var replicas: [ReplicaID] { entries.replicas }

    /// Each replica with at least one operation and its counter, sorted by replica.
    var sortedEntries: [(replica: ReplicaID, value: UInt64)] { entries.entries }

    /// The total number of operations named.
    public var operationCount: UInt64 { entries.entries.reduce(0) { $0 + $1.value } }

    /// Whether the operation `id` is among those named.
    public func contains(_ id: OpID) -> Bool { id.counter <= self[id.replica] }

    /// Whether every one of `ids` (a change's parents) is among those named.
    /// A loop inlined by rule, not `ids.allSatisfy(contains)`: that was
    /// inlined into the bulk apply's loop only while the inliner's budget
    /// there allowed, and a change to `Arena` elsewhere made it a call,
    /// friendsforever's merge 5% more instructions (review192).
    @inline(__always)
    func containsAll(_ ids: [OpID]) -> Bool {
        var index = 0
        while index < ids.count {
            guard contains(ids[index]) else { return false }
            index += 1
        }
        return true
    }

    /// Whether every operation `other` names is named here too.
    public func includes(_ other: VersionVector) -> Bool {
        other.entries.entries.allSatisfy { self[$0.replica] >= $0.value }
    }

    /// How two sets of operations relate.
    public enum Ordering: Sendable { case equal, before, after, concurrent }

    /// `.before` when `self` names a strict subset of `other`'s operations.
    public func compare(to other: VersionVector) -> Ordering {
        switch (other.includes(self), includes(other)) {
        case (true, true): return .equal
        case (true, false): return .before
        case (false, true): return .after
        case (false, false): return .concurrent
        }
    }

    /// The union: the highest counter of each replica.
    public func merged(with other: VersionVector) -> VersionVector {
        var result = self
        result.merge(other)
        return result
    }

    public mutating func merge(_ other: VersionVector) {
        for (replica, counter) in other.entries.entries where counter > self[replica] {
            self[replica] = counter
        }
    }

    /// The operations named here but not in `other`, as counter ranges per replica.
    public func difference(_ other: VersionVector) -> [ReplicaID: ClosedRange<UInt64>] {
        var missing: [ReplicaID: ClosedRange<UInt64>] = [:]
        for (replica, counter) in entries.entries where counter > other[replica] {
            missing[replica] = (other[replica] + 1)...counter
        }
        return missing
    }

    /// `replica:counter` pairs sorted by replica and joined by commas, the
    /// form the command-line tool prints; `init?(_:)` parses it back.
    public var description: String {
        replicas.map { "\($0):\(self[$0])" }.joined(separator: ",")
    }

    /// Parses the form printed by `description`, and only that (an empty
    /// string is the empty vector): no empty pair, no counter of 0, no
    /// replica twice.
    public init?(_ text: some StringProtocol) {
        if text.isEmpty { return }
        for pair in text.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = pair.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let replica = ReplicaID(hex: parts[0]),
                  let counter = OpID.counter(parts[1]), counter > 0, self[replica] == 0 else { return nil }
            self[replica] = counter
        }
    }
}
