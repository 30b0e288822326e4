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
        // Up to 400 writes, mostly concurrent (no pred), so that many lose
        // below the last loser and go through the `recent` entries.
        for counter in 1...UInt64.random(in: 1...400, using: &rng) {
            // Lamport values in a small range, so that writes often tie on them and differ by replica.
            let entry = RegisterEntry(
                id: OpID(replica: ReplicaID(counter), counter: 1),
                lamport: UInt64.random(in: 1...50, using: &rng),
                value: Bool.random(using: &rng) ? .scalar(.int(Int64(counter))) : nil)
            // The write saw none of the entries there, or the winner alone (a
            // writer writing again), or one of them, or some (more than 8 are
            // looked up by hash), or, rarely, an id no longer there.
            var pred: [OpID] = switch Int.random(in: 0..<20, using: &rng) {
            case 0: model.map(\.id).filter { _ in Bool.random(using: &rng) }
            case 1, 2: model.first.map { [$0.id] } ?? []
            case 3: model.randomElement(using: &rng).map { [$0.id] } ?? []
            default: []
            }
            if Int.random(in: 0..<10, using: &rng) == 0 { pred.append(OpID(replica: ReplicaID(999), counter: 1)) }
            register.write(entry, replacing: pred)
            model.removeAll { pred.contains($0.id) }
            model.append(entry)
            model.sort { $0.stamp > $1.stamp }
            #expect(Array(register) == model, "seed \(seed), write \(counter)")
            #expect(register.winner == model.first && register.count == model.count)
            // Equal to a register of the same entries written in descending order, which holds them otherwise split.
            var rebuilt = MapRegister()
            for entry in model { rebuilt.write(entry, replacing: []) }
            #expect(rebuilt == register && rebuilt.hashValue == register.hashValue)
            for id in pred + [entry.id] + model.prefix(3).map(\.id) {
                #expect(register.lamport(of: id) == model.first { $0.id == id }?.lamport, "seed \(seed), write \(counter)")
            }
        }
    }

    /// Many entries, then writes that each replace one or a few of them,
    /// until most are replaced: entries past `indexedLosers` are dropped
    /// lazily and compacted, which the model does not do.
    @Test(arguments: 0..<UInt64(fuzzSeedCount(default: 40)))
    func replacingEntriesOneByOneKeepsTheRest(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var register = MapRegister()
        var model: [RegisterEntry] = []
        var counter: UInt64 = 0
        func write(lamport: UInt64, replacing pred: [OpID]) {
            counter += 1
            let entry = RegisterEntry(id: OpID(replica: ReplicaID(counter), counter: 1), lamport: lamport, value: .scalar(.int(Int64(counter))))
            register.write(entry, replacing: pred)
            model.removeAll { pred.contains($0.id) }
            model.append(entry)
            model.sort { $0.stamp > $1.stamp }
        }
        let first = Int.random(in: 1...(3 * MapRegister.indexedLosers), using: &rng)
        for _ in 0..<first { write(lamport: UInt64.random(in: 1...20, using: &rng), replacing: []) }
        for step in 0..<(2 * first) {
            // One entry (the winner now and then), or a few, or none there any more.
            var pred = (0..<Int.random(in: 1...3, using: &rng)).compactMap { _ in model.randomElement(using: &rng)?.id }
            if Int.random(in: 0..<8, using: &rng) == 0 { pred.append(OpID(replica: ReplicaID(100_000), counter: 1)) }
            write(lamport: UInt64.random(in: 1...30, using: &rng), replacing: pred)
            #expect(Array(register) == model, "seed \(seed), step \(step)")
            #expect(register.winner == model.first && register.count == model.count)
            for id in pred { #expect(register.lamport(of: id) == nil) }
            if let some = model.randomElement(using: &rng) { #expect(register.lamport(of: some.id) == some.lamport) }
        }
    }
}
