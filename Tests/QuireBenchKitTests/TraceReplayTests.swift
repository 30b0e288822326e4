import Testing
@testable import QuireBenchKit

/// Small traces through the real `Document`; timings are not checked.
@Suite struct TraceReplayTests {
    func measure(_ json: String) throws -> TraceMeasurement {
        TraceMeasurement.measure(trace: try EditingTrace.parse(json: Array(json.utf8)), named: "t.json", runs: 2)
    }

    /// Three transactions typed, replaced and deleted in, one by one.
    static let sequentialTrace = #"""
        {"startContent": "", "endContent": "héllo wörld", "txns": [
          {"patches": [[0, 0, "hello"]]},
          {"patches": [[1, 1, "é"], [5, 0, " world"]]},
          {"patches": [[7, 1, "ö"]]}]}
        """#

    /// Agent 1 appends while agent 0 capitalises, concurrently; then agent 1 sees both.
    static let concurrentTrace = #"""
        {"kind": "concurrent", "endContent": "Hello world!", "numAgents": 2, "txns": [
          {"parents": [], "agent": 0, "patches": [[0, 0, "hello"]]},
          {"parents": [0], "agent": 1, "patches": [[5, 0, " world"]]},
          {"parents": [0], "agent": 0, "patches": [[0, 1, "H"]]},
          {"parents": [1, 2], "agent": 1, "patches": [[11, 0, "!"]]}]}
        """#

    @Test func sequentialTraceReproducesItsEndContent() throws {
        let result = try measure(Self.sequentialTrace)
        #expect(result.failures == [])
        #expect(result.runs == 2 && result.local != nil && result.merge != nil)
        #expect((result.encodedBytes ?? 0) > 0)
        #expect(result.load != nil && (result.snapshotBytes ?? 0) > 0 && result.memoryBytes != nil)
        #expect(result.ops == 5 + 2 + 6 + 2)
    }

    @Test func concurrentTraceMergesToItsEndContent() throws {
        let result = try measure(Self.concurrentTrace)
        #expect(result.failures == [])
        #expect(result.kind == "concurrent" && result.runs == 2)
    }

    @Test func concurrentReplicasPullFromSeveralAgents() throws {
        // Agent 2 pulls from agents 0 and 1 (encoded, as the peers exchange
        // updates), and replica 1 then takes every other replica's changes.
        let result = try measure(#"""
            {"kind": "concurrent", "endContent": "Helo wörld!", "numAgents": 3, "txns": [
              {"parents": [], "agent": 0, "patches": [[0, 0, "hello"]]},
              {"parents": [0], "agent": 1, "patches": [[5, 0, " wörld"]]},
              {"parents": [0], "agent": 0, "patches": [[0, 1, "H"]]},
              {"parents": [0], "agent": 2, "patches": [[2, 1, ""]]},
              {"parents": [1, 2, 3], "agent": 2, "patches": [[10, 0, "!"]]}]}
            """#)
        #expect(result.failures == [])
        #expect(result.ops == 5 + 6 + 2 + 1 + 1)
    }

    @Test func aWrongEndContentFailsEveryCheck() throws {
        let result = try measure(#"{"endContent": "abd", "txns": [{"patches": [[0, 0, "abc"]]}]}"#)
        #expect(!result.ok)
        #expect(result.failures.first == "reference replay: differs from the expected text at scalar 2 (3 scalars, expected 3)")
        #expect(result.failures.contains { $0.hasPrefix("final text: differs") })
        #expect(result.runs == 0)
    }
}
