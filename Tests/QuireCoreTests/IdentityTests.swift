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
