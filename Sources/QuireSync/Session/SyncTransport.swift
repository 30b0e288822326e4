import Foundation
import QuireStore
import QuireCore

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
    /// after the transport's retries. `longPollSeconds` is how long the
    /// request asks the server to wait for news: the time allowed for the
    /// answer grows by that much.
    func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8]

    /// `exchange`, with what the other side says besides its answer: how
    /// many of the pushed changes were new to it. `SyncClient` calls this
    /// one; the default says nothing besides (`exchange`'s answer alone).
    func exchangeCountingNew(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> SyncAnswer

    /// What the other side is, for messages: a server (the default) or a
    /// peer (a store run by a command).
    var otherSide: SyncOtherSide { get }
}

extension SyncTransport {
    public var otherSide: SyncOtherSide { .server }

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

/// Why a sync did not complete, and which side it was about: the message
/// an app shows (`localizedDescription`) names the server or the peer as
/// the transport the sync went through is one.
public struct SyncError: Error, Hashable, Sendable, DescribedError {
    public enum Kind: Hashable, Sendable {
        /// The other side refused for good (400, 401, 403, 409, 410, 413):
        /// retrying the same request cannot help.
        case refused(SyncFailure)
        /// No usable answer, after retries: the other side is down,
        /// unreachable, overloaded (5xx, 429) or too slow. Everything
        /// local stays pending.
        case unreachable(String)
        /// The other side broke the protocol (an answer that does not
        /// decode, or a sync that stopped making progress).
        case protocolViolation(String)
        /// The local store failed.
        case store(String)
    }

    public let kind: Kind
    /// The side the messages name. `SyncClient` sets its transport's on
    /// every error a sync throws, whoever made the error.
    public let otherSide: SyncOtherSide

    public init(_ kind: Kind, otherSide: SyncOtherSide = .server) {
        self.kind = kind
        self.otherSide = otherSide
    }

    public static func refused(_ failure: SyncFailure, otherSide: SyncOtherSide = .server) -> SyncError { SyncError(.refused(failure), otherSide: otherSide) }
    public static func unreachable(_ reason: String, otherSide: SyncOtherSide = .server) -> SyncError { SyncError(.unreachable(reason), otherSide: otherSide) }
    public static func protocolViolation(_ reason: String, otherSide: SyncOtherSide = .server) -> SyncError { SyncError(.protocolViolation(reason), otherSide: otherSide) }
    public static func store(_ reason: String) -> SyncError { SyncError(.store(reason)) }

    /// Whether the other side refused for want of changes it no longer
    /// holds (`SyncFailure.isHistoryCompacted`): syncing with it again
    /// cannot help.
    public var isHistoryCompacted: Bool {
        if case .refused(let failure) = kind { failure.isHistoryCompacted } else { false }
    }

    /// The same failure, about `otherSide`.
    public func about(_ otherSide: SyncOtherSide) -> SyncError { SyncError(kind, otherSide: otherSide) }

    public var description: String { description(otherSide: otherSide) }

    /// The description naming `otherSide` whatever the error's own: a
    /// peer run by a command is no server, and its statuses are the
    /// protocol's, not HTTP's.
    public func description(otherSide: SyncOtherSide) -> String {
        switch kind {
        case .refused(let failure) where failure.isHistoryCompacted:
            "\(otherSide) no longer holds changes this store lacks (\(otherSide == .server ? "HTTP" : "status") \(failure.status): \(failure.message)): "
                + "no sync with it can bring them, now or later"
        case .refused(let failure) where otherSide == .server: "the server refused: HTTP \(failure.status): \(failure.message)"
        case .refused(let failure): "\(otherSide) refused (status \(failure.status)): \(failure.message)"
        case .unreachable(let reason): "could not reach \(otherSide): \(reason)"
        case .protocolViolation(let reason): "\(otherSide) broke the sync protocol: \(reason)"
        case .store(let reason): "the local store failed: \(reason)"
        }
    }
}

/// Sync over HTTP: `POST URL/v1/sync` through `HTTPClient`, which puts a
/// timeout on every request and retries transient failures with backoff.
///
///     let transport = HTTPSyncTransport(server: URL(string: "http://127.0.0.1:8080")!, token: "secret")
public struct HTTPSyncTransport: SyncTransport {
    public let endpoint: URL
    public let client: HTTPClient
    /// Seconds each request may take beyond a long-poll wait.
    public let timeout: TimeInterval
    /// The replica id of the store syncing, sent as the `Quire-Replica`
    /// header: the server binds it alone to the token, not the replicas
    /// whose changes this store relays (`Access.replica`). Without it, a
    /// store relaying another's notes first takes that replica for its
    /// token, and the other store's own pushes are refused with 403.
    public let replica: ReplicaID?
    /// The response header in which a server states how many of the pushed
    /// changes were new to it (`SyncAnswer.newChanges`), a decimal count.
    public static let newChangesHeader = "Quire-New-Changes"

    public init(server: URL, token: String?, replica: ReplicaID? = nil, timeout: TimeInterval = 30,
                retryPolicy: RetryPolicy = RetryPolicy(), onRetry: HTTPClient.RetryObserver? = nil) {
        endpoint = server.appendingPathComponent("v1/sync")
        client = HTTPClient(bearerToken: token, defaultTimeout: timeout, retryPolicy: retryPolicy, onRetry: onRetry)
        self.replica = replica
        self.timeout = timeout
    }

    public func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
        try await exchangeCountingNew(request, longPollSeconds: longPollSeconds).bytes
    }

    public func exchangeCountingNew(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> SyncAnswer {
        let response: HTTPClient.Response
        do {
            let headers = HTTPHeaders(replica.map { [("Quire-Replica", $0.description)] } ?? [])
            response = try await client.send(.init(method: "POST", url: endpoint, headers: headers, body: request,
                                                   timeout: timeout + longPollSeconds))
        } catch {
            switch error {
            case .permanent(let status, let message): throw .refused(SyncFailure(status: status, message))
            case .transient, .unreachable: throw .unreachable(error.description)
            case .answerRefused(let reason): throw .protocolViolation(reason)
            case .cancelled: throw .unreachable("cancelled")
            }
        }
        // A server before it sends none.
        guard let stated = response.headers[Self.newChangesHeader] else { return SyncAnswer(bytes: response.body, newChanges: nil) }
        guard let newChanges = Int(stated), newChanges >= 0 else {
            throw .protocolViolation("its \(Self.newChangesHeader) header is \"\(stated.prefix(100))\", not a count of changes")
        }
        return SyncAnswer(bytes: response.body, newChanges: newChanges)
    }
}
