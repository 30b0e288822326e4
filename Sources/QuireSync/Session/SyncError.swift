import QuireStore

/// Why a sync did not complete, and which side it was about: the message
/// an app shows (`localizedDescription`) names the server or the peer as
/// the transport the sync went through is one.
public struct SyncError: Error, Hashable, Sendable, DescribedError {
    /// What failed, with the other side's reason or the local one.
    public enum Kind: Hashable, Sendable {
        /// The other side refused for good (400, 401, 403, 409, 410, 413):
        /// retrying the same request cannot help.
        case refused(SyncFailure)
        /// No usable answer, after retries: the other side is down,
        /// unreachable, overloaded (5xx, 429) or too slow. Everything
        /// local stays pending. Also a sync whose task was cancelled
        /// (`SyncError.isCancelled`), so that a switch over the kinds
        /// covers it as it always did.
        case unreachable(String)
        /// The other side broke the protocol (an answer that does not
        /// decode, or a sync that stopped making progress).
        case protocolViolation(String)
        /// The local store failed.
        case store(String)
    }

    /// What failed.
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

    /// The sync's task was cancelled: what it applied before is kept, and
    /// the next sync goes on from there. Its kind is `unreachable` with the
    /// reason "cancelled", as a transport that an app wrote may throw it.
    public static func cancelled(otherSide: SyncOtherSide = .server) -> SyncError { .unreachable(cancelledReason, otherSide: otherSide) }

    /// The reason of an `unreachable` error that is a cancellation.
    private static let cancelledReason = "cancelled"

    /// Whether the sync ended because its task was cancelled
    /// (`cancelled(otherSide:)`), not for want of an answer: the other side
    /// may well be reachable. An app that cancelled it on purpose (its view
    /// went away) has nothing to show.
    ///
    ///     do { try await client.sync() } catch let error where error.isCancelled {} catch { show(error) }
    public var isCancelled: Bool { kind == .unreachable(Self.cancelledReason) }

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
        case .unreachable where isCancelled:
            "the sync with \(otherSide) was cancelled; what it applied is kept, and the next sync goes on from there"
        case .unreachable(let reason): "could not reach \(otherSide): \(reason)"
        case .protocolViolation(let reason): "\(otherSide) broke the sync protocol: \(reason)"
        case .store(let reason): "the local store failed: \(reason)"
        }
    }
}
