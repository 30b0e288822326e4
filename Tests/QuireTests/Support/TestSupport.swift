import Foundation
import QuireTestSupport
@testable import Quire

/// Collects the warnings a store reports, for tests that expect some.
final class WarningLog: @unchecked Sendable {
    private let lock = NSLock()
    private var messages: [String] = []

    var all: [String] { lock.withLock { messages } }

    var handler: @Sendable (String) -> Void {
        { [self] message in lock.withLock { messages.append(message) } }
    }
}


/// Random edits of every kind on a document with a text, a list, a counter
/// and a few map keys at the root.
enum RandomEdits {
    static let text = "text", list = "list", counter = "counter"

    /// Makes the objects the edits work on; run once per document.
    static func setUp(_ tx: inout Transaction) throws {
        _ = try tx.putObject(.root, key: text, kind: .text)
        _ = try tx.putObject(.root, key: list, kind: .list)
        _ = try tx.putObject(.root, key: counter, kind: .counter)
    }

    /// One to three random edits.
    static func edit(_ tx: inout Transaction, using rng: inout SeededGenerator) throws {
        let document = tx.document
        guard case .object(_, let textID)? = try document.get(.root, key: text),
              case .object(_, let listID)? = try document.get(.root, key: list),
              case .object(_, let counterID)? = try document.get(.root, key: counter) else { return }
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            switch Int.random(in: 0..<6, using: &rng) {
            case 0:
                let count = try tx.document.textCount(textID)
                try tx.insertText(textID, at: Int.random(in: 0...count, using: &rng), ["a", "é", "😀", "xy"].randomElement(using: &rng)!)
            case 1:
                let count = try tx.document.textCount(textID)
                if count > 0 { try tx.deleteText(textID, at: Int.random(in: 0..<count, using: &rng), count: 1) }
            case 2:
                let count = try tx.document.list(listID).count
                try tx.insert(listID, at: Int.random(in: 0...count, using: &rng), .int(Int64.random(in: -99...99, using: &rng)))
            case 3:
                let count = try tx.document.list(listID).count
                if count > 0 { try tx.delete(listID, at: Int.random(in: 0..<count, using: &rng)) }
            case 4:
                try tx.increment(counterID, by: Int64.random(in: -5...5, using: &rng))
            default:
                let key = "k\(Int.random(in: 0..<4, using: &rng))"
                if Bool.random(using: &rng) { try tx.put(.root, key: key, .string("v\(rng.next() % 100)")) }
                else { try tx.remove(.root, key: key) }
            }
        }
    }
}

extension DocumentStore {
    /// The document's full state encoding, to compare documents byte for byte.
    func state(_ id: DocumentID) throws -> [UInt8] {
        try read(id) { $0.encodeSnapshot(includeHistory: false) }
    }
}
