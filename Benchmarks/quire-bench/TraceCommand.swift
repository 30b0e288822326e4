import Foundation
import QuireBenchKit

/// `quire-bench trace`: loads, checks and measures each file in turn, printing
/// its row (or JSON line) as soon as it is done. A file that cannot be loaded
/// is reported and skipped. Returns 0 if every file loaded and passed every check, else 1.
func runTrace(files: [String], runs: Int, json: Bool) -> Int32 {
    let names = files.map { URL(fileURLWithPath: $0).lastPathComponent }
    let table = TraceTable(names: names)
    if !json { printLine(table.header) }
    var allOK = true
    for (path, name) in zip(files, names) {
        guard let trace = loadedTrace(path) else {
            allOK = false
            continue
        }
        let measurement = TraceMeasurement.measure(trace: trace, named: name, runs: runs)
        printLine(json ? measurement.jsonLine : table.row(measurement))
        for failure in measurement.failures { printError("FAIL \(name): \(failure)") }
        allOK = allOK && measurement.ok
    }
    return allOK ? 0 : 1
}

/// The trace at `path`, or nil, having said why, when it cannot be loaded.
func loadedTrace(_ path: String) -> EditingTrace? {
    do { return try EditingTrace.load(path: path) } catch {
        printError("error: \(error)")
        return nil
    }
}

/// Writes straight to the file descriptor, so that rows appear as each trace
/// finishes even when piped.
func printLine(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
