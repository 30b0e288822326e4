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
        for key in ["mergeMs", "historyMs", "sentHistoryBytes", "loadMs", "snapshotBytes", "memoryBytes"] { #expect(object[key] is NSNull, "\(key)") }
        #expect(Set(object.keys) == [
            "trace", "kind", "ops", "txns", "ok", "runs", "localMs", "localMsMin", "localMsMax",
            "mergeMs", "mergeMsMin", "mergeMsMax", "historyMs", "encodedBytes", "sentHistoryBytes", "loadMs", "loadMsMin", "loadMsMax", "snapshotBytes",
            "memoryBytes", "failures",
        ])
    }
}

/// A tiny store benchmark on real files; the figures are not checked, only that they are there.
@Suite struct StoreBenchmarkTests {
    @Test func measuresEveryFigure() throws {
        var options = StoreBenchmark.Options()
        options.edits = 4
        options.batch = 2
        options.threads = 2
        options.documents = 5
        options.runs = 1
        let result = try StoreBenchmark.run(options)
        #expect(result.table.split(separator: "\n").count == 6)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.jsonLine.utf8)) as? [String: Any])
        for key in ["singleEditsPerSecond", "batchedEditsPerSecond", "groupEditsPerSecond", "openMs", "openAndLoadMs"] {
            #expect((object[key] as? Double ?? 0) > 0, "\(key)")
        }
        #expect(object["documents"] as? Int == 5)
    }
}
