import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends HTTP requests with a timeout on each and retries transient
/// failures by a `RetryPolicy`.
///
/// ```swift
/// let client = HTTPClient(bearerToken: "secret")
/// let url = URL(string: "http://127.0.0.1:8080/sync/pull?since=42")!
/// let response = try await client.send(.init(method: "GET", url: url))
/// print(response.status, response.body.count)
/// ```
///
/// Transient (retried): no answer at all (refused, timeout, connection
/// lost), 408, 429 and 5xx. Anything else of 400 or more is permanent and
/// thrown at once. Requests are retried whatever their method: Quire's sync
/// requests are idempotent (a change id applied twice is a no-op).
public final class HTTPClient: Sendable {
    /// One request to send.
    public struct Request: Sendable {
        public var method: String
        public var url: URL
        public var headers: HTTPHeaders
        public var body: [UInt8]
        /// Seconds this request may take; nil means the client's
        /// `defaultTimeout`. A long-poll passes more than its wait.
        public var timeout: TimeInterval?

        public init(
            method: String, url: URL, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [],
            timeout: TimeInterval? = nil
        ) {
            self.method = method
            self.url = url
            self.headers = headers
            self.body = body
            self.timeout = timeout
        }
    }

    /// A successful answer (status below 400).
    public typealias Response = (status: Int, headers: HTTPHeaders, body: [UInt8])

    /// Told of each failed try that will be tried again: why it failed
    /// ("HTTP 503: ..." or why no answer came), the number of the try to
    /// come (from 2) and the seconds slept first.
    public typealias RetryObserver = @Sendable (_ reason: String, _ nextAttempt: Int, _ delay: TimeInterval) -> Void

    public let bearerToken: String?
    public let defaultTimeout: TimeInterval
    public let retryPolicy: RetryPolicy
    /// So that a person sees what a sync waiting on a server that does not
    /// answer is doing: with the defaults that lasts minutes.
    public let onRetry: RetryObserver?
    /// The most bytes of an answer the client keeps; a larger one is
    /// refused (`HTTPError.answerRefused`).
    public var maxAnswerBytes: Int { session.maxAnswerBytes }
    private let session: BoundedURLSession

    /// A sync message at `SyncMessage.Limits.maxPayloadBytes`, with room for
    /// its envelope: no answer of the sync protocol is larger.
    public static let defaultMaxAnswerBytes = SyncMessage.Limits().maxPayloadBytes + (64 << 10)

    /// - Parameters:
    ///   - bearerToken: sent as `Authorization: Bearer <token>` on every request.
    ///   - defaultTimeout: seconds, for requests that give none.
    ///   - maxAnswerBytes: the largest answer kept.
    public init(bearerToken: String? = nil, defaultTimeout: TimeInterval = 30, retryPolicy: RetryPolicy = RetryPolicy(),
                onRetry: RetryObserver? = nil, maxAnswerBytes: Int = defaultMaxAnswerBytes) {
        self.bearerToken = bearerToken
        self.defaultTimeout = defaultTimeout
        self.retryPolicy = retryPolicy
        self.onRetry = onRetry
        // Sync answers must never come from a cache, and no cookies are used.
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpShouldSetCookies = false
        session = BoundedURLSession(configuration: configuration, maxAnswerBytes: maxAnswerBytes)
    }

    /// Sends `request`, retrying transient failures, and returns the first
    /// answer below 400.
    /// - Throws: `HTTPError`: `.permanent` and `.answerRefused` at once,
    ///   `.transient` or `.unreachable` once `retryPolicy.maxAttempts` tries failed.
    public func send(_ request: Request) async throws(HTTPError) -> Response {
        let urlRequest = makeURLRequest(request)
        var retry = 0
        while true {
            let outcome: Result<Response, any Error>
            do {
                let (data, urlResponse) = try await data(for: urlRequest)
                outcome = .success(Self.response(data, urlResponse))
            } catch {
                outcome = .failure(error)
            }

            let failure: HTTPError
            let reason: String
            var retryAfter: TimeInterval?
            switch outcome {
            case .success(let response) where response.status < 400:
                return response
            case .success(let response):
                let message = Self.message(fromBody: response.body, headers: response.headers, status: response.status)
                guard HTTPError.isTransient(status: response.status) else {
                    throw .permanent(status: response.status, message: message)
                }
                failure = .transient(status: response.status, message: message)
                reason = "HTTP \(response.status): \(message)"
                if response.status == 429 || response.status == 503 {
                    retryAfter = response.headers["Retry-After"].flatMap { TimeInterval($0) }
                }
            case .failure(let refusal as AnswerRefused):
                throw .answerRefused(refusal.description)
            case .failure(let error):
                if Task.isCancelled { throw .cancelled }
                reason = Self.describe(error, request: urlRequest)
                failure = .unreachable(reason)
            }
            guard retry + 1 < retryPolicy.maxAttempts else { throw failure }
            let delay = retryPolicy.delay(beforeRetry: retry, retryAfter: retryAfter)
            onRetry?(reason, retry + 2, delay)
            do {
                try await retryPolicy.sleep(delay)
            } catch {
                throw .cancelled
            }
            retry += 1
        }
    }

    /// Fetches within `urlRequest.timeoutInterval` in total. URLSession on
    /// Linux does not enforce that interval (a silent server kept a request
    /// waiting 30 s with a 1 s timeout), so the deadline is kept here.
    private func data(for urlRequest: URLRequest) async throws -> (Data, URLResponse) {
        try await withThrowingTaskGroup(of: (Data, URLResponse).self) { group in
            group.addTask { [session] in try await session.fetch(urlRequest) }
            group.addTask {
                try await Task.sleep(for: .seconds(urlRequest.timeoutInterval))
                throw URLError(.timedOut)
            }
            // The first to finish wins; cancelling the other ends the fetch or the timer.
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    private func makeURLRequest(_ request: Request) -> URLRequest {
        var urlRequest = URLRequest(url: request.url, timeoutInterval: request.timeout ?? defaultTimeout)
        urlRequest.httpMethod = request.method
        if !request.body.isEmpty {
            urlRequest.httpBody = Data(request.body)
            // Otherwise URLSession labels every body a web form.
            urlRequest.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        }
        // libcurl inflates any encoding a server sends; asking for none lets an honest one (or proxy) send none.
        urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        if let bearerToken { urlRequest.setValue("Bearer \(bearerToken)", forHTTPHeaderField: "Authorization") }
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        return urlRequest
    }

    private static func response(_ data: Data, _ urlResponse: URLResponse) -> Response {
        let http = urlResponse as? HTTPURLResponse
        var headers = HTTPHeaders()
        for (name, value) in http?.allHeaderFields ?? [:] {
            headers.add("\(name)", "\(value)")
        }
        return (http?.statusCode ?? 0, headers, [UInt8](data))
    }

    /// The server's explanation, kept short enough for a log line or a UI:
    /// its plain text, or what kind of answer it was (a web page from a
    /// server that is not a sync server, say).
    private static func message(fromBody body: [UInt8], headers: HTTPHeaders, status: Int) -> String {
        let statusText = HTTPURLResponse.localizedString(forStatusCode: status)
        let type = headers["Content-Type"] ?? ""
        guard type.isEmpty || type.lowercased().hasPrefix("text/plain") else {
            return "\(statusText), with \(body.count) bytes of \(type)"
        }
        let text = String(decoding: body.prefix(1000), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? statusText : text
    }

    /// A transport failure in words, with what was being sent.
    private static func describe(_ error: any Error, request: URLRequest) -> String {
        let target = "\(request.httpMethod ?? "GET") \(request.url?.absoluteString ?? "?")"
        guard let urlError = error as? URLError else { return "\(target): \(error)" }
        let reason = switch urlError.code {
        case .cannotConnectToHost: "connection refused"
        case .timedOut: "no answer within \(request.timeoutInterval) s"
        case .networkConnectionLost: "connection lost"
        case .cannotFindHost, .dnsLookupFailed: "unknown host"
        case .notConnectedToInternet: "no network"
        default: urlError.localizedDescription
        }
        return "\(target): \(reason) (URLError \(urlError.code.rawValue))"
    }
}
