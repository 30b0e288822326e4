import Foundation
import FoundationXML
import Testing
@testable import QuireBenchKit

/// The suite's generator, formats and report; no timings are checked.
@Suite struct SuiteTests {
    @Test func generatorIsDeterministicAndItsTracesAreValid() throws {
        for name in ["B1.4", "B1.7", "B2.1", "B2.2", "B2.3", "B2.4", "merge-k2-m1000"] {
            let trace = try #require(CRDTBenchmarks.trace(named: name))
            #expect(trace.json == CRDTBenchmarks.trace(named: name)?.json, "\(name) differs between two generations")
            // Through the file format and back, then checked by the reference replay (sequential)
            // or by Quire's replay against what the trace expects (concurrent).
            let parsed = try EditingTrace.parse(json: Array(trace.json.utf8))
            #expect(parsed.expected == trace.expected && parsed.txnCount == trace.txnCount)
            switch parsed {
            case .sequential(let sequential):
                #expect(String(scalars: try sequential.referenceReplay()) == sequential.endContent)
            case .concurrent(let concurrent):
                let result = try TraceReplay.replay(concurrent, plan: ConcurrentPlan(concurrent))
                #expect(result.failures == [], "\(name)")
            }
        }
        #expect(CRDTBenchmarks.trace(named: "B1.1")?.txnCount == CRDTBenchmarks.n)
    }

    /// B2 as crdt-benchmarks defines it: a shared text of 100 letters, then
    /// each user's N edits in one transaction, anywhere in the text.
    @Test func b2UsersEditOneSharedTextInOneTransactionEach() throws {
        guard case .concurrent(let b22) = try #require(CRDTBenchmarks.trace(named: "B2.2")) else { Issue.record("B2.2 is not concurrent"); return }
        #expect(b22.txns.map(\.parents) == [[], [0], [0]])
        #expect(b22.txns.map(\.agent) == [0, 0, 1])
        #expect(b22.txns.map(\.patches.count) == [1, CRDTBenchmarks.n, CRDTBenchmarks.n])
        guard case .anyOrder(let sorted) = b22.expected else { Issue.record("B2.2 expects an exact text"); return }
        #expect(sorted.unicodeScalars.count == 100 + 2 * CRDTBenchmarks.n)
        // Both users insert at index 0 of the shared text.
        guard case .concurrent(let b21) = try #require(CRDTBenchmarks.trace(named: "B2.1")) else { Issue.record("B2.1 is not concurrent"); return }
        #expect(b21.txns.dropFirst().map { $0.patches.map(\.position) } == [[0], [0]])
        // B2.4 deletes: what both users deleted from the shared text is gone once.
        guard case .concurrent(let b24) = try #require(CRDTBenchmarks.trace(named: "B2.4")) else { Issue.record("B2.4 is not concurrent"); return }
        #expect(b24.txns.dropFirst().allSatisfy { txn in txn.patches.contains { $0.deleteCount > 0 } })
    }

    /// B2's `endContentSorted` against a replay that gives each letter an
    /// identity: a shared letter either user deleted is gone (once, however
    /// many deleted it), and each user's inserts it did not delete stay.
    @Test func b2ExpectedScalarsFollowEachLettersIdentity() throws {
        for name in ["B2.1", "B2.2", "B2.3", "B2.4"] {
            guard case .concurrent(let trace) = try #require(CRDTBenchmarks.trace(named: name)),
                  case .anyOrder(let sorted) = trace.expected else { Issue.record("\(name): not order-free"); continue }
            let base = trace.txns[0].patches[0].inserted
            var letter = base  // by identity: the shared letters, then every insert's
            var deleted = Set<Int>()
            var kept: [Int] = []
            for txn in trace.txns.dropFirst() {
                var ids = Array(base.indices)
                for patch in txn.patches {
                    deleted.formUnion(ids[patch.position..<patch.position + patch.deleteCount])
                    ids.replaceSubrange(patch.position..<patch.position + patch.deleteCount,
                                        with: letter.count..<letter.count + patch.inserted.count)
                    letter += patch.inserted
                }
                kept += ids.filter { $0 >= base.count }
            }
            kept += base.indices.filter { !deleted.contains($0) }
            let expected = kept.map { letter[$0] }.sorted { $0.value < $1.value }
            #expect(String(String.UnicodeScalarView(expected)) == sorted, "\(name)")
        }
    }

    @Test func aFileListedTwiceIsOneWorkloadAndANameTakenTwiceIsFound() {
        let twice = SuiteWorkload.all(traceFiles: ["t/automerge-paper.json.gz", "t/./automerge-paper.json.gz"], cacheDirectory: "/tmp")
        #expect(twice.filter { $0.name == "automerge-paper" }.count == 1)
        #expect(SuiteWorkload.sharedNames(twice).isEmpty)
        // A copy of a synthetic workload given as a TRACE, and two files of one name.
        let clashing = SuiteWorkload.all(traceFiles: ["a/x.json", "mine/B1.6.json", "b/x.json.gz"], cacheDirectory: "/tmp")
        #expect(SuiteWorkload.sharedNames(clashing) == ["x", "B1.6"])
    }

    @Test func onlyB4SelectsAutomergePaperByItsBenchmarkName() {
        let workloads = SuiteWorkload.all(traceFiles: ["t/automerge-paper.json.gz", "t/seph-blog1.json.gz"], cacheDirectory: "/tmp")
        #expect(SuiteWorkload.selected(by: "B4", from: workloads).map(\.name) == ["automerge-paper", "B4x100"])
        #expect(SuiteWorkload.selected(by: "b4x100", from: workloads).map(\.name) == ["B4x100"])
    }

    @Test func onlyAWorkloadsWholeNameSelectsThatWorkloadAlone() {
        let workloads = SuiteWorkload.all(traceFiles: ["t/rustcode.json.gz", "t/rustcode.unicode.json.gz"], cacheDirectory: "/tmp")
        // A whole name: not the bigger workloads whose names start with it.
        #expect(SuiteWorkload.selected(by: "merge-k2-m1000", from: workloads).map(\.name) == ["merge-k2-m1000"])
        #expect(SuiteWorkload.selected(by: "RUSTCODE,B1.1", from: workloads).map(\.name) == ["rustcode", "B1.1"])
        // Part of a name or a family: every workload containing it.
        #expect(SuiteWorkload.selected(by: "merge-k2", from: workloads).map(\.name) == ["merge-k2-m1000", "merge-k2-m10000"])
        #expect(SuiteWorkload.selected(by: "rust", from: workloads).map(\.name) == ["rustcode", "rustcode.unicode"])
    }

    @Test func repeatedTraceShiftsEachRepetition() throws {
        let once = SequentialTrace(endContent: "ab", txns: [[Patch(position: 0, deleteCount: 0, insertedText: "b")], [Patch(position: 0, deleteCount: 0, insertedText: "a")]])
        let thrice = once.repeated(3)
        #expect(thrice.endContent == "ababab")
        #expect(String(scalars: try thrice.referenceReplay()) == "ababab")
    }

    @Test func replicaWorkloadRoundTripsAndReplays() throws {
        for name in CRDTBenchmarks.replicaNames {
            let workload = try #require(CRDTBenchmarks.replicaWorkload(named: name))
            #expect(try ReplicaWorkload.parse(json: Array(workload.json.utf8)) == workload, "\(name)")
        }
        let small = ReplicaWorkload(container: .map, values: [.number(1), .string("x"), .object(["a": .number(2)])])
        let replay = try TraceReplay.replay(small)
        #expect(replay.failures == [])
        // Every replica wrote the one key: one of their values won.
        #expect(try replay.document.keys(.root) == [ReplicaWorkload.key])
        #expect(small.problem(with: [.number(1), .string("x")]) != nil)
        #expect(small.problem(with: [.number(3)]) != nil)
        let list = ReplicaWorkload(container: .list, values: [.string("a"), .number(3), .string("a")])
        #expect(list.problem(with: [.string("a"), .string("a"), .number(3)]) == nil)
        #expect(list.problem(with: [.string("a"), .number(3), .number(3)]) != nil)
        #expect(list.problem(with: [.string("a"), .number(3)]) != nil)
        #expect(try TraceReplay.replay(ReplicaWorkload(container: .list, values: [.string("a"), .number(3)])).failures == [])
        #expect(throws: TraceFormatError.self) { try ReplicaWorkload.parse(json: Array(#"{"kind": "replicas", "container": "set", "values": []}"#.utf8)) }
    }

    @Test func chartIsWellFormedWithOneBarPerLibrary() throws {
        let chart = BarChart(title: "B1 <&>", series: ["Quire", "Yrs", "Loro"], panels: [
            BarChart.Panel(title: "merge", unit: "ms", groups: [("B1.1", [1, 2, 300]), ("B1.2", [4, nil, 6])]),
        ])
        let document = try XMLDocument(xmlString: chart.svg)
        let bars = try document.nodes(forXPath: "//*[local-name()='rect'][@class='bar']")
        #expect(bars.count == 5)  // one per library and workload, none for the missing value
        for (library, count) in [("Quire", 2), ("Yrs", 1), ("Loro", 2)] {
            #expect(chart.svg.components(separatedBy: "data-series=\"\(library)\"").count - 1 == count, "\(library)")
        }
        #expect(chart.svg.contains("log scale"))  // 1 to 300 spans more than 10×
    }

    /// On a log scale a bar's length is the log of the value over the
    /// axis's start: two close values must not look ten times apart, and a
    /// value on a power of ten must still get a bar.
    @Test func logScaleBarsOfCloseValuesLookClose() throws {
        let chart = BarChart(title: "merge", series: ["Quire", "Yrs", "Loro"], panels: [
            BarChart.Panel(title: "merge", unit: "ms", groups: [("friendsforever", [1.49, 1.04, 25.9]), ("B1.1", [1, 2, 3])]),
        ])
        #expect(chart.svg.contains("log scale"))
        let document = try XMLDocument(xmlString: chart.svg)
        let widths = try document.nodes(forXPath: "//*[local-name()='rect'][@class='bar']/@width").compactMap { $0.stringValue.flatMap(Double.init) }
        try #require(widths.count == 6)
        #expect(widths[1] / widths[0] > 0.8, "\(widths)")  // 1.04 against 1.49
        #expect(widths[3] > 100, "\(widths)")  // 1 ms
    }

    @Test func reportHasARowPerWorkload() {
        func figures(_ library: String, merge: Double) -> LibraryFigures {
            var figures = LibraryFigures(library: library, ok: true, runs: 3)
            figures.merge = Spread(median: merge, min: merge, max: merge)
            figures.encode = Spread(median: 2 * merge, min: 2 * merge, max: 2 * merge)
            figures.load = Spread(median: 3 / merge, min: 3 / merge, max: 3 / merge)
            figures.snapshotBytes = 100
            figures.encodedBytes = Int(500 * merge)
            figures.memoryBytes = Int(1000 * merge)
            if library == "quire" { figures.sentHistoryBytes = 300 }
            return figures
        }
        let workloads = SuiteWorkload.all(traceFiles: [], cacheDirectory: "/tmp").filter { !$0.family.hasMeasures }
        let results = workloads.map { workload in
            WorkloadResult(
                workload: workload, command: "quire-bench suite", ops: 10,
                figures: [figures("quire", merge: 2), figures("yrs", merge: 1), figures("loro", merge: 4)])
        }
        let report = SuiteReport(results: results, command: "quire-bench suite", date: "2026-01-01", machine: "test")
        for workload in workloads { #expect(report.markdown.contains("| \(workload.name) | 10 |"), "\(workload.name)") }
        #expect(report.markdown.contains("Command: `quire-bench suite`"))
        #expect(report.behindStatements.contains("B1.1: Quire's merge is 2.00× slower than Yrs's."))
        // Encode, load, then the encoded history the merge applies: Quire, Quire's as sync sends it, Yrs,
        // Loro and the two ratios, raw against raw.
        #expect(report.markdown.contains("| B1.1 | 4.00 | 2.00 | 8.00 | **2.00** | 0.50 | 1.50 | 3.00 | 0.75 | 0.50 | **2.00** | 1000 | 300 | 500 | 2000 | **2.00** | 0.50 |\n"))
        #expect(report.behindStatements.contains("B1.1: Quire's encoded history size is 2.00× bigger than Yrs's."))
        #expect(report.behindStatements.contains("B1.1: Quire's snapshot encode is 2.00× slower than Yrs's."))
        #expect(report.behindStatements.contains("B1.1: Quire's snapshot load is 2.00× slower than Loro's."))
        #expect(report.behindStatements.contains("B1.1: Quire's document in memory is 2.00× bigger than Yrs's."))
        #expect(!report.behindStatements.contains { $0.contains("Loro") && !$0.contains("load") })
        #expect(report.charts.count == 4)  // B1, B2, B3, merge: no traces given
        #expect((try? JSONSerialization.jsonObject(with: Data(report.json.utf8))) != nil)
    }

    /// B4x100's peer columns are empty: the report says why.
    @Test func b4x100SaysWhyThePeersAreMissing() {
        var quire = LibraryFigures(library: "quire", ok: true, runs: 1)
        quire.local = Spread(median: 2000, min: 2000, max: 2000)
        let result = WorkloadResult(name: "B4x100", family: .b4x100, description: "d", command: "c", ops: 10, figures: [quire])
        let markdown = SuiteReport(results: [result], command: "c", date: "2026-01-01", machine: "test").markdown
        #expect(markdown.contains("## \(SuiteWorkload.Family.b4x100.title)\n\nQuire only: "))
    }

    /// A library whose result was wrong did other work: its figures stay in
    /// the table, but no ratio or "behind" compares Quire with it.
    @Test func failedChecksAreNotCompared() throws {
        func figures(_ library: String, ok: Bool, ms: Double) -> LibraryFigures {
            var figures = LibraryFigures(library: library, ok: ok, runs: 3)
            (figures.merge, figures.encode, figures.load) = (Spread(median: ms, min: ms, max: ms), Spread(median: ms, min: ms, max: ms), Spread(median: ms, min: ms, max: ms))
            figures.snapshotBytes = Int(ms * 100)
            if !ok { figures.failures = ["final text: differs"] }
            return figures
        }
        let workload = try #require(SuiteWorkload.all(traceFiles: [], cacheDirectory: "/tmp").first { $0.name == "B1.1" })
        func report(quireOK: Bool, yrsOK: Bool) -> SuiteReport {
            let result = WorkloadResult(workload: workload, command: "c", ops: 10, figures: [
                figures("quire", ok: quireOK, ms: 4), figures("yrs", ok: yrsOK, ms: 2), figures("loro", ok: true, ms: 1),
            ])
            return SuiteReport(results: [result], command: "c", date: "2026-01-01", machine: "test")
        }
        let wrongYrs = report(quireOK: true, yrsOK: false)
        #expect(!wrongYrs.behindStatements.isEmpty && !wrongYrs.behindStatements.contains { $0.contains("Yrs") })
        #expect(wrongYrs.markdown.contains("| B1.1 | 10 | 4.00 | 2.00 | 1.00 | – | **4.00** |"))
        #expect(wrongYrs.markdown.contains("| B1.1 | 4.00 | 2.00 | 1.00 | – | **4.00** | 4.00 | 2.00 | 1.00 | – | **4.00** |"))
        #expect(wrongYrs.markdown.contains("| 400 | 200 | 100 | – | **4.00** |"))
        #expect(wrongYrs.markdown.contains("- B1.1 yrs: final text: differs"))
        let wrongQuire = report(quireOK: false, yrsOK: true)
        #expect(wrongQuire.behindStatements.isEmpty)
        #expect(wrongQuire.markdown.contains("| B1.1 | 10 | 4.00 | 2.00 | 1.00 | – | – |"))
    }

    @Test func aRatioJustAboveOneDoesNotReadAsOne() throws {
        let workload = try #require(SuiteWorkload.all(traceFiles: [], cacheDirectory: "/tmp").first { $0.name == "B1.1" })
        var quire = LibraryFigures(library: "quire", ok: true, runs: 3), yrs = LibraryFigures(library: "yrs", ok: true, runs: 3)
        (quire.snapshotBytes, yrs.snapshotBytes) = (6021 + 18, 6021)  // 1.003 times
        let report = SuiteReport(results: [WorkloadResult(workload: workload, command: "c", ops: 6000, figures: [quire, yrs])],
                                 command: "c", date: "2026-01-01", machine: "test")
        #expect(report.behindStatements == ["B1.1: Quire's snapshot size is 1.003× bigger than Yrs's."])
        #expect(report.markdown.contains("| 6039 | 6021 | – | **1.003** | – |"))
        #expect(SuiteReport.ratioText(0.999) == "0.999" && SuiteReport.ratioText(1) == "1.00" && SuiteReport.ratioText(1.234) == "1.23")
    }

    @Test func aPeersZeroStillLeavesQuireBehind() throws {
        // B1.6 in the run of 2026-12-05: Yrs's document, all of it deleted, measured 0 bytes.
        let workload = try #require(SuiteWorkload.all(traceFiles: [], cacheDirectory: "/tmp").first { $0.name == "B1.6" })
        var quire = LibraryFigures(library: "quire", ok: true, runs: 3), yrs = LibraryFigures(library: "yrs", ok: true, runs: 3)
        (quire.memoryBytes, yrs.memoryBytes) = (9664, 0)
        let report = SuiteReport(results: [WorkloadResult(workload: workload, command: "c", ops: 12000, figures: [quire, yrs])],
                                 command: "c", date: "2026-01-01", machine: "test")
        #expect(report.behindStatements == ["B1.6: Quire's document in memory is bigger than Yrs's, which measured 0."])
    }

    @Test func peerLineGivesEveryFigure() throws {
        let line = #"{"peer": "yrs", "version": "0.14.13", "trace": "B1.1", "ok": true, "runs": 3, "#
            + #""localMs": 5.0, "localMsMin": 4.0, "localMsMax": 6.0, "mergeMs": 1.5, "mergeMsMin": 1.0, "mergeMsMax": 2.0, "#
            + #""encodeMs": 0.4, "encodeMsMin": 0.3, "encodeMsMax": 0.5, "loadMs": 1.2, "loadMsMin": 1.1, "loadMsMax": 1.3, "#
            + #""encodedBytes": 700, "snapshotBytes": 700, "memoryBytes": 4096}"#
        let figures = try #require(LibraryFigures.peer(jsonLine: line))
        #expect(figures.library == "yrs" && figures.ok && figures.runs == 3)
        #expect(figures.encode == Spread(median: 0.4, min: 0.3, max: 0.5))
        #expect(figures.merge == Spread(median: 1.5, min: 1.0, max: 2.0))
        #expect(figures.load == Spread(median: 1.2, min: 1.1, max: 1.3))
        #expect(figures.encodedBytes == 700 && figures.snapshotBytes == 700 && figures.memoryBytes == 4096)
        #expect(LibraryFigures.peer(jsonLine: "peers: installing pycrdt") == nil)
    }

    @Test func aPeerMissingFromPeersOutputIsNotMeasured() {
        let yrs = #"{"peer": "yrs", "ok": true, "runs": 1, "mergeMs": 1.0, "mergeMsMin": 1.0, "mergeMsMax": 1.0}"#
        let figures = LibraryFigures.peers(output: "peers: installing\n" + yrs + "\nTraceback\n", missingBecause: "peers.py gave no result (exit status 1)")
        #expect(figures.map(\.library) == ["yrs", "loro"])
        #expect(figures[0].ok && figures[0].merge != nil)
        #expect(!figures[1].ok && figures[1].merge == nil && figures[1].failures == ["not measured: peers.py gave no result (exit status 1)"])
    }

    @Test func memoryColumnShowsSmallDocuments() {
        func figures(_ library: String, memory: Int) -> LibraryFigures {
            var figures = LibraryFigures(library: library, ok: true, runs: 3)
            figures.memoryBytes = memory
            return figures
        }
        let workload = SuiteWorkload.all(traceFiles: [], cacheDirectory: "/tmp").first { $0.name == "B1.1" }!
        let result = WorkloadResult(
            workload: workload, command: "quire-bench suite", ops: 6000,
            figures: [figures("quire", memory: 1_104_000), figures("yrs", memory: 9008), figures("loro", memory: 22896)])
        let report = SuiteReport(results: [result], command: "quire-bench suite", date: "2026-01-01", machine: "test")
        #expect(report.markdown.contains("| 1.1 | 0.00901 | 0.0229 | yes |"))
    }
}
