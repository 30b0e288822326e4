/// The id of an object in a document: the id of the operation that created
/// it, or `.root` for the root map every document starts with.
public struct ObjectID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// `nil` for the root.
    public var creator: OpID?

    /// The object that the operation `creator` made.
    public init(_ creator: OpID) { self.creator = creator }
    private init() { creator = nil }

    /// The root map.
    public static let root = ObjectID()

    public static func < (a: ObjectID, b: ObjectID) -> Bool {
        switch (a.creator, b.creator) {
        case (nil, nil): return false
        case (nil, _): return true
        case (_, nil): return false
        case let (x?, y?): return x < y
        }
    }

    /// `root`, or the creating operation's id as `counter@replica`.
    public var description: String { creator?.description ?? "root" }

    /// Parses `description`: `root`, or `counter@replica` (the replica in
    /// hex); `nil` for anything else.
    public init?(_ text: some StringProtocol) {
        if text == "root" { self = .root; return }
        guard let id = OpID(text) else { return nil }
        self.init(id)
    }
}

/// The kinds of object a document holds.
public enum ObjectKind: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// Keys to last-writer-wins registers.
    case map = 0
    /// An RGA sequence of values.
    case list = 1
    /// An RGA sequence of Unicode scalars.
    case text = 2
    /// A sum of increments.
    case counter = 3

    public var description: String {
        switch self {
        case .map: "map"
        case .list: "list"
        case .text: "text"
        case .counter: "counter"
        }
    }
}

/// A value that is not an object.
///
/// Doubles compare by bit pattern, so that `NaN == NaN` and two replicas
/// holding the same bits are equal, as convergence checks need. Strings
/// compare by their scalars, not as `String`'s `==`, which takes
/// canonically equivalent ones (an "é" precomposed, or "e" and U+0301)
/// for equal: writing one over the other is a change like any.
public enum ScalarValue: Hashable, Sendable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case bytes([UInt8])

    public static func == (a: ScalarValue, b: ScalarValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case let (.bool(x), .bool(y)): x == y
        case let (.int(x), .int(y)): x == y
        case let (.double(x), .double(y)): x.bitPattern == y.bitPattern
        case let (.string(x), .string(y)): x.hasSameBytes(as: y)
        case let (.bytes(x), .bytes(y)): x == y
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let x): hasher.combine(1); hasher.combine(x)
        case .int(let x): hasher.combine(2); hasher.combine(x)
        case .double(let x): hasher.combine(3); hasher.combine(x.bitPattern)
        case .string(let x): hasher.combine(4); hasher.combine(x)  // canonically equivalent strings hash alike, so equal ones do
        case .bytes(let x): hasher.combine(5); hasher.combine(x)
        }
    }

    public var description: String {
        switch self {
        case .null: "null"
        case .bool(let x): "\(x)"
        case .int(let x): "\(x)"
        case .double(let x): "\(x)"
        case .string(let x): "\"\(x)\""
        case .bytes(let x): "<\(x.count) bytes>"
        }
    }
}

/// What a map register or a list element holds: a scalar, or a nested
/// object created by the operation that wrote it.
public enum Value: Hashable, Sendable, CustomStringConvertible {
    case scalar(ScalarValue)
    case object(ObjectKind, ObjectID)

    public var description: String {
        switch self {
        case .scalar(let scalar): scalar.description
        case let .object(kind, id): "\(kind)(\(id))"
        }
    }
}

extension Value {
    /// What a list element or register holds once written by operation
    /// `id`: the scalar, or the object `id` creates (see `ObjectTable.materialize`).
    init(_ value: NewValue, writtenBy id: OpID) {
        switch value {
        case .scalar(let scalar): self = .scalar(scalar)
        case .object(let kind): self = .object(kind, ObjectID(id))
        }
    }
}

extension Value: SequenceElement {
    public var utf16Width: Int { 1 }
    public var utf8Width: Int { 1 }
}
