import Foundation
import JSONText

/// The outputs of `quire-bench suite`: one JSON file with every figure, a
/// Markdown report with Quire-to-peer ratios, one SVG chart per family. A
/// day's report gathers the workloads of that day's runs (`SuiteResultsFiles`).
public struct SuiteReport {
    /// Every figure as the JSON file keeps it (`stored`): the Markdown, the
    /// charts and the statements are made from these, so that each ratio in
    /// them is the ratio of the figures in the JSON.
    public var results: [WorkloadResult] {
        didSet { results = results.map(\.stored) }
    }
    /// The latest run's exact command line (each workload has its own), the date and a note on the machine.
    public var command: String
    public var date: String
    public var machine: String
    /// The latest run's code and compiler (`git describe`, `swift --version`):
    /// nil in reports written before they were recorded.
    public var commit: String?
    public var swiftVersion: String?

    public static let libraries = ["quire", "yrs", "loro"]
    public static let peers = ["yrs", "loro"]

    public init(results: [WorkloadResult], command: String, date: String, machine: String,
                commit: String? = nil, swiftVersion: String? = nil) {
        self.results = results.map(\.stored)
        self.command = command
        self.date = date
        self.machine = machine
        self.commit = commit
        self.swiftVersion = swiftVersion
    }

    // MARK: JSON

    /// A figure as the JSON file keeps it: to the nanosecond, the clocks'
    /// resolution, for times in milliseconds. To the microsecond, B1's merges
    /// of 20 µs kept two digits, and their ratios moved by up to 5%.
    static func stored(_ value: Double) -> Double { (value * 1e6).rounded() / 1e6 }

    public var json: String {
        func number(_ x: Double?) -> JSONValue { x.map(JSONValue.double) ?? .null }
        func spread(_ value: Spread?) -> JSONValue {
            guard let value else { return .null }
            return .orderedObject([("median", number(value.median)), ("min", number(value.min)), ("max", number(value.max))])
        }
        func int(_ value: Int?) -> JSONValue { value.map { .integer($0) } ?? .null }
        func measure(_ value: Measure) -> JSONValue {
            .orderedObject([
                ("name", .string(value.name)), ("unit", .string(value.unit)), ("median", number(value.median)),
                ("min", number(value.spread?.lowerBound)), ("max", number(value.spread?.upperBound)),
            ])
        }
        let workloads: [JSONValue] = results.map { result in
            .orderedObject([
                ("name", .string(result.name)), ("family", .string(result.family.rawValue)),
                ("description", .string(result.description)), ("command", .string(result.command)), ("ops", int(result.ops)),
                ("mergeTurnsFailure", result.mergeTurnsFailure.map(JSONValue.string) ?? .null),
                ("mergeTimedAfterUntimed", result.mergeTimedAfterUntimed.map(JSONValue.bool) ?? .null),
                ("libraries", .array(result.figures.map { f in
                    .orderedObject([
                        ("library", .string(f.library)), ("version", f.version.map(JSONValue.string) ?? .null),
                        ("ok", .bool(f.ok)), ("runs", int(f.runs)),
                        ("localMs", spread(f.local)), ("emptyLoopMs", spread(f.emptyLoop)), ("mergeMs", spread(f.merge)),
                        ("mergeRounds", int(f.mergeRounds)),
                        ("encodeMs", spread(f.encode)), ("loadMs", spread(f.load)),
                        ("encodedBytes", int(f.encodedBytes)), ("sentHistoryBytes", int(f.sentHistoryBytes)),
                        ("snapshotBytes", int(f.snapshotBytes)),
                        ("memoryBytes", int(f.memoryBytes)), ("measures", .array(f.measures.map(measure))),
                        ("failures", .array(f.failures.map(JSONValue.string))),
                    ])
                })),
            ])
        }
        return JSONValue.orderedObject([
            ("command", .string(command)), ("date", .string(date)), ("machine", .string(machine)),
            ("commit", commit.map(JSONValue.string) ?? .null), ("swift", swiftVersion.map(JSONValue.string) ?? .null),
            ("workloads", .array(workloads)),
        ]).compact + "\n"
    }

    // MARK: Markdown

    /// `peer` when both it and `quire` passed their checks, else nil: a
    /// library whose result was wrong did other work, so no ratio or
    /// "behind" compares it (Failed checks lists it).
    static func comparable(_ peer: LibraryFigures?, with quire: LibraryFigures?) -> LibraryFigures? {
        quire?.ok == true && peer?.ok == true ? peer : nil
    }

    /// Quire's figure divided by a peer's (below 1: Quire is faster or smaller).
    static func ratio(_ quire: Double?, _ peer: Double?) -> Double? {
        guard let quire, let peer, peer > 0 else { return nil }
        return quire / peer
    }

    public var markdown: String {
        var out = """
            # Quire benchmark suite, \(date)

            \(commandsParagraph)

            Reproduce: from the package root, `swift run -c release` followed by the command above (each
            of them, for a day of several runs); `--peers` installs the pinned peers
            (`Benchmarks/peers/requirements.txt`) into `Benchmarks/peers/.venv` on first use.

            Machine: \(machine)

            Versions: \(versionsLine)

            Times are medians in milliseconds over the runs with their spread: ±N% is how far the
            run farthest from the median was from it (min and max are in the JSON file); no ± where
            every run gave the same figure or there was one run (B4x100). Sizes (bytes) and memory are
            one measurement each, not medians. A ratio in bold is a figure where Quire is behind.

            Every time but the store's and sync's is the CPU time of the measuring thread, for Quire and
            the peers alike: on a shared machine the wall clock also counts other processes' turns.
            Store and sync times are wall-clock: waiting for the disk or the socket is their cost.
            **merge** is a fresh replica applying the whole encoded history in one call: the fair native
            comparison. With peers, the three libraries merge in turns (Quire, Yrs, Loro, and again: one
            round per run, at least \(MergeTurns.minimumRounds); `mergeRounds` in the JSON), so that a busy
            moment on the host slows them alike\(mergeTimingClause); a line under a table names any workload merged otherwise. **local** replays edit by edit; for the peers that includes Python's call overhead,
            and the **empty loop** column (Yrs / Loro) is the same Python loop with no library call. Ratios are
            Quire ÷ peer on the same workload: below 1 Quire is faster or smaller; a library that failed
            a check (ok: NO) is not compared, nor merged in turns. **memory** is the heap in
            use held by the document after one local replay (for concurrent workloads the merged replica),
            measured the same way for all three: glibc `mallinfo2()`, `uordblks + hblkhd` after the replay
            minus before, with the document alive and the replay's transient allocations freed; for the
            peers in a fresh Python process after a warm-up replay, through ctypes (both wheels allocate
            through glibc malloc). It is exact to a few kB only: glibc counts the small blocks it caches
            per thread after they are freed as in use.
            Snapshot: what each library would keep on disk for the document with its whole history:
            Quire's store snapshot frame (zstd), Yrs's v1 update (uncompressed), Loro's `Snapshot` export.
            **history** is the encoded history the merge applies: Quire's `encodeChanges()`, Yrs's v1
            update, Loro's `Updates` export from the empty version. **sent** is what crosses the network
            for Quire's history: the sync message that carries it to a fresh replica, made by QuireSync,
            which compresses the payload with zstd (one message: a peer or server sends a history over
            4 MiB in several); "not recorded" for a workload measured before it was. The
            history ratios compare raw with raw, Quire's bundle with the peers' update and export, which
            have no compression of their own: the sent column is not a like-for-like comparison.
            **encode** writes that snapshot from the replayed document, in one call, the document's first: Loro keeps
            the blocks of its last export and copies them while the document is unchanged. **load** opens that snapshot in a fresh document, ready to edit (for Quire: checksum, zstd,
            the state and the whole history). Yrs keeps no history apart from its state: its v1 update
            is both its snapshot and what its merge applies, so its merge and load do the same work.


            """
        for family in SuiteWorkload.Family.allCases {
            let rows = results.filter { $0.family == family }
            guard !rows.isEmpty else { continue }
            out += "## \(family.title)\n\n"
            if let note = Self.quireOnlyNote(family) { out += note + "\n\n" }
            if family.hasMeasures {
                out += measuresTable(rows) + "\n"
                continue
            }
            out += "| workload | ops | merge ms Quire | Yrs | Loro | ÷Yrs | ÷Loro | local ms Quire | Yrs | Loro | empty loop ms Yrs / Loro | snapshot B Quire | Yrs | Loro | ÷Yrs | ÷Loro | memory MB Quire | Yrs | Loro | ok |\n"
            out += "|" + String(repeating: " --- |", count: 20) + "\n"
            for result in rows { out += tableRow(result) }
            let alone = rows.compactMap { result in result.mergeTurnsFailure.map { "\(result.name) (\($0))" } }
            if !alone.isEmpty {
                out += "\nMerged one library after the other, not in turns (a busy moment may have slowed one library only): "
                    + alone.joined(separator: ", ") + ".\n"
            }
            let olderWay = rows.filter(\.mergedInTurnsTheOlderWay).map(\.name)
            if !olderWay.isEmpty && !mergedInTurnsTheOlderWayOnly {
                out += "\nMerged in turns the older way, each library's timed merge without an untimed one of its own right before: "
                    + olderWay.joined(separator: ", ") + ".\n"
            }
            // A day's report mixes runs: a "–" in a peer's cell must not read as a peer that failed.
            if Self.quireOnlyNote(family) == nil {
                let notAsked = rows.filter { !$0.command.split(separator: " ").contains("--peers") }.map(\.name)
                if !notAsked.isEmpty {
                    out += "\nYrs and Loro not asked (measured by a run without `--peers`): " + notAsked.joined(separator: ", ") + ".\n"
                }
            }
            out += "\n" + snapshotTable(rows)
            if family == .merge { out += "\n" + throughputTable(rows) }
            out += "\n"
        }
        out += "## Where Quire is behind\n\n"
        let behind = behindStatements
        if behind.isEmpty {
            out += "Nowhere in this report.\n"
        } else {
            out += "Workloads where Quire is behind, of those compared:\n\n" + behindSummary.map { "- \($0)\n" }.joined()
            out += "\nEach case:\n\n" + behind.map { "- \($0)\n" }.joined()
        }
        out += "\n## Targets\n\n" + targetStatements.map { "- \($0)\n" }.joined()
        let failed = results.flatMap { result in result.figures.filter { !$0.ok }.map { "\(result.name) \($0.library): \($0.failures.joined(separator: "; "))" } }
        if !failed.isEmpty { out += "\n## Failed checks\n\n" + failed.map { "- \($0)\n" }.joined() }
        return out
    }

    /// True when every workload merged in turns was merged the older way
    /// (a day recorded before `mergeTimedAfterUntimed`): the method paragraph
    /// then leaves out the clause on the untimed merge, and no line names
    /// them one by one.
    private var mergedInTurnsTheOlderWayOnly: Bool {
        let inTurns = results.filter(\.mergedInTurns)
        return !inTurns.isEmpty && inTurns.allSatisfy(\.mergedInTurnsTheOlderWay)
    }

    /// The method paragraph's words on how each merge in turns was timed,
    /// after "slows them alike": what the results record, so that a
    /// rewritten report of an earlier day does not describe today's method.
    private var mergeTimingClause: String {
        if mergedInTurnsTheOlderWayOnly { return "" }
        return """
            , and each library's timed merge comes right after an untimed
            one of its own, so that each starts on a processor busy with the same work
            """
    }

    /// "Command: `…`" for a report of one run; for several, each command and the workloads it measured.
    private var commandsParagraph: String {
        var commands: [String] = []
        for result in results where !commands.contains(result.command) { commands.append(result.command) }
        guard commands.count > 1 else { return "Command: `\(commands.first ?? command)`" }
        return "Commands (each workload's figures are from the last run that measured it):\n\n" + commands.map { command in
            let names = results.filter { $0.command == command }.map(\.name)
            return "- `\(command)`: \(names.joined(separator: ", "))"
        }.joined(separator: "\n")
    }

    /// Why a family has Quire's figures only; nil for the others.
    private static func quireOnlyNote(_ family: SuiteWorkload.Family) -> String? {
        switch family {
        case .store: "Quire only: Yrs and Loro are in-memory libraries with no durable store of their own to compare."
        case .sync: "Quire only: Yrs and Loro have no sync server; their encoded updates are compared under merge and snapshot above."
        case .b4x100:
            "Quire only: the workload is built in memory from automerge-paper, with no file for the peers' script to read; "
                + "automerge-paper's row above compares the three libraries."
        default: nil
        }
    }

    /// The store and sync families: one row per figure, with its unit and spread.
    private func measuresTable(_ rows: [WorkloadResult]) -> String {
        var out = "| workload | measure | Quire, median | min – max | runs | ok |\n" + "|" + String(repeating: " --- |", count: 6) + "\n"
        for result in rows {
            guard let quire = result.figures(of: "quire") else { continue }
            for measure in quire.measures {
                let spread = measure.spread.map { "\(Self.formatMeasure($0.lowerBound)) – \(Self.formatMeasure($0.upperBound))" } ?? "same every run"
                out += "| \(result.name) | \(measure.name) | \(Self.formatMeasure(measure.median)) \(measure.unit) | \(spread) | \(quire.runs) | \(quire.ok ? "yes" : "NO") |\n"
            }
        }
        return out + "\n" + rows.map { "\($0.name): \($0.description).\n" }.joined(separator: "\n")
    }

    /// Whole numbers from 100 up, with thousands separated; 3 significant figures below.
    static func formatMeasure(_ value: Double) -> String {
        guard value >= 100 else { return String(format: "%.3g", value) }
        let digits = String(Int(value.rounded()))
        return digits.reversed().enumerated().map { index, digit in index > 0 && index % 3 == 0 ? "\(digit)," : "\(digit)" }
            .reversed().joined()
    }

    private static func formatMilliseconds(_ value: Double?) -> String {
        value.map { $0 >= 100 ? String(format: "%.0f", $0) : String(format: "%.2f", $0) } ?? "–"
    }

    /// A median time and its spread: "3.71 ±2%", the run farthest from the
    /// median that far from it; the median alone where every run gave it.
    static func formatTime(_ value: Spread?) -> String {
        guard let value else { return "–" }
        let median = formatMilliseconds(value.median)
        let farthest = Swift.max(value.max - value.median, value.median - value.min)
        guard farthest > 0, value.median > 0 else { return median }
        let percent = farthest / value.median * 100
        return median + (percent < 1 ? " ±<1%" : String(format: " ±%.0f%%", percent))
    }

    /// Whether two libraries' runs overlap: a ratio between them is then within the noise of the runs.
    static func overlap(_ a: Spread?, _ b: Spread?) -> Bool {
        guard let a, let b else { return false }
        return a.min <= b.max && b.min <= a.max
    }

    static func displayName(_ library: String) -> String {
        switch library {
        case "yrs": "Yrs"
        case "loro": "Loro"
        default: "Quire"
        }
    }

    /// Quire's commit and compiler, and the peers' packages at the versions they reported.
    private var versionsLine: String {
        let quire = "Quire \(commit ?? "(commit not recorded)")" + (swiftVersion.map { ", built with \($0)" } ?? "")
        let packages = ["yrs": "pycrdt", "loro": "loro"]
        let peers = Self.peers.compactMap { peer -> String? in
            var versions: [String] = []
            for version in results.compactMap({ $0.figures(of: peer)?.version }) where !versions.contains(version) { versions.append(version) }
            guard let package = packages[peer], !versions.isEmpty else { return nil }
            return "\(Self.displayName(peer)) through the Python package \(package) \(versions.joined(separator: " and "))"
        }
        return ([quire] + (peers.isEmpty ? ["no peers in this report"] : peers)).joined(separator: "; ") + "."
    }

    /// A Quire ÷ peer ratio, in bold where Quire is behind.
    private static func formatRatio(_ value: Double?) -> String {
        guard let value else { return "–" }
        let text = ratioText(value)
        return value > 1 ? "**\(text)**" : text
    }

    /// Two decimals, or three where two would show 1.00 for a ratio that is
    /// not 1: a bold "1.00", or "1.00× slower", would say behind and equal at once.
    static func ratioText(_ value: Double) -> String {
        let text = String(format: "%.2f", value)
        return text == "1.00" && value != 1 ? String(format: "%.3f", value) : text
    }

    private func tableRow(_ result: WorkloadResult) -> String {
        let q = result.figures(of: "quire"), y = result.figures(of: "yrs"), l = result.figures(of: "loro")
        let yc = Self.comparable(y, with: q), lc = Self.comparable(l, with: q)
        let time = Self.formatTime, ratio = Self.formatRatio
        func bytes(_ value: Int?) -> String { value.map { "\($0)" } ?? "–" }
        // Three significant figures: a document of a few kB must not read 0.0 MB.
        func mb(_ value: Int?) -> String { value.map { Self.formatMeasure(Double($0) / 1e6) } ?? "–" }
        let ok = result.figures.allSatisfy(\.ok) ? "yes" : "NO"
        let cells = [
            result.name, result.ops.map(String.init) ?? "–",
            time(q?.merge), time(y?.merge), time(l?.merge),
            ratio(Self.ratio(q?.merge?.median, yc?.merge?.median)), ratio(Self.ratio(q?.merge?.median, lc?.merge?.median)),
            time(q?.local), time(y?.local), time(l?.local),
            [y, l].compactMap { $0?.emptyLoop }.map(time).joined(separator: " / ").nonEmpty ?? "–",
            bytes(q?.snapshotBytes), bytes(y?.snapshotBytes), bytes(l?.snapshotBytes),
            ratio(Self.ratio(q?.snapshotBytes.map(Double.init), yc?.snapshotBytes.map(Double.init))),
            ratio(Self.ratio(q?.snapshotBytes.map(Double.init), lc?.snapshotBytes.map(Double.init))),
            mb(q?.memoryBytes), mb(y?.memoryBytes), mb(l?.memoryBytes), ok,
        ]
        return "| " + cells.joined(separator: " | ") + " |\n"
    }

    /// Writing each workload's snapshot (encode), opening it, ready to edit
    /// (load), and the size of the encoded history the merge applies, which
    /// "Where Quire is behind" compares too, with Quire's as sync sends it beside.
    private func snapshotTable(_ rows: [WorkloadResult]) -> String {
        var out = "Writing the snapshot (encode), opening it (load), and the encoded history the merge applies "
            + "(sent: Quire's in the sync message that carries it):\n\n"
            + "| workload | encode ms Quire | Yrs | Loro | ÷Yrs | ÷Loro | load ms Quire | Yrs | Loro | ÷Yrs | ÷Loro "
            + "| history B Quire | sent B Quire | Yrs | Loro | ÷Yrs | ÷Loro |\n"
            + "|" + String(repeating: " --- |", count: 17) + "\n"
        // Quire's history as sync sends it: "not recorded" in a report from before it was measured.
        func sent(_ quire: LibraryFigures?) -> String {
            guard let quire, quire.ok, quire.encodedBytes != nil else { return "–" }
            return quire.sentHistoryBytes.map(String.init) ?? "not recorded"
        }
        for result in rows {
            var cells = [result.name]
            let quire = result.figures(of: "quire")
            let figures: [(value: (LibraryFigures) -> Double?, cell: (LibraryFigures?) -> String, besideQuire: [String])] = [
                ({ $0.encode?.median }, { Self.formatTime($0?.encode) }, []), ({ $0.load?.median }, { Self.formatTime($0?.load) }, []),
                ({ $0.encodedBytes.map(Double.init) }, { $0?.encodedBytes.map(String.init) ?? "–" }, [sent(quire)]),
            ]
            for (value, cell, besideQuire) in figures {
                let ratios = Self.peers.map { Self.ratio(quire.flatMap(value), Self.comparable(result.figures(of: $0), with: quire).flatMap(value)) }
                cells += [cell(quire)] + besideQuire + Self.peers.map { cell(result.figures(of: $0)) } + ratios.map(Self.formatRatio)
            }
            out += "| " + cells.joined(separator: " | ") + " |\n"
        }
        return out
    }

    /// Merge throughput in operations per second, by k and m.
    private func throughputTable(_ rows: [WorkloadResult]) -> String {
        var out = "Merge throughput (operations merged per second, from the merge time):\n\n| workload | ops | Quire | Yrs | Loro |\n| --- | --- | --- | --- | --- |\n"
        for result in rows {
            let cells = Self.libraries.map { library -> String in
                guard let ops = result.ops, let ms = result.figures(of: library)?.merge?.median, ms > 0 else { return "–" }
                return BarChart.formatValue(Double(ops) / ms * 1000) + " op/s"
            }
            out += "| \(result.name) | \(result.ops.map(String.init) ?? "–") | " + cells.joined(separator: " | ") + " |\n"
        }
        return out
    }

    /// One measure of Quire beside one peer on one workload, where both passed their checks and have it.
    struct Comparison {
        var workload: String
        var measure: String
        var peer: String
        /// Quire ÷ peer; nil where the peer measured 0.
        var ratio: Double?
        var behind: Bool
        /// "slower" or "bigger".
        var word: String
        /// The two libraries' runs overlap: the ratio is within their noise.
        var overlapping: Bool
    }

    /// Every measure of every workload, Quire beside each peer.
    var comparisons: [Comparison] {
        var comparisons: [Comparison] = []
        for result in results {
            guard let quire = result.figures(of: "quire") else { continue }
            for peer in Self.peers {
                guard let other = Self.comparable(result.figures(of: peer), with: quire) else { continue }
                func time(_ what: String, _ figure: (LibraryFigures) -> Spread?) -> (String, Double?, Double?, String, Bool) {
                    (what, figure(quire)?.median, figure(other)?.median, "slower", Self.overlap(figure(quire), figure(other)))
                }
                func size(_ what: String, _ figure: (LibraryFigures) -> Int?) -> (String, Double?, Double?, String, Bool) {
                    (what, figure(quire).map(Double.init), figure(other).map(Double.init), "bigger", false)
                }
                let measures = [
                    time("merge", \.merge), time("local replay", \.local), time("snapshot encode", \.encode),
                    time("snapshot load", \.load), size("snapshot size", \.snapshotBytes),
                    size("encoded history size", \.encodedBytes), size("document in memory", \.memoryBytes),
                ]
                for (what, mine, theirs, word, overlapping) in measures {
                    guard let mine, let theirs else { continue }
                    // No ratio to a zero (B1.6's Yrs document in memory), but Quire is still behind.
                    let ratio = Self.ratio(mine, theirs)
                    comparisons.append(Comparison(
                        workload: result.name, measure: what, peer: peer, ratio: ratio,
                        behind: ratio.map { $0 > 1 } ?? (mine > 0), word: word, overlapping: overlapping))
                }
            }
        }
        return comparisons
    }

    /// One plain sentence per workload, measure and peer where Quire is
    /// slower or bigger (on disk, on the wire or in memory).
    public var behindStatements: [String] {
        comparisons.filter(\.behind).map { c in
            let name = Self.displayName(c.peer)
            let noise = c.overlapping ? " (within the runs' spread: their ranges overlap)" : ""
            guard let ratio = c.ratio else { return "\(c.workload): Quire's \(c.measure) is \(c.word) than \(name)'s, which measured 0." }
            return "\(c.workload): Quire's \(c.measure) is \(Self.ratioText(ratio))× \(c.word) than \(name)'s\(noise)."
        }
    }

    /// For each measure, on how many of the workloads compared Quire is
    /// behind each peer, and how many of those are within the runs' spread:
    /// a count alone read as that many sure losses.
    var behindSummary: [String] {
        var measures: [String] = []
        for c in comparisons where !measures.contains(c.measure) { measures.append(c.measure) }
        return measures.map { measure in
            let counts = Self.peers.compactMap { peer -> String? in
                let compared = comparisons.filter { $0.measure == measure && $0.peer == peer }
                guard !compared.isEmpty else { return nil }
                let behind = compared.filter(\.behind), overlapping = behind.filter(\.overlapping).count
                return "\(Self.displayName(peer)) on \(behind.count) of \(compared.count)"
                    + (overlapping > 0 ? " (\(overlapping) within the runs' spread)" : "")
            }
            return "\(measure): behind " + counts.joined(separator: ", ")
        }
    }

    /// The issue's targets, each stated as met or missed.
    var targetStatements: [String] {
        var statements: [String] = []
        func check(_ workload: String, _ what: String, _ value: Double?, limit: Double, unit: String) {
            guard let value else {
                statements.append("\(workload) \(what): not measured in this report.")
                return
            }
            let shown = unit == "ms" ? String(format: "%.1f ms", value) : unit == "MB" ? String(format: "%.0f MB", value) : "\(Int(value)) bytes"
            statements.append("\(workload) \(what): \(shown), target at most \(unit == "bytes" ? "\(Int(limit)) bytes" : "\(Int(limit)) \(unit)"): \(value <= limit ? "met" : "**missed**").")
        }
        let paper = results.first { $0.name == "automerge-paper" }?.figures(of: "quire")
        check("automerge-paper", "replay", paper?.local?.median, limit: 30, unit: "ms")
        check("automerge-paper", "merge", paper?.merge?.median, limit: 30, unit: "ms")
        check("automerge-paper", "snapshot", paper?.snapshotBytes.map(Double.init), limit: 140_000, unit: "bytes")
        let b4x100 = results.first { $0.name == "B4x100" }?.figures(of: "quire")
        check("B4x100", "replay", b4x100?.local?.median, limit: 3000, unit: "ms")
        check("B4x100", "memory", b4x100?.memoryBytes.map { Double($0) / 1e6 }, limit: 300, unit: "MB")
        return statements
    }

    // MARK: Charts

    /// One chart per family present: merge, local replay, snapshot size, encode and load;
    /// for the store and sync families, Quire's figures.
    public var charts: [(family: SuiteWorkload.Family, svg: String)] {
        SuiteWorkload.Family.allCases.compactMap { family in
            let rows = results.filter { $0.family == family }
            guard !rows.isEmpty else { return nil }
            if family.hasMeasures { return (family, Self.measuresChart(family, rows).svg) }
            func panel(_ title: String, _ unit: String, _ value: (LibraryFigures) -> Double?) -> BarChart.Panel {
                BarChart.Panel(title: title, unit: unit, groups: rows.map { result in
                    (result.name, Self.libraries.map { result.figures(of: $0).flatMap(value) })
                })
            }
            func times(_ title: String, _ spread: (LibraryFigures) -> Spread?) -> BarChart.Panel {
                var times = panel(title, "ms CPU time, median", { spread($0)?.median })
                times.ranges = rows.map { result in Self.libraries.map { result.figures(of: $0).flatMap(spread).map { $0.min...$0.max } } }
                return times
            }
            let chart = BarChart(title: family.title + " — lower is better", series: ["Quire", "Yrs (pycrdt)", "Loro"], panels: [
                times("Merge of the whole history, one call", \.merge),
                times("Local replay, edit by edit (peers: through Python)", \.local),
                panel("Snapshot size", "bytes", { $0.snapshotBytes.map(Double.init) }),
                times("Writing the snapshot", \.encode),
                times("Opening the snapshot, ready to edit", \.load),
            ])
            return (family, chart.svg)
        }
    }

    /// Quire's figures of the store or sync family, one panel per unit.
    private static func measuresChart(_ family: SuiteWorkload.Family, _ rows: [WorkloadResult]) -> BarChart {
        let labelled = rows.flatMap { result in
            (result.figures(of: "quire")?.measures ?? []).map { (label: rows.count > 1 ? "\(result.name): \($0.name)" : $0.name, measure: $0) }
        }
        var units: [String] = []
        for (_, measure) in labelled where !units.contains(measure.unit) { units.append(measure.unit) }
        return BarChart(title: family.title, series: ["Quire"], panels: units.map { unit in
            BarChart.Panel(
                title: unit.hasSuffix("/s") ? "Rates: higher is better" : "Lower is better", unit: unit,
                groups: labelled.filter { $0.measure.unit == unit }.map { ($0.label, [$0.measure.median]) })
        })
    }
}

extension String {
    fileprivate var nonEmpty: String? { isEmpty ? nil : self }
}
