import Foundation
import JSONText

extension EditingTrace {
    /// The trace in the editing-trace format (shared/traces/README.md), which
    /// `EditingTrace.parse` and `peers.py trace` read.
    public var json: String {
        func patches(_ patches: [Patch]) -> (String, JSONValue) {
            ("patches", .array(patches.map { .array([.integer($0.position), .integer($0.deleteCount), .string($0.insertedText)]) }))
        }
        switch self {
        case .sequential(let trace):
            return JSONValue.orderedObject([
                ("startContent", .string("")), ("endContent", .string(trace.endContent)),
                ("txns", .array(trace.txns.map { .orderedObject([patches($0)]) })),
            ]).compact
        case .concurrent(let trace):
            let end: (String, JSONValue) = switch trace.expected {
            case .exact(let text): ("endContent", .string(text))
            case .anyOrder(let sorted): ("endContentSorted", .string(sorted))
            }
            return JSONValue.orderedObject([
                ("kind", .string("concurrent")), end,
                ("numAgents", .integer(trace.numAgents)),
                ("txns", .array(trace.txns.map { txn in
                    .orderedObject([("parents", .array(txn.parents.map { .integer($0) })), ("agent", .integer(txn.agent)), patches(txn.patches)])
                })),
            ]).compact
        }
    }
}

extension SequentialTrace {
    /// The trace typed `times` times one after another in one document: each
    /// repetition's patches shifted by the length of the text so far (B4x100).
    public func repeated(_ times: Int) -> SequentialTrace {
        let length = endContent.unicodeScalars.count
        var txns: [[Patch]] = []
        txns.reserveCapacity(self.txns.count * times)
        for repetition in 0..<times {
            let shift = repetition * length
            for txn in self.txns {
                txns.append(txn.map { patch in
                    var shifted = patch
                    shifted.position += shift
                    return shifted
                })
            }
        }
        return SequentialTrace(endContent: String(repeating: endContent, count: times), txns: txns)
    }
}

/// Writes the synthetic workloads into a cache folder (git-ignored), where
/// the suite and the peers both read them.
public enum WorkloadFiles {
    /// Generates workload `name` (a synthetic trace or a B3 workload) and
    /// writes it as `<directory>/<name>.json`. It is written on every call:
    /// generation takes well under a second, and the file then always
    /// matches the generator in this build.
    public static func write(_ name: String, in directory: String) throws -> String {
        let text: String
        if let trace = CRDTBenchmarks.trace(named: name) {
            text = trace.json
        } else if let workload = CRDTBenchmarks.replicaWorkload(named: name) {
            text = workload.json
        } else {
            throw TraceFileError(path: name, problem: "no such synthetic workload")
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/" + name + ".json"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}
