/// HTTP header fields with case-insensitive names, as HTTP requires.
///
/// ```swift
/// var headers = HTTPHeaders()
/// headers["Content-Type"] = "text/plain"
/// headers["content-type"]  // "text/plain"
/// ```
///
/// A name given twice keeps both values joined by ", ", which HTTP defines
/// as equivalent to the two separate fields.
public struct HTTPHeaders: Sendable, Equatable, Sequence {
    /// Lower-cased name -> (name as first written, value). The original
    /// spelling is kept only so that responses go out the way they were written.
    private var fields: [String: (name: String, value: String)] = [:]

    public init() {}

    /// Builds headers from `(name, value)` pairs; repeated names are joined.
    public init(_ pairs: [(String, String)]) {
        for (name, value) in pairs { add(name, value) }
    }

    /// The value of `name` (any case), or nil. Setting nil removes the field.
    public subscript(name: String) -> String? {
        get { fields[name.lowercased()]?.value }
        set { fields[name.lowercased()] = newValue.map { (name, $0) } }
    }

    /// Adds a value, joining it to an existing field of the same name.
    public mutating func add(_ name: String, _ value: String) {
        let key = name.lowercased()
        if let existing = fields[key] {
            fields[key] = (existing.name, existing.value + ", " + value)
        } else {
            fields[key] = (name, value)
        }
    }

    public var count: Int { fields.count }

    /// The fields as `(name, value)`, names spelled as first written.
    public func makeIterator() -> some IteratorProtocol<(name: String, value: String)> {
        fields.values.makeIterator()
    }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.mapValues(\.value) == rhs.fields.mapValues(\.value)
    }
}
