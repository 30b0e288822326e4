import Foundation

/// What `DocumentStore.documents()` tells about each document.
public struct DocumentInfo: Hashable, Sendable {
    public let id: DocumentID
    public let createdAt: Date
    /// When it was removed, or `nil`. A removed document keeps its history
    /// and can be restored.
    public let removedAt: Date?

    public var isRemoved: Bool { removedAt != nil }
}
