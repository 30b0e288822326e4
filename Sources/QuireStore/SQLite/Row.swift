import CSQLite

/// One result row, copied out of SQLite so it stays valid after the
/// statement moves on.
///
/// Columns are numbered from 0, in the order of the `SELECT`. The typed
/// readers throw a `DatabaseError` (`SQLITE_MISMATCH`) when the stored value
/// has another type, because a stored value comes from a file that may be
/// old or damaged; an index past the last column is a programming error and
/// traps, like an array index.
///
///     for row in try db.query(sql: "SELECT id, title, body FROM notes") {
///         let id = try row.int64(0)
///         let title = row.isNull(1) ? "untitled" : try row.text(1)
///         let body = try row.blob(2)
///     }
public struct Row: Sendable {
    private let values: [DatabaseValue]
    /// The statement's SQL, so that errors can say where a value came from.
    private let sql: String

    init(values: [DatabaseValue], sql: String) {
        self.values = values
        self.sql = sql
    }

    public var count: Int { values.count }

    /// The raw value of column `index`, for columns that may hold several types.
    public subscript(index: Int) -> DatabaseValue { values[index] }

    public func isNull(_ index: Int) -> Bool { values[index] == .null }

    public func int64(_ index: Int) throws -> Int64 {
        guard case .integer(let value) = values[index] else { throw mismatch(index, expected: "INTEGER") }
        return value
    }

    /// A REAL column; an INTEGER is converted, as SQLite itself would.
    public func double(_ index: Int) throws -> Double {
        switch values[index] {
        case .real(let value): return value
        case .integer(let value): return Double(value)
        default: throw mismatch(index, expected: "REAL")
        }
    }

    public func text(_ index: Int) throws -> String {
        guard case .text(let value) = values[index] else { throw mismatch(index, expected: "TEXT") }
        return value
    }

    public func blob(_ index: Int) throws -> [UInt8] {
        guard case .blob(let value) = values[index] else { throw mismatch(index, expected: "BLOB") }
        return value
    }

    private func mismatch(_ index: Int, expected: String) -> DatabaseError {
        DatabaseError(
            extendedCode: SQLITE_MISMATCH,
            message: "column \(index) holds \(values[index].storageClass), expected \(expected)",
            sql: sql)
    }
}
