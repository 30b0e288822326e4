/// One SQLite value: the five storage classes of SQLite.
///
/// Used both for statement arguments and for the columns of a `Row`.
/// Literals work for the common cases:
///
///     let arguments: [DatabaseValue] = [42, 1.5, "title", nil, .blob([0xCA, 0xFE])]
///     let more: [DatabaseValue] = [.integer(count), .text(name)]  // from variables
public enum DatabaseValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// The SQLite name of the storage class, for error messages.
    var storageClass: String {
        switch self {
        case .null: "NULL"
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        }
    }
}

extension DatabaseValue {
    /// An `Int` variable as an INTEGER; `Int` and `Int64` are the same size here.
    public static func integer(_ value: Int) -> DatabaseValue { .integer(Int64(value)) }
}

extension DatabaseValue: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .text(value) }
}
