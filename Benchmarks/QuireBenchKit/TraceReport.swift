import Foundation

/// The two output forms of `quire-bench trace`: an aligned table for people,
/// one JSON object per line for scripts.
public struct TraceTable {
    private let nameWidth: Int
    private static let numberWidth = 10
    private static let numberColumns = ["ops", "txns", "local ms", "min", "max", "merge ms", "min", "max", "encoded B",
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
        let numbers = [
            "\(m.ops)", "\(m.txns)",
            ms(m.local?.median), ms(m.local?.min), ms(m.local?.max),
            ms(m.merge?.median), ms(m.merge?.min), ms(m.merge?.max),
            m.encodedBytes.map { "\($0)" } ?? "-",
            ms(m.load?.median), ms(m.load?.min), ms(m.load?.max),
            m.snapshotBytes.map { "\($0)" } ?? "-",
            m.memoryBytes.map { "\($0)" } ?? "-",
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

extension TraceMeasurement {
    /// One JSON object on one line; a figure not measured (a failed replay) is null.
    public var jsonLine: String {
        func ms(_ value: Double?) -> JSONValue { value.map { .number(($0 * 1000).rounded() / 1000) } ?? .null }
        let fields: KeyValuePairs<String, JSONValue> = [
            "trace": .string(trace),
            "kind": .string(kind),
            "ops": .number(Double(ops)),
            "txns": .number(Double(txns)),
            "ok": .bool(ok),
            "runs": .number(Double(runs)),
            "localMs": ms(local?.median),
            "localMsMin": ms(local?.min),
            "localMsMax": ms(local?.max),
            "mergeMs": ms(merge?.median),
            "mergeMsMin": ms(merge?.min),
            "mergeMsMax": ms(merge?.max),
            "encodedBytes": encodedBytes.map { .number(Double($0)) } ?? .null,
            "loadMs": ms(load?.median),
            "loadMsMin": ms(load?.min),
            "loadMsMax": ms(load?.max),
            "snapshotBytes": snapshotBytes.map { .number(Double($0)) } ?? .null,
            "memoryBytes": memoryBytes.map { .number(Double($0)) } ?? .null,
            "failures": .array(failures.map(JSONValue.string)),
        ]
        return "{" + fields.map { "\(JSONValue.string($0.key)): \($0.value)" }.joined(separator: ", ") + "}"
    }
}

/// Just enough JSON to write a report line with its keys in a fixed order
/// (`JSONSerialization` and `JSONEncoder` do not keep insertion order).
enum JSONValue: CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    indirect case array([JSONValue])
    /// Keys in the order given.
    indirect case object([(String, JSONValue)])

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let value): value ? "true" : "false"
        // Whole numbers print without a fraction; others in Swift's shortest round-trip form.
        case .number(let value): value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
        case .string(let value): Self.quote(value)
        case .array(let values): "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .object(let fields): "{" + fields.map { "\(Self.quote($0.0)): \($0.1)" }.joined(separator: ", ") + "}"
        }
    }

    private static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
