import Foundation

// Swift's Codable writes a dictionary whose keys are neither `String` nor
// `Int` (nor `CodingKeyRepresentable`) as a list of alternating keys and
// values. Stored as that list, entries do not merge: a removal and a
// concurrent edit of one entry leave a key without its value, and the list
// no longer decodes. The bridge stores such a dictionary as a map from each
// key's JSON text to its value instead, so entries merge as a map's keys do.

extension Dictionary {
    /// Whether Swift's Codable lists the keys among the values rather than
    /// keying a container by them.
    static var listsKeys: Bool {
        !(Key.self == String.self || Key.self == Int.self || Key.self is any CodingKeyRepresentable.Type)
    }
}

protocol EncodableByKeyTexts {
    static var listsKeys: Bool { get }
    /// The values by their keys' JSON texts.
    func valuesByKeyText(codingPath: [any CodingKey]) throws -> [String: EncodedValue]
}

protocol DecodableByKeyTexts {
    static var listsKeys: Bool { get }
    init(valuesByKeyText fields: [String: DocumentNode], codingPath: [any CodingKey]) throws
}

extension Dictionary: EncodableByKeyTexts where Key: Encodable, Value: Encodable {
    func valuesByKeyText(codingPath: [any CodingKey]) throws -> [String: EncodedValue] {
        let encoder = JSONEncoder()
        // Sorted, so that equal keys have one text on every replica.
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let values = try map { key, value in
            let text = String(decoding: try encoder.encode(key), as: UTF8.self)
            return (text, try NodeEncoder.encoded(value, codingPath: codingPath + [BridgeKey(stringValue: text)]))
        }
        return try [String: EncodedValue](values) { _, _ in
            throw EncodingError.invalidValue(self, .init(codingPath: codingPath, debugDescription: "two keys have the same JSON text"))
        }
    }
}

extension Dictionary: DecodableByKeyTexts where Key: Decodable, Value: Decodable {
    init(valuesByKeyText fields: [String: DocumentNode], codingPath: [any CodingKey]) throws {
        self.init(minimumCapacity: fields.count)
        let decoder = JSONDecoder()
        // In text order, so that two texts of one key (from another JSON
        // writer) leave the same value on every replica.
        for (text, node) in fields.sorted(by: { $0.key < $1.key }) {
            let path = codingPath + [BridgeKey(stringValue: text)]
            let key: Key
            do { key = try decoder.decode(Key.self, from: Data(text.utf8)) } catch {
                throw Swift.DecodingError.dataCorrupted(.init(
                    codingPath: path, debugDescription: "the key \(text) is not the JSON text of a \(Key.self)", underlyingError: error))
            }
            self[key] = try NodeDecoder.decode(Value.self, from: node, codingPath: path)
        }
    }
}
