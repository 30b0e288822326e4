import Foundation

/// A value as the Codable bridge stores it in a document: the shape both
/// directions work with. `Specs/storage.md`, "Codable bridge", gives the
/// mapping from Swift types.
indirect enum DocumentNode: Hashable {
    case scalar(ScalarValue)
    case text(String)
    case map([String: DocumentNode])
    /// A map that is one value or another, such as an enum case with
    /// associated values (`{"circle": {"radius": 1}}`) or a `URL`, to be
    /// replaced whole when it changes (`Transaction.updateInPlace`). Only
    /// written: a map reads as `map`.
    case atomic([String: DocumentNode])
    /// A struct of an `Identifiable` type: a map whose `id`, as its
    /// `ItemIdentity` reads it, says which element of a list it is
    /// (`Transaction.pairing`). Only written: a map reads as `map`.
    case identified([String: DocumentNode], ItemIdentity)
    case list([DocumentNode])
    /// A set's elements, to be stored as a list whose order means nothing
    /// (`Transaction.updateList`). Only written: a list reads as `list`.
    case set([DocumentNode])

    /// The kind of object the node is stored as; `nil` for a scalar.
    var kind: ObjectKind? {
        switch self {
        case .scalar: nil
        case .text: .text
        case .map, .atomic, .identified: .map
        case .list, .set: .list
        }
    }

    /// The fields of a map, however it is to be written; `nil` for any other node.
    var fields: [String: DocumentNode]? {
        switch self {
        case .map(let fields), .atomic(let fields), .identified(let fields, _): fields
        default: nil
        }
    }

    /// `atomic`, `identified` and `set` say how to write a map or a list,
    /// not what it holds: a written node equals the one reading it back
    /// gives. Texts compare by their scalars, as `ScalarValue` strings do.
    static func == (a: DocumentNode, b: DocumentNode) -> Bool {
        switch (a, b) {
        case let (.scalar(x), .scalar(y)): x == y
        case let (.text(x), .text(y)): x.hasSameBytes(as: y)
        case let (.list(x), .list(y)), let (.list(x), .set(y)), let (.set(x), .list(y)), let (.set(x), .set(y)): x == y
        default: a.fields != nil && a.fields == b.fields
        }
    }

    func hash(into hasher: inout Hasher) {
        switch self {
        case .scalar(let scalar): hasher.combine(scalar)
        case .text(let string): hasher.combine(string)
        case .map(let fields), .atomic(let fields), .identified(let fields, _): hasher.combine(fields)
        case .list(let items), .set(let items): hasher.combine(items)
        }
    }

    /// Whether this node, read from a document, holds what the written node
    /// `written` does: as `==`, but a set matches a list of its elements in
    /// any order. (A set keeps the order its list has; a set read back
    /// lists its elements in an order of its own.)
    func holds(_ written: DocumentNode) -> Bool {
        switch (self, written) {
        case let (.list(items), .set(elements)):
            return items.count == elements.count
                && Dictionary(items.map { ($0, 1) }, uniquingKeysWith: +) == Dictionary(elements.map { ($0, 1) }, uniquingKeysWith: +)
        case let (.list(items), .list(writtenItems)):
            return items.count == writtenItems.count && zip(items, writtenItems).allSatisfy { $0.holds($1) }
        case let (.map(fields), .map(writtenFields)), let (.map(fields), .atomic(writtenFields)),
             let (.map(fields), .identified(writtenFields, _)):
            return fields.count == writtenFields.count && writtenFields.allSatisfy { key, node in fields[key]?.holds(node) ?? false }
        default:
            return self == written
        }
    }

    /// How much of the written node `written` this node, read from a
    /// document, holds: for maps, the fields it holds, each weighed by its
    /// `size`; for texts, the scalars both begin and end with; otherwise
    /// nothing. It tells which element of a list a written one is an edit
    /// of. Fields weigh what they hold, not one each, so that a checklist
    /// item's title identifies it over a `done` flag that many items share.
    /// (A field held only in part counts nothing: titles alike, "item 10"
    /// and "item 11", would otherwise outweigh the one equal.)
    func resemblance(to written: DocumentNode) -> Int {
        switch (self, written) {
        case let (.map(fields), .map(writtenFields)), let (.map(fields), .identified(writtenFields, _)):
            return writtenFields.reduce(0) { sum, field in
                sum + (fields[field.key]?.holds(field.value) == true ? field.value.size : 0)
            }
        case let (.text(text), .text(writtenText)):
            let (a, b) = (text.unicodeScalars, writtenText.unicodeScalars)
            let prefix = zip(a, b).prefix { $0 == $1 }.count
            return prefix + zip(a.dropFirst(prefix).reversed(), b.dropFirst(prefix).reversed()).prefix { $0 == $1 }.count
        default:
            return 0
        }
    }

    /// How much the node holds, as `resemblance` weighs it: one for the
    /// node, plus a text's scalars, plus the sizes of what a map or list holds.
    var size: Int {
        switch self {
        case .scalar: 1
        case .text(let string): 1 + string.unicodeScalars.count
        case .map(let fields), .atomic(let fields), .identified(let fields, _): fields.values.reduce(1) { $0 + $1.size }
        case .list(let items), .set(let items): items.reduce(1) { $0 + $1.size }
        }
    }

    /// A map object of `document` with everything inside it.
    ///
    /// Keys spelled apart but canonically equivalent ("é" precomposed on one
    /// machine, decomposed on another) are two keys of the document but one
    /// `String` key here: the one whose value was written last (the greater
    /// stamp, as between two writes of one key) is read, spelled as written,
    /// so that every replica reads the same value, the newest.
    init(readingMap map: ObjectID, in document: Document) throws {
        var fields: [String: DocumentNode] = [:]
        for key in try document.keys(map) {
            if let kept = fields.index(forKey: key) {
                let stamp = { (key: String) in try document.entries(map, key: key).first?.stamp }
                guard try stamp(key)! > stamp(fields[kept].key)! else { continue }
                fields.remove(at: kept)
            }
            fields[key] = try document.get(map, key: key).map { try DocumentNode(reading: $0, in: document) }
        }
        self = .map(fields)
    }

    /// A register's or list element's value with everything inside it. A
    /// counter reads as its total.
    init(reading value: Value, in document: Document) throws {
        switch value {
        case .scalar(let scalar): self = .scalar(scalar)
        case .object(.text, let text): self = .text(try document.text(text))
        case .object(.map, let map): self = try DocumentNode(readingMap: map, in: document)
        case .object(.list, let list): self = .list(try document.list(list).map { try DocumentNode(reading: $0, in: document) })
        case .object(.counter, let counter): self = .scalar(.int(try document.counter(counter)))
        }
    }

    /// How the node is named in a decoding error.
    var summary: String {
        switch self {
        case .scalar(let scalar): "the value \(scalar)"
        case .text: "a text"
        case .map, .atomic, .identified: "a map"
        case .list, .set: "a list"
        }
    }
}

/// How the items of an `Identifiable` type are told apart in a list: by
/// the `id` of the value each node reads back as, the type's own
/// `Identifiable.id` (a stored property under whatever coding key, or one
/// computed from others), so that nothing is stored for it. An item and an
/// element are read alike, decoded as the item's type, so that an `id`
/// that does not read back exactly as written (a `Date`'s) still compares.
struct ItemIdentity {
    /// The item's type: an element's `id` is read as that type reads it.
    let type: ObjectIdentifier
    /// The `id` of the value `node` reads back as; nil if it reads as none
    /// (it does not decode as the type: written before the type had its
    /// `id`, say).
    let id: (DocumentNode) -> AnyHashable?

    /// The identity of the items of `value`'s type, if it is `Identifiable`
    /// and encodes as `fields`: read by decoding, or, for a type that
    /// cannot be decoded, from its field `id`, as the synthesized
    /// `Encodable` writes a stored `id`.
    init?(of value: some Encodable, encodedAs fields: [String: EncodedValue]) {
        if let decodable = value as? any Identifiable & Decodable {
            self = Self.decoding(decodable)
        } else if value is any Identifiable, fields["id"] != nil {
            self = ItemIdentity(type: ObjectIdentifier(Swift.type(of: value))) { node in node.fields?["id"].map { AnyHashable($0) } }
        } else {
            return nil
        }
    }

    private init(type: ObjectIdentifier, id: @escaping (DocumentNode) -> AnyHashable?) {
        self.type = type
        self.id = id
    }

    private static func decoding<T: Identifiable & Decodable>(_: T) -> ItemIdentity {
        ItemIdentity(type: ObjectIdentifier(T.self)) { node in
            (try? NodeDecoder.decode(T.self, from: node, codingPath: [])).map { AnyHashable($0.id) }
        }
    }
}

/// The coding keys the bridge makes itself: list indexes and `super`.
struct BridgeKey: CodingKey {
    var stringValue: String
    var intValue: Int?

    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        stringValue = "\(intValue)"
        self.intValue = intValue
    }

    static let `super` = BridgeKey(stringValue: "super")
}
