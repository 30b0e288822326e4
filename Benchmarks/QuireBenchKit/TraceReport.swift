import Foundation
import JSONText

/// The two output forms of `quire-bench trace`: an aligned table for people,
/// one JSON object per line for scripts.
public struct TraceTable {
    private let nameWidth: Int
    private static let numberWidth = 10
    private static let numberColumns = ["ops", "txns", "local ms", "min", "max", "merge ms", "min", "max", "history ms", "encoded B", "sent B",
                                        "load ms", "min", "max", "snapshot B", "memory B"]

    /// `names`: every trace name the table will show, to size the first column.
    public init(names: [String]) {
        nameWidth = max("trace".count, names.map(\.count).max() ?? 0)
    }

    public var header: String {
        row("trace", "kind", "ok", Self.numberColumns)
    }

    public func row(_ m: TraceMeasurement) -> String {
        func ms(_ value: Double?) -> String { value.map { String(format: "%.2f", $0) } ?? "-" }
        func bytes(_ value: Int?) -> String { value.map(String.init) ?? "-" }
        let numbers = [
            "\(m.ops)", "\(m.txns)",
            ms(m.local?.median), ms(m.local?.min), ms(m.local?.max),
            ms(m.merge?.median), ms(m.merge?.min), ms(m.merge?.max),
            ms(m.history?.median), bytes(m.encodedBytes), bytes(m.sentHistoryBytes),
            ms(m.load?.median), ms(m.load?.min), ms(m.load?.max),
            bytes(m.snapshotBytes), bytes(m.memoryBytes),
        ]
        return row(m.trace, m.kind, m.ok ? "yes" : "NO", numbers)
    }

    private func row(_ name: String, _ kind: String, _ ok: String, _ numbers: [String]) -> String {
        func left(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
        func right(_ text: String) -> String { String(repeating: " ", count: max(0, Self.numberWidth - text.count)) + text }
        return ([left(name, nameWidth), left(kind, "sequential".count), left(ok, 3)] + numbers.map(right))
            .joined(separator: "  ")
    }
}

/// A time in ms for a JSON line, to the microsecond; null when not measured.
func jsonMilliseconds(_ value: Double?) -> JSONValue { value.map { .double(($0 * 1000).rounded() / 1000) } ?? .null }

extension TraceMeasurement {
    /// One JSON object on one line; a figure not measured (a failed replay) is null.
    public var jsonLine: String {
        let ms = jsonMilliseconds
        return JSONValue.orderedObject([
            ("trace", .string(trace)),
            ("kind", .string(kind)),
            ("ops", .integer(ops)),
            ("txns", .integer(txns)),
            ("ok", .bool(ok)),
            ("runs", .integer(runs)),
            ("localMs", ms(local?.median)),
            ("localMsMin", ms(local?.min)),
            ("localMsMax", ms(local?.max)),
            ("mergeMs", ms(merge?.median)),
            ("mergeMsMin", ms(merge?.min)),
            ("mergeMsMax", ms(merge?.max)),
            ("historyMs", ms(history?.median)),
            ("encodedBytes", encodedBytes.map { .integer($0) } ?? .null),
            ("sentHistoryBytes", sentHistoryBytes.map { .integer($0) } ?? .null),
            ("loadMs", ms(load?.median)),
            ("loadMsMin", ms(load?.min)),
            ("loadMsMax", ms(load?.max)),
            ("snapshotBytes", snapshotBytes.map { .integer($0) } ?? .null),
            ("memoryBytes", memoryBytes.map { .integer($0) } ?? .null),
            ("failures", .array(failures.map(JSONValue.string))),
        ]).compact
    }
}
