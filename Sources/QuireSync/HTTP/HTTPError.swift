import QuireStore

/// Why an `HTTPClient` request failed, sorted by what the caller should do.
///
/// ```swift
/// do {
///     let response = try await client.send(request)
/// } catch .permanent(let status, let message) {
///     // Retrying cannot help (bad input, wrong token...): park and show it.
/// } catch .transient, .unreachable {
///     // Worth trying again later, e.g. at the next sync.
/// } catch .cancelled {
/// }
/// ```
public enum HTTPError: Error, Equatable, DescribedError {
    /// The server answered with a status that retrying will not change
    /// (400, 401, 403, 404, 409, 413...). `message` holds the body text it sent.
    case permanent(status: Int, message: String)
    /// The server kept answering 5xx or 429 until the attempts ran out;
    /// `status` and `message` are from the last answer.
    case transient(status: Int, message: String)
    /// No HTTP answer at all until the attempts ran out: connection
    /// refused, timeout, connection lost, unknown host...
    case unreachable(String)
    /// The server's answer was refused unread, not retried: larger than the
    /// client's `maxAnswerBytes`, or in a `Content-Encoding` it did not ask for.
    case answerRefused(String)
    /// The calling task was cancelled.
    case cancelled

    public var description: String {
        switch self {
        case .permanent(let status, let message):
            "HTTP \(status) (not retried): \(message)"
        case .transient(let status, let message):
            "HTTP \(status) (gave up after retries): \(message)"
        case .unreachable(let message):
            // A sync puts it after "could not reach the server: ".
            "no answer (gave up after retries): \(message)"
        case .answerRefused(let reason):
            reason
        case .cancelled:
            "request cancelled"
        }
    }
}

extension HTTPError {
    /// Whether a request answered with `status` may succeed if sent again
    /// unchanged: 408, 429 and 5xx, but not 501 and 505 (the server does
    /// not do what was asked, and will not later).
    public static func isTransient(status: Int) -> Bool {
        status == 408 || status == 429 || (500...599).contains(status) && status != 501 && status != 505
    }
}
