import Foundation
import Testing
@testable import QuireBenchKit

/// The real traces in ../shared/traces (relative to the package root, where
/// `swift test` runs).
@Suite struct SharedTracesTests {
    static let directory = "../shared/traces"

    static func tracePaths() throws -> [String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        return names.filter { $0.hasSuffix(".json.gz") || $0.hasSuffix(".json") }.sorted().map { "\(directory)/\($0)" }
    }

    @Test func tracesArePresent() throws {
        let paths = try #require(try? Self.tracePaths(), "no trace directory at \(Self.directory) (from the package root)")
        #expect(paths.count >= 6, "expected the six shared traces in \(Self.directory), found \(paths)")
    }

    @Test(arguments: (try? tracePaths()) ?? [])
    func loadsAndChecks(path: String) throws {
        switch try EditingTrace.load(path: path) {
        case .sequential(let trace):
            let text = try trace.referenceReplay()
            #expect(scalarDifference(text, trace.endContent.unicodeScalars) == nil, "\(path)")
        case .concurrent(let trace):
            // The reference replay does not apply; the trace must still be
            // replayable with one replica per agent.
            let plan = try ConcurrentPlan(trace)
            #expect(plan.pulls.count == trace.txns.count)
        }
    }

    /// Every trace through Quire's `Document`: the replay, a fresh replica
    /// applying the encoded history, and a snapshot round trip all give the
    /// trace's final text.
    @Test(arguments: (try? tracePaths()) ?? [])
    func replaysThroughQuire(path: String) throws {
        let result: ReplayResult
        switch try EditingTrace.load(path: path) {
        case .sequential(let trace): result = try TraceReplay.replay(trace)
        case .concurrent(let trace): result = try TraceReplay.replay(trace, plan: ConcurrentPlan(trace))
        }
        #expect(result.failures.isEmpty, "\(path): \(result.failures)")
    }
}
