import Testing
@testable import QuireBenchKit
import QuireTestSupport

/// A trace file damaged (a cut download, a hand edit gone wrong, a hostile
/// file) as `quire-bench trace` reads it: parsing either refuses it saying
/// what is wrong, or gives a trace that the whole measurement (checks,
/// planning, replay) reports on, failures named, without trapping or
/// taking all memory. Run longer with
/// `QUIRE_FUZZ_SEEDS=5000 swift test --filter DamagedTraceFuzz`.
@Suite struct DamagedTraceFuzzTests {
    static let traces = [
        #"{"startContent": "", "endContent": "hé!x", "txns": [{"patches": [[0, 0, "hé"], [2, 0, "!"]]}, {"patches": [[3, 0, "yx"], [3, 1, ""]]}]}"#,
        #"""
        {"kind": "concurrent", "endContent": "a😀b", "numAgents": 2, "txns": [
          {"parents": [], "agent": 0, "patches": [[0, 0, "a"]]},
          {"parents": [], "agent": 1, "patches": [[0, 0, "b"]]},
          {"parents": [0, 1], "agent": 0, "patches": [[1, 0, "😀"]]}]}
        """#,
        #"""
        {"kind": "concurrent", "endContentSorted": "aab", "numAgents": 3, "txns": [
          {"parents": [], "agent": 0, "patches": [[0, 0, "a"]]},
          {"parents": [0], "agent": 1, "patches": [[1, 0, "b"]]},
          {"parents": [0], "agent": 2, "patches": [[0, 0, "a"]]},
          {"parents": [1, 2], "agent": 0, "patches": []}]}
        """#,
    ]

    @Test func aDamagedTraceIsRefusedOrMeasuredWithoutTrapping() {
        var measured = 0
        let seeds = fuzzSeedCount(default: 300)
        for seed in 1...UInt64(seeds) {
            var rng = SeededGenerator(seed: seed)
            let json = Self.damage(Array(Self.traces.randomElement(using: &rng)!.utf8), using: &rng)
            let context = "seed \(seed): \(String(decoding: json, as: UTF8.self))"
            let trace: EditingTrace
            do { trace = try EditingTrace.parse(json: json) } catch {
                #expect(!error.description.isEmpty, "\(context): a refusal without a reason")
                continue
            }
            measured += 1
            let measurement = TraceMeasurement.measure(trace: trace, named: "damaged", runs: 1)
            #expect(measurement.failures.allSatisfy { !$0.isEmpty }, "\(context): a failure without a reason")
        }
        // Most damage breaks the JSON; enough must parse for the replay to be reached.
        #expect(measured >= seeds / 10, "only \(measured) of \(seeds) damaged traces parsed")
    }

    @Test func aHugeAgentCountIsRefusedBeforeAnythingIsAllocated() {
        let json = #"{"kind": "concurrent", "endContent": "", "numAgents": 1000000000000, "txns": []}"#
        let error = #expect(throws: TraceFormatError.self) { try EditingTrace.parse(json: Array(json.utf8)) }
        #expect(error?.description == "numAgents must be at most 1024, not 1000000000000")
    }

    /// One to three changes to the JSON text, most of them to its numbers
    /// (which keep it JSON): a digit changed, digits added (a count or
    /// position far out of range), a minus sign; otherwise a byte changed,
    /// a range cut out or repeated.
    static func damage(_ json: [UInt8], using rng: inout SeededGenerator) -> [UInt8] {
        var damaged = json
        let digits = Array("0123456789".utf8)
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            let numberAt = damaged.indices.filter { digits.contains(damaged[$0]) }
            let index = Int.random(in: 0..<4, using: &rng) > 0 && !numberAt.isEmpty
                ? numberAt.randomElement(using: &rng)! : Int.random(in: 0..<damaged.count, using: &rng)
            switch Int.random(in: 0..<6, using: &rng) {
            case 0: damaged[index] = digits.randomElement(using: &rng)!
            case 1: damaged.insert(contentsOf: (0..<Int.random(in: 1...12, using: &rng)).map { _ in digits.randomElement(using: &rng)! }, at: index)
            case 2: damaged.insert(UInt8(ascii: "-"), at: index)
            case 3: damaged[index] = UInt8.random(in: 0...255, using: &rng)
            case 4: damaged.removeSubrange(index..<min(damaged.count, index + Int.random(in: 1...8, using: &rng)))
            default:
                let end = min(damaged.count, index + Int.random(in: 1...24, using: &rng))
                damaged.insert(contentsOf: damaged[index..<end], at: index)
            }
            if damaged.isEmpty { damaged = json }
        }
        return damaged
    }
}
