import Quire

/// A JSON value, written with sorted keys and two-space indentation, so
/// that the same data always prints the same bytes.
indirect enum JSON: Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    static func int(_ value: Int) -> JSON { .int(Int64(value)) }
    static func int(_ value: UInt64) -> JSON { .int(Int64(clamping: value)) }
    /// A version vector as `vv --json` prints it: `{replica: counter}`.
    static func version(_ version: VersionVector) -> JSON {
        .object(Dictionary(uniqueKeysWithValues: version.replicas.map { ($0.description, JSON.int(version[$0])) }))
    }

    func rendered(indent: String = "") -> String {
        let inner = indent + "  "
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .int(let value): return String(value)
        case .string(let value): return Self.quoted(value)
        case .array(let values):
            if values.isEmpty { return "[]" }
            return "[\n" + values.map { inner + $0.rendered(indent: inner) }.joined(separator: ",\n") + "\n\(indent)]"
        case .object(let members):
            if members.isEmpty { return "{}" }
            return "{\n" + members.keys.sorted().map { key in
                inner + Self.quoted(key) + ": " + members[key]!.rendered(indent: inner)
            }.joined(separator: ",\n") + "\n\(indent)}"
        }
    }

    /// On one line, for values inside text output: `["a", "b"]`.
    var compact: String {
        switch self {
        case .array(let values): "[" + values.map(\.compact).joined(separator: ", ") + "]"
        case .object(let members): "{" + members.keys.sorted().map { "\(Self.quoted($0)): \(members[$0]!.compact)" }.joined(separator: ", ") + "}"
        default: rendered()
        }
    }

    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
