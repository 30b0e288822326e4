import Testing
import QuireTestSupport
@testable import QuireCore

/// `ReplicaIndexTable`, which bundles and snapshots look replicas up in.
@Suite struct ReplicaIndexTableTests {
    @Test func findsEveryReplicaAtItsIndex() {
        var rng = SeededGenerator(seed: 7)
        for count in [0, 1, 2, 3, 8, 100, 1_540] {
            // Random ids as replicas make, plus neighbours and extremes, which
            // land in the same or adjacent slots.
            var replicas = Set((0..<count).map { _ in ReplicaID(rng.next()) })
            if count >= 8 { replicas.formUnion([ReplicaID(0), ReplicaID(1), ReplicaID(2), ReplicaID(.max), ReplicaID(1 << 32)]) }
            let sorted = replicas.sorted()
            let table = ReplicaIndexTable(sorted)
            for (index, replica) in sorted.enumerated() { #expect(table.index(of: replica) == index, "\(count) replicas") }
        }
    }
}
