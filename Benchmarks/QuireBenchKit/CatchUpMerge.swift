import JSONText
import QuireCore

/// A replica that holds part of a document catching up on the rest in one
/// bundle, as a store whose copy of a note is behind takes a sync: the
/// first half of a trace's changes (in history order) merged into a fresh
/// replica, saved as a snapshot and loaded, then the changes it lacks, as
/// the replayed document encodes them for it, merged into the loaded one.
/// Unlike `TraceReplay.merge`, the merging replica is not fresh: its texts
/// hold spans already, and its arenas were sized to them when it loaded.
public struct CatchUpMeasurement: Sendable {
    public var trace: String
    /// Changes the loaded replica holds, and changes the bundle brings.
    public var heldChanges = 0
    public var mergedChanges = 0
    public var bundleBytes = 0
    /// Timed runs completed (the warm-up not counted).
    public var runs = 0
    /// The merge alone, each run into a replica loaded again from the snapshot.
    public var merge: Spread?
    /// Heap bytes the replica gained by the merge (median over the runs):
    /// what malloc reports in use after the merge minus before, the bundle's
    /// bytes allocated before. Measured, not estimated: spare room counts.
    public var memoryBytes: Int?
    /// Every failed check; empty means ok.
    public var failures: [String] = []

    public var ok: Bool { failures.isEmpty }

    /// One JSON object on one line; a figure not measured is null.
    public var jsonLine: String {
        let ms = jsonMilliseconds
        return JSONValue.orderedObject([
            ("trace", .string(trace)),
            ("heldChanges", .integer(heldChanges)),
            ("mergedChanges", .integer(mergedChanges)),
            ("bundleBytes", .integer(bundleBytes)),
            ("ok", .bool(ok)),
            ("runs", .integer(runs)),
            ("mergeMs", ms(merge?.median)),
            ("mergeMsMin", ms(merge?.min)),
            ("mergeMsMax", ms(merge?.max)),
            ("memoryBytes", memoryBytes.map { .integer($0) } ?? .null),
            ("failures", .array(failures.map(JSONValue.string))),
        ]).compact
    }
}

public enum CatchUpMerge {
    /// Replays `trace` once (untimed, its checks kept) for its document,
    /// then merges the second half of its history into a replica loaded
    /// with the first half, once to warm up and `runs` times measured; the
    /// first merge's state is checked against the replayed document's.
    public static func measure(trace: EditingTrace, named name: String, runs: Int) -> CatchUpMeasurement {
        var result = CatchUpMeasurement(trace: name)
        do {
            let replay = try replayed(trace)
            result.failures = replay.failures
            guard result.ok else { return result }
            let source = replay.document
            let changes = try source.changes(since: VersionVector())
            var half = Document(replica: ReplicaID(998))
            try half.applyEncoded(ChangeEncoding.encode(changes.prefix(changes.count / 2)), limits: unlimited)
            let snapshot = half.encodeSnapshot()
            let bundle = try source.encodeChanges(since: half.versionVector)
            (result.heldChanges, result.mergedChanges, result.bundleBytes) = (changes.count / 2, changes.count - changes.count / 2, bundle.count)

            var times: [UInt64] = [], memory: [Int] = []
            for run in 0...runs {
                var replica = try Document(snapshot: snapshot, replica: ReplicaID(999), limits: unlimited)
                let heapBefore = heapInUse()
                let nanos = try merge(bundle, into: &replica)
                let heapAfter = heapInUse()
                if run == 0 {
                    if replica.encodeSnapshot(includeHistory: false) != source.encodeSnapshot(includeHistory: false) {
                        result.failures.append("the replica that caught up has a different state from the replayed document")
                        return result
                    }
                } else {
                    times.append(nanos)
                    memory.append(heapAfter - heapBefore)
                }
                withExtendedLifetime(replica) {}
            }
            result.runs = times.count
            result.merge = Spread(nanoseconds: times)
            result.memoryBytes = memory.sorted()[memory.count / 2]
        } catch {
            result.failures.append("\(error)")
        }
        return result
    }

    /// The bytes were encoded by this process: the limits for bytes from
    /// elsewhere do not apply (as in `TraceReplay.merge`).
    private static let unlimited = DecodingLimits(maxChanges: .max, maxOperations: .max)

    /// `replica` applying `bundle`, and the CPU time that took. Never
    /// inlined, so that a profiler can single out the merge.
    @inline(never)
    static func merge(_ bundle: [UInt8], into replica: inout Document) throws -> UInt64 {
        let start = CPUClock.now()
        try replica.applyEncoded(bundle, limits: unlimited)
        return CPUClock.now() - start
    }

    private static func replayed(_ trace: EditingTrace) throws -> ReplayResult {
        switch trace {
        case .sequential(let sequential): try TraceReplay.replay(sequential)
        case .concurrent(let concurrent): try TraceReplay.replay(concurrent, plan: ConcurrentPlan(concurrent))
        }
    }
}
