import Foundation

/// What `DocumentStore.documents()` tells about each document.
public struct DocumentInfo: Hashable, Sendable {
    public let id: DocumentID
    /// When this store first listed it: made here, or first received from
    /// a peer (`create(id:)`, or a sync that brought it). Another store lists
    /// the same document with its own time.
    public let createdAt: Date
    /// When it was removed, or `nil`. A removed document keeps its history
    /// and can be restored.
    public let removedAt: Date?

    /// Whether it is removed: `documents()` leaves it out unless asked.
    public var isRemoved: Bool { removedAt != nil }
}
