import Synchronization

/// The payload bytes of the requests being handled, held within
/// `SyncServer.Configuration.maxPayloadBytesInFlight`.
final class PayloadBudget: Sendable {
    /// Payloads this small are not counted: the connections the HTTP
    /// server takes at once bound what they hold (64 MiB with the defaults).
    static let uncountedBytes = 1 << 20

    private let limit: Int
    private let taken = Mutex(0)

    init(limit: Int) { self.limit = limit }

    /// The counted bytes taken now.
    var bytesTaken: Int { taken.withLock { $0 } }

    /// Takes `bytes` when they fit beside what is taken, or when nothing
    /// is (a payload within the message limit is always served alone).
    func take(_ bytes: Int) -> Bool {
        guard bytes > Self.uncountedBytes else { return true }
        return taken.withLock { taken in
            guard taken == 0 || bytes <= limit - taken else { return false }
            taken += bytes
            return true
        }
    }

    /// Gives back what `take(bytes)` took.
    func give(_ bytes: Int) {
        guard bytes > Self.uncountedBytes else { return }
        taken.withLock { $0 -= bytes }
    }
}
