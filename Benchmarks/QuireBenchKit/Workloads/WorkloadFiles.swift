import Foundation

extension EditingTrace {
    /// The trace in the editing-trace format (shared/traces/README.md), which
    /// `EditingTrace.parse` and `peers.py trace` read.
    public var json: String {
        func patches(_ patches: [Patch]) -> (String, JSONValue) {
            ("patches", .array(patches.map { .array([.number(Double($0.position)), .number(Double($0.deleteCount)), .string($0.insertedText)]) }))
        }
        switch self {
        case .sequential(let trace):
            return JSONValue.object([
                ("startContent", .string("")), ("endContent", .string(trace.endContent)),
                ("txns", .array(trace.txns.map { .object([patches($0)]) })),
            ]).description
        case .concurrent(let trace):
            return JSONValue.object([
                ("kind", .string("concurrent")), ("endContent", .string(trace.endContent)),
                ("numAgents", .number(Double(trace.numAgents))),
                ("txns", .array(trace.txns.map { txn in
                    .object([("parents", .array(txn.parents.map { .number(Double($0)) })), ("agent", .number(Double(txn.agent))), patches(txn.patches)])
                })),
            ]).description
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
