import Foundation

/// Turns an `Encodable` value into a `DocumentNode`. Containers write into
/// `EncodedValue` boxes, which are classes so that a nested container
/// handed out earlier still fills in its parent.
struct NodeEncoder: Encoder {
    let value: EncodedValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Encodes `value` into `target`. `Data` and `Date` are scalars here
    /// rather than what their own `encode(to:)` makes (a list of bytes, a
    /// number of seconds since 2001), and a dictionary Swift would write as
    /// a list of keys and values a map (`EncodableByKeyTexts`).
    ///
    /// A `UUID`, a `DocumentID`, or an enum that encodes as a string (`enum Status: String`),
    /// is a string scalar, not a text, and a `URL`, a `Decimal` or an enum
    /// that encodes as a map (a case with associated values) an atomic map:
    /// it is one value or another, and concurrent changes must leave one of
    /// them (the last writer's), where two texts' edits would merge into no
    /// value at all ("done" and "archived" into "donrhed"), and two maps'
    /// edits into a map of two cases, a URL no one wrote, or another number.
    static func encode(_ value: some Encodable, into target: EncodedValue, codingPath: [any CodingKey]) throws {
        switch value {
        case let data as Data: target.scalar = .scalar(.bytes(Array(data)))
        case let date as Date: target.scalar = .scalar(.double(date.timeIntervalSince1970))
        case let uuid as UUID: target.scalar = .scalar(.string(uuid.uuidString))
        case let id as DocumentID: target.scalar = .scalar(.string(id.rawValue))
        case let dictionary as any EncodableByKeyTexts where type(of: dictionary).listsKeys:
            target.fields = try dictionary.valuesByKeyText(codingPath: codingPath)
        default:
            try value.encode(to: NodeEncoder(value: target, codingPath: codingPath))
            if case .text(let string)? = target.scalar, !(value is String), Mirror(reflecting: value).displayStyle == .enum {
                target.scalar = .scalar(.string(string))
            }
            if target.fields != nil, value is URL || value is Decimal || Mirror(reflecting: value).displayStyle == .enum {
                target.isAtomic = true
            } else if let fields = target.fields {
                // Its `id` says which element of a list it is, whatever else changes.
                target.identity = ItemIdentity(of: value, encodedAs: fields)
            }
            // A set lists its elements in no order of its own: an equal set may list them in another.
            if target.items != nil, value is any SetAlgebra { target.isSet = true }
        }
    }

    /// What `value` encodes to, in a box of its own.
    static func encoded(_ value: some Encodable, codingPath: [any CodingKey]) throws -> EncodedValue {
        let result = EncodedValue()
        try encode(value, into: result, codingPath: codingPath)
        return result
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if value.fields == nil { value.fields = [:] }
        return KeyedEncodingContainer(KeyedNodeEncoder(value: value, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if value.items == nil { value.items = [] }
        return UnkeyedNodeEncoder(value: value, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleNodeEncoder(value: value, codingPath: codingPath)
    }
}

/// What one value encoded to, filled in by whichever container it asked for.
final class EncodedValue {
    var scalar: DocumentNode?
    var fields: [String: EncodedValue]?
    var items: [EncodedValue]?
    /// `items` are a set's elements, whose order means nothing.
    var isSet = false
    /// `fields` are one value or another, replaced whole when they change.
    var isAtomic = false
    /// `fields` are an `Identifiable` struct's, told from others by this.
    var identity: ItemIdentity?

    /// `nil` when nothing was encoded.
    var node: DocumentNode? {
        if let fields {
            let nodes = fields.compactMapValues(\.node)
            return isAtomic ? .atomic(nodes) : identity.map { DocumentNode.identified(nodes, $0) } ?? .map(nodes)
        }
        if let items {
            let elements = items.map { $0.node ?? .scalar(.null) }
            return isSet ? .set(elements) : .list(elements)
        }
        return scalar
    }

    static func keyed() -> EncodedValue {
        let value = EncodedValue()
        value.fields = [:]
        return value
    }

    static func unkeyed() -> EncodedValue {
        let value = EncodedValue()
        value.items = []
        return value
    }
}

struct KeyedNodeEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let value: EncodedValue
    let codingPath: [any CodingKey]

    private func set(_ child: EncodedValue, _ key: some CodingKey) -> EncodedValue {
        value.fields![key.stringValue] = child
        return child
    }

    mutating func encodeNil(forKey key: Key) throws {
        let null = EncodedValue()
        null.scalar = .scalar(.null)
        _ = set(null, key)
    }

    mutating func encode<T: Encodable>(_ element: T, forKey key: Key) throws {
        _ = set(try NodeEncoder.encoded(element, codingPath: codingPath + [key]), key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(KeyedNodeEncoder<NestedKey>(value: set(.keyed(), key), codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        UnkeyedNodeEncoder(value: set(.unkeyed(), key), codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        NodeEncoder(value: set(EncodedValue(), BridgeKey.super), codingPath: codingPath + [BridgeKey.super])
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        NodeEncoder(value: set(EncodedValue(), key), codingPath: codingPath + [key])
    }
}

struct UnkeyedNodeEncoder: UnkeyedEncodingContainer {
    let value: EncodedValue
    let codingPath: [any CodingKey]
    var count: Int { value.items!.count }

    private func append(_ child: EncodedValue) -> EncodedValue {
        value.items!.append(child)
        return child
    }

    private var nextKey: BridgeKey { BridgeKey(intValue: count) }

    mutating func encodeNil() throws {
        let null = EncodedValue()
        null.scalar = .scalar(.null)
        _ = append(null)
    }

    mutating func encode<T: Encodable>(_ element: T) throws {
        _ = append(try NodeEncoder.encoded(element, codingPath: codingPath + [nextKey]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = codingPath + [nextKey]
        return KeyedEncodingContainer(KeyedNodeEncoder<NestedKey>(value: append(.keyed()), codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = codingPath + [nextKey]
        return UnkeyedNodeEncoder(value: append(.unkeyed()), codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let path = codingPath + [nextKey]
        return NodeEncoder(value: append(EncodedValue()), codingPath: path)
    }
}

struct SingleNodeEncoder: SingleValueEncodingContainer {
    let value: EncodedValue
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { value.scalar = .scalar(.null) }
    mutating func encode(_ bool: Bool) throws { value.scalar = .scalar(.bool(bool)) }
    /// Strings are text objects, edited with minimal diffs.
    mutating func encode(_ string: String) throws { value.scalar = .text(string) }
    mutating func encode(_ double: Double) throws { value.scalar = .scalar(.double(double)) }
    mutating func encode(_ float: Float) throws { value.scalar = .scalar(.double(Double(float))) }
    mutating func encode(_ int: Int) throws { try integer(int) }
    mutating func encode(_ int: Int8) throws { try integer(int) }
    mutating func encode(_ int: Int16) throws { try integer(int) }
    mutating func encode(_ int: Int32) throws { try integer(int) }
    mutating func encode(_ int: Int64) throws { try integer(int) }
    mutating func encode(_ int: UInt) throws { try integer(int) }
    mutating func encode(_ int: UInt8) throws { try integer(int) }
    mutating func encode(_ int: UInt16) throws { try integer(int) }
    mutating func encode(_ int: UInt32) throws { try integer(int) }
    mutating func encode(_ int: UInt64) throws { try integer(int) }

    mutating func encode<T: Encodable>(_ element: T) throws {
        try NodeEncoder.encode(element, into: value, codingPath: codingPath)
    }

    /// Every integer is an `int` scalar (Int64); a larger UInt64 does not fit.
    private func integer(_ int: some FixedWidthInteger) throws {
        guard let stored = Int64(exactly: int) else {
            throw EncodingError.invalidValue(int, .init(codingPath: codingPath, debugDescription: "\(int) does not fit in a 64-bit signed integer"))
        }
        value.scalar = .scalar(.int(stored))
    }
}
