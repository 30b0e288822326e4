/// One HTTP request as the server's handler sees it, body fully received.
///
/// ```swift
/// let server = HTTPServer(port: 0, limits: .init()) { request in
///     guard request.headers["Authorization"] == "Bearer secret" else {
///         return .text(401, "missing or wrong token")
///     }
///     return .text(200, "since=\(request.query["since"] ?? "0")")
/// }
/// ```
public struct HTTPRequest: Sendable {
    /// "GET", "POST", ... as sent by the client.
    public var method: String
    /// The percent-decoded path, without the query string, e.g. "/docs/42".
    public var path: String
    /// Query parameters, percent-decoded; a name without "=" maps to "".
    /// A name given twice keeps its last value.
    public var query: [String: String]
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The peer's numeric address, e.g. "127.0.0.1", when known.
    public var clientAddress: String?

    public init(
        method: String, path: String, query: [String: String] = [:],
        headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [], clientAddress: String? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.clientAddress = clientAddress
    }
}
