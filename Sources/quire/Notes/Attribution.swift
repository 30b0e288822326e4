import JSONText
import Quire

/// The logged change that made an operation, as `blame` and `conflicts`
/// name it; none when `quire compact --drop-history` deleted it
/// (`isCompacted`), or when it is not known.
struct Attribution {
    let change: Change?
    let isCompacted: Bool

    static let unknown = Attribution(change: nil, isCompacted: false)

    /// `change` as `log` names it and its informational `time`, null when
    /// none; `compacted`, which tells a deleted change from an unknown one.
    var jsonFields: [String: JSONValue] {
        ["change": change.map { .string($0.id.description) } ?? .null, "time": RelativeTime.json(change?.date),
         "compacted": .bool(isCompacted)]
    }

    /// For a table: the change, or why there is none.
    func text(_ output: Output) -> String {
        change.map { output.styled($0.id.description, .yellow) } ?? (isCompacted ? "compacted" : "unknown")
    }
}

extension DocumentHistory {
    /// The change holding the operation `id`, or whether compaction deleted it.
    func attribution(of id: OpID) -> Attribution {
        Attribution(change: change(containing: id), isCompacted: wasCompacted(id))
    }
}
