import Foundation

/// Carries one encoded sync request to a server or peer and brings back its
/// encoded answer. `SyncClient` does the rest.
///
/// Implementations: `HTTPSyncTransport` (a `quire serve` server),
/// `StdioSyncTransport` (a command speaking `quire serve --stdio`), and the
/// in-memory transports of the tests.
public protocol SyncTransport: Sendable {
    /// Sends `request` and returns the answer's bytes (a response or failure
    /// message). Throws `SyncError.refused` for a refusal the transport
    /// itself reports (an HTTP status), `.unreachable` when no answer came
    /// after the transport's retries, `.cancelled()` when the calling task
    /// was cancelled while it waited. `longPollSeconds` is how long the
    /// request asks the server to wait for news: the time allowed for the
    /// answer grows by that much.
    func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8]

    /// `exchange`, with what the other side says besides its answer: how
    /// many of the pushed changes were new to it, which change bundle
    /// versions it reads. `SyncClient` calls this one; the default says
    /// nothing besides (`exchange`'s answer alone).
    func exchangeCountingNew(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> SyncAnswer

    /// What the other side is, for messages: a server (the default) or a
    /// peer (a store run by a command).
    var otherSide: SyncOtherSide { get }

    /// The `QCHG` versions the other side stated it reads in its last
    /// answer through this transport, nil when it stated none (or none came
    /// yet; the default): `SyncClient` pushes in the newest of them it
    /// writes from a sync's first request on, before that sync's first
    /// answer (since review214), and after each answer.
    var readsBundleVersions: Set<UInt64>? { get }
}

extension SyncTransport {
    public var otherSide: SyncOtherSide { .server }

    public var readsBundleVersions: Set<UInt64>? { nil }

    public func exchangeCountingNew(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> SyncAnswer {
        SyncAnswer(bytes: try await exchange(request, longPollSeconds: longPollSeconds), newChanges: nil)
    }
}

/// An answer's bytes, and what its transport carried beside them.
public struct SyncAnswer: Sendable {
    /// The encoded response or failure message.
    public var bytes: [UInt8]
    /// How many of the request's pushed changes the other side held neither
    /// logged nor parked before it (`ServerLog.PushOutcome.newChanges`):
    /// `SyncClient` counts them in `sent`. nil when it does not say (a peer,
    /// a server before it, a transport that does not carry it): the client
    /// then counts the pushed changes its answers first show held.
    public var newChanges: Int?

    public init(bytes: [UInt8], newChanges: Int?) {
        self.bytes = bytes
        self.newChanges = newChanges
    }
}

/// The other side of a sync, as messages name it: a server answers over
/// HTTP, with HTTP's statuses; a peer run by a command answers with the
/// protocol's.
public enum SyncOtherSide: Hashable, Sendable, CustomStringConvertible {
    case server, peer

    public var description: String {
        switch self {
        case .server: "the server"
        case .peer: "the peer"
        }
    }
}
