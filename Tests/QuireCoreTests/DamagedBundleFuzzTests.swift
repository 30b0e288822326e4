import Testing
import QuireTestSupport
@testable import QuireCore

/// A bundle damaged inside a valid checksum (a faulty or hostile peer) may
/// still decode. Whatever it then says, the catching-up path, which reads
/// runs of changes straight from the columns and applies each run as one
/// operation, must end exactly as applying the decoded changes one by one:
/// the same changes applied or refused, the same state, history and heads.
///
/// `HostileInputTests` checks that damage never traps; this checks that the
/// fast paths judge damaged changes as the reference path does. Run longer
/// with `QUIRE_FUZZ_SEEDS=5000 swift test --filter DamagedBundleFuzz`.
@Suite struct DamagedBundleFuzzTests {
    /// Histories that take each fast path: typing and deleting runs of two
    /// writers, concurrent pastes and replacements, long selections and
    /// multi-cursor deletes, changes of several edits checked before they
    /// apply, and every kind of object.
    static func sources() throws -> [(name: String, document: Document)] {
        [
            ("typing", try BulkApplyTests.typedDocument(seed: 3, replicas: 2)),
            ("concurrent", try BulkApplyTests.concurrentDocument(seed: 12, replicas: 3)),
            ("fragmented deletes", try BulkApplyTests.fragmentedDeletesDocument(seed: 43, replicas: 2)),
            ("several edits a change", try BulkApplyTests.multiEditDocument(seed: 31, replicas: 3)),
            ("every object kind", try HostileInputTests.sample()),
        ]
    }

    @Test func aDamagedBundleThatDecodesAppliesInBulkAsChangeByChange() throws {
        let seeds = fuzzSeedCount(default: 150)
        for (name, source) in try Self.sources() {
            // Into a fresh replica, and into one that holds the first half
            // of the history already, as a sync delivers what a replica lacks.
            let history = try source.allChanges()
            var half = Document(replica: ReplicaID(2))
            // Caught up in bulk too, so that its history is a bundle and the next bundle takes the fast path.
            try half.applyEncoded(ChangeEncoding.encode(Array(history.prefix(history.count / 2))))
            try #require(half.history.canAppendBundle, "\(name): the first half was recorded change by change")
            for (base, bundle) in [(Document(replica: ReplicaID(2)), try source.encodeChanges()),
                                   (half, try source.encodeChanges(since: half.versionVector))] {
                let context = "\(name), \(base.versionVector.isEmpty ? "fresh" : "half") replica"
                let body = try BundleBody(Array(try Envelope.open(bundle, magic: ChangeEncoding.magic, name: name,
                                                                  version: ChangeEncoding.version).remainingBytes))
                let values = body.valueOffsets
                var decoded = 0
                for seed in 1...UInt64(seeds) {
                    var rng = SeededGenerator(seed: seed)
                    // One in four: one value replaced, by a small one or by one far out of its usual range.
                    let damaged = Int.random(in: 0..<4, using: &rng) == 0
                        ? body.withValueReplaced(using: &rng) : Self.damage(body.bytes, mostlyAt: values, using: &rng)
                    let framed = Envelope.seal(magic: ChangeEncoding.magic, version: ChangeEncoding.version, body: damaged)
                    var bulk = base
                    let bulkApplied = Result { try bulk.applyEncoded(framed) }
                    guard let changes = try? ChangeEncoding.decode(framed) else {
                        // The catching-up path reads with the same decoder: it must refuse the bundle too.
                        let refused = (try? bulkApplied.get()) == nil
                        try #require(refused, "\(context), seed \(seed): the bundle does not decode, yet it applied")
                        continue
                    }
                    decoded += 1
                    var oneByOne = base
                    let oneByOneApplied = Result { try oneByOne.apply(changes) }
                    try Self.requireSame(bulk, bulkApplied, as: oneByOne, oneByOneApplied, "\(context), seed \(seed)")
                }
                // Most damage breaks the encoding; enough must decode for the comparison to mean something.
                #expect(decoded >= seeds / 10, "\(context): only \(decoded) of \(seeds) damaged bundles decoded")
            }
        }
    }

    /// Changes one to three bytes of `body`, three times in four at one of
    /// `offsets`: mostly by one up or down or one bit, which keeps most
    /// varints' lengths and so the columns readable; otherwise to any byte.
    static func damage(_ body: [UInt8], mostlyAt offsets: [Int], using rng: inout SeededGenerator) -> [UInt8] {
        var damaged = body
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            let index = Int.random(in: 0..<4, using: &rng) > 0
                ? offsets.randomElement(using: &rng)! : Int.random(in: 0..<damaged.count, using: &rng)
            damaged[index] = switch Int.random(in: 0..<4, using: &rng) {
            case 0: damaged[index] &+ 1
            case 1: damaged[index] &- 1
            case 2: damaged[index] ^ (1 << UInt8.random(in: 0..<7, using: &rng))
            default: UInt8.random(in: 0...255, using: &rng)
            }
        }
        return damaged
    }

    /// Requires both replicas to have applied the same number of changes
    /// or both to have refused the bundle, and to be alike in every way
    /// that sync and readers see.
    static func requireSame(_ bulk: Document, _ bulkApplied: Result<Int, any Error>,
                            as oneByOne: Document, _ oneByOneApplied: Result<Int, any Error>, _ context: String) throws {
        let (bulkCount, oneByOneCount) = (try? bulkApplied.get(), try? oneByOneApplied.get())
        try #require(bulkCount == oneByOneCount, "\(context): in bulk \(bulkApplied), one by one \(oneByOneApplied)")
        try #require(bulk.versionVector == oneByOne.versionVector, "\(context): versions differ")
        try #require(bulk.heads == oneByOne.heads, "\(context): heads differ")
        try #require(bulk.pendingCount == oneByOne.pendingCount, "\(context): pending changes differ")
        try #require(bulk.maxLamport == oneByOne.maxLamport, "\(context): Lamport clocks differ")
        let sameState = bulk.encodeSnapshot(includeHistory: false) == oneByOne.encodeSnapshot(includeHistory: false)
        let states = sameState ? "" : "\n\(try RandomEdits.render(bulk))\n---\n\(try RandomEdits.render(oneByOne))"
        try #require(sameState, "\(context): states differ:\(states)")
        let sameHistory = try bulk.allChanges() == oneByOne.allChanges()
        try #require(sameHistory, "\(context): histories differ")
    }
}

/// A change bundle's body (as `Envelope.open` returns it), read as far as
/// its columns: each column's runs, and where each value's bytes lie.
struct BundleBody {
    let bytes: [UInt8]
    /// Where the columns start (after the tables and the change count) and
    /// end (before the text and the values).
    let columnsStart: Int, columnsEnd: Int
    let columns: [[(run: UInt64, value: UInt64, valueBytes: Range<Int>)]]
    /// Where the text of the inserts lies.
    let textBytes: Range<Int>

    init(_ bytes: [UInt8]) throws {
        self.bytes = bytes
        var reader = ByteReader(bytes)
        _ = try ChangeEncoding.readTables(&reader)
        _ = try ChangeEncoding.readChangeCount(&reader, limits: .default)
        columnsStart = reader.offset
        var columns: [[(run: UInt64, value: UInt64, valueBytes: Range<Int>)]] = []
        for name in ChangeEncoding.Column.names {
            var column = ByteReader(bytes, range: try reader.readData(name).indices)
            var runs: [(run: UInt64, value: UInt64, valueBytes: Range<Int>)] = []
            // Written as `ChangeEncoding.version` writes columns (two kind
            // bits): a repeat run is one entry; a literal run, one entry of
            // run 1 per value; a run of the last repeated value, one entry
            // whose value takes no bytes (and then one literal, for kind 3).
            var lastRepeated: UInt64 = 0
            while !column.isAtEnd {
                let header = try column.readVarint("a run header")
                let length = header >> 2
                switch header & 3 {
                case 0:
                    let valueStart = column.offset
                    lastRepeated = try column.readVarint("a value")
                    runs.append((length, lastRepeated, valueStart..<column.offset))
                case 1:
                    for _ in 0..<length {
                        let valueStart = column.offset
                        runs.append((1, try column.readVarint("a value"), valueStart..<column.offset))
                    }
                default:
                    runs.append((length, lastRepeated, column.offset..<column.offset))
                    if header & 3 == 3 {
                        let valueStart = column.offset
                        runs.append((1, try column.readVarint("a value"), valueStart..<column.offset))
                    }
                }
            }
            columns.append(runs)
        }
        self.columns = columns
        columnsEnd = reader.offset
        textBytes = try reader.readData("the text content").indices
    }

    /// Where the columns' values and the text lie: damage there changes
    /// what the changes say (counters, Lamport values, origins, lengths,
    /// characters), where damage elsewhere (tables, run lengths) mostly
    /// makes the bundle unreadable.
    var valueOffsets: [Int] { columns.flatMap { $0.flatMap { Array($0.valueBytes) } } + Array(textBytes) }

    /// The body with one value of one column, for one change or operation,
    /// replaced: half the time by a small one (0 to 4: a signed delta of
    /// -2 to 2, as one change's counter or Lamport value off by one or
    /// two), half the time by an extreme one (next to 0, `2^31`, `2^32`,
    /// `2^62`, `2^63` or `2^64`). The column is written again, so the
    /// bundle stays readable where one changed byte could not make such a
    /// value.
    /// Half the time the column is one of those that say which changes come
    /// in what order (replica, counter, Lamport value, parents).
    func withValueReplaced(using rng: inout SeededGenerator) -> [UInt8] {
        let stampColumns = ChangeEncoding.Column.changeReplica.rawValue...ChangeEncoding.Column.parentCounter.rawValue
        let candidates = Bool.random(using: &rng) ? Array(stampColumns) : Array(columns.indices)
        let damaged = candidates.filter { !columns[$0].isEmpty }.randomElement(using: &rng)!
        let run = Int.random(in: columns[damaged].indices, using: &rng)
        let at = UInt64.random(in: 0..<columns[damaged][run].run, using: &rng)
        let extremes: [UInt64] = [1, 1 << 31, 1 << 32, 1 << 62, 1 << 63, .max]
        let replacement = Bool.random(using: &rng)
            ? UInt64.random(in: 0...4, using: &rng)
            : extremes.randomElement(using: &rng)! &+ UInt64(bitPattern: Int64.random(in: -2...1, using: &rng))
        var written = ByteWriter()
        written.writeBytes(bytes[..<columnsStart])
        for (index, runs) in columns.enumerated() {
            var column = ColumnWriter<ReusedRepeatColumns>()
            for (position, (run: length, value: value, valueBytes: _)) in runs.enumerated() {
                guard index == damaged && position == run else {
                    column.append(value, count: length)
                    continue
                }
                column.append(value, count: at)
                column.append(replacement)
                column.append(value, count: length - at - 1)
            }
            column.finish()
            written.writeData(column.written)
        }
        written.writeBytes(bytes[columnsEnd...])  // the text and the values, as they were
        return written.bytes
    }
}
