import Synchronization

/// A token bucket per key (a token, or a client's address): `perSecond`
/// requests a second on average, `burst` at once.
final class RateLimiter: Sendable {
    private let perSecond: Double
    private let burst: Double
    private let buckets = Mutex(Buckets())

    private struct Buckets {
        var byKey: [String: (tokens: Double, at: ContinuousClock.Instant)] = [:]
        /// Past this many buckets, the full ones are dropped: a missing
        /// bucket is a full one, and client addresses are countless.
        var pruneAbove = 1024
    }

    init(perSecond: Double, burst: Double) {
        self.perSecond = perSecond
        self.burst = burst
    }

    /// How many keys have a bucket.
    var bucketCount: Int { buckets.withLock { $0.byKey.count } }

    /// Takes one request from `key`'s bucket: nil if allowed, else the
    /// whole seconds to wait.
    func take(for key: String) -> Int? {
        let now = ContinuousClock.now
        return buckets.withLock { buckets in
            if buckets.byKey.count > buckets.pruneAbove {
                buckets.byKey = buckets.byKey.filter { _, bucket in refilled(bucket, at: now) < burst }
                buckets.pruneAbove = max(1024, 2 * buckets.byKey.count)
            }
            var bucket = (tokens: refilled(buckets.byKey[key] ?? (burst, now), at: now), at: now)
            defer { buckets.byKey[key] = bucket }
            guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) / perSecond).rounded(.up))) }
            bucket.tokens -= 1
            return nil
        }
    }

    /// The requests `bucket` allows at `now`.
    private func refilled(_ bucket: (tokens: Double, at: ContinuousClock.Instant), at now: ContinuousClock.Instant) -> Double {
        let elapsed = now - bucket.at
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return min(burst, bucket.tokens + seconds * perSecond)
    }
}
