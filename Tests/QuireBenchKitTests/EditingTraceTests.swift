import Foundation
import Testing
@testable import QuireBenchKit
import QuireTestSupport

@Suite struct EditingTraceTests {
    func parse(_ json: String) throws(TraceFormatError) -> EditingTrace {
        try EditingTrace.parse(json: Array(json.utf8))
    }

    func formatError(_ json: String) -> String? {
        #expect(throws: TraceFormatError.self) { try parse(json) }?.description
    }

    @Test func parsesASequentialTrace() throws {
        let trace = try parse(#"{"startContent": "", "endContent": "hé!", "txns": [{"time": "x", "patches": [[0, 0, "hé"], [2, 0, "!"]]}]}"#)
        guard case .sequential(let sequential) = trace else { Issue.record("not sequential"); return }
        #expect(sequential.txns.count == 1)
        #expect(sequential.txns[0][0].inserted == ["h", "é"])
        #expect(trace.opCount == 3)
        #expect(try sequential.referenceReplay() == Array("hé!".unicodeScalars))
    }

    @Test func parsesAConcurrentTrace() throws {
        let trace = try parse(#"""
            {"kind": "concurrent", "endContent": "ab", "numAgents": 2, "txns": [
              {"parents": [], "agent": 0, "patches": [[0, 0, "a"]]},
              {"parents": [], "agent": 1, "patches": [[0, 0, "b"]]},
              {"parents": [0, 1], "agent": 0, "patches": []}]}
            """#)
        guard case .concurrent(let concurrent) = trace else { Issue.record("not concurrent"); return }
        #expect(concurrent.txns.map(\.parents) == [[], [], [0, 1]])
        let plan = try ConcurrentPlan(concurrent)
        #expect(plan.pulls.map { $0.map(\.agent) } == [[], [], [1]])
        #expect(plan.pulls[2].map(\.upTo) == [1])
        #expect(trace.expected == .exact("ab"))
    }

    /// `endContentSorted`: the merged text may hold its scalars in any
    /// order, but must hold each as many times as listed.
    @Test func aConcurrentTraceMayExpectScalarsInAnyOrder() throws {
        let trace = try parse(#"""
            {"kind": "concurrent", "endContentSorted": "aab", "numAgents": 2, "txns": [
              {"parents": [], "agent": 0, "patches": [[0, 0, "a"]]},
              {"parents": [0], "agent": 0, "patches": [[0, 0, "b"]]},
              {"parents": [0], "agent": 1, "patches": [[1, 0, "a"]]}]}
            """#)
        #expect(trace.expected == .anyOrder(sortedScalars: "aab"))
        #expect(trace.expected.problem(with: "baa") == nil)
        #expect(trace.expected.problem(with: "aba") == nil)
        #expect(trace.expected.problem(with: "ab") != nil)
        #expect(trace.expected.problem(with: "abaa") != nil)
        #expect(trace.expected.problem(with: "bba") != nil)
        guard case .concurrent(let concurrent) = trace else { Issue.record("not concurrent"); return }
        #expect(try TraceReplay.replay(concurrent, plan: ConcurrentPlan(concurrent)).failures == [])
        let lost = ConcurrentTrace(expected: .anyOrder(sortedScalars: "aaab"), numAgents: 2, txns: concurrent.txns)
        #expect(try TraceReplay.replay(lost, plan: ConcurrentPlan(lost)).failures.first?.hasPrefix("merged text: sorted, differs") == true)

        #expect(formatError(#"{"kind": "concurrent", "endContentSorted": "ba", "numAgents": 1, "txns": []}"#)
            == "endContentSorted must list its scalars in ascending order")
        #expect(formatError(#"{"kind": "concurrent", "endContent": "ab", "endContentSorted": "ab", "numAgents": 1, "txns": []}"#)
            == "a concurrent trace has endContent or endContentSorted, not both")
        #expect(formatError(#"{"kind": "concurrent", "numAgents": 1, "txns": []}"#)?.hasPrefix("missing key \"endContent\"") == true)
        #expect(formatError(#"{"endContent": "", "endContentSorted": "", "txns": []}"#) == "endContentSorted is for concurrent traces only")
    }

    @Test func namesWhatIsWrong() {
        #expect(formatError("{\"endContent\": ") == "invalid JSON (Unexpected end of file during JSON parse.)")
        #expect(formatError("{\"endContent\" 1}") == "invalid JSON (Invalid value around character 14.)")
        #expect(formatError(#"{"txns": []}"#) == #"missing key "endContent" at the top level"#)
        #expect(formatError(#"{"endContent": "", "txns": [{"patches": [[0, "x", ""]]}]}"#)
            == "wrong type at txns[0].patches[0][1]: expected Int")
        #expect(formatError(#"{"endContent": "", "txns": [{"patches": [[0, 0]]}]}"#)?.contains("txns[0].patches[0]") == true)
        #expect(formatError(#"{"endContent": "", "txns": [{"patches": [[-1, 0, "a"]]}]}"#)
            == "txns[0].patches[0]: negative position or delete count")
        #expect(formatError(#"{"kind": "other", "endContent": "", "txns": []}"#)?.hasPrefix("unknown kind \"other\"") == true)
        #expect(formatError(#"{"kind": "concurrent", "endContent": "", "numAgents": 1, "txns": [{"parents": [0], "agent": 0, "patches": []}]}"#)
            == "txns[0].parents must list indices of earlier transactions")
        #expect(formatError(#"{"kind": "concurrent", "endContent": "", "numAgents": 1, "txns": [{"parents": [], "agent": 1, "patches": []}]}"#)
            == "txns[0].agent must be an integer in 0..<1")
    }

    @Test func referenceReplayNamesAPatchOutOfRange() throws {
        guard case .sequential(let trace) = try parse(#"{"endContent": "", "txns": [{"patches": [[0, 0, "ab"]]}, {"patches": [[1, 2, ""]]}]}"#)
        else { Issue.record("not sequential"); return }
        let error = #expect(throws: TraceFormatError.self) { try trace.referenceReplay() }
        #expect(error?.description == "txns[1].patches[0]: patch [1, 2, …] is out of range for a text of 2 scalars")
    }

    func loadError(_ path: String) -> String? {
        #expect(throws: TraceFileError.self) { try EditingTrace.load(path: path) }?.description
    }

    @Test func loadErrorsNameTheFile() throws {
        try withTemporaryDirectory { directory in
            func write(_ name: String, _ bytes: [UInt8]) throws -> String {
                let path = directory + "/" + name
                try Data(bytes).write(to: URL(fileURLWithPath: path))
                return path
            }
            let missing = directory + "/missing.json.gz"
            #expect(loadError(missing) == "\(missing): no such file")

            let notGzip = try write("plain.json.gz", Array("{}".utf8))
            #expect(loadError(notGzip) == "\(notGzip): not gzip data (no 1f 8b magic number)")

            let badJSON = try write("bad.json.gz", try gzipped(Array("{\"endContent\": \"x\", \"txns\": [".utf8)))
            #expect(loadError(badJSON)?.hasPrefix("\(badJSON): invalid JSON") == true)

            // An empty file, or one that unzips to nothing: said so, not "unexpected end of file".
            let empty = try write("empty.json", [])
            #expect(loadError(empty) == "\(empty): the file is empty")
            let emptyInside = try write("empty.json.gz", try gzipped([]))
            #expect(loadError(emptyInside) == "\(emptyInside): the file is empty")

            let plain = try write("plain.json", Array(#"{"endContent": "a", "txns": [{"patches": [[0, 0, "a"]]}]}"#.utf8))
            #expect(try EditingTrace.load(path: plain).opCount == 1)
        }
    }
}
