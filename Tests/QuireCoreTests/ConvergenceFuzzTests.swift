import Testing
import QuireTestSupport
@testable import QuireCore

/// Several replicas make random edits of every kind on nested objects and
/// exchange changes over a network that drops, duplicates and reorders;
/// after a final full exchange every replica must hold the same state, byte
/// for byte, with the same history (bundled every few changes on odd
/// seeds). Run longer with `QUIRE_FUZZ_SEEDS=5000 swift test --filter Convergence`.
@Suite struct ConvergenceFuzzTests {
    /// Seeds that once failed, kept so they stay fixed.
    static let regressionSeeds: [UInt64] = []

    @Test func regressionSeedsConverge() throws {
        for seed in Self.regressionSeeds { try Self.run(seed: seed) }
    }

    @Test func randomSeedsConverge() throws {
        for seed in 1...UInt64(fuzzSeedCount(default: 200)) { try Self.run(seed: seed) }
    }

    static func run(seed: UInt64, replicaCount: Int = 5, rounds: Int = 40) throws {
        var rng = SeededGenerator(seed: seed)
        var replicas = (0..<replicaCount).map { Document(replica: ReplicaID(UInt64($0) * 0x1_0000_0001 + 7)) }
        // Odd seeds bundle the history every few changes, as long sessions
        // do every 2^14: bundles must read back, merge and reload the same.
        let bundleSize = seed % 2 == 1 ? Int.random(in: 2...6, using: &rng) : nil
        if let bundleSize { for index in replicas.indices { replicas[index].history.bundleSize = bundleSize } }
        for _ in 0..<rounds {
            let index = Int.random(in: 0..<replicaCount, using: &rng)
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<6:
                try RandomEdits.transact(&replicas[index], using: &rng)
            case 6..<9:
                let target = Int.random(in: 0..<replicaCount, using: &rng)
                try deliverLossy(from: replicas[index], to: &replicas[target], using: &rng)
            default:
                // Save and reload: a snapshot round trip must keep everything.
                let reloaded = try Document(snapshot: replicas[index].encodeSnapshot(), replica: replicas[index].replica)
                let sameBytes = reloaded.encodeSnapshot() == replicas[index].encodeSnapshot()
                try #require(sameBytes, "seed \(seed): a snapshot round trip changed the document")
                replicas[index] = reloaded
                if let bundleSize { replicas[index].history.bundleSize = bundleSize }
            }
        }
        // Final exchange: everyone sends everything to everyone, through the encoding.
        for _ in 0..<2 {
            for source in 0..<replicaCount {
                for target in 0..<replicaCount where target != source {
                    let bytes = try replicas[source].encodeChanges(since: replicas[target].versionVector)
                    try replicas[target].applyEncoded(bytes)
                }
            }
        }
        // `#require` stops at the first failing seed, which the message names.
        let expected = replicas[0].encodeSnapshot(includeHistory: false)
        let expectedContent = try RandomEdits.render(replicas[0])
        let expectedHistory = try replicas[0].allChanges().sorted { $0.id < $1.id }
        if bundleSize != nil && expectedHistory.count > 20 {
            try #require(replicas.contains { !$0.history.bundles.isEmpty }, "seed \(seed): no replica bundled its history")
        }
        for replica in replicas {
            try #require(replica.pendingCount == 0, "seed \(seed): changes left pending")
            try #require(replica.versionVector == replicas[0].versionVector, "seed \(seed): versions differ")
            try #require(replica.heads == replicas[0].heads, "seed \(seed): heads differ")
            let content = try RandomEdits.render(replica)
            try #require(content == expectedContent, "seed \(seed): replicas diverged:\n\(content)\n---\n\(expectedContent)")
            let sameBytes = replica.encodeSnapshot(includeHistory: false) == expected
            try #require(sameBytes, "seed \(seed): same content but different snapshot bytes")
            let history = try replica.allChanges().sorted { $0.id < $1.id }
            try #require(history == expectedHistory, "seed \(seed): replicas hold different histories")
        }
    }

    /// Sends what `target` lacks, with some changes dropped, some twice, in shuffled order.
    static func deliverLossy(from source: Document, to target: inout Document, using rng: inout SeededGenerator) throws {
        var batch: [Change] = []
        for change in try source.changes(since: target.versionVector) {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<2: continue
            case 2: batch += [change, change]
            default: batch.append(change)
            }
        }
        batch.shuffle(using: &rng)
        if Bool.random(using: &rng) {
            batch = try ChangeEncoding.decode(ChangeEncoding.encode(batch))
        }
        try target.apply(batch)
    }
}

/// Random local edits on every kind of object, for the fuzzers.
enum RandomEdits {
    /// One transaction of one to three random edits.
    static func transact(_ doc: inout Document, using rng: inout SeededGenerator) throws {
        try doc.transact { tx in
            for _ in 0..<Int.random(in: 1...3, using: &rng) { try edit(&tx, using: &rng) }
        }
    }

    static func edit(_ tx: inout Transaction, using rng: inout SeededGenerator) throws {
        let objects = allObjects(of: tx.document)
        let object = objects.randomElement(using: &rng)!
        let keys = ["a", "b", "c", "title", "body"]
        switch tx.document.kind(of: object)! {
        case .map:
            let key = keys.randomElement(using: &rng)!
            switch Int.random(in: 0..<6, using: &rng) {
            case 0: try tx.remove(object, key: key)
            case 1: _ = try tx.putObject(object, key: key, kind: ObjectKind.allCases.randomElement(using: &rng)!)
            case 2: try tx.put(object, key: key, .string(randomText(&rng)))
            case 3: try tx.put(object, key: key, .double(Double(Int.random(in: -9...9, using: &rng)) / 4))
            default: try tx.put(object, key: key, .int(Int64.random(in: -99...99, using: &rng)))
            }
        case .text:
            let count = try tx.document.textCount(object)
            if count > 0 && Int.random(in: 0..<3, using: &rng) == 0 {
                let start = Int.random(in: 0..<count, using: &rng)
                try tx.deleteText(object, at: start, count: Int.random(in: 1...min(3, count - start), using: &rng))
            } else {
                try tx.insertText(object, at: Int.random(in: 0...count, using: &rng), randomText(&rng))
            }
        case .list:
            let count = try tx.document.list(object).count
            switch Int.random(in: 0..<4, using: &rng) {
            case 0 where count > 0: try tx.delete(object, at: Int.random(in: 0..<count, using: &rng))
            case 1: _ = try tx.insertObject(object, at: Int.random(in: 0...count, using: &rng), kind: ObjectKind.allCases.randomElement(using: &rng)!)
            default: try tx.insert(object, at: Int.random(in: 0...count, using: &rng), .int(Int64.random(in: 0...9, using: &rng)))
            }
        case .counter:
            try tx.increment(object, by: Int64.random(in: -5...5, using: &rng))
        }
    }

    /// Every object of `doc`, the root first, in id order.
    static func allObjects(of doc: Document) -> [ObjectID] {
        [ObjectID.root] + doc.objects.slots.nestedObjects.map { ObjectID($0.id) }
    }

    /// The visible content of every object, as text, for comparing replicas.
    static func render(_ doc: Document) throws -> String {
        var lines: [String] = []
        for object in allObjects(of: doc) {
            switch doc.kind(of: object)! {
            case .map: lines.append("\(object) map \(try doc.keys(object).map { "\($0)=\(String(describing: try doc.get(object, key: $0)))" })")
            case .text: lines.append("\(object) text \(try doc.text(object).debugDescription)")
            case .list: lines.append("\(object) list \(try doc.list(object))")
            case .counter: lines.append("\(object) counter \(try doc.counter(object))")
            }
        }
        return lines.joined(separator: "\n")
    }
}
