/// The answer a server handler returns.
///
/// ```swift
/// return .text(503, "busy, try later", headers: HTTPHeaders([("Retry-After", "2")]))
/// return .bytes(200, encodedChanges, contentType: "application/octet-stream")
/// ```
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A UTF-8 plain-text response.
    public static func text(_ status: Int, _ text: String, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        bytes(status, Array(text.utf8), contentType: "text/plain; charset=utf-8", headers: headers)
    }

    /// A response carrying raw bytes of the given media type.
    public static func bytes(
        _ status: Int, _ body: [UInt8], contentType: String, headers: HTTPHeaders = HTTPHeaders()
    ) -> HTTPResponse {
        var headers = headers
        headers["Content-Type"] = contentType
        return HTTPResponse(status: status, headers: headers, body: body)
    }
}
