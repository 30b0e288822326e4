import Testing
import QuireTestSupport
@testable import QuireCore

@Suite struct IdentityTests {
    @Test func opIDRoundTripsThroughItsText() {
        let id = OpID(replica: ReplicaID(0xabc), counter: 42)
        #expect(id.description == "42@0000000000000abc")
        #expect(OpID("42@0000000000000abc") == id)
        #expect(OpID("0@0000000000000abc") == nil)
        #expect(OpID("42@abc") == nil)
    }

    @Test func stampsOrderByLamportThenReplica() {
        let a = Stamp(lamport: 5, replica: ReplicaID(9))
        let b = Stamp(lamport: 6, replica: ReplicaID(1))
        let c = Stamp(lamport: 6, replica: ReplicaID(2))
        #expect(a < b && b < c)
    }

    /// `ReplicaMap` appends a replica that sorts last without searching:
    /// whatever the order replicas come in, the entries stay sorted.
    @Test func versionVectorsAreTheSameWhateverOrderReplicasComeIn() {
        var rng = SeededGenerator(seed: 23)
        let replicas = (1...200).map { ReplicaID(UInt64($0) * 7) }
        var orders = [replicas, replicas.reversed(), replicas.shuffled(using: &rng)]
        orders.append(Array(replicas[100...] + replicas[..<100]))
        let vectors = orders.map { order in
            var vector = VersionVector()
            for replica in order { vector[replica] = replica.rawValue + 1 }
            return vector
        }
        for vector in vectors {
            #expect(vector == vectors[0] && vector.replicas == replicas)
            #expect(replicas.allSatisfy { vector[$0] == $0.rawValue + 1 } && vector[ReplicaID(8)] == 0)
        }
    }

    /// A merger's heads after single changes from many replicas, the new
    /// replica sorting last or not, are each replica's change, sorted.
    @Test func headsOfManyConcurrentWritersAreSortedWhateverTheOrderApplied() throws {
        let writers = try (2...41).map { number in
            var writer = Document(replica: ReplicaID(UInt64(number)))
            try writer.transact { tx in try tx.put(.root, key: "k\(number)", .int(Int64(number))) }
            return try writer.changes(since: VersionVector())[0]
        }
        let expected = writers.map(\.lastID).sorted()
        var rng = SeededGenerator(seed: 29)
        for order in [writers, writers.reversed(), writers.shuffled(using: &rng)] {
            var merger = Document(replica: ReplicaID(1))
            for change in order { try merger.apply(change) }
            #expect(merger.heads == expected)
            #expect(try merger.keys(.root).count == writers.count)
        }
    }
}

@Suite struct CRC32Tests {
    @Test func matchesZlibsCRC32() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        let pattern = Array((0..<768).map { UInt8($0 % 256) })
        #expect(CRC32.checksum(pattern) == 0xB0C0_DF2A)   // zlib.crc32(bytes(range(256)) * 3)
        #expect(CRC32.checksum([]) == 0)
    }

    @Test func slicesAtAnyOffsetAgreeWithTheWholeArray() {
        let bytes = Array("The quick brown fox jumps over the lazy dog".utf8)
        for start in 0..<9 {
            #expect(CRC32.checksum(bytes[start...]) == CRC32.checksum(Array(bytes[start...])))
        }
    }

    @Test func continuingFromAPrefixEqualsTheWhole() {
        // Splits on both sides of the 16-byte steps and within them.
        let bytes = Array((0..<100).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
        for split in [0, 1, 7, 15, 16, 17, 22, 50, 99, 100] {
            let prefix = CRC32.checksum(bytes[..<split])
            #expect(CRC32.checksum(bytes[split...], continuing: prefix) == CRC32.checksum(bytes))
        }
    }
}
