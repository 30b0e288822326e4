import Testing
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
}
