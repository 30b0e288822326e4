import Testing
@testable import QuireBenchKit

/// Small traces caught up through the real `Document`; timings are not checked.
@Suite struct CatchUpMergeTests {
    func measure(_ json: String) throws -> CatchUpMeasurement {
        CatchUpMerge.measure(trace: try EditingTrace.parse(json: Array(json.utf8)), named: "t.json", runs: 2)
    }

    @Test func aReplicaHoldingHalfASequentialHistoryCatchesUpOnTheRest() throws {
        let result = try measure(#"""
            {"startContent": "", "endContent": "héllo wörld", "txns": [
              {"patches": [[0, 0, "hello"]]},
              {"patches": [[1, 1, "é"], [5, 0, " world"]]},
              {"patches": [[7, 1, "ö"]]}]}
            """#)
        #expect(result.failures == [])
        // The text's creation and one change a transaction.
        #expect(result.heldChanges == 2 && result.mergedChanges == 2)
        #expect(result.bundleBytes > 0 && result.runs == 2 && result.merge != nil && result.memoryBytes != nil)
    }

    @Test func aReplicaHoldingHalfAConcurrentHistoryCatchesUpOnTheRest() throws {
        let result = try measure(#"""
            {"kind": "concurrent", "endContent": "Hello world!", "numAgents": 2, "txns": [
              {"parents": [], "agent": 0, "patches": [[0, 0, "hello"]]},
              {"parents": [0], "agent": 1, "patches": [[5, 0, " world"]]},
              {"parents": [0], "agent": 0, "patches": [[0, 1, "H"]]},
              {"parents": [1, 2], "agent": 1, "patches": [[11, 0, "!"]]}]}
            """#)
        #expect(result.failures == [])
        #expect(result.heldChanges + result.mergedChanges == 5 && result.mergedChanges > 0)
    }

    @Test func aTraceThatFailsItsReplayIsNotCaughtUpOn() throws {
        let result = try measure(#"{"endContent": "abd", "txns": [{"patches": [[0, 0, "abc"]]}]}"#)
        #expect(result.failures.contains { $0.hasPrefix("final text: differs") })
        #expect(result.runs == 0 && result.merge == nil)
    }
}
