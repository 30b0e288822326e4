import QuireCore
import QuireTestSupport
/// The synthetic workloads of the suite, re-implemented from the definitions
/// of dmonad's crdt-benchmarks (B1 to B3: `benchmarks/b1.js` to `b3.js`
/// there) plus Quire's own merge-throughput family. Each one is generated
/// once, with a fixed seed, into a trace in the editing-trace format (or the
/// replica format of `ReplicaWorkload` for B3), and Quire and the peers
/// replay that same file.
///
/// As there: words are random lowercase letters (2 to 10 in B1, 3 to 9 in
/// B2, as each definition says), a delete removes 1 to 9 characters, B2's
/// users edit a shared 100-letter text and each makes all its edits in one
/// transaction (crdt-benchmarks' `transact`), and B3's replicas all write
/// the same map key. Where the definitions leave room:
/// - B1 makes one transaction (one change) per edit, as crdt-benchmarks
///   applies one update per edit; "applied by a second replica" is the
///   trace's merge: a fresh replica applies the whole encoded history.
/// - B2's users edit concurrently, as its titles say ("Concurrently insert
///   ..."): each user's transaction has only the shared text as parent.
///   crdt-benchmarks' harness does not quite run that: its update handlers
///   deliver user 1's update (Loro's factory: one per edit) to user 2
///   synchronously, before user 2's transaction, so user 2's edits (their
///   positions drawn against the shared text and its own edits only) land
///   in a text that already holds user 1's, and the time it reports
///   includes both deliveries. Here user 2 does not see user 1's edits;
///   the timed replay ends with replica 1 taking replica 2's changes (the
///   other direction is the untimed convergence check), the same work for
///   Quire and the peers (`peers.py`). Inserts at one place are then
///   ordered by each CRDT's own rule and the merged text differs between
///   libraries: its check is `ExpectedText.anyOrder` (nothing lost or
///   duplicated) and every replica converging, as crdt-benchmarks checks
///   that both replicas agree.
/// - Each B2 trace draws its own 100-letter shared text (crdt-benchmarks
///   draws one for all four), from this generator, not lib0's.
/// - B3's merging replica writes nothing itself (crdt-benchmarks' merging
///   client 1 is one of the writers), and it applies each replica's change
///   as it comes, not all in one transaction; the time reported is the
///   whole of `TraceReplay.replay(_: ReplicaWorkload)`, the writes too.
/// - The merge-kK-mM family (Quire's own) gives each replica a region of its
///   own in a shared text instead, so that every library must produce the
///   one `endContent` exactly.
public enum CRDTBenchmarks {
    /// crdt-benchmarks' N.
    public static let n = 6000
    /// B3's replicas, "20√N": ⌊√N⌋·20 as crdt-benchmarks computes it
    /// (`math.floor(math.sqrt(N)) * 20`), not 20·√N (1,549.2). B3.3's
    /// strings repeat `String(i)` as many times.
    public static let b3Replicas = 1540

    /// How one user picks its next edit.
    public enum EditPattern: Sendable {
        case append, prepend, randomInsert
        /// B2.1: a string of this many letters at index 0.
        case stringAtStart(Int)
        /// A word of this many letters at a random position.
        case randomWord(ClosedRange<Int>)
        /// B1.7: a word of 2 to 10 letters or a delete of 1 to 9, at a random position.
        case randomInsertOrDelete
        /// B2.4: a word of 3 to 9 letters at a random position, then at the
        /// same position a word of 2 to 10 or a delete of 1 to 9.
        case wordThenInsertOrDelete
        /// merge-kK-mM: one letter inserted or deleted at a random position.
        case randomLetterInsertOrDelete
    }

    /// Every synthetic trace, by name, in report order (B3 is `replicaNames`).
    public static let traceNames = [
        "B1.1", "B1.2", "B1.3", "B1.4", "B1.5", "B1.6", "B1.7",
        "B2.1", "B2.2", "B2.3", "B2.4",
    ] + mergeSizes.map(\.name)

    /// Merge throughput: k replicas making m concurrent edits each.
    public static let mergeSizes: [(name: String, k: Int, m: Int)] = [2, 8, 32].flatMap { k in
        [1000, 10000].map { m in (name: "merge-k\(k)-m\(m)", k: k, m: m) }
    }

    public static let replicaNames = ["B3.1", "B3.2", "B3.3", "B3.4"]

    /// What each workload is, for the report.
    public static let descriptions: [String: String] = [
        "B1.1": "one user appends N characters",
        "B1.2": "one user inserts a string of N characters",
        "B1.3": "one user prepends N characters",
        "B1.4": "one user inserts N characters at random positions",
        "B1.5": "one user inserts N words at random positions",
        "B1.6": "one user inserts a string of N characters, then deletes it",
        "B1.7": "one user inserts words and deletes runs at N random positions",
        "B2.1": "two users concurrently insert a string of N characters at index 0 of a shared text",
        "B2.2": "two users concurrently insert N characters each at random positions",
        "B2.3": "two users concurrently insert N words each at random positions",
        "B2.4": "two users concurrently make N rounds each of a word, then a word or a delete, at random positions",
        "B3.1": "1,540 replicas concurrently set a number under one map key; one merges all",
        "B3.2": "1,540 replicas concurrently set an object under one map key; one merges all",
        "B3.3": "1,540 replicas concurrently set a string under one map key; one merges all",
        "B3.4": "1,540 replicas concurrently insert a string at the head of one shared list; one merges all",
    ].merging(mergeSizes.map { size in
        (size.name, "\(size.k) replicas make \(size.m) random one-letter inserts and deletes each in their own region of a shared text; merged into one")
    }) { first, _ in first }

    /// The synthetic trace called `name` (one of `traceNames`).
    public static func trace(named name: String) -> EditingTrace? {
        var rng = SeededGenerator(seed: seed(for: name))
        switch name {
        case "B1.1": return .sequential(sequential(.append, edits: n, &rng))
        case "B1.2": return .sequential(oneUserStringThen(delete: false, &rng))
        case "B1.3": return .sequential(sequential(.prepend, edits: n, &rng))
        case "B1.4": return .sequential(sequential(.randomInsert, edits: n, &rng))
        case "B1.5": return .sequential(sequential(.randomWord(2...10), edits: n, &rng))
        case "B1.6": return .sequential(oneUserStringThen(delete: true, &rng))
        case "B1.7": return .sequential(sequential(.randomInsertOrDelete, edits: n, &rng))
        case "B2.1": return .concurrent(twoUsers(.stringAtStart(n), edits: 1, &rng))
        case "B2.2": return .concurrent(twoUsers(.randomInsert, edits: n, &rng))
        case "B2.3": return .concurrent(twoUsers(.randomWord(3...9), edits: n, &rng))
        case "B2.4": return .concurrent(twoUsers(.wordThenInsertOrDelete, edits: n, &rng))
        default:
            guard let size = mergeSizes.first(where: { $0.name == name }) else { return nil }
            // A shared starting text of 100 letters per region.
            return .concurrent(regions(.randomLetterInsertOrDelete, users: size.k, edits: size.m, baseLength: 100, &rng))
        }
    }

    /// The B3 workload called `name` (one of `replicaNames`): replica `i`
    /// writes what crdt-benchmarks' client `i` writes.
    public static func replicaWorkload(named name: String) -> ReplicaWorkload? {
        let replicas = 0..<b3Replicas
        switch name {
        case "B3.1":
            return ReplicaWorkload(container: .map, values: replicas.map { .number($0) })
        case "B3.2":
            return ReplicaWorkload(container: .map, values: replicas.map { .object(["name": .string(String($0)), "address": .string("here")]) })
        case "B3.3":
            return ReplicaWorkload(container: .map, values: replicas.map { .string(String(repeating: String($0), count: b3Replicas)) })
        case "B3.4":
            return ReplicaWorkload(container: .list, values: replicas.map { .string(String($0)) })
        default:
            return nil
        }
    }

    /// A fixed seed per workload, so that each is generated independently
    /// of which others are selected.
    static func seed(for name: String) -> UInt64 {
        // FNV-1a: Swift's `hashValue` is randomised per process.
        name.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }

    /// One user, one edit per transaction.
    static func sequential(_ pattern: EditPattern, edits: Int, _ rng: inout SeededGenerator) -> SequentialTrace {
        var text: [Unicode.Scalar] = []
        let txns = (0..<edits).map { _ in nextEdit(pattern, in: &text, &rng) }
        return SequentialTrace(endContent: String(scalars: text), txns: txns)
    }

    /// B1.2 and B1.6: one insert of N letters, optionally followed by one delete of them all.
    static func oneUserStringThen(delete: Bool, _ rng: inout SeededGenerator) -> SequentialTrace {
        let string = String(scalars: rng.letters(n))
        var txns = [[Patch(position: 0, deleteCount: 0, insertedText: string)]]
        if delete { txns.append([Patch(position: 0, deleteCount: n, insertedText: "")]) }
        return SequentialTrace(endContent: delete ? "" : string, txns: txns)
    }

    /// B2: user 0 types a shared text of 100 letters; then each of two users,
    /// not seeing the other, makes `edits` edits of `pattern` in one
    /// transaction, and the two exchange.
    static func twoUsers(_ pattern: EditPattern, edits: Int, _ rng: inout SeededGenerator) -> ConcurrentTrace {
        let base = rng.letters(100)
        var txns = [ConcurrentTrace.Txn(parents: [], agent: 0, patches: [Patch(position: 0, deleteCount: 0, insertedText: String(scalars: base))])]
        // What the merge holds: the base letters neither user deleted, and
        // what each user inserted and did not delete itself (the other never
        // sees it). Each user's text tracks where its letters came from.
        var kept = Array(repeating: true, count: base.count)
        var inserted: [Unicode.Scalar] = []
        for agent in 0..<2 {
            var text = base
            var origins = Array(base.indices)  // a base index, or -1 for the user's own letter
            var patches: [Patch] = []
            for _ in 0..<edits {
                for patch in nextEdit(pattern, in: &text, &rng) {
                    origins.replaceSubrange(patch.position..<patch.position + patch.deleteCount,
                                            with: repeatElement(-1, count: patch.inserted.count))
                    patches.append(patch)
                }
            }
            for origin in Set(base.indices).subtracting(origins) { kept[origin] = false }
            inserted += zip(text, origins).compactMap { $1 < 0 ? $0 : nil }
            txns.append(ConcurrentTrace.Txn(parents: [0], agent: agent, patches: patches))
        }
        let merged = zip(base, kept).compactMap { $1 ? $0 : nil } + inserted
        return ConcurrentTrace(
            expected: .anyOrder(sortedScalars: String(scalars: ExpectedText.ascending(merged))), numAgents: 2, txns: txns)
    }

    /// merge-kK-mM: `users` users, each making `edits` edits in its own region.
    static func regions(
        _ pattern: EditPattern, users: Int, edits: Int, baseLength: Int, _ rng: inout SeededGenerator
    ) -> ConcurrentTrace {
        var regions = RegionTrace(bases: (0..<users).map { _ in rng.letters(baseLength) })
        for agent in 0..<users {
            for _ in 0..<edits { regions.edit(agent: agent, pattern, &rng) }
        }
        return regions.trace
    }

    /// Picks the next edit of `pattern` on `text` and applies it to `text`.
    /// Returns it as patches (one, or two for `.wordThenInsertOrDelete`),
    /// each with a position in the text as the patches before it left it.
    static func nextEdit(_ pattern: EditPattern, in text: inout [Unicode.Scalar], _ rng: inout SeededGenerator) -> [Patch] {
        func insert(_ inserted: [Unicode.Scalar], at position: Int) -> Patch {
            text.insert(contentsOf: inserted, at: position)
            return Patch(position: position, deleteCount: 0, insertedText: String(scalars: inserted))
        }
        func delete(_ count: Int, at position: Int) -> Patch {
            text.removeSubrange(position..<position + count)
            return Patch(position: position, deleteCount: count, insertedText: "")
        }
        /// crdt-benchmarks' choice: at the end of the text, or on a coin
        /// toss, a word of 2 to 10 letters; otherwise a delete of 1 to 9.
        func wordOrDelete(at position: Int) -> Patch {
            if position == text.count || Bool.random(using: &rng) {
                return insert(rng.letters(Int.random(in: 2...10, using: &rng)), at: position)
            }
            return delete(Int.random(in: 1...min(9, text.count - position), using: &rng), at: position)
        }
        func randomPosition() -> Int { Int.random(in: 0...text.count, using: &rng) }

        switch pattern {
        case .append: return [insert([rng.letter()], at: text.count)]
        case .prepend: return [insert([rng.letter()], at: 0)]
        case .stringAtStart(let length): return [insert(rng.letters(length), at: 0)]
        case .randomInsert:
            let position = randomPosition()
            return [insert([rng.letter()], at: position)]
        case .randomWord(let lengths):
            let position = randomPosition()
            return [insert(rng.letters(Int.random(in: lengths, using: &rng)), at: position)]
        case .randomInsertOrDelete:
            return [wordOrDelete(at: randomPosition())]
        case .wordThenInsertOrDelete:
            let position = randomPosition()
            let word = insert(rng.letters(Int.random(in: 3...9, using: &rng)), at: position)
            return [word, wordOrDelete(at: position)]
        case .randomLetterInsertOrDelete:
            if !text.isEmpty && Bool.random(using: &rng) {
                return [delete(1, at: Int.random(in: 0..<text.count, using: &rng))]
            }
            let position = randomPosition()
            return [insert([rng.letter()], at: position)]
        }
    }
}

/// Builds a concurrent trace in which each agent edits only its own region
/// (see `CRDTBenchmarks`). Agent 0 first types the starting text, a newline
/// then the base of each region; every agent then edits on top of that
/// transaction without seeing the others, and merging all gives `trace`.
struct RegionTrace {
    private var regions: [[Unicode.Scalar]]
    /// Where each region starts in its own agent's view, which never
    /// changes: an agent sees only the starting text and its own edits.
    private let starts: [Int]
    private var txns: [ConcurrentTrace.Txn]
    /// Each agent's latest transaction: the parent of its next one.
    private var latest: [Int]

    init(bases: [[Unicode.Scalar]]) {
        regions = bases
        var starts: [Int] = [], start = 0
        for base in bases {
            starts.append(start + 1)
            start += 1 + base.count
        }
        self.starts = starts
        let startingText = String(scalars: bases.flatMap { ["\n"] + $0 })
        txns = [ConcurrentTrace.Txn(parents: [], agent: 0, patches: [Patch(position: 0, deleteCount: 0, insertedText: startingText)])]
        latest = Array(repeating: 0, count: bases.count)
    }

    /// One transaction of `agent`: its next edit of `pattern`, in its region.
    mutating func edit(agent: Int, _ pattern: CRDTBenchmarks.EditPattern, _ rng: inout SeededGenerator) {
        let patches = CRDTBenchmarks.nextEdit(pattern, in: &regions[agent], &rng).map { patch in
            Patch(position: starts[agent] + patch.position, deleteCount: patch.deleteCount, insertedText: patch.insertedText)
        }
        txns.append(ConcurrentTrace.Txn(parents: [latest[agent]], agent: agent, patches: patches))
        latest[agent] = txns.count - 1
    }

    var trace: ConcurrentTrace {
        ConcurrentTrace(expected: .exact(String(scalars: regions.flatMap { ["\n"] + $0 })), numAgents: regions.count, txns: txns)
    }
}
