import Foundation
import QuireTestSupport
import Testing

/// The `quire-bench` binary's command line: help, and usage errors that
/// stay readable (the message first, then the help of the subcommand it
/// concerns, not every subcommand's).
@Suite struct CommandLineTests {
    struct Result {
        let stdout: String
        let stderr: String
        let status: Int32
    }

    /// Runs the built `quire-bench` (beside the test bundle) with `arguments`.
    /// Only for commands that print a little: both pipes are read after it ends.
    func run(_ arguments: [String], in directory: String? = nil) throws -> Result {
        let candidates = [
            Bundle.main.bundleURL.appendingPathComponent("quire-bench"),
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("quire-bench"),
        ]
        let process = Process()
        process.executableURL = candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let output = Pipe(), error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        process.waitUntilExit()
        return Result(stdout: String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
                      stderr: String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
                      status: process.terminationStatus)
    }

    @Test func helpDescribesEverySubcommandOrTheOneNamed() throws {
        let all = try run(["--help"])
        #expect(all.status == 0 && all.stderr.isEmpty)
        for synopsis in ["trace FILE...", "sync TRACE", "store [--edits N]", "writers [--count N]", "suite [TRACE...]"] {
            #expect(all.stdout.contains(synopsis))
        }
        let suite = try run(["suite", "--help"])
        #expect(suite.status == 0)
        #expect(suite.stdout.hasPrefix("usage: quire-bench suite [TRACE...]"))
        #expect(suite.stdout.contains("--only PATTERN") && !suite.stdout.contains("writers"))
    }

    @Test func aBadOptionNamesItselfAboveItsSubcommandsHelp() throws {
        for (arguments, message) in [(["trace", "--runs", "0", "x.json"], "error: --runs needs a positive integer, not \"0\""),
                                     (["sync", "--runs", "many", "x.json"], "error: --runs needs a positive integer, not \"many\""),
                                     (["writers", "--count", "-5"], "error: --count needs a positive integer, not \"-5\""),
                                     (["store", "--frobnicate"], "error: unknown option --frobnicate")] {
            let result = try run(arguments)
            #expect(result.status == 64, "\(arguments)")
            #expect(result.stdout.isEmpty, "\(arguments)")
            #expect(result.stderr.hasPrefix(message + "\n\nusage: quire-bench " + arguments[0] + " "), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("subcommands:"), "\(arguments)")
        }
    }

    /// An option where the subcommand goes is called an option, not a subcommand.
    @Test func aMissingOrUnknownSubcommandListsTheSubcommands() throws {
        for (arguments, message) in [([], "error: no subcommand given"), (["bogus"], "error: unknown subcommand bogus"),
                                     (["--frob"], "error: unknown option --frob"), (["--frob", "suite"], "error: unknown option --frob")] {
            let result = try run(arguments)
            #expect(result.status == 64)
            #expect(result.stderr.hasPrefix(message + "\n\nusage: quire-bench SUBCOMMAND"))
            #expect(result.stderr.contains("  suite [TRACE...] [--only PATTERN] [--runs N] [--peers]\n"))
            // Synopses only: the subcommands' descriptions are for --help.
            #expect(!result.stderr.contains("Every workload"))
        }
    }

    /// A full run where ../shared/traces is not says so before anything
    /// runs: from there it once replaced RESULTS.md's table with one that
    /// had lost the traces' rows. (The missing TRACE ends it before it
    /// measures; a scratch package root, so that nothing is written here.)
    @Test func aFullRunWithoutTheSharedTracesWarnsThatTheyAreLeftOut() throws {
        try withPackageRoot(peersScript: "exit 1") { root in
            let result = try run(["suite", "missing.json", "--runs", "1"], in: root)
            #expect(result.status == 1)
            #expect(result.stderr == "warning: no traces in ../shared/traces (the suite reads them from beside the package): "
                                    + "the trace workloads are left out and Benchmarks/RESULTS.md is not replaced\n"
                                    + "error: missing.json: no such file\n")
        }
    }

    @Test func anOnlyPatternThatMatchesNothingListsTheWorkloads() throws {
        // (Run from the package root, as `suite` must be; nothing is measured.)
        let result = try run(["suite", "--only", "no-such-workload"])
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("error: --only no-such-workload matches no workload; the workloads are "))
        for name in ["B1.1", "merge-k8-m10000", "B3.4", "B4x100", "families: "] { #expect(result.stderr.contains(name)) }
    }

    @Test func aTraceNamedLikeAnotherWorkloadIsAUsageError() throws {
        // (A scratch package root: a regression would measure, and write results.)
        try withPackageRoot(peersScript: "exit 1") { root in
            try FileManager.default.createDirectory(atPath: root + "/mine", withIntermediateDirectories: true)
            try #"{"endContent": "", "txns": []}"#.write(toFile: root + "/mine/B1.6.json", atomically: true, encoding: .utf8)
            let result = try run(["suite", "mine/B1.6.json", "--only", "B1.6", "--runs", "1"], in: root)
            #expect(result.status == 64)
            #expect(result.stderr.hasPrefix("error: more than one workload would be named B1.6, and the report keeps one result per name"))
        }
    }

    @Test func aTraceThatIsNotThereFailsBeforeAnythingRuns() throws {
        let name = "quire-bench-\(UUID().uuidString)"
        let missing = NSTemporaryDirectory() + name + ".json"
        // (--only keeps a regression from running the whole suite.)
        let result = try run(["suite", missing, "--only", name, "--runs", "1"])
        #expect(result.status == 1)
        #expect(result.stderr == "error: \(missing): no such file\n")
        #expect(result.stdout.isEmpty)
    }

    /// Runs `test` in a scratch package root for `suite` whose
    /// Benchmarks/peers/run.sh is `script`, removed afterwards.
    private func withPackageRoot(peersScript script: String, _ test: (String) throws -> Void) throws {
        try withTemporaryDirectory { root in
            try FileManager.default.createDirectory(atPath: root + "/Benchmarks/peers", withIntermediateDirectories: true)
            let runner = root + "/Benchmarks/peers/run.sh"
            try writeShellScript(script, to: runner)
            try test(root)
        }
    }

    /// The workloads of the one report a `suite` run wrote under `root`.
    private func writtenWorkloads(_ root: String) throws -> [[String: Any]] {
        let results = root + "/Benchmarks/results/"
        let json = try #require(try FileManager.default.contentsOfDirectory(atPath: results).first { $0.hasSuffix(".json") })
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: results + json))) as? [String: Any])
        return try #require(report["workloads"] as? [[String: Any]])
    }

    @Test func peersThatCannotRunAreTriedOnceAndQuiresFiguresAreWritten() throws {
        // A failed install: run.sh says why and fails, whatever it is asked.
        try withPackageRoot(peersScript: """
            echo "$@" >> calls
            echo 'ERROR: No matching distribution found for pycrdt==0.14.13' >&2
            exit 1
            """) { root in
            let result = try run(["suite", "--only", "B1.1,B1.2", "--runs", "1", "--peers"], in: root)
            #expect(result.status == 1)
            // Tried once, not twice for each workload (pip and all), and said once.
            #expect(try String(contentsOfFile: root + "/calls", encoding: .utf8) == "versions\n")
            #expect(result.stderr.components(separatedBy: "the peers cannot run").count == 2, "\(result.stderr)")
            #expect(result.stderr.contains("measuring Quire only"))

            let workloads = try writtenWorkloads(root)
            #expect(workloads.map { $0["name"] as? String } == ["B1.1", "B1.2"])
            for workload in workloads {
                let libraries = try #require(workload["libraries"] as? [[String: Any]])
                #expect(libraries.map { $0["library"] as? String } == ["quire", "yrs", "loro"])
                #expect(libraries[0]["ok"] as? Bool == true && libraries[0]["mergeMs"] is [String: Any])
                for peer in libraries.dropFirst() {
                    #expect(peer["ok"] as? Bool == false && peer["mergeMs"] is NSNull)
                    #expect((peer["failures"] as? [String])?.first?.hasPrefix("not measured: the peers cannot run") == true)
                }
            }
            let results = root + "/Benchmarks/results/"
            let markdown = try #require(try FileManager.default.contentsOfDirectory(atPath: results).first { $0.hasSuffix(".md") })
            #expect(try String(contentsOfFile: results + markdown, encoding: .utf8).contains("\n- B1.2 loro: not measured: the peers cannot run"))
        }
    }

    @Test func aWrongResultIsNotMergedInTurnsWithThePeers() throws {
        // Peers that answer every subcommand, and say which they were asked.
        let peer = #"{"peer": "PEER", "ok": true, "runs": 1, "mergeMs": 1.0, "mergeMsMin": 1.0, "mergeMsMax": 1.0}"#
        try withPackageRoot(peersScript: """
            echo "$1" >> calls
            case "$1" in
              trace) for p in yrs loro; do echo '\(peer)' | sed "s/PEER/$p/"; done ;;
              merge-turns) echo ready; while read line; do echo '{"yrs": 1, "loro": 1}'; done ;;
            esac
            """) { root in
            // Its endContent is not what its edits type: Quire's replay fails its check.
            try #"{"endContent": "abd", "txns": [{"patches": [[0, 0, "abc"]]}]}"#.write(toFile: root + "/wrong.json", atomically: true, encoding: .utf8)
            let result = try run(["suite", "wrong.json", "--only", "wrong", "--runs", "1", "--peers"], in: root)
            #expect(result.status == 1)
            #expect(try String(contentsOfFile: root + "/calls", encoding: .utf8) == "versions\ntrace\n")
            let libraries = try #require(try writtenWorkloads(root).first?["libraries"] as? [[String: Any]])
            #expect(libraries.map { $0["library"] as? String } == ["quire", "yrs", "loro"])
            #expect(libraries[0]["ok"] as? Bool == false && libraries[0]["mergeMs"] is NSNull)
        }
    }

    @Test func aTraceThatCannotBeReadReplacesItsEarlierFigures() throws {
        try withPackageRoot(peersScript: "exit 1") { root in
            let trace = root + "/mine.json", arguments = ["suite", "mine.json", "--only", "mine", "--runs", "1"]
            try #"{"endContent": "abc", "txns": [{"patches": [[0, 0, "abc"]]}]}"#.write(toFile: trace, atomically: true, encoding: .utf8)
            #expect(try run(arguments, in: root).status == 0)
            // The same command again, on the file damaged since: the day's report
            // must not go on showing the first run's figures as this run's.
            try #"{"endContent": "abc", "txns": [{"patches": [[0, 0, "#.write(toFile: trace, atomically: true, encoding: .utf8)
            let result = try run(arguments, in: root)
            #expect(result.status == 1)
            // A log's lines, each step and error one line, none empty.
            #expect(!result.stderr.contains("\n\n") && !result.stderr.hasPrefix("\n"), "\(result.stderr.debugDescription)")
            let libraries = try #require(try writtenWorkloads(root).first?["libraries"] as? [[String: Any]])
            #expect(libraries.count == 1 && libraries[0]["ok"] as? Bool == false && libraries[0]["localMs"] is NSNull)
            let failure = try #require((libraries[0]["failures"] as? [String])?.first)
            #expect(failure.hasPrefix("not measured: mine.json: invalid JSON"), "\(failure)")
        }
    }

    /// stderr is a pipe here, as in a run's log: each step one plain line,
    /// not carriage returns and terminal erase codes.
    @Test func progressInALogIsOnePlainLineAStep() throws {
        try withPackageRoot(peersScript: "exit 1") { root in
            try #"{"endContent": "abc", "txns": [{"patches": [[0, 0, "abc"]]}]}"#.write(toFile: root + "/mine.json", atomically: true, encoding: .utf8)
            let result = try run(["suite", "mine.json", "--only", "mine", "--runs", "1"], in: root)
            #expect(result.status == 0)
            #expect(!result.stderr.contains("\r") && !result.stderr.contains("\u{1B}"), "\(result.stderr.debugDescription)")
            #expect(result.stderr == "[1/1] mine quire (1 run)...\n")
        }
    }

    /// B4x100 runs once whatever --runs asks, and its progress line says so
    /// (it said "(3 runs)"). A TRACE named automerge-paper makes a B4x100
    /// of that tiny trace typed 100 times.
    @Test func theProgressLineCountsTheRunsAWorkloadGets() throws {
        try withPackageRoot(peersScript: "exit 1") { root in
            try #"{"endContent": "abc", "txns": [{"patches": [[0, 0, "abc"]]}]}"#
                .write(toFile: root + "/automerge-paper.json", atomically: true, encoding: .utf8)
            let result = try run(["suite", "automerge-paper.json", "--only", "B4x100", "--runs", "3"], in: root)
            #expect(result.status == 0)
            #expect(result.stderr == "[1/1] B4x100 quire (1 run)...\n")
            let libraries = try #require(try writtenWorkloads(root).first?["libraries"] as? [[String: Any]])
            #expect(libraries.first?["runs"] as? Int == 1)
        }
    }

    /// Every key of `trace --json` and of the suite's DATE.json, nested
    /// ones too, is named in that subcommand's help as a key, in backticks,
    /// so that a script's author can find what each one holds. A key that is
    /// also a word of the prose ("runs", "name") counts only as a key.
    @Test func everyJSONKeyIsDescribedInItsSubcommandsHelp() throws {
        func keys(_ value: Any) -> Set<String> {
            if let object = value as? [String: Any] { return Set(object.keys).union(object.values.flatMap(keys)) }
            if let array = value as? [Any] { return Set(array.flatMap(keys)) }
            return []
        }
        func undescribed(_ keys: Set<String>, in help: String) -> [String] {
            keys.filter { !help.contains("`\($0)`") }.sorted()
        }
        try withPackageRoot(peersScript: "exit 1") { root in
            try #"{"endContent": "abc", "txns": [{"patches": [[0, 0, "abc"]]}]}"#.write(toFile: root + "/mine.json", atomically: true, encoding: .utf8)
            let trace = try run(["trace", "mine.json", "--runs", "1", "--json"], in: root)
            #expect(trace.status == 0)
            let traceKeys = keys(try JSONSerialization.jsonObject(with: Data(trace.stdout.utf8)))
            #expect(traceKeys.contains("mergeMsMin"))
            let traceHelp = try run(["trace", "--help"]).stdout
            #expect(undescribed(traceKeys, in: traceHelp) == [])
            // Its description removed, a key is missed, though the prose says "slowest runs".
            #expect(undescribed(traceKeys, in: traceHelp.replacingOccurrences(of: "`runs`, ", with: "")) == ["runs"])

            #expect(try run(["suite", "mine.json", "--only", "mine", "--runs", "1"], in: root).status == 0)
            let results = root + "/Benchmarks/results/"
            let json = try #require(try FileManager.default.contentsOfDirectory(atPath: results).first { $0.hasSuffix(".json") })
            let suiteKeys = keys(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: results + json))))
            #expect(suiteKeys.contains("emptyLoopMs") && suiteKeys.contains("median"))
            let suiteHelp = try run(["suite", "--help"]).stdout
            #expect(undescribed(suiteKeys, in: suiteHelp) == [])
            #expect(undescribed(suiteKeys, in: suiteHelp.replacingOccurrences(of: "`runs`, ", with: "")) == ["runs"])
        }
    }

    /// The "behind:" lines a run prints are about the workloads it measured,
    /// not those earlier runs of the day left in the report.
    @Test func aRunSaysWhereQuireIsBehindOnlyOnWhatItMeasured() throws {
        // Peers far faster than Quire at everything they report.
        let peer = #"{"peer": "PEER", "ok": true, "runs": 1, "mergeMs": 1e-6, "mergeMsMin": 1e-6, "mergeMsMax": 1e-6}"#
        try withPackageRoot(peersScript: """
            case "$1" in
              trace) for p in yrs loro; do echo '\(peer)' | sed "s/PEER/$p/"; done ;;
              merge-turns) echo ready; while read line; do echo '{"yrs": 1e-6, "loro": 1e-6}'; done ;;
            esac
            """) { root in
            let results = root + "/Benchmarks/results/"
            try FileManager.default.createDirectory(atPath: results, withIntermediateDirectories: true)
            let today = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withFullDate])
            try """
                {"command": "quire-bench suite --only B1.2", "date": "\(today)", "machine": "m", "workloads": [
                {"name": "B1.2", "family": "B1", "description": "d", "command": "quire-bench suite --only B1.2", "ops": 6000, "libraries": [
                  {"library": "quire", "ok": true, "runs": 1, "mergeMs": {"median": 2, "min": 2, "max": 2}, "failures": []},
                  {"library": "yrs", "ok": true, "runs": 1, "mergeMs": {"median": 1, "min": 1, "max": 1}, "failures": []}]}]}
                """.write(toFile: results + today + ".json", atomically: true, encoding: .utf8)
            try #"{"endContent": "abc", "txns": [{"patches": [[0, 0, "abc"]]}]}"#.write(toFile: root + "/mine.json", atomically: true, encoding: .utf8)
            let result = try run(["suite", "mine.json", "--only", "mine", "--runs", "1", "--peers"], in: root)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("\nbehind: mine: Quire's merge is "), "\(result.stdout)")
            #expect(!result.stdout.contains("behind: B1.2"), "\(result.stdout)")
            #expect(Set(try writtenWorkloads(root).compactMap { $0["name"] as? String }) == ["B1.2", "mine"])  // kept in the report
        }
    }

    @Test func mergesInTurnsAreRecordedWithTheirRoundsOrWhyNot() throws {
        let peer = #"{"peer": "PEER", "ok": true, "runs": 1, "mergeMs": 1.0, "mergeMsMin": 1.0, "mergeMsMax": 1.0}"#
        for turns in ["echo ready; while read line; do echo '{\"yrs\": 2, \"loro\": 3}'; done", "echo ready; exit 1"] {
            try withPackageRoot(peersScript: """
                case "$1" in
                  trace) for p in yrs loro; do echo '\(peer)' | sed "s/PEER/$p/"; done ;;
                  merge-turns) \(turns) ;;
                esac
                """) { root in
                try #"{"endContent": "abc", "txns": [{"patches": [[0, 0, "abc"]]}]}"#.write(toFile: root + "/mine.json", atomically: true, encoding: .utf8)
                #expect(try run(["suite", "mine.json", "--only", "mine", "--runs", "1", "--peers"], in: root).status == 0)
                let workload = try #require(try writtenWorkloads(root).first)
                let libraries = try #require(workload["libraries"] as? [[String: Any]])
                let peerMerges = libraries.dropFirst().map { ($0["mergeMs"] as? [String: Any])?["median"] as? Double }
                let markdown = try String(contentsOfFile: root + "/Benchmarks/results/" + (try FileManager.default.contentsOfDirectory(atPath: root + "/Benchmarks/results")).first { $0.hasSuffix(".md") }!, encoding: .utf8)
                if turns.contains("exit") {
                    // The merges measured one library after the other stay, and the report says so.
                    #expect(libraries.map { $0["mergeRounds"] is NSNull } == [true, true, true])
                    #expect(peerMerges == [1, 1])
                    #expect(workload["mergeTurnsFailure"] as? String == "peers.py merge-turns stopped answering")
                    #expect(workload["mergeTimedAfterUntimed"] is NSNull)
                    #expect(markdown.contains("not in turns (a busy moment may have slowed one library only): mine (peers.py merge-turns stopped answering).\n"))
                } else {
                    // One round per run, at least MergeTurns.minimumRounds, for all three; the peers' times are their turns'.
                    #expect(libraries.map { $0["mergeRounds"] as? Int } == [15, 15, 15])
                    #expect(peerMerges == [2, 3])
                    #expect(workload["mergeTurnsFailure"] is NSNull && !markdown.contains("not in turns"))
                    // How they were timed, for the report of a later `--rewrite` (SuiteResultsTests).
                    #expect(workload["mergeTimedAfterUntimed"] as? Bool == true)
                }
            }
        }
    }

    /// `--rewrite DATE` writes a day's Markdown and charts again from its
    /// JSON, and RESULTS.md's suite part for a day of a full run, measuring nothing.
    @Test func rewriteMakesTheReportAgainFromTheJSON() throws {
        try withPackageRoot(peersScript: "exit 1") { root in
            let results = root + "/Benchmarks/results/"
            try FileManager.default.createDirectory(atPath: results, withIntermediateDirectories: true)
            let json = """
                {"command": "quire-bench suite --runs 1", "date": "2026-01-02", "machine": "m", "workloads": [
                {"name": "B1.1", "family": "B1", "description": "d", "command": "quire-bench suite --runs 1", "ops": 6000, "libraries": [
                  {"library": "quire", "ok": true, "runs": 1, "mergeMs": {"median": 2, "min": 1.5, "max": 2}, "failures": []}]}]}
                """
            try json.write(toFile: results + "2026-01-02.json", atomically: true, encoding: .utf8)
            try "# Results\n".write(toFile: root + "/Benchmarks/RESULTS.md", atomically: true, encoding: .utf8)

            let rewritten = try run(["suite", "--rewrite", "2026-01-02"], in: root)
            #expect(rewritten.status == 0, "\(rewritten.stderr)")
            #expect(try String(contentsOfFile: results + "2026-01-02.md", encoding: .utf8).contains("| B1.1 | 6000 | 2.00 ±25% |"))
            #expect(FileManager.default.fileExists(atPath: results + "2026-01-02-B1.svg"))
            #expect(try String(contentsOfFile: root + "/Benchmarks/RESULTS.md", encoding: .utf8).contains("## Quire benchmark suite, 2026-01-02"))
            #expect(try String(contentsOfFile: results + "2026-01-02.json", encoding: .utf8) == json)  // read, not written

            let missing = try run(["suite", "--rewrite", "2026-01-03"], in: root)
            #expect(missing.status == 1 && missing.stderr.contains("2026-01-03.json: no such file"))
            let withOthers = try run(["suite", "--rewrite", "2026-01-02", "--peers"], in: root)
            #expect(withOthers.status == 64 && withOthers.stderr.contains("--rewrite measures nothing"))
        }
    }
}
