import Foundation
import QuireCore
import Synchronization

/// Sync over HTTP: `POST URL/v1/sync` through `HTTPClient`, which puts a
/// timeout on every request and retries transient failures with backoff.
///
///     let transport = HTTPSyncTransport(server: URL(string: "http://127.0.0.1:8080")!, token: "secret")
public struct HTTPSyncTransport: SyncTransport {
    /// Where requests go: the server's URL with `v1/sync` appended.
    public let endpoint: URL
    /// Sends each request, with the token, its timeout and the retries.
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
    /// The request header in which a client states the `QCHG` versions it
    /// reads (`SyncRequest.readsBundleVersions`), as
    /// `SyncRequest.statement(ofBundleVersions:)` writes them: `1,3,5` from
    /// this build. A header, not a field of the request: a server before it
    /// refuses bytes after the message, and ignores a header it does not know.
    /// Since review214 a server states what it reads in the same header on
    /// every answer (`SyncServer.handle`), which clients before it ignore.
    public static let bundleVersionsHeader = "Quire-Bundle-Versions"
    /// The value of `bundleVersionsHeader` from this build, either way.
    static let bundleVersionsStatement = SyncRequest.statement(ofBundleVersions: ChangeEncoding.readVersions)
    /// What the server stated in its last answer through this transport (or
    /// a copy of it), for the first push of the next sync.
    private let lastStatement = StatedBundleVersions()

    /// A transport to the server at `server` (its base URL, as `quire
    /// serve` prints it), sending `token` as a bearer token (nil for a
    /// server without tokens) and `replica` (pass the store's `replicaID`).
    /// `onRetry` hears each retry of a transient failure, with why and
    /// after how long, for a progress line.
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

    /// The versions the server stated it reads in its last answer through
    /// this transport: nil before one came, and when it stated none.
    public var readsBundleVersions: Set<UInt64>? { lastStatement.versions.withLock { $0 } }

    public func exchangeCountingNew(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> SyncAnswer {
        let response: HTTPClient.Response
        do {
            let headers = HTTPHeaders([(Self.bundleVersionsHeader, Self.bundleVersionsStatement)]
                + (replica.map { [("Quire-Replica", $0.description)] } ?? []))
            response = try await client.send(.init(method: "POST", url: endpoint, headers: headers, body: request,
                                                   timeout: timeout + longPollSeconds))
        } catch {
            switch error {
            case .permanent(let status, let message): throw .refused(SyncFailure(status: status, message))
            case .transient, .unreachable: throw .unreachable(error.description)
            case .answerRefused(let reason): throw .protocolViolation(reason)
            case .cancelled: throw .cancelled()
            }
        }
        // A server before review214 states nothing. A statement that is no
        // list of versions (or over 256 bytes) is taken as none, not as a
        // violation: the header only advises, and a later build may write it
        // otherwise.
        let reads = response.headers[Self.bundleVersionsHeader].flatMap(SyncRequest.bundleVersions(stated:))
        lastStatement.versions.withLock { $0 = reads }
        // A server before it sends none.
        guard let stated = response.headers[Self.newChangesHeader] else { return SyncAnswer(bytes: response.body, newChanges: nil) }
        guard let newChanges = Int(stated), newChanges >= 0 else {
            throw .protocolViolation("its \(Self.newChangesHeader) header is \"\(stated.prefix(100))\", not a count of changes")
        }
        return SyncAnswer(bytes: response.body, newChanges: newChanges)
    }
}

/// The versions a server last stated it reads, shared by the copies of an
/// `HTTPSyncTransport` (a struct) and set from any task.
private final class StatedBundleVersions: Sendable {
    let versions = Mutex<Set<UInt64>?>(nil)
}
