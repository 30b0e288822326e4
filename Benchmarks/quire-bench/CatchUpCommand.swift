import Foundation
import QuireBenchKit

/// `quire-bench catch-up`: each file in turn, as `runTrace` does. Returns 0
/// if every file loaded and passed its check, else 1.
func runCatchUp(files: [String], runs: Int, json: Bool) -> Int32 {
    var allOK = true
    for path in files {
        let name = URL(fileURLWithPath: path).lastPathComponent
        guard let trace = loadedTrace(path) else {
            allOK = false
            continue
        }
        let measurement = CatchUpMerge.measure(trace: trace, named: name, runs: runs)
        if json {
            printLine(measurement.jsonLine)
        } else if let merge = measurement.merge, let memory = measurement.memoryBytes {
            printLine("\(name): \(measurement.heldChanges) changes held, \(measurement.mergedChanges) merged from "
                      + "\(measurement.bundleBytes) bytes: " + String(format: "%.2f ms (min %.2f, max %.2f)", merge.median, merge.min, merge.max)
                      + ", memory +\(memory) B")
        }
        for failure in measurement.failures { printError("FAIL \(name): \(failure)") }
        allOK = allOK && measurement.ok
    }
    return allOK ? 0 : 1
}
