/// Why `DocumentStore.apply(bundles:)` applied nothing: the bundles given
/// for one of its documents do not decode, or their changes do not apply.
/// It names that document, as the error alone does not; `reason` keeps the
/// error as it came, to switch on:
///
///     do { try store.apply(bundles: received) } catch let refused as RefusedChanges {
///         switch refused.reason {
///         case .undecodable(.badMagic): print("\(refused.document) was sent something other than a bundle")
///         case .undecodable, .inapplicable: print(refused)  // "the changes given for document … were refused: …"
///         }
///     }
public struct RefusedChanges: Error, Hashable, Sendable, DescribedError {
    /// What is wrong with the document's bundles.
    public enum Reason: Hashable, Sendable, CustomStringConvertible {
        /// A bundle does not decode (damaged, cut short, or not a bundle).
        case undecodable(QuireCore.DecodingError)
        /// A change decodes but does not apply to the document (invalid, or
        /// clashing with one the store holds).
        case inapplicable(DocumentError)

        /// The error as the decoder or the document threw it.
        public var error: any Error {
            switch self {
            case .undecodable(let error): error
            case .inapplicable(let error): error
            }
        }

        public var description: String { "\(error)" }
    }

    /// The document whose bundles were refused.
    public let document: DocumentID
    /// What is wrong with them: the error as it came, to switch on.
    public let reason: Reason

    public init(document: DocumentID, reason: Reason) {
        self.document = document
        self.reason = reason
    }

    /// The refusal `error` makes of a document's changes, or nil for an
    /// error that is not about them (a full disk, a damaged store).
    public init?(document: DocumentID, _ error: any Error) {
        switch error {
        case let error as QuireCore.DecodingError: self.init(document: document, reason: .undecodable(error))
        case let error as DocumentError: self.init(document: document, reason: .inapplicable(error))
        default: return nil
        }
    }

    public var description: String { "the changes given for document \(document) were refused: \(reason)" }
}
