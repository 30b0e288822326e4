import Foundation
import Quire

/// What one bearer token may do.
public struct Access: Hashable, Sendable {
    /// The token itself: who "wrote with a replica id" is recorded by it.
    public var token: String
    public var canWrite: Bool
    /// The documents it may read (and write, if `canWrite`); nil for all.
    public var documents: Set<DocumentID>?
    /// The replica id the client writes with, as its request says
    /// (`HTTPSyncTransport.replica`, the `Quire-Replica` header): a push
    /// binds that one alone to the token, and relays the changes of other
    /// replicas the server has not bound without binding them, so that a
    /// note relayed before its writer synced does not lock the writer out.
    /// nil (a client that does not say): every replica a push brings first.
    public var replica: ReplicaID?

    public init(token: String, canWrite: Bool, documents: Set<DocumentID>? = nil, replica: ReplicaID? = nil) {
        self.token = token
        self.canWrite = canWrite
        self.documents = documents
        self.replica = replica
    }

    /// Everything: what a server without a tokens file, or a peer over
    /// stdio, grants.
    public static let unrestricted = Access(token: "", canWrite: true)

    public func mayRead(_ id: DocumentID) -> Bool { documents?.contains(id) ?? true }
    public func mayWrite(_ id: DocumentID) -> Bool { canWrite && mayRead(id) }
}

/// The tokens file of `quire serve --tokens FILE`: one token a line,
/// `TOKEN rw` or `TOKEN ro`, optionally followed by the document ids it is
/// limited to; `#` starts a comment; blank lines are ignored.
///
///     # the laptop may write everything, the phone only read the groceries
///     3f9a...c1 rw
///     77b0...e4 ro groceries
///
///     let tokens = try AccessTokens(parsing: String(contentsOfFile: path, encoding: .utf8))
///     tokens.access(forAuthorization: "Bearer 3f9a...c1")?.canWrite  // true
public struct AccessTokens: Sendable {
    public private(set) var byToken: [String: Access] = [:]

    /// A line of the file that does not parse; `line` counts from 1.
    public struct ParseError: Error, Hashable, Sendable, DescribedError {
        public var line: Int
        public var reason: String
        public var description: String { "tokens file, line \(line): \(reason)" }
    }

    public init(parsing text: String) throws(ParseError) {
        // Split at any line end: a "\r\n" is one Character in Swift, so
        // splitting at "\n" alone would read a file saved with CRLF line ends
        // as one line, the next lines' tokens and modes as document ids.
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.prefix { $0 != "#" }
            let words = line.split(whereSeparator: \.isWhitespace).map(String.init)
            guard let token = words.first else { continue }
            func fail(_ reason: String) -> ParseError { ParseError(line: index + 1, reason: reason) }
            guard words.count >= 2 else { throw fail("the token needs a mode after it, rw or ro") }
            guard byToken[token] == nil else { throw fail("this token was already given on an earlier line") }
            let canWrite: Bool
            switch words[1] {
            case "rw": canWrite = true
            case "ro": canWrite = false
            default: throw fail("the mode must be rw or ro, not \"\(words[1])\"")
            }
            var documents: Set<DocumentID>?
            if words.count > 2 {
                documents = []
                for word in words.dropFirst(2) {
                    guard let id = DocumentID(rawValue: word) else { throw fail("\"\(word)\" is not a document id") }
                    documents?.insert(id)
                }
            }
            byToken[token] = Access(token: token, canWrite: canWrite, documents: documents)
        }
    }

    /// The access of the token in an `Authorization: Bearer TOKEN` header,
    /// or nil for a missing header, another scheme or an unknown token.
    public func access(forAuthorization header: String?) -> Access? {
        header.flatMap(Self.bearerToken).flatMap { byToken[$0] }
    }

    /// The token of an `Authorization: Bearer TOKEN` header, or nil for
    /// another scheme. The scheme's name is case-insensitive (RFC 9110).
    public static func bearerToken(_ header: String) -> String? {
        let scheme = "bearer "
        guard header.prefix(scheme.count).lowercased() == scheme else { return nil }
        return header.dropFirst(scheme.count).trimmingCharacters(in: .whitespaces)
    }
}
