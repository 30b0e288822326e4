import Foundation
import QuireStore

/// Overwrites with zeros the first (or last) leaf page of `name`, a table
/// or an index of the SQLite file at `path`: what a failing disk leaves.
/// Returns the page's number.
@discardableResult
public func zeroLeafPage(of name: String, in path: String, last: Bool = false) throws -> Int64 {
    let database = try Database(path: path)
    let (page, pageSize) = try database.read { db in
        (try db.query(sql: "SELECT \(last ? "max" : "min")(pageno) FROM dbstat WHERE name = ? AND pagetype = 'leaf'", arguments: [.text(name)])[0].int64(0),
         try db.query(sql: "PRAGMA page_size")[0].int64(0))
    }
    database.close()
    let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? file.close() }
    try file.seek(toOffset: UInt64((page - 1) * pageSize))
    try file.write(contentsOf: Data(count: Int(pageSize)))
    return page
}
