import Foundation
import QuireBenchKit

let suiteUsage = """
    suite [TRACE...] [--only PATTERN] [--runs N] [--peers]
        Every workload: the traces in ../shared/traces and any TRACE given, crdt-benchmarks
        B1 to B3 (generated into Benchmarks/.workloads), merge throughput (k replicas × m edits),
        the store (durable commits per second, opening 1000 documents), sync catch-up of
        automerge-paper through the HTTP server on loopback, and B4x100 (slow); store, sync and
        B4x100 are Quire only. Results accumulate per day in Benchmarks/results/DATE.json:
        a run replaces the workloads it measures and keeps the others, and rewrites the JSON,
        DATE.md and one SVG chart per family after every workload. A DATE.json that is not
        a report is moved to DATE.damaged.json. A full run (no --only) also puts its
        report in Benchmarks/RESULTS.md, between marks that keep the rest of that file,
        unless ../shared/traces holds no trace (a warning then says the traces are left out).
        Run it from the package root. DATE.json's keys: `command`, `date`, `machine`, `commit`,
        `swift` (the last run's), and `workloads`, each with `name`, `family`, `description`,
        `command` (the run that measured it), `ops`, `mergeTurnsFailure`, `mergeTimedAfterUntimed`
        (true when merged in turns, each library's timed merge right after an untimed one of its
        own; absent from days recorded before it) and `libraries`, each
        with `library`, `version`, `ok`, `runs`, `localMs`, `emptyLoopMs`, `mergeMs`,
        `mergeRounds`, `encodeMs`, `loadMs` (each {`median`, `min`, `max`} in ms),
        `encodedBytes` (the raw history the merge applies), `sentHistoryBytes` (Quire only: that
        history in the sync message that carries it to a fresh replica, zstd-compressed as sync
        sends it; absent from days recorded before it), `snapshotBytes`, `memoryBytes` (bytes),
        `measures` (store and sync: each with `name`, `unit`, `median`, `min`, `max`) and
        `failures`; null where not measured.
        --only PATTERN  only workloads whose name or family contains one of the comma-separated patterns
                        (automerge-paper is also named B4, as in crdt-benchmarks); a pattern that is a
                        workload's whole name selects that one only (merge-k2-m1000, not merge-k2-m10000)
        --runs N        timed runs after one warm-up (default 3; B4x100 always 1)
        --peers         also run Yrs and Loro (Benchmarks/peers/run.sh) on the same files; the merge
                        figures of all three then come from rounds in which they take turns
                        (N rounds, at least \(MergeTurns.minimumRounds); in each, every library's timed
                        merge comes right after an untimed one of its own). Peers that cannot run are
                        reported as not measured, beside Quire's figures, and the exit status is 1
        --rewrite DATE  measure nothing: write Benchmarks/results/DATE.md and the DATE charts again from
                        DATE.json with this binary's report code (and RESULTS.md's suite part when a
                        full run measured that day); alone, without the other options
    """

/// Where the generated workloads (B1 to B3, merge throughput) are kept between runs.
private let workloadCache = "Benchmarks/.workloads"

/// `quire-bench suite`; returns 0 when every check passed, else 1.
func runSuiteCommand(_ arguments: [String]) throws(UsageError) -> Int32 {
    let parsed = try parse(arguments, flags: ["--peers"], options: ["--only", "--runs", "--rewrite"])
    let runs = try parsed.positiveInteger("--runs", default: 3)
    guard FileManager.default.fileExists(atPath: peersRunner) else {
        throw UsageError(message: "run suite from the package root (Benchmarks/ not found)")
    }
    if let date = parsed.options["--rewrite"] {
        guard parsed.options.count == 1, parsed.flags.isEmpty, parsed.positional.isEmpty else {
            throw UsageError(message: "--rewrite measures nothing: give it alone, without traces or other options")
        }
        return rewriteReport(of: date)
    }
    let sharedTraceFiles = sharedTraceFiles()
    // Run from elsewhere, a full run measured no trace and then replaced
    // RESULTS.md's table with one that had lost its trace rows, unannounced.
    let isFullRun = parsed.options["--only"] == nil && !sharedTraceFiles.isEmpty
    if parsed.options["--only"] == nil && sharedTraceFiles.isEmpty {
        printError("warning: no traces in \(sharedTraces) (the suite reads them from beside the package): "
                   + "the trace workloads are left out and Benchmarks/RESULTS.md is not replaced")
    }
    // A TRACE that is not there fails now, not after the workloads before it.
    if let missing = parsed.positional.first(where: { !FileManager.default.fileExists(atPath: $0) }) {
        printError("error: \(missing): no such file")
        return 1
    }
    let (allWorkloads, workloads) = try suiteWorkloads(traces: sharedTraceFiles + parsed.positional, only: parsed.options["--only"])

    let date = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withFullDate])
    let command = (["quire-bench"] + CommandLine.arguments.dropFirst()).joined(separator: " ")
    let files = SuiteResultsFiles(directory: "Benchmarks/results", date: date)
    guard var report = startReport(command: command, date: date, files: files) else { return 1 }

    // Checked once, before any workload: a broken install was otherwise
    // retried, pip and all, twice for every workload.
    let withPeers = parsed.flags.contains("--peers")
    let peersProblem = withPeers && workloads.contains(where: \.hasPeers) ? checkPeers() : nil
    if let peersProblem { printErrorAfterProgress("error: \(peersProblem) (its errors are above); measuring Quire only") }

    var measured = 0, allOK = true
    /// Puts `result` in the day's report and writes the files, after every
    /// workload, so that an interrupted run keeps what it measured; false
    /// when they cannot be written.
    func record(_ result: WorkloadResult) -> Bool {
        allOK = allOK && result.figures.allSatisfy(\.ok)
        report.results = SuiteReport.merging([result], into: report.results, order: allWorkloads.map(\.name))
        do { try files.write(report) } catch {
            printErrorAfterProgress("error: cannot write the results: \(error)")
            return false
        }
        return true
    }
    for (index, workload) in workloads.enumerated() {
        let step = "[\(index + 1)/\(workloads.count)] \(workload.name)"
        let (result, wasMeasured) = measureWorkload(workload, step: step, runs: runs, command: command,
                                                    withPeers: withPeers, peersProblem: peersProblem)
        if wasMeasured { measured += 1 }
        guard record(result) else { return 1 }
    }
    progress("")

    if isFullRun {
        guard writeResultsSection(report) else { return 1 }
    }
    guard measured > 0 else {
        printError("error: no workload could be measured; \(files.markdownPath) says why")
        return 1
    }
    printLine("wrote \(files.jsonPath) and .md with \(count(measured, "workload")) measured by this run, \(report.results.count) in all, and \(count(report.charts.count, "chart"))")
    // This run's workloads only: the day's report also holds earlier runs'
    // figures, which --only B1.1 listed here as if it had just measured them.
    var thisRun = report
    thisRun.results = report.results.filter { result in workloads.contains { $0.name == result.name } }
    for statement in thisRun.behindStatements { printLine("behind: \(statement)") }
    return measured == workloads.count && allOK ? 0 : 1
}

/// Where the suite finds the shared editing traces: beside the package, as in CI.
private let sharedTraces = "../shared/traces"

/// The trace files in `sharedTraces`, sorted; none when it is not there.
private func sharedTraceFiles() -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: sharedTraces)) ?? [])
        .filter { $0.hasSuffix(".json.gz") || $0.hasSuffix(".json") }.sorted().map { sharedTraces + "/" + $0 }
}

/// Every workload of the suite (the trace files, then the generated ones),
/// and those of them `only` selects.
private func suiteWorkloads(traces: [String], only: String?) throws(UsageError)
    -> (all: [SuiteWorkload], selected: [SuiteWorkload]) {
    let allWorkloads = SuiteWorkload.all(traceFiles: traces, cacheDirectory: workloadCache)
    let sharedNames = SuiteWorkload.sharedNames(allWorkloads)
    guard sharedNames.isEmpty else {
        throw UsageError(message: "more than one workload would be named \(sharedNames.joined(separator: ", ")), and the report keeps "
                         + "one result per name; give the TRACE another file name")
    }
    var workloads = allWorkloads
    if let only { workloads = SuiteWorkload.selected(by: only, from: workloads) }
    guard !workloads.isEmpty else {
        let families = SuiteWorkload.Family.allCases.filter { family in allWorkloads.contains { $0.family == family } }
        throw UsageError(message: "--only \(only ?? "") matches no workload; the workloads are "
                         + allWorkloads.map(\.name).joined(separator: ", ") + " (families: " + families.map(\.rawValue).joined(separator: ", ") + ")")
    }
    return (allWorkloads, workloads)
}

/// The day's report, holding the results an earlier run of the day wrote;
/// nil, having said why, when they cannot be read.
private func startReport(command: String, date: String, files: SuiteResultsFiles) -> SuiteReport? {
    var report = SuiteReport(
        results: [], command: command, date: date, machine: machineDescription(),
        commit: firstLine(of: ["git", "describe", "--always", "--dirty"]), swiftVersion: firstLine(of: ["swift", "--version"]))
    do {
        let earlier = try files.readEarlierResults()
        if let setAside = earlier.setAside { printError("warning: \(setAside); this run starts a new report") }
        report.results = earlier.results
    } catch {
        printError("error: cannot read \(files.jsonPath): \(error)")
        return nil
    }
    return report
}

/// One workload's result: Quire's figures, and with `withPeers` the peers'
/// and the merges in turns; with `wasMeasured` false, a result saying why
/// Quire could not be measured.
private func measureWorkload(_ workload: SuiteWorkload, step: String, runs: Int, command: String,
                             withPeers: Bool, peersProblem: String?) -> (result: WorkloadResult, wasMeasured: Bool) {
    var result: WorkloadResult, replayOnce: (() throws -> ReplayResult)?
    let runs = workload.timedRuns(asked: runs)
    do {
        try workload.materialise(cacheDirectory: workloadCache)
        progress("\(step) quire (\(count(runs, "run")))...")
        (result, replayOnce) = try measureQuire(workload, runs: runs, command: command)
    } catch {
        printErrorAfterProgress("\(step): \(error)")
        // Recorded, so that the day's report does not go on showing an
        // earlier run's figures for it as if this run had measured them.
        let failed = WorkloadResult(workload: workload, command: command, ops: nil, figures: [.notMeasured("quire", because: "\(error)")])
        return (failed, false)
    }
    if withPeers, workload.hasPeers, let (peerCommand, path) = peerInput(workload) {
        let peerFigures: [LibraryFigures]
        if let peersProblem {
            peerFigures = SuiteReport.peers.map { LibraryFigures.notMeasured($0, because: peersProblem) }
        } else {
            progress("\(step) yrs and loro (\(count(runs, "run")), then memory)...")
            peerFigures = runPeers(workload, command: peerCommand, path: path, runs: runs)
        }
        result.figures += peerFigures
        // Only between results that passed their checks: a wrong one did other work.
        if let replayOnce, result.figures.allSatisfy(\.ok) {
            let rounds = max(runs, MergeTurns.minimumRounds)
            progress("\(step) merges in turns (\(count(rounds, "round")))...")
            result.mergeTurnsFailure = measureMergesInTurns(workload, command: peerCommand, path: path, replayOnce: replayOnce,
                                                            rounds: rounds, figures: &result.figures)
            // `MergeTurns.measure` times each merge after an untimed one: the report says so from this.
            if result.mergeTurnsFailure == nil { result.mergeTimedAfterUntimed = true }
        }
    }
    return (result, true)
}

/// Puts `report` in Benchmarks/RESULTS.md between its marks; false, having said why, when it cannot.
private func writeResultsSection(_ report: SuiteReport) -> Bool {
    let resultsPath = "Benchmarks/RESULTS.md"
    do {
        let document = FileManager.default.fileExists(atPath: resultsPath) ? try String(contentsOfFile: resultsPath, encoding: .utf8) : ""
        try SuiteResultsFiles.write(SuiteResultsFiles.replacingSuiteSection(in: document, with: report.markdown), to: resultsPath)
        return true
    } catch {
        printError("error: cannot write Benchmarks/RESULTS.md: \(error)")
        return false
    }
}

/// `suite --rewrite DATE`: the day's report written again from its JSON file,
/// so that a change to the report's code shows on figures already measured.
private func rewriteReport(of date: String) -> Int32 {
    let files = SuiteResultsFiles(directory: "Benchmarks/results", date: date)
    guard FileManager.default.fileExists(atPath: files.jsonPath) else {
        printError("error: \(files.jsonPath): no such file (--rewrite takes the date of a day's results, e.g. 2026-12-05)")
        return 1
    }
    let report: SuiteReport
    do {
        report = try files.readReport()
        try files.writeMarkdownAndCharts(report)
    } catch {
        printError("error: cannot rewrite the report of \(date): \(error)")
        return 1
    }
    // A day a full run measured: its report is the one RESULTS.md shows.
    let fullRun = report.results.contains { !$0.command.split(separator: " ").contains("--only") }
    if fullRun { guard writeResultsSection(report) else { return 1 } }
    printLine("wrote \(files.markdownPath) and \(report.charts.count) charts\(fullRun ? " and Benchmarks/RESULTS.md's suite part" : "") from \(files.jsonPath)")
    return 0
}

/// Quire's figures for one workload, through the same measurement code as
/// `quire-bench trace`, `store` and `sync`, and for a replay workload the
/// replay it measured, to be run again. `runs` is the workload's own
/// (`SuiteWorkload.timedRuns`), as the progress line says.
private func measureQuire(_ workload: SuiteWorkload, runs: Int, command: String) throws
    -> (WorkloadResult, replayOnce: (() throws -> ReplayResult)?) {
    let measurement: TraceMeasurement, replayOnce: () throws -> ReplayResult
    switch workload.source {
    case .store:
        var options = StoreBenchmark.Options()
        options.runs = runs
        let measures = try StoreBenchmark.run(options).measures
        return (WorkloadResult(workload: workload, command: command, ops: nil, figures: [.quire(measures: measures, runs: runs)]), nil)
    case .sync(let path):
        let measures = try measureSync(tracePath: path, runs: runs).measures
        return (WorkloadResult(workload: workload, command: command, ops: nil, figures: [.quire(measures: measures, runs: runs)]), nil)
    case .traceFile(let path):
        let trace = try EditingTrace.load(path: path)
        measurement = TraceMeasurement.measure(trace: trace, named: workload.name, runs: runs)
        replayOnce = try replayFunction(trace)
    case .replicaFile(let path):
        let replicas = try ReplicaWorkload.load(path: path)
        measurement = TraceMeasurement.measure(replicas: replicas, named: workload.name, runs: runs)
        replayOnce = { try TraceReplay.replay(replicas) }
    case .repeated(let path, let times):
        guard case .sequential(let once) = try EditingTrace.load(path: path) else {
            throw UsageError(message: "\(path): only a sequential trace can be repeated")
        }
        let trace = EditingTrace.sequential(once.repeated(times))
        measurement = TraceMeasurement.measure(trace: trace, named: workload.name, runs: runs)
        replayOnce = try replayFunction(trace)
    }
    for failure in measurement.failures { printErrorAfterProgress("FAIL \(workload.name) quire: \(failure)") }
    return (WorkloadResult(workload: workload, command: command, ops: measurement.ops, figures: [
        LibraryFigures.quire(measurement, runs: runs, replayOnce: replayOnce),
    ]), replayOnce)
}

private func replayFunction(_ trace: EditingTrace) throws -> () throws -> ReplayResult {
    switch trace {
    case .sequential(let sequential): return { try TraceReplay.replay(sequential) }
    case .concurrent(let concurrent):
        let plan = try ConcurrentPlan(concurrent)
        return { try TraceReplay.replay(concurrent, plan: plan) }
    }
}

/// The peers.py subcommand (`trace` or `replicas`) and file for a
/// workload the peers measure too.
private func peerInput(_ workload: SuiteWorkload) -> (command: String, path: String)? {
    switch workload.source {
    case .traceFile(let file): ("trace", file)
    case .replicaFile(let file): ("replicas", file)
    case .repeated, .store, .sync: nil
    }
}

/// Cores, processor and system, and that the machine is shared: what a
/// reader needs to weigh the times.
private func machineDescription() -> String {
    let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
    let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
        .flatMap { $0.split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) }
    return "\(ProcessInfo.processInfo.activeProcessorCount) cores" + (model.map { " (\($0))" } ?? "")
        + ", \(ProcessInfo.processInfo.operatingSystemVersionString), shared with other engineers compiling in parallel: timings are noisy"
}

/// The first line a command prints (found on PATH), or nil when it cannot run or fails.
private func firstLine(of command: [String]) -> String? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = command
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return nil }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    return String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init)
}

/// Runs the peers in their virtualenv, which it makes on first use.
private let peersRunner = "Benchmarks/peers/run.sh"

/// nil when the peers can run (`peers.py versions` imports both); else why
/// not. run.sh's own errors (pip's, Python's) pass through on stderr.
private func checkPeers() -> String? {
    progress("checking the peers (\(peersRunner) versions)...")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: peersRunner)
    process.arguments = ["versions"]
    process.standardOutput = FileHandle.nullDevice
    do { try process.run() } catch { return "cannot run \(peersRunner): \(error)" }
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        return "the peers cannot run: \(peersRunner) versions exited with status \(process.terminationStatus)"
    }
    return nil
}

/// Runs peers.py `command` on `path`; its stderr passes through. A peer
/// that gave no result is recorded as not measured.
private func runPeers(_ workload: SuiteWorkload, command: String, path: String, runs: Int) -> [LibraryFigures] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: peersRunner)
    process.arguments = [command, path, "--json", "--memory", "--runs", "\(runs)"]
    let output = Pipe()
    process.standardOutput = output
    var data = Data()
    let reason: String
    do {
        try process.run()
        data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        reason = "peers.py gave no result (exit status \(process.terminationStatus))"
    } catch {
        reason = "cannot run \(peersRunner): \(error)"
    }
    let figures = LibraryFigures.peers(output: String(decoding: data, as: UTF8.self), missingBecause: reason)
    // A peer that ran has run at least once; one not measured, never.
    for figure in figures where figure.runs == 0 { printErrorAfterProgress("\(workload.name) \(figure.library): \(figure.failures.joined())") }
    return figures
}

/// Measures the merge of Quire and the peers again, in turns (see
/// `MergeTurns`), and puts those times in place of each library's merge
/// figure. On failure the figures measured one library after the other
/// stay, and it returns why.
///
/// Quire merges the history one more replay encoded (`ReplayResult.history`,
/// the bytes its own merge applied), not a second encoding of that replay's
/// document. The history the measured runs made is not handed down from
/// them: kept, it would stay allocated through the snapshot loads and the
/// memory replay timed and measured in between (`LibraryFigures.quire`).
private func measureMergesInTurns(_ workload: SuiteWorkload, command: String, path: String,
                                  replayOnce: () throws -> ReplayResult, rounds: Int, figures: inout [LibraryFigures]) -> String? {
    do {
        let encoded = try replayOnce().history
        var turns = try MergeTurns(runner: peersRunner, command: command, path: path)
        defer { turns.finish() }
        let spreads = try turns.measure(rounds: rounds) { try TraceReplay.merge(encoded).nanoseconds }
        for index in figures.indices {
            if let spread = spreads[figures[index].library] { (figures[index].merge, figures[index].mergeRounds) = (spread, rounds) }
        }
        return nil
    } catch {
        printErrorAfterProgress("\(workload.name): merges in turns failed, keeping the merges measured one library after the other: \(error)")
        return "\(error)"
    }
}

/// One progress line on stderr: on a terminal, rewritten in place; in a
/// file or pipe (a run's log), one plain line each, since the carriage
/// returns and erase codes there ran every step into one unreadable line.
private func progress(_ line: String) {
    if isatty(STDERR_FILENO) == 1 {
        FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8))
    } else if !line.isEmpty {
        printError(line)
    }
}

/// An error line during a run: on a terminal it first ends the progress
/// line rewritten in place; in a log, where each step is a line of its own,
/// a newline there would leave an empty line.
private func printErrorAfterProgress(_ line: String) {
    printError(isatty(STDERR_FILENO) == 1 ? "\n" + line : line)
}

/// "1 run", "3 runs".
private func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }
