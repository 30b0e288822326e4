import Foundation
import QuireCore

/// What one library measured on one workload. Times are medians with their
/// spread over the runs; nil where a library has no such figure.
public struct LibraryFigures: Sendable {
    /// "quire", "yrs" or "loro".
    public var library: String
    public var version: String?
    public var ok: Bool
    public var runs: Int
    /// Local replay: every edit through the library's API (for concurrent
    /// workloads including the exchanges).
    public var local: Spread?
    /// Peers only: the same Python loop with no library call.
    public var emptyLoop: Spread?
    /// A fresh replica applying the whole encoded history in one call.
    public var merge: Spread?
    /// The rounds of merges in turns with the other libraries (`MergeTurns`)
    /// that `merge` comes from; nil when it comes from this library's own
    /// `runs`, one library after the other.
    public var mergeRounds: Int?
    /// Writing the snapshot from the replayed document, in one call:
    /// Quire's store snapshot frame (full history, zstd), Yrs's v1 update,
    /// Loro's `Snapshot` export.
    public var encode: Spread?
    /// A fresh replica loading the snapshot.
    public var load: Spread?
    public var encodedBytes: Int?
    /// Quire only: the sync message that carries the encoded history to a
    /// fresh replica, zstd-compressed as sync sends it (`SentHistory`); nil
    /// in reports written before it was measured.
    public var sentHistoryBytes: Int?
    public var snapshotBytes: Int?
    /// Heap bytes in use held by the replayed document (glibc mallinfo2
    /// after the replay minus before); the peers measure it the same way in
    /// a fresh process (`peers.py`, "Memory").
    public var memoryBytes: Int?
    /// The figures of a family that is not a replay (store, sync).
    public var measures: [Measure] = []
    public var failures: [String] = []

    public init(library: String, ok: Bool, runs: Int) {
        self.library = library
        self.ok = ok
        self.runs = runs
    }
}

/// One workload with every library's figures, and the command that measured them.
public struct WorkloadResult: Sendable {
    public var name: String
    public var family: SuiteWorkload.Family
    public var description: String
    /// The `quire-bench suite` command line: a day's report gathers the
    /// workloads of several runs, each keeping the figures of the last.
    public var command: String
    /// Operations in the workload's history; nil for the store and sync families.
    public var ops: Int?
    public var figures: [LibraryFigures]
    /// Why the merges were not measured in turns although the peers were
    /// (`MergeTurns` failed): each library's merge then comes from its own runs.
    public var mergeTurnsFailure: String?
    /// True when the merges were measured in turns with each library's timed
    /// merge right after an untimed one of its own (`MergeTurns.measure`,
    /// since the forty-third session); nil when they were not measured in
    /// turns, and in days recorded before the JSON said how, whose merges in
    /// turns had one warm-up merge each before the first round only.
    public var mergeTimedAfterUntimed: Bool?

    public init(name: String, family: SuiteWorkload.Family, description: String, command: String, ops: Int?, figures: [LibraryFigures]) {
        self.name = name
        self.family = family
        self.description = description
        self.command = command
        self.ops = ops
        self.figures = figures
    }

    public init(workload: SuiteWorkload, command: String, ops: Int?, figures: [LibraryFigures]) {
        self.init(name: workload.name, family: workload.family, description: workload.description, command: command, ops: ops, figures: figures)
    }

    public func figures(of library: String) -> LibraryFigures? { figures.first { $0.library == library } }

    /// Merged in turns with the peers (`MergeTurns`), either way.
    var mergedInTurns: Bool { figures.contains { $0.mergeRounds != nil } }

    /// Merged in turns, but not each library's timed merge right after an
    /// untimed one of its own: recorded before `mergeTimedAfterUntimed` was.
    var mergedInTurnsTheOlderWay: Bool { mergeTimedAfterUntimed != true && mergedInTurns }
}

extension WorkloadResult {
    /// Every figure as the JSON file keeps it (`SuiteReport.stored`).
    var stored: WorkloadResult {
        func stored(_ spread: Spread?) -> Spread? {
            spread.map { Spread(median: SuiteReport.stored($0.median), min: SuiteReport.stored($0.min), max: SuiteReport.stored($0.max)) }
        }
        var result = self
        for index in result.figures.indices {
            let figures = result.figures[index]
            result.figures[index].local = stored(figures.local)
            result.figures[index].emptyLoop = stored(figures.emptyLoop)
            result.figures[index].merge = stored(figures.merge)
            result.figures[index].encode = stored(figures.encode)
            result.figures[index].load = stored(figures.load)
            result.figures[index].measures = figures.measures.map { measure in
                var stored = measure
                stored.median = SuiteReport.stored(measure.median)
                stored.spread = measure.spread.map { SuiteReport.stored($0.lowerBound)...SuiteReport.stored($0.upperBound) }
                return stored
            }
        }
        return result
    }
}

extension Spread {
    public init(median: Double, min: Double, max: Double) {
        self.median = median
        self.min = min
        self.max = max
    }
}

extension LibraryFigures {
    /// Quire's figures: the trace measurement (local, merge, encoded size),
    /// then one more replay whose document is kept to measure its memory,
    /// snapshot encoding and loading.
    public static func quire(
        _ measurement: TraceMeasurement, runs: Int, replayOnce: () throws -> ReplayResult
    ) -> LibraryFigures {
        var figures = LibraryFigures(library: "quire", ok: measurement.ok, runs: measurement.runs)
        figures.local = measurement.local
        figures.merge = measurement.merge
        figures.encodedBytes = measurement.encodedBytes
        figures.sentHistoryBytes = measurement.sentHistoryBytes
        figures.failures = measurement.failures
        guard measurement.ok else { return figures }
        do {
            let before = heapInUse()
            // Only the document is kept: the history the replay encoded is
            // the merge's input and is freed before the heap is read.
            let document = try replayOnce().document
            figures.memoryBytes = heapInUse() - before
            let snapshot = try SnapshotLoad.measure(document, runs: runs)
            figures.snapshotBytes = snapshot.frameBytes
            figures.encode = snapshot.seal
            figures.load = snapshot.load
            if let failure = snapshot.failure {
                figures.ok = false
                figures.failures.append(failure)
            }
        } catch {
            figures.ok = false
            figures.failures.append("snapshot or memory run threw: \(error)")
        }
        return figures
    }

    /// Quire's figures for a family that is not a replay (store, sync).
    public static func quire(measures: [Measure], runs: Int) -> LibraryFigures {
        var figures = LibraryFigures(library: "quire", ok: true, runs: runs)
        figures.measures = measures
        return figures
    }

    /// A peer the suite was asked to measure and could not: no figures, and
    /// a failed check that says why, so that the report shows the gap.
    public static func notMeasured(_ library: String, because reason: String) -> LibraryFigures {
        var figures = LibraryFigures(library: library, ok: false, runs: 0)
        figures.failures = ["not measured: \(reason)"]
        return figures
    }

    /// Each peer's figures from the output of `peers.py --json`; a peer
    /// without a line (the script ended before it) is `notMeasured`, `because`.
    public static func peers(output: String, missingBecause reason: String) -> [LibraryFigures] {
        let measured = output.split(separator: "\n").compactMap { peer(jsonLine: String($0)) }
        return SuiteReport.peers.map { name in measured.first { $0.library == name } ?? notMeasured(name, because: reason) }
    }

    /// One JSON line of `peers.py --json`; nil for a line that is not one.
    public static func peer(jsonLine: String) -> LibraryFigures? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(jsonLine.utf8)) as? [String: Any],
              let library = object["peer"] as? String
        else { return nil }
        func spread(_ key: String) -> Spread? {
            guard let median = object[key] as? Double, let min = object[key + "Min"] as? Double,
                  let max = object[key + "Max"] as? Double
            else { return nil }
            return Spread(median: median, min: min, max: max)
        }
        var figures = LibraryFigures(library: library, ok: object["ok"] as? Bool ?? false, runs: object["runs"] as? Int ?? 0)
        figures.version = object["version"] as? String
        figures.local = spread("localMs")
        figures.emptyLoop = spread("emptyLoopMs")
        figures.merge = spread("mergeMs")
        figures.encode = spread("encodeMs")
        figures.load = spread("loadMs")
        figures.encodedBytes = object["encodedBytes"] as? Int
        figures.snapshotBytes = object["snapshotBytes"] as? Int
        figures.memoryBytes = object["memoryBytes"] as? Int
        if !figures.ok { figures.failures = ["peer check failed: \(object["okDetail"] ?? "?")"] }
        return figures
    }
}
