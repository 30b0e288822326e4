/// Every change a document applied, in the order applied (a causal order).
///
/// Changes that arrived as encoded bundles (a loaded snapshot, a full
/// catch-up) stay encoded until someone reads them, so a loaded document
/// holds its history in a few bytes per change. Changes made or applied one
/// by one afterwards are kept decoded, indexed by replica.
struct ChangeHistory: Sendable {
    /// The oldest changes, as encoded bundles, with the version vector they bring a document to.
    private(set) var bundles: [[UInt8]] = []
    private(set) var bundleCount = 0
    private var bundleVersion = VersionVector()
    /// The changes after the bundles, decoded.
    private(set) var recent: [Change] = []
    /// For each replica, the positions in `recent` of its changes, in counter order.
    private var recentByReplica: [ReplicaID: [Int]] = [:]

    /// The version before the first change held: empty unless the document
    /// was loaded from a snapshot without history.
    var start = VersionVector()

    /// How many changes the history holds.
    var count: Int { bundleCount + recent.count }

    mutating func append(_ change: Change) {
        recentByReplica[change.replica, default: []].append(recent.count)
        recent.append(change)
    }

    /// Appends changes still encoded. Only valid while no decoded change
    /// follows the bundles (so that the order stays the order applied).
    mutating func append(bundle: [UInt8], count: Int, version: VersionVector) {
        precondition(recent.isEmpty, "encoded history must come before decoded changes")
        bundles.append(bundle)
        bundleCount += count
        bundleVersion = version
    }

    var canAppendBundle: Bool { recent.isEmpty }

    /// Decodes the bundles. They were checked when they came in, so a
    /// failure here means the bytes were damaged in memory.
    private func decodedBundles() throws(DocumentError) -> [Change] {
        var changes: [Change] = []
        changes.reserveCapacity(bundleCount)
        do {
            for bundle in bundles { changes += try ChangeEncoding.decode(bundle, limits: .unlimited) }
        } catch {
            throw .damagedHistory(error)
        }
        return changes
    }

    /// All changes held, in the order applied.
    func all() throws(DocumentError) -> [Change] {
        bundles.isEmpty ? recent : try decodedBundles() + recent
    }

    /// The changes `from` lacks (and, if given, `to` holds), in the order applied.
    func changes(from: VersionVector, to: VersionVector? = nil) throws(DocumentError) -> [Change] {
        guard from.includes(start) else { throw .historyUnavailable(start: start) }
        func wanted(_ change: Change) -> Bool {
            !from.contains(change.lastID) && (to?.contains(change.lastID) ?? true)
        }
        if from == start && to == nil { return try all() }
        var result: [Change] = []
        if !bundles.isEmpty && !from.includes(bundleVersion) {
            result = try decodedBundles().filter(wanted)
        }
        // In `recent`, each replica's changes are in counter order: find the
        // first one `from` lacks by binary search, then merge by position.
        var positions: [Int] = []
        for (replica, indices) in recentByReplica {
            let seen = from[replica]
            var low = 0, high = indices.count
            while low < high {
                let mid = (low + high) / 2
                if recent[indices[mid]].lastID.counter <= seen { low = mid + 1 } else { high = mid }
            }
            for index in indices[low...] {
                if let to, !to.contains(recent[index].lastID) { break }
                positions.append(index)
            }
        }
        positions.sort()
        result += positions.map { recent[$0] }
        return result
    }

    /// The change that holds operation `id`, if any.
    func change(containing id: OpID) throws(DocumentError) -> Change? {
        if let indices = recentByReplica[id.replica] {
            var low = 0, high = indices.count
            while low < high {
                let mid = (low + high) / 2
                let change = recent[indices[mid]]
                if change.lastID.counter < id.counter { low = mid + 1 }
                else if change.id.counter > id.counter { high = mid }
                else { return change }
            }
        }
        guard bundleVersion.contains(id) else { return nil }
        return try decodedBundles().first { $0.replica == id.replica && $0.counters.contains(id.counter) }
    }
}

extension DecodingLimits {
    /// No limits: for bytes that were already checked against limits when they came in.
    static let unlimited = DecodingLimits(maxChanges: .max, maxOperations: .max, maxOperationWidth: .max)
}
