import Foundation
import Testing
@testable import QuireBenchKit

@Suite struct ReportTests {
    @Test func spreadTakesTheMedian() {
        #expect(Spread(nanoseconds: []) == nil)
        let odd = Spread(nanoseconds: [3_000_000, 1_000_000, 2_000_000])
        #expect(odd?.median == 2 && odd?.min == 1 && odd?.max == 3)
        #expect(Spread(nanoseconds: [4_000_000, 1_000_000, 2_000_000, 3_000_000])?.median == 2.5)
    }

    @Test func jsonLineHasEveryKey() throws {
        let measurement = TraceMeasurement(
            trace: "a \"b\".json", kind: "sequential", ops: 10, txns: 4, runs: 2,
            local: Spread(nanoseconds: [1_000_000, 2_000_000]), merge: nil, encodedBytes: 99, failures: ["bad\n"])
        let line = measurement.jsonLine
        #expect(!line.contains("\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["trace"] as? String == "a \"b\".json")
        #expect(object["ok"] as? Bool == false)
        #expect(object["localMs"] as? Double == 1.5)
        #expect(object["encodedBytes"] as? Int == 99)
        #expect(object["failures"] as? [String] == ["bad\n"])
        for key in ["mergeMs", "loadMs", "snapshotBytes", "memoryBytes"] { #expect(object[key] is NSNull, "\(key)") }
        #expect(Set(object.keys) == [
            "trace", "kind", "ops", "txns", "ok", "runs", "localMs", "localMsMin", "localMsMax",
            "mergeMs", "mergeMsMin", "mergeMsMax", "encodedBytes", "loadMs", "loadMsMin", "loadMsMax", "snapshotBytes",
            "memoryBytes", "failures",
        ])
    }
}
