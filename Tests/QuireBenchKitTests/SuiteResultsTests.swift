import Foundation
import FoundationXML
@testable import QuireBenchKit
import QuireTestSupport
import Testing

/// A day's suite results accumulating across runs, and the store and sync
/// families in them; no timings are checked.
@Suite struct SuiteResultsTests {
    /// Runs `test` with result files in a fresh directory, removed afterwards.
    private static func withScratchFiles(_ test: (SuiteResultsFiles) throws -> Void) throws {
        try withTemporaryDirectory { try test(SuiteResultsFiles(directory: $0, date: "2026-01-01")) }
    }

    private static let order = SuiteWorkload.all(traceFiles: [], cacheDirectory: "/tmp").map(\.name)

    /// A replay result whose Quire merge time tells the runs apart.
    private static func replay(_ name: String, command: String, mergeMs: Double) throws -> WorkloadResult {
        let workload = try #require(SuiteWorkload.all(traceFiles: [], cacheDirectory: "/tmp").first { $0.name == name })
        var quire = LibraryFigures(library: "quire", ok: true, runs: 3)
        quire.merge = Spread(median: mergeMs, min: mergeMs - 0.5, max: mergeMs + 0.25)
        quire.snapshotBytes = 1234
        return WorkloadResult(workload: workload, command: command, ops: 6000, figures: [quire])
    }

    private static func report(_ results: [WorkloadResult], command: String) -> SuiteReport {
        SuiteReport(results: results, command: command, date: "2026-01-01", machine: "test")
    }

    @Test func aRunReplacesTheWorkloadsItMeasuredAndKeepsTheOthers() throws {
        try Self.withScratchFiles { files in
            let first = "quire-bench suite --only B1.1,B1.2,B2.1", second = "quire-bench suite --only B1.2,B3.1"
            #expect(try files.readEarlierResults().results.isEmpty)  // no file yet
            try files.write(Self.report([
                try Self.replay("B1.1", command: first, mergeMs: 1), try Self.replay("B1.2", command: first, mergeMs: 2),
                try Self.replay("B2.1", command: first, mergeMs: 3),
            ], command: first))

            let earlier = try files.readEarlierResults()
            #expect(earlier.setAside == nil)
            #expect(earlier.results.map(\.name) == ["B1.1", "B1.2", "B2.1"])
            // The second run measures B3.1 before B1.2: the report keeps the workloads' own order.
            var results = earlier.results
            for name in ["B3.1", "B1.2"] {
                results = SuiteReport.merging([try Self.replay(name, command: second, mergeMs: 20)], into: results, order: Self.order)
                try files.write(Self.report(results, command: second))
            }

            let merged = try files.readEarlierResults().results
            #expect(merged.map(\.name) == ["B1.1", "B1.2", "B2.1", "B3.1"])
            #expect(merged.map(\.command) == [first, second, first, second])
            #expect(merged.map { $0.figures(of: "quire")?.merge?.median } == [1, 20, 3, 20])
            // A kept workload is written back as it was read.
            let kept = try #require(merged.first)
            #expect(kept.figures(of: "quire")?.merge == Spread(median: 1, min: 0.5, max: 1.25))
            #expect(kept.figures(of: "quire")?.snapshotBytes == 1234 && kept.ops == 6000 && kept.family == .b1)

            let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: files.jsonPath))) as? [String: Any])
            #expect(json["command"] as? String == second)  // the top-level keys stay, with the latest run's command
            #expect(Set(json.keys) == ["command", "date", "machine", "commit", "swift", "workloads"])
            let markdown = try String(contentsOfFile: files.markdownPath, encoding: .utf8)
            #expect(markdown.contains("- `\(first)`: B1.1, B2.1\n"))
            #expect(markdown.contains("- `\(second)`: B1.2, B3.1\n"))
            for family in ["B1", "B2", "B3"] { #expect(FileManager.default.fileExists(atPath: files.chartPath(SuiteWorkload.Family(rawValue: family)!))) }
        }
    }

    /// The Markdown, the charts and the statements of a run say what its
    /// JSON says: they were made from figures the JSON then rounded, so a
    /// ratio or a "behind" near a rounding step told another story.
    @Test func theReportIsMadeFromTheFiguresTheJSONKeeps() throws {
        try Self.withScratchFiles { files in
            func figures(_ library: String, merge: Double, encode: Double) -> LibraryFigures {
                var figures = LibraryFigures(library: library, ok: true, runs: 3)
                figures.merge = Spread(median: merge, min: merge, max: merge)
                figures.encode = Spread(median: encode, min: encode, max: encode)
                return figures
            }
            // Quire's figures are a fraction of a nanosecond past a rounding
            // step: its merge ratio is 1.0150004 (1.02) and its encode
            // 1.0000004 times Yrs's (behind) before rounding, 1.015 (1.01) and
            // 1 (not behind) after.
            var result = try Self.replay("B1.1", command: "c", mergeMs: 1)
            result.figures = [figures("quire", merge: 1.0150004, encode: 1.0000004), figures("yrs", merge: 1, encode: 1)]
            var report = Self.report([], command: "c")
            report.results = SuiteReport.merging([result], into: report.results, order: Self.order)
            try files.write(report)

            let readBack = Self.report(try files.readEarlierResults().results, command: "c")
            #expect(try String(contentsOfFile: files.markdownPath, encoding: .utf8) == readBack.markdown)
            #expect(try String(contentsOfFile: files.chartPath(.b1), encoding: .utf8) == readBack.charts.first?.svg)
            #expect(report.behindStatements == readBack.behindStatements)
            #expect(readBack.markdown.contains("| B1.1 | 6000 | 1.01 | 1.00 | – | **1.01** | – |"))
        }
    }

    /// A day's results as a report from before the commit and the compiler
    /// were recorded: B1.1 with Quire's merge a little behind Yrs's, within
    /// their runs' spread, and Loro not measured; B1.7 with Quire ahead.
    private static let fixtureJSON = """
        {"command": "quire-bench suite --only B1 --runs 3 --peers", "date": "2026-01-01", "machine": "2 cores, shared", "workloads": [
        {"name": "B1.1", "family": "B1", "description": "d", "ops": 6000, "libraries": [
          {"library": "quire", "ok": true, "runs": 3, "mergeMs": {"median": 2, "min": 1.9, "max": 2.1}, "snapshotBytes": 100, "failures": []},
          {"library": "yrs", "version": "0.14.13", "ok": true, "runs": 3, "mergeMs": {"median": 1.9, "min": 1.85, "max": 1.95},
           "snapshotBytes": 200, "failures": []},
          {"library": "loro", "ok": false, "runs": 0, "failures": ["not measured: the peers cannot run"]}]},
        {"name": "B1.7", "family": "B1", "description": "d", "ops": 6000, "libraries": [
          {"library": "quire", "ok": true, "runs": 3, "mergeMs": {"median": 1, "min": 1, "max": 1}, "failures": []},
          {"library": "yrs", "version": "0.14.13", "ok": true, "runs": 3, "mergeMs": {"median": 2, "min": 1.5, "max": 3}, "failures": []}]}]}
        """

    /// What a reader weighing the figures needs: each time's spread, which
    /// peer is missing, where Quire is behind and whether within the noise,
    /// and the versions measured.
    @Test func aReportShowsSpreadsVersionsMissingPeersAndWhereQuireIsBehind() throws {
        try Self.withScratchFiles { files in
            try SuiteResultsFiles.write(Self.fixtureJSON, to: files.jsonPath)
            let report = try files.readReport()
            let markdown = report.markdown
            #expect(markdown.contains("| B1.1 | 6000 | 2.00 ±5% | 1.90 ±3% | – | **1.05** | – |"))
            #expect(markdown.contains("| B1.7 | 6000 | 1.00 | 2.00 ±50% | – | 0.50 | – |"))  // the same every run: no ±
            #expect(markdown.contains("Machine: 2 cores, shared\n"))
            #expect(markdown.contains("Versions: Quire (commit not recorded); Yrs through the Python package pycrdt 0.14.13.\n"))
            #expect(markdown.contains("- merge: behind Yrs on 1 of 2 (1 within the runs' spread)\n"))
            #expect(markdown.contains("- snapshot size: behind Yrs on 0 of 1\n"))
            #expect(report.behindStatements == ["B1.1: Quire's merge is 1.05× slower than Yrs's (within the runs' spread: their ranges overlap)."])
            #expect(markdown.contains("\n- B1.1 loro: not measured: the peers cannot run\n"))
            let chart = try #require(report.charts.first { $0.family == .b1 }).svg
            #expect(chart.contains("Loro: not measured"))
            #expect(chart.contains("<line class=\"spread\""))  // B1.1's runs, fastest to slowest
            #expect(BarChart.formatValue(6_000_000) == "6.00M" && BarChart.formatValue(100) == "100")
            #expect(BarChart.formatValue(1000, trailingZeros: false) == "1k")

            var recorded = report
            (recorded.commit, recorded.swiftVersion) = ("bede51a", "Swift version 6.3.1 (swift-6.3.1-RELEASE)")
            try files.write(recorded)
            #expect(try files.readReport().markdown.contains(
                "Versions: Quire bede51a, built with Swift version 6.3.1 (swift-6.3.1-RELEASE); Yrs through the Python package pycrdt 0.14.13.\n"))
        }
    }

    /// A workload a run without --peers measured says so under its table:
    /// its peers' cells were "–" with nothing telling them from a failure.
    /// B4x100 is Quire only and already says so above its table.
    @Test func aWorkloadMeasuredWithoutPeersSaysThePeersWereNotAsked() throws {
        let withPeers = "quire-bench suite --only B1.2 --runs 3 --peers", quireOnly = "quire-bench suite --only B1.1,B1.3,B4x100 --runs 3"
        var results = try ["B1.1", "B1.3"].map { try Self.replay($0, command: quireOnly, mergeMs: 1) }
        results.insert(try Self.replay("B1.2", command: withPeers, mergeMs: 1), at: 1)
        let paper = SuiteWorkload.all(traceFiles: ["automerge-paper.json.gz"], cacheDirectory: "/tmp").first { $0.name == "B4x100" }
        results.append(WorkloadResult(workload: try #require(paper), command: quireOnly, ops: 1, figures: []))
        let markdown = Self.report(results, command: quireOnly).markdown
        #expect(markdown.components(separatedBy: "not asked").count == 2, "\(markdown)")
        #expect(markdown.contains("\nYrs and Loro not asked (measured by a run without `--peers`): B1.1, B1.3.\n"))
        #expect(!Self.report([try Self.replay("B1.2", command: withPeers, mergeMs: 1)], command: withPeers).markdown.contains("not asked"))
    }

    /// B1's merges take tens of microseconds: kept to the microsecond, a
    /// 20.5 µs merge was 21 and its ratio to a 10 µs one 2.10, not 2.05.
    @Test func theJSONKeepsTimesToTheNanosecond() throws {
        var result = try Self.replay("B1.1", command: "c", mergeMs: 0.0205)
        var yrs = LibraryFigures(library: "yrs", ok: true, runs: 3)
        yrs.merge = Spread(median: 0.01, min: 0.01, max: 0.01)
        result.figures[0].merge = Spread(median: 0.0205, min: 0.0205, max: 0.0205)
        result.figures.append(yrs)
        let report = Self.report([result], command: "c")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        let workloads = try #require(json["workloads"] as? [[String: Any]])
        let quire = try #require((workloads.first?["libraries"] as? [[String: Any]])?.first)
        #expect((quire["mergeMs"] as? [String: Any])?["median"] as? Double == 0.0205)
        #expect(report.markdown.contains("| B1.1 | 6000 | 0.02 | 0.01 | – | **2.05** |"))
    }

    @Test func workloadsOutsideTheOrderComeLastAsTheyWere() throws {
        let trace = SuiteWorkload(name: "my-trace", family: .traces, source: .traceFile("my-trace.json"), description: "a trace given once")
        let given = WorkloadResult(workload: trace, command: "quire-bench suite my-trace.json --only my-trace", ops: 5, figures: [])
        let merged = SuiteReport.merging([try Self.replay("B1.1", command: "b", mergeMs: 1)], into: [given], order: Self.order)
        #expect(merged.map(\.name) == ["B1.1", "my-trace"])
    }

    @Test func aDamagedReportIsSetAsideAndTheNewResultsWritten() throws {
        try Self.withScratchFiles { files in
            let damaged = #"{"command": "quire-bench suite", "date": "2026-01-01", "workloads": [{"name": "B1.1""#
            try Data(damaged.utf8).write(to: URL(fileURLWithPath: files.jsonPath))

            let earlier = try files.readEarlierResults()
            #expect(earlier.results.isEmpty)
            let message = try #require(earlier.setAside)
            let aside = files.directory + "/2026-01-01.damaged.json"
            #expect(message.contains(files.jsonPath) && message.contains("moved it to \(aside)"))
            #expect(try String(contentsOfFile: aside, encoding: .utf8) == damaged)  // kept, byte for byte
            #expect(!FileManager.default.fileExists(atPath: files.jsonPath))

            try files.write(Self.report([try Self.replay("B1.1", command: "new", mergeMs: 7)], command: "new"))
            #expect(try files.readEarlierResults().results.map(\.command) == ["new"])

            // Valid JSON that is not a report: the message says where, and an earlier set-aside file stays.
            try Data(#"{"command": "x", "workloads": [{"name": "B1.1", "family": "B1", "description": "", "ops": 1, "libraries": [{"library": "quire"}]}]}"#.utf8)
                .write(to: URL(fileURLWithPath: files.jsonPath))
            let second = try #require(try files.readEarlierResults().setAside)
            #expect(second.contains("workloads[0].libraries[0]") && second.contains("damaged-2.json"))
            #expect(FileManager.default.fileExists(atPath: aside))
        }
    }

    @Test func aReportFromBeforeAccumulationReadsBackWithItsCommand() throws {
        // The layout of the reports written before workloads had their own command and measures.
        let old = """
            {"command": "quire-bench suite --only B1.1", "date": "2026-01-01", "machine": "m", "workloads": [{"name": "B1.1", \
            "family": "B1", "description": "d", "ops": 6000, "libraries": [{"library": "yrs", "version": "0.14.13", "ok": true, \
            "runs": 3, "localMs": {"median": 21.93, "min": 21, "max": 22.5}, "emptyLoopMs": null, "mergeMs": null, "encodeMs": null, \
            "loadMs": null, "encodedBytes": 6021, "snapshotBytes": 6021, "memoryBytes": 0, "failures": []}]}]}
            """
        let results = try SuiteResultsFiles.results(json: Data(old.utf8))
        #expect(results.count == 1)
        #expect(results[0].command == "quire-bench suite --only B1.1")
        let yrs = try #require(results[0].figures(of: "yrs"))
        #expect(yrs.version == "0.14.13" && yrs.local == Spread(median: 21.93, min: 21, max: 22.5) && yrs.merge == nil)
        #expect(yrs.measures.isEmpty)
    }

    /// A day recorded before `sentHistoryBytes` existed still reads and
    /// rewrites (`suite --rewrite`): its sent cells say the figure was not
    /// recorded, not that it was nothing. A day with it keeps it.
    @Test func aDayFromBeforeTheSentHistorySaysItWasNotRecorded() throws {
        let old = """
            {"command": "c", "date": "2026-01-01", "machine": "m", "commit": null, "swift": null, "workloads": [{"name": "B1.1", \
            "family": "B1", "description": "d", "command": "c", "ops": 6000, "mergeTurnsFailure": null, "libraries": [{"library": \
            "quire", "version": null, "ok": true, "runs": 3, "localMs": null, "emptyLoopMs": null, "mergeMs": null, "mergeRounds": null, \
            "encodeMs": null, "loadMs": null, "encodedBytes": 6021, "snapshotBytes": 900, "memoryBytes": 0, "measures": [], "failures": []}]}]}
            """
        let results = try SuiteResultsFiles.results(json: Data(old.utf8))
        let quire = try #require(results.first?.figures(of: "quire"))
        #expect(quire.encodedBytes == 6021 && quire.sentHistoryBytes == nil)
        #expect(Self.report(results, command: "c").markdown.contains("| 6021 | not recorded | – | – |"))

        var recorded = results
        recorded[0].figures[0].sentHistoryBytes = 1500
        let written = Self.report(recorded, command: "c")
        let reread = try SuiteResultsFiles.results(json: Data(written.json.utf8))
        #expect(reread.first?.figures(of: "quire")?.sentHistoryBytes == 1500)
        #expect(written.markdown.contains("| 6021 | 1500 | – | – |"))
    }

    /// A day whose merges in turns were timed before each library's timed
    /// merge came after an untimed one of its own (review134) says so when
    /// rewritten (`suite --rewrite`), rather than describe today's method;
    /// a day with both kinds names the older ones under their table.
    @Test func theMethodParagraphSaysHowTheDaysMergesInTurnsWereTimed() throws {
        let old = """
            {"command": "c", "date": "2026-01-01", "machine": "m", "commit": null, "swift": null, "workloads": [{"name": "B1.1", \
            "family": "B1", "description": "d", "command": "c", "ops": 6000, "mergeTurnsFailure": null, "libraries": [{"library": \
            "quire", "version": null, "ok": true, "runs": 3, "localMs": null, "emptyLoopMs": null, "mergeMs": {"median": 1, \
            "min": 1, "max": 1}, "mergeRounds": 15, "encodeMs": null, "loadMs": null, "encodedBytes": 6021, "snapshotBytes": 900, \
            "memoryBytes": 0, "measures": [], "failures": []}]}]}
            """
        let olderWay = "slows them alike; a line under a table names any workload merged otherwise."
        let afterUntimed = "slows them alike, and each library's timed merge comes right after an untimed\none of its own"
        let oldResults = try SuiteResultsFiles.results(json: Data(old.utf8))
        #expect(oldResults.first?.mergeTimedAfterUntimed == nil)
        let oldMarkdown = Self.report(oldResults, command: "c").markdown
        #expect(oldMarkdown.contains(olderWay) && !oldMarkdown.contains(afterUntimed) && !oldMarkdown.contains("the older way"))

        var newer = try Self.replay("B1.2", command: "c", mergeMs: 2)
        newer.figures[0].mergeRounds = 15
        newer.mergeTimedAfterUntimed = true
        let today = Self.report([newer], command: "c")
        let reread = try SuiteResultsFiles.results(json: Data(today.json.utf8))
        #expect(reread.first?.mergeTimedAfterUntimed == true)
        #expect(today.markdown.contains(afterUntimed) && !today.markdown.contains(olderWay))

        let mixed = Self.report(oldResults + [newer], command: "c").markdown
        #expect(mixed.contains(afterUntimed))
        #expect(mixed.contains("Merged in turns the older way, each library's timed merge without an untimed one of its own right before: B1.1.\n"))
    }

    // MARK: Store and sync families

    private static func storeAndSyncResults() throws -> [WorkloadResult] {
        var options = StoreBenchmark.Options()
        (options.edits, options.batch, options.threads, options.documents, options.runs) = (4, 2, 2, 5, 1)
        let store = try StoreBenchmark.run(options)
        let sync = SyncFigures(
            changes: 1000, catchUp: Spread(median: 50, min: 40, max: 60), catchUpBytes: 271_687, catchUpRounds: 1,
            writers: 4, changesPerWriter: 500, accepting: Spread(median: 1000, min: 800, max: 2000),
            acceptingWithoutHTTP: Spread(median: 500, min: 400, max: 1000),
            longPollCPU: Spread(median: 3, min: 2, max: 5), longPollSeconds: 1)
        let workloads = SuiteWorkload.all(traceFiles: ["traces/automerge-paper.json.gz"], cacheDirectory: "/tmp")
        let storeWorkload = try #require(workloads.first { $0.family == .store })
        let syncWorkload = try #require(workloads.first { $0.family == .sync })
        #expect(!storeWorkload.hasPeers && !syncWorkload.hasPeers)
        return [
            WorkloadResult(workload: storeWorkload, command: "c", ops: nil, figures: [.quire(measures: store.measures, runs: 1)]),
            WorkloadResult(workload: syncWorkload, command: "c", ops: nil, figures: [.quire(measures: sync.measures, runs: 1)]),
        ]
    }

    @Test func syncIsAWorkloadOnlyWithAutomergePaper() {
        #expect(SuiteWorkload.all(traceFiles: [], cacheDirectory: "/tmp").contains { $0.family == .store })
        #expect(!SuiteWorkload.all(traceFiles: [], cacheDirectory: "/tmp").contains { $0.family == .sync })
        #expect(SuiteWorkload.selected(by: "sync", from: SuiteWorkload.all(traceFiles: ["t/automerge-paper.json.gz"], cacheDirectory: "/tmp")).map(\.family) == [.sync])
    }

    @Test func storeAndSyncFiguresAppearWithTheirUnits() throws {
        let report = Self.report(try Self.storeAndSyncResults(), command: "c")

        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        let workloads = try #require(json["workloads"] as? [[String: Any]])
        #expect(workloads.map { $0["family"] as? String } == ["store", "sync"])
        #expect(workloads.allSatisfy { $0["ops"] is NSNull && $0["command"] as? String == "c" })
        func measures(_ index: Int) throws -> [[String: Any]] {
            let libraries = try #require(workloads[index]["libraries"] as? [[String: Any]])
            #expect(libraries.map { $0["library"] as? String } == ["quire"])
            return try #require(libraries[0]["measures"] as? [[String: Any]])
        }
        let store = try measures(0)
        #expect(store.map { $0["unit"] as? String } == ["edits/s", "edits/s", "edits/s", "ms", "ms"])
        #expect(store.first?["name"] as? String == "single-edit commits, 1 thread")
        #expect(store.allSatisfy { ($0["median"] as? Double ?? 0) > 0 && $0["min"] is Double && $0["max"] is Double })
        let sync = try measures(1)
        let bytes = try #require(sync.first { $0["name"] as? String == "catch-up bytes received" })
        #expect(bytes["unit"] as? String == "bytes" && bytes["median"] as? Int == 271_687 && bytes["min"] is NSNull)
        // Rates come from the run times: the slowest run gives the least rate.
        let accepted = try #require(sync.first { $0["unit"] as? String == "changes/s" })
        #expect(accepted["median"] as? Int == 2000 && accepted["min"] as? Int == 1000 && accepted["max"] as? Int == 2500)

        let markdown = report.markdown
        #expect(markdown.contains("## \(SuiteWorkload.Family.store.title)\n"))
        #expect(markdown.contains("## \(SuiteWorkload.Family.sync.title)\n"))
        #expect(markdown.contains("Quire only: Yrs and Loro have no sync server"))
        #expect(markdown.contains("| sync | catch-up bytes received | 271,687 bytes | same every run | 1 | yes |"))
        #expect(markdown.contains("| sync | catch-up of 1000 changes | 50 ms | 40 – 60 | 1 | yes |"))
        #expect(markdown.contains("| sync | CPU used by a 1 s long-poll with nothing new | 3 ms | 2 – 5 | 1 | yes |"))
        #expect(markdown.contains("| store | single-edit commits, 1 thread | "))
        #expect(!markdown.contains("| store | –"))  // not in the replay table

        #expect(report.charts.map(\.family) == [.store, .sync])
        for chart in report.charts {
            let bars = try XMLDocument(xmlString: chart.svg).nodes(forXPath: "//*[local-name()='rect'][@class='bar']")
            #expect(bars.count == (chart.family == .store ? 5 : 7))
        }

        // The measures read back as they were written.
        try Self.withScratchFiles { files in
            try files.write(report)
            let readBack = try files.readEarlierResults().results
            #expect(readBack.map { $0.figures(of: "quire")?.measures.map(\.name) } == report.results.map { $0.figures(of: "quire")?.measures.map(\.name) })
            #expect(readBack[1].figures(of: "quire")?.measures.first { $0.unit == "bytes" }?.spread == nil)
        }
    }

    @Test func measureFiguresAreReadable() {
        #expect(SuiteReport.formatMeasure(1_234_567.4) == "1,234,567")
        #expect(SuiteReport.formatMeasure(271_687) == "271,687")
        #expect(SuiteReport.formatMeasure(100) == "100")
        #expect(SuiteReport.formatMeasure(12.345) == "12.3")
        #expect(SuiteReport.formatMeasure(0.5) == "0.5")
    }
}

@Suite struct ResultsDocumentTests {
    @Test func aFullRunReplacesOnlyTheSuitePartOfTheResultsFile() {
        let report = "# Quire benchmark suite, day 2\n\nnew table\n## Targets\n- met"
        let first = SuiteResultsFiles.replacingSuiteSection(in: "# Results\n\nhand-written targets\n", with: "# old\nold table")
        #expect(first == "# Results\n\nhand-written targets\n\n<!-- quire-bench suite: start -->\n## old\nold table\n<!-- quire-bench suite: end -->\n")
        let second = SuiteResultsFiles.replacingSuiteSection(in: first + "\nmore notes after\n", with: report)
        #expect(second.hasPrefix("# Results\n\nhand-written targets\n"))
        #expect(second.hasSuffix("<!-- quire-bench suite: end -->\n\nmore notes after\n"))
        #expect(second.contains("## Quire benchmark suite, day 2\n\nnew table\n### Targets\n- met"))
        #expect(!second.contains("old table"))
    }
}
