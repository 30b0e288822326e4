import QuireCore

/// Median, fastest and slowest of a set of timings, in milliseconds.
public struct Spread: Sendable, Equatable {
    public var median: Double
    public var min: Double
    public var max: Double

    /// nil for no samples.
    public init?(nanoseconds samples: [UInt64]) {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted().map { Double($0) / 1e6 }
        let middle = sorted.count / 2
        median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        min = sorted[0]
        max = sorted[sorted.count - 1]
    }

    /// The rates, per second, of runs that each did `count` things in these
    /// times: the median rate is the median run's (as is the median time when
    /// the count of runs is odd), the minimum the slowest run's.
    public func perSecond(_ count: Int) -> Spread {
        Spread(median: Double(count) / median * 1000, min: Double(count) / max * 1000, max: Double(count) / min * 1000)
    }
}

/// Everything measured and checked for one trace file.
public struct TraceMeasurement: Sendable {
    public var trace: String
    public var kind: String
    public var ops: Int
    public var txns: Int
    /// Timed runs completed (the warm-up not counted).
    public var runs: Int
    public var local: Spread?
    public var merge: Spread?
    /// Encoding the whole history for a peer (`ReplayResult.historyNanos`).
    public var history: Spread?
    public var encodedBytes: Int?
    /// The sync message carrying that history to a fresh replica (`SentHistory`).
    public var sentHistoryBytes: Int?
    /// Opening the final document from its snapshot; see `SnapshotLoad`.
    public var load: Spread?
    public var snapshotBytes: Int?
    public var memoryBytes: Int?
    /// Every failed check, in the order found; empty means ok.
    public var failures: [String]

    public var ok: Bool { failures.isEmpty }
}

extension TraceMeasurement {
    /// Checks the trace with the reference replay (sequential traces), then
    /// replays it through `Document` once to warm up and `runs` times timed.
    /// Stops at the first run that fails: later ones would fail the same way.
    public static func measure(trace: EditingTrace, named name: String, runs: Int) -> TraceMeasurement {
        var result = TraceMeasurement(
            trace: name, kind: trace.kind, ops: trace.opCount, txns: trace.txnCount, runs: 0, failures: [])
        // Checks and planning happen once, before any run.
        let replayOnce: () throws -> ReplayResult
        switch trace {
        case .sequential(let sequential):
            do {
                let reference = try sequential.referenceReplay()
                if let difference = scalarDifference(reference, sequential.endContent.unicodeScalars) {
                    result.failures.append("reference replay: \(difference)")
                }
            } catch {
                result.failures.append("reference replay: \(error)")
                return result
            }
            replayOnce = { try TraceReplay.replay(sequential) }
        case .concurrent(let concurrent):
            do {
                let plan = try ConcurrentPlan(concurrent)
                replayOnce = { try TraceReplay.replay(concurrent, plan: plan) }
            } catch {
                result.failures.append("\(error)")
                return result
            }
        }

        return result.measuringRuns(runs, replayOnce)
    }

    /// Runs `replayOnce` once to warm up and `runs` times timed, adding the
    /// timings and failures to `self`.
    func measuringRuns(_ runs: Int, _ replayOnce: () throws -> ReplayResult) -> TraceMeasurement {
        var result = self
        var local: [UInt64] = [], merge: [UInt64] = [], history: [UInt64] = []
        var final: Document?
        // Only the last run's history is kept: kept from every run, each
        // would stay allocated through the next run's timed replay.
        var finalHistory: [UInt8] = []
        for run in 0...runs {
            let replay: ReplayResult
            do { replay = try replayOnce() } catch {
                result.failures.append("document replay threw: \(error)")
                break
            }
            result.encodedBytes = replay.history.count
            result.failures += replay.failures
            guard replay.failures.isEmpty else { break }
            final = replay.document
            if run == runs { finalHistory = replay.history }
            if run > 0 {  // run 0 is the warm-up
                local.append(replay.localNanos)
                merge.append(replay.mergeNanos)
                history.append(replay.historyNanos)
            }
        }
        result.runs = local.count
        result.local = Spread(nanoseconds: local)
        result.merge = Spread(nanoseconds: merge)
        result.history = Spread(nanoseconds: history)
        if let final, result.ok {
            // Consumed, so that its bytes are freed before the loads are measured.
            result.sentHistoryBytes = SentHistory.messageBytes(of: final, history: consume finalHistory)
            do {
                let snapshot = try SnapshotLoad.measure(final, runs: runs)
                result.load = snapshot.load
                result.snapshotBytes = snapshot.frameBytes
                result.memoryBytes = snapshot.memoryBytes
                if let failure = snapshot.failure { result.failures.append(failure) }
            } catch {
                result.failures.append("snapshot: \(error)")
            }
        }
        return result
    }
}

/// One named figure with its unit, for the benchmarks whose figures are
/// rates, times and sizes of their own (store, sync) rather than a replay's.
public struct Measure: Sendable, Equatable {
    public var name: String
    /// "ms", "edits/s", "bytes", ...
    public var unit: String
    /// The median over the runs, or the figure itself when it is the same every run (a byte count).
    public var median: Double
    /// The least and greatest over the runs; nil for a figure that is the same every run.
    public var spread: ClosedRange<Double>?

    public init(_ name: String, _ unit: String, _ spread: Spread) {
        self.name = name
        self.unit = unit
        median = spread.median
        self.spread = spread.min...spread.max
    }

    public init(_ name: String, _ unit: String, exactly value: Double) {
        self.name = name
        self.unit = unit
        median = value
        spread = nil
    }
}
