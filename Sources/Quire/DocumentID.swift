import Foundation
import QuireStore

/// The id of a document: a string the client makes, unique across every
/// replica, such as a UUIDv7 from `generate()`.
///
///     let id = DocumentID.generate()        // "0190f1c2-7a3b-7c4d-8e5f-0123456789ab"
///     let named: DocumentID = "groceries"   // any non-empty string up to 256 UTF-8 bytes
///
/// Two ids are the same only when their UTF-8 bytes are. Codable as its
/// string, so that an app's own models can hold one (a folder's notes, a
/// link); one that is no valid id fails to decode. Through the Codable
/// bridge it is a string scalar, as a `UUID` is.
public struct DocumentID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral, Codable {
    public let rawValue: String

    /// The longest id accepted, in UTF-8 bytes.
    public static let maxLength = 256

    /// `nil` for an empty string or one longer than `maxLength` bytes.
    public init?(rawValue: String) {
        guard !rawValue.isEmpty, rawValue.utf8.count <= Self.maxLength else { return nil }
        self.rawValue = rawValue
    }

    /// An id written in the code, such as `"groceries"`. An empty literal,
    /// or one longer than `maxLength` bytes, is a programming error that
    /// stops the program; an id from elsewhere (a file, a URL) goes
    /// through `init?(rawValue:)`.
    public init(stringLiteral value: String) {
        guard let id = DocumentID(rawValue: value) else { preconditionFailure("invalid document id literal \"\(value)\"") }
        self = id
    }

    /// A new UUIDv7 (RFC 9562): 48 bits of Unix time in milliseconds, then
    /// random bits. Ids made later sort later, which keeps listings in
    /// creation order and lets the CLI abbreviate them by prefix. A time
    /// outside what 48 bits hold is taken as the nearest one inside.
    public static func generate(now: Date = Date()) -> DocumentID {
        // Clamped before converting, which would trap past UInt64.max.
        let milliseconds = UInt64(min(max(0, now.timeIntervalSince1970 * 1000), Double(1 << 48 - 1)))
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255) }
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - index))) }
        bytes[6] = 0x70 | (bytes[6] & 0x0F)  // version 7
        bytes[8] = 0x80 | (bytes[8] & 0x3F)  // RFC variant
        let hex = bytes.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        let groups = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
            hex.dropFirst(range.lowerBound).prefix(range.count)
        }
        return DocumentID(rawValue: groups.joined(separator: "-"))!
    }

    /// An id read from a store file, which may be damaged: an invalid one
    /// is an error, not a trap.
    init(stored rawValue: String) throws {
        guard let id = DocumentID(rawValue: rawValue) else {
            throw StoreError.unrecoverableDocument(rawValue, reason: "the store holds an invalid document id")
        }
        self = id
    }

    // Ids compare as their UTF-8 bytes, as the store's SQLite file does, not
    // as Swift strings, which equate canonically equivalent ones ("é" as one
    // scalar or as "e" and a combining accent): those are two documents in
    // the file, and must be two here too.
    public static func == (a: DocumentID, b: DocumentID) -> Bool { a.rawValue.hasSameBytes(as: b.rawValue) }

    public func hash(into hasher: inout Hasher) {
        var contiguous = rawValue
        contiguous.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    public static func < (a: DocumentID, b: DocumentID) -> Bool { a.rawValue.utf8.lexicographicallyPrecedes(b.rawValue.utf8) }

    public var description: String { rawValue }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
