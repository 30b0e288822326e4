import Foundation

/// When and how long `HTTPClient` waits before trying a request again:
/// exponential backoff with full jitter.
///
/// Before retry number `n` (0 for the first retry) it sleeps a random time in
/// `0 ... min(maxDelay, baseDelay * 2^n)`. The randomness spreads clients that
/// failed together (say, after a server restart) so they do not come back
/// together. When a 429 or 503 carries `Retry-After: <seconds>`, that wait is
/// used instead, cut to `maxDelay` so that a server cannot park a client.
///
/// ```swift
/// let policy = RetryPolicy(maxAttempts: 4, baseDelay: 0.2, maxDelay: 5)
/// // Tests make it deterministic and instant:
/// let recorded = RetryPolicy(random: { range in range.upperBound }, sleep: { _ in })
/// ```
public struct RetryPolicy: Sendable {
    /// Tries in all, the first one included; 1 means never retry.
    public var maxAttempts: Int
    /// Seconds; the upper bound of the first retry's wait.
    public var baseDelay: TimeInterval
    /// Seconds; no single wait is longer.
    public var maxDelay: TimeInterval
    /// Picks a wait in the given range (seconds). Injectable for tests.
    public var random: @Sendable (ClosedRange<TimeInterval>) -> TimeInterval
    /// Waits that many seconds; throws when the task is cancelled. Injectable for tests.
    public var sleep: @Sendable (TimeInterval) async throws -> Void

    public init(
        maxAttempts: Int = 5,
        baseDelay: TimeInterval = 0.5,
        maxDelay: TimeInterval = 30,
        random: @escaping @Sendable (ClosedRange<TimeInterval>) -> TimeInterval = { .random(in: $0) },
        sleep: @escaping @Sendable (TimeInterval) async throws -> Void = { try await Task.sleep(for: .seconds($0)) }
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.random = random
        self.sleep = sleep
    }

    /// A policy that tries once.
    public static let never = RetryPolicy(maxAttempts: 1)

    /// The wait before retry number `retry` (0-based). `retryAfter` is the
    /// server's `Retry-After` in seconds, when it sent one.
    public func delay(beforeRetry retry: Int, retryAfter: TimeInterval? = nil) -> TimeInterval {
        if let retryAfter { return min(max(0, retryAfter), maxDelay) }
        // In Double, 2^retry only grows to infinity, which `min` then caps.
        let ceiling = min(maxDelay, baseDelay * pow(2, Double(retry)))
        return random(0...ceiling)
    }
}
