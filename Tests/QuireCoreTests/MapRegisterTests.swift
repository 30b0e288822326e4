import Testing
import QuireTestSupport
@testable import QuireCore

/// `MapRegister` against a plain model: every entry written and not
/// replaced, sorted by descending stamp.
@Suite struct MapRegisterTests {
    @Test(arguments: 0..<UInt64(fuzzSeedCount(default: 200)))
    func writesInAnyOrderKeepWhatNoWriteReplacedByDescendingStamp(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var register = MapRegister()
        var model: [RegisterEntry] = []
        for counter in 1...UInt64.random(in: 1...60, using: &rng) {
            // Lamport values in a small range, so that writes often tie on them and differ by replica.
            let entry = RegisterEntry(
                id: OpID(replica: ReplicaID(counter), counter: 1),
                lamport: UInt64.random(in: 1...10, using: &rng),
                value: Bool.random(using: &rng) ? .scalar(.int(Int64(counter))) : nil)
            // The write saw some of the entries there (or, rarely, an id no longer there).
            var pred = model.map(\.id).filter { _ in Int.random(in: 0..<4, using: &rng) == 0 }
            if Int.random(in: 0..<10, using: &rng) == 0 { pred.append(OpID(replica: ReplicaID(999), counter: 1)) }
            register.write(entry, replacing: pred)
            model.removeAll { pred.contains($0.id) }
            model.append(entry)
            model.sort { $0.stamp > $1.stamp }
            #expect(Array(register) == model, "seed \(seed), write \(counter)")
            #expect(register.winner == model.first)
        }
    }
}
