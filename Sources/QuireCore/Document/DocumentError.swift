/// Everything that can go wrong editing or merging a document.
public enum DocumentError: Error, Hashable, Sendable, CustomStringConvertible {
    /// No object with this id is in the document.
    case unknownObject(ObjectID)
    /// The object exists but is of another kind.
    case wrongKind(ObjectID, expected: ObjectKind, actual: ObjectKind)
    /// An index or range outside the object's visible elements.
    case indexOutOfRange(index: Int, count: Int)
    /// A remote change that breaks a rule of `Specs/crdt.md`; nothing of it was applied.
    case invalidChange(OpID, reason: String)
    /// A change whose id was already applied with different content.
    case conflictingChange(OpID)
    /// More changes are waiting for missing parents than the limit allows.
    case tooManyPendingChanges(limit: Int)
    /// The document was loaded from a snapshot without history, which holds
    /// none of the changes before `start`.
    case historyUnavailable(start: VersionVector)
    /// History kept encoded in memory could not be decoded.
    case damagedHistory(DecodingError)
    /// A new object in `parent` would nest deeper than `limit` levels, past
    /// which a snapshot could not hold the document (`Specs/crdt.md`, "Objects").
    case nestedTooDeep(parent: ObjectID, limit: Int)

    public var description: String {
        switch self {
        case .unknownObject(let id):
            "no object \(id) in this document"
        case let .wrongKind(id, expected, actual):
            "object \(id) is a \(actual), not a \(expected)"
        case let .indexOutOfRange(index, count):
            "index \(index) is out of range: the object holds \(count) element\(count == 1 ? "" : "s")"
        case let .invalidChange(id, reason):
            "change \(id) is invalid: \(reason)"
        case .conflictingChange(let id):
            "change \(id) was already applied with different content (another document's change, or a replica id used twice?)"
        case .tooManyPendingChanges(let limit):
            "more than \(limit) changes are waiting for changes they depend on; fetch the missing ones first"
        case .historyUnavailable(let start):
            "the changes before version \(start) are not kept here (the document was loaded from a snapshot without history)"
        case .damagedHistory(let error):
            "the document's history is damaged: \(error)"
        case let .nestedTooDeep(parent, limit):
            "an object in \(parent) would nest deeper than \(limit) levels, the most a document may have"
        }
    }
}
