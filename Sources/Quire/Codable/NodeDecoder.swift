import Foundation

/// Reads a `Decodable` value out of a `DocumentNode`, throwing a
/// `DecodingError` with the coding path for a missing key or a value of
/// the wrong shape. A node as written (an `identified` or `atomic` map, a
/// `set`) reads as the one read back from the document would:
/// `ItemIdentity` reads an item's `id` from it.
struct NodeDecoder: Decoder {
    let node: DocumentNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// `Data`, `Date` and a dictionary keyed by JSON texts are read from
    /// what `NodeEncoder` writes for them; such a dictionary stored as a
    /// list of keys and values (as before) reads as Swift's Codable does.
    static func decode<T: Decodable>(_ type: T.Type, from node: DocumentNode, codingPath: [any CodingKey]) throws -> T {
        if let dictionary = T.self as? any DecodableByKeyTexts.Type, dictionary.listsKeys, let fields = node.fields {
            return try dictionary.init(valuesByKeyText: fields, codingPath: codingPath) as! T
        }
        if T.self == Data.self {
            guard case .scalar(.bytes(let bytes)) = node else { throw mismatch(type, "bytes", node, codingPath) }
            return Data(bytes) as! T
        }
        if T.self == Date.self {
            // Seconds since 1970, read as a `Double` field is: an int too
            // (what another writer, or a person, may have stored).
            let seconds = try SingleNodeDecoder(node: node, codingPath: codingPath).decode(Double.self)
            return Date(timeIntervalSince1970: seconds) as! T
        }
        return try T(from: NodeDecoder(node: node, codingPath: codingPath))
    }

    static func mismatch(_ type: Any.Type, _ expected: String, _ node: DocumentNode, _ codingPath: [any CodingKey]) -> Swift.DecodingError {
        .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(expected), the document holds \(node.summary)"))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let fields = node.fields else { throw Self.mismatch([String: Any].self, "a map", node, codingPath) }
        return KeyedDecodingContainer(KeyedNodeDecoder(fields: fields, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        switch node {
        case .list(let items), .set(let items): return UnkeyedNodeDecoder(items: items, codingPath: codingPath)
        default: throw Self.mismatch([Any].self, "a list", node, codingPath)
        }
    }

    func singleValueContainer() -> any SingleValueDecodingContainer {
        SingleNodeDecoder(node: node, codingPath: codingPath)
    }
}

struct KeyedNodeDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let fields: [String: DocumentNode]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { fields.keys.compactMap(Key.init(stringValue:)) }

    func contains(_ key: Key) -> Bool { fields[key.stringValue] != nil }

    /// A missing key reads as nil, as a removed optional field is missing.
    func decodeNil(forKey key: Key) throws -> Bool {
        (fields[key.stringValue] ?? .scalar(.null)) == .scalar(.null)
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try NodeDecoder.decode(type, from: field(key), codingPath: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try NodeDecoder(node: field(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try NodeDecoder(node: field(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        NodeDecoder(node: fields[BridgeKey.super.stringValue] ?? .map([:]), codingPath: codingPath + [BridgeKey.super])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        NodeDecoder(node: try field(key), codingPath: codingPath + [key])
    }

    private func field(_ key: Key) throws -> DocumentNode {
        guard let node = fields[key.stringValue] else {
            throw Swift.DecodingError.keyNotFound(key, .init(
                codingPath: codingPath, debugDescription: "the document has no value at key \"\(key.stringValue)\""))
        }
        return node
    }
}

struct UnkeyedNodeDecoder: UnkeyedDecodingContainer {
    let items: [DocumentNode]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(items: [DocumentNode], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex] == .scalar(.null) else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (node, path) = try next(type)
        return try NodeDecoder.decode(type, from: node, codingPath: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (node, path) = try next([String: Any].self)
        return try NodeDecoder(node: node, codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (node, path) = try next([Any].self)
        return try NodeDecoder(node: node, codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (node, path) = try next(Any.self)
        return NodeDecoder(node: node, codingPath: path)
    }

    private mutating func next(_ type: Any.Type) throws -> (DocumentNode, [any CodingKey]) {
        let path = codingPath + [BridgeKey(intValue: currentIndex)]
        guard !isAtEnd else {
            throw Swift.DecodingError.valueNotFound(type, .init(codingPath: path, debugDescription: "the list has only \(items.count) elements"))
        }
        currentIndex += 1
        return (items[currentIndex - 1], path)
    }
}

struct SingleNodeDecoder: SingleValueDecodingContainer {
    let node: DocumentNode
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { node == .scalar(.null) }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .scalar(.bool(let bool)) = node else { throw NodeDecoder.mismatch(type, "a bool", node, codingPath) }
        return bool
    }

    /// A text object, or a string scalar (as other writers may store short strings).
    func decode(_ type: String.Type) throws -> String {
        switch node {
        case .text(let string), .scalar(.string(let string)): return string
        default: throw NodeDecoder.mismatch(type, "a text or a string", node, codingPath)
        }
    }

    /// A double, or an int (as a number a person typed may be stored).
    func decode(_ type: Double.Type) throws -> Double {
        switch node {
        case .scalar(.double(let double)): return double
        case .scalar(.int(let int)): return Double(int)
        default: throw NodeDecoder.mismatch(type, "a number", node, codingPath)
        }
    }

    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }
    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try NodeDecoder.decode(type, from: node, codingPath: codingPath)
    }

    private func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard case .scalar(.int(let int)) = node else { throw NodeDecoder.mismatch(type, "an int", node, codingPath) }
        guard let value = T(exactly: int) else {
            throw Swift.DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "\(int) does not fit in \(type)"))
        }
        return value
    }
}
