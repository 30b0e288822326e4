import Testing
@testable import QuireBenchKit

/// Small traces caught up through the real `Document`; timings are not checked.
@Suite struct CatchUpMergeTests {
    func measure(_ json: String) throws -> CatchUpMeasurement {
        CatchUpMerge.measure(trace: try EditingTrace.parse(json: Array(json.utf8)), named: "t.json", runs: 2)
    }

    @Test func aReplicaHoldingHalfASequentialHistoryCatchesUpOnTheRest() throws {
        let result = try measure(TraceReplayTests.sequentialTrace)
        #expect(result.failures == [])
        // The text's creation and one change a transaction.
        #expect(result.heldChanges == 2 && result.mergedChanges == 2)
        #expect(result.bundleBytes > 0 && result.runs == 2 && result.merge != nil && result.memoryBytes != nil)
    }

    @Test func aReplicaHoldingHalfAConcurrentHistoryCatchesUpOnTheRest() throws {
        let result = try measure(TraceReplayTests.concurrentTrace)
        #expect(result.failures == [])
        #expect(result.heldChanges + result.mergedChanges == 5 && result.mergedChanges > 0)
    }

    @Test func aTraceThatFailsItsReplayIsNotCaughtUpOn() throws {
        let result = try measure(#"{"endContent": "abd", "txns": [{"patches": [[0, 0, "abc"]]}]}"#)
        #expect(result.failures.contains { $0.hasPrefix("final text: differs") })
        #expect(result.runs == 0 && result.merge == nil)
    }
}
