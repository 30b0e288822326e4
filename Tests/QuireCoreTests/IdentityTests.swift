import Testing
import QuireTestSupport
@testable import QuireCore
#if arch(x86_64)
import CarrylessCRC32
#endif

@Suite struct IdentityTests {
    @Test func opIDRoundTripsThroughItsText() {
        let id = OpID(replica: ReplicaID(0xabc), counter: 42)
        #expect(id.description == "42@0000000000000abc")
        #expect(OpID("42@0000000000000abc") == id)
        #expect(OpID("0@0000000000000abc") == nil)
        #expect(OpID("42@abc") == nil)
        // Signs, which Swift's integer parsing takes: "+" before the replica made another replica.
        for text in ["+42@0000000000000abc", "42@+000000000000abc", "-0@0000000000000abc", "42@-000000000000abc"] {
            #expect(OpID(text) == nil, "\(text)")
        }
    }

    @Test func versionVectorRoundTripsThroughItsTextAndOnlyIt() {
        var vector = VersionVector()
        vector[ReplicaID(0xabc)] = 19
        vector[ReplicaID(0xdef)] = 3
        #expect(vector.description == "0000000000000abc:19,0000000000000def:3")
        #expect(VersionVector(vector.description) == vector)
        #expect(VersionVector("") == VersionVector())
        for text in ["0000000000000abc:19,", ",0000000000000abc:19", "0000000000000abc:0", "0000000000000abc:1,0000000000000abc:2",
                     "abc:19", "0000000000000abc:", "0000000000000abc:19,,0000000000000def:3",
                     "0000000000000abc:+19", "+000000000000abc:19"] {
            #expect(VersionVector(text) == nil, "\(text)")
        }
    }

    /// The readiness check of a change's parents, in both apply paths.
    @Test func aVersionVectorContainsAllParentsOnlyWhenItContainsEach() {
        let vector: VersionVector = [ReplicaID(1): 5, ReplicaID(2): 3]
        let held = [OpID(replica: ReplicaID(1), counter: 5), OpID(replica: ReplicaID(2), counter: 1)]
        #expect(vector.containsAll([]) && vector.containsAll(held))
        #expect(!vector.containsAll(held + [OpID(replica: ReplicaID(2), counter: 4)]))
        #expect(!vector.containsAll([OpID(replica: ReplicaID(3), counter: 1)] + held))
    }

    @Test func stampsOrderByLamportThenReplica() {
        let a = Stamp(lamport: 5, replica: ReplicaID(9))
        let b = Stamp(lamport: 6, replica: ReplicaID(1))
        let c = Stamp(lamport: 6, replica: ReplicaID(2))
        #expect(a < b && b < c)
        // Replica ids compare as unsigned 64-bit numbers.
        #expect(c < Stamp(lamport: 6, replica: ReplicaID(1 << 63)))
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

    /// `ReplicaMap` against a dictionary, through thousands of random writes,
    /// removals and reads, with replicas new to a large map coming in
    /// every order (some go to its second array and are merged in), and a
    /// few replicas in turn, whose remembered entries move as others are
    /// removed and inserted before them.
    @Test func replicaMapsAgreeWithADictionary() {
        var rng = SeededGenerator(seed: 31)
        for pattern in 0..<4 {
            var map = ReplicaMap<UInt64>()
            var reference: [ReplicaID: UInt64] = [:]
            for step in 0..<6_000 {
                let replica: ReplicaID = switch pattern {
                case 0: ReplicaID(UInt64(10_000 - step))  // decreasing: every new one sorts first
                case 1: ReplicaID(rng.next() % 3_000)
                case 2: ReplicaID(step % 2 == 0 ? UInt64(step) : UInt64(1_000_000 - step))  // both ends, inwards
                default: ReplicaID(rng.next() % 4)  // writers taking turns
                }
                switch rng.next() % 10 {
                case 0:
                    map[replica] = nil
                    reference[replica] = nil
                case 1:
                    let value = rng.next()
                    map.modify(replica, default: value) { $0 &+= 1 }
                    reference[replica] = reference[replica].map { $0 &+ 1 } ?? value &+ 1
                default:
                    let value = rng.next()
                    map[replica] = value
                    reference[replica] = value
                }
                let probe = ReplicaID(rng.next() % (pattern == 3 ? 4 : 3_000))
                #expect(map[probe] == reference[probe] && map[replica] == reference[replica])
            }
            #expect(map.count == reference.count)
            #expect(map.entries.map(\.replica) == reference.keys.sorted())
            #expect(map.entries.allSatisfy { reference[$0.replica] == $0.value })
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

    /// CRC-32 a bit at a time, as the standard defines it.
    static func reference(_ bytes: ArraySlice<UInt8>, continuing previous: UInt32 = 0) -> UInt32 {
        var crc = ~previous
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        }
        return ~crc
    }

    @Test func longInputsMatchABitAtATimeModel() {
        // The tables' three-thirds path starts at 12 KB; lengths around it
        // and odd lengths past it, continuing from a prefix or not. (Where
        // the processor folds, `checksum` takes the fold; the test below
        // checks the tables alone at such lengths.)
        var generator = SeededGenerator(seed: 32)
        let bytes = (0..<70_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for count in [12_287, 12_288, 12_289, 12_304, 20_001, 48_017, 70_000] {
            #expect(CRC32.checksum(bytes[..<count]) == Self.reference(bytes[..<count]), "\(count) bytes")
            #expect(CRC32.checksum(bytes[5..<count], continuing: 0x1234_5678) == Self.reference(bytes[5..<count], continuing: 0x1234_5678),
                    "\(count - 5) bytes after a prefix")
        }
        let pattern = (0..<100_003).map { UInt8(truncatingIfNeeded: ($0 &* 131 &+ 7) >> 3) }
        #expect(CRC32.checksum(pattern) == 0x86A4_9C8B)  // zlib.crc32 of the same bytes
    }

    @Test func theCarrylessFoldAndTheTablesAgreeAtEveryLengthAndOffset() {
        // The fold takes an input's whole 16-byte blocks from 64 bytes on and
        // the tables the rest: every length to past five blocks, lengths
        // around larger steps and the three-thirds path, at odd offsets,
        // continuing from a prefix or not. On an x86-64 processor with
        // PCLMULQDQ the fold must run, and `checksum` then takes it.
        var generator = SeededGenerator(seed: 157)
        let bytes = (0..<70_016).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let lengths = Array(0...100) + [127, 128, 129, 255, 256, 257, 4_095, 4_096, 4_097, 12_287, 12_289, 70_000]
        for count in lengths {
            for offset in [0, 1, 7, 15] {
                let piece = bytes[offset..<offset + count]
                for previous: UInt32 in [0, 0x1234_5678] {
                    let expected = Self.reference(piece, continuing: previous)
                    #expect(CRC32.checksum(piece, continuing: previous) == expected, "\(count) bytes at \(offset)")
                    let (tables, folded) = piece.withUnsafeBytes {
                        (CRC32.checksumWithTables($0, continuing: previous), CRC32.foldedRegister(after: ~previous, $0))
                    }
                    #expect(tables == expected, "\(count) bytes at \(offset)")
                    #if arch(x86_64)
                    #expect((folded != nil) == (count >= 64 && CarrylessCRC32.isAvailable), "\(count) bytes")
                    #endif
                    if let folded {
                        #expect(folded.count == count / 16 * 16)
                        let rest = piece.dropFirst(folded.count)
                        #expect(Self.reference(rest, continuing: ~folded.register) == expected, "\(count) bytes at \(offset)")
                    }
                }
            }
        }
    }

    @Test func piecesEndingWithTheirOwnChecksumNeedNotBeRead() {
        // Sealed pieces of several sizes (empty to past the three-thirds
        // path) between plain bytes, at the start, side by side and at the end.
        var generator = SeededGenerator(seed: 106)
        func randomBytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) } }
        func sealed(_ count: Int) -> [UInt8] {
            let bytes = randomBytes(count)
            return bytes + withUnsafeBytes(of: CRC32.checksum(bytes).littleEndian, Array.init)
        }
        #expect(CRC32.checksum(sealed(77)) == CRC32.residue)
        let layouts: [[(sealed: Bool, count: Int)]] = [
            [(true, 0)], [(false, 3), (true, 40)], [(true, 13_000), (false, 1)],
            [(false, 100), (true, 5), (true, 20_001), (false, 17), (true, 70), (false, 0)],
        ]
        for layout in layouts {
            var bytes: [UInt8] = []
            var pieces: [Range<Int>] = []
            for part in layout {
                let start = bytes.count
                bytes += part.sealed ? sealed(part.count) : randomBytes(part.count)
                if part.sealed { pieces.append(start..<bytes.count) }
            }
            let found = bytes.withUnsafeBytes { CRC32.checksum($0, selfChecked: pieces) }
            #expect(found == CRC32.checksum(bytes), "\(layout)")
        }
    }
}
