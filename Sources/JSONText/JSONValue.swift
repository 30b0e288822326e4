/// A JSON value and the two ways Quire's tools write it: indented for the
/// `quire` CLI's `--json`, on one line for report lines and for values inside
/// text output. Hand-written because scripts read these bytes: the same data
/// must always print the same bytes, and report lines keep their keys in a
/// fixed order (`JSONSerialization` and `JSONEncoder` do not keep insertion
/// order).
public indirect enum JSONValue: Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    /// Written without a fraction when whole (and below 10^15), otherwise in
    /// Swift's shortest round-trip form.
    case double(Double)
    case string(String)
    case array([JSONValue])
    /// Written with its keys sorted, so that the same members always print the same bytes.
    case object([String: JSONValue])
    /// Written with its fields in the order given.
    case orderedObject([(String, JSONValue)])

    public static func integer(_ value: Int) -> JSONValue { .integer(Int64(value)) }
    /// Clamped to `Int64.max`, the largest `.integer`.
    public static func integer(_ value: UInt64) -> JSONValue { .integer(Int64(clamping: value)) }

    /// Two-space indented, one element or member per line; empty arrays and objects as `[]` and `{}`.
    public var indented: String { indented(by: "") }

    /// `.array(elements).indented`, handed to `write` in pieces, one
    /// element at a time: an array of hundreds of thousands of elements
    /// (`quire log --json` of a long history) is written as it is made,
    /// never held whole, as a value or as text.
    public static func indentedArray(_ elements: some Sequence<JSONValue>, _ write: (String) -> Void) {
        var iterator = elements.makeIterator()
        guard var element = iterator.next() else { return write("[]") }
        write("[")
        while let next = iterator.next() {
            write("\n  " + element.indented(by: "  ") + ",")
            element = next
        }
        write("\n  " + element.indented(by: "  ") + "\n]")
    }

    /// On one line, elements and members separated by `, `: `["a", "b"]`, `{"a": 1}`.
    public var compact: String {
        switch self {
        case .null: "null"
        case .bool(let value): value ? "true" : "false"
        case .integer(let value): String(value)
        // Whole when converting to an integer loses nothing (no `rounded()`: that needs libm).
        case .double(let value): abs(value) < 1e15 && Double(Int64(value)) == value ? String(Int64(value)) : "\(value)"
        case .string(let value): Self.quoted(value)
        case .array(let values): "[" + values.map(\.compact).joined(separator: ", ") + "]"
        case .object(let members): Self.compact(Self.sorted(members))
        case .orderedObject(let fields): Self.compact(fields)
        }
    }

    /// `text` as a JSON string: quotes, backslashes and control characters
    /// escaped (delete and the C1 controls too, which JSON allows raw but a
    /// terminal may obey), everything else (non-ASCII included) as itself.
    public static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value):
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    /// `indent`: the indentation of the line this value starts on.
    private func indented(by indent: String) -> String {
        let inner = indent + "  "
        func lines(_ open: String, _ items: [String], _ close: String) -> String {
            items.isEmpty ? open + close : open + "\n" + items.map { inner + $0 }.joined(separator: ",\n") + "\n" + indent + close
        }
        func member(_ field: (String, JSONValue)) -> String {
            Self.quoted(field.0) + ": " + field.1.indented(by: inner)
        }
        switch self {
        case .array(let values): return lines("[", values.map { $0.indented(by: inner) }, "]")
        case .object(let members): return lines("{", Self.sorted(members).map(member), "}")
        case .orderedObject(let fields): return lines("{", fields.map(member), "}")
        default: return compact
        }
    }

    private static func sorted(_ members: [String: JSONValue]) -> [(String, JSONValue)] {
        members.keys.sorted().map { ($0, members[$0]!) }
    }

    private static func compact(_ fields: [(String, JSONValue)]) -> String {
        "{" + fields.map { quoted($0.0) + ": " + $0.1.compact }.joined(separator: ", ") + "}"
    }
}

extension JSONValue: Equatable {
    /// By hand, as ordered fields are tuples. A sorted object never equals an
    /// ordered one, even with the same members. Strings compare by their
    /// bytes, as they are printed, not as canonically equivalent `String`s.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.integer(a), .integer(b)): a == b
        case let (.double(a), .double(b)): a == b
        case let (.string(a), .string(b)): a.utf8.elementsEqual(b.utf8)
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)): a == b
        case let (.orderedObject(a), .orderedObject(b)): a.elementsEqual(b) { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }
}
