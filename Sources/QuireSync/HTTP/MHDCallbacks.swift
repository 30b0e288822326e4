import CMicroHTTPD
import Foundation

/// The C callbacks given to libmicrohttpd. They are static members of a
/// plain enum, not closures in top-level code: MHD calls them on its own
/// threads, and a main-actor isolated closure would trap there. The `cls`
/// argument is always the `HTTPServer`, passed as an unmanaged pointer.
enum MHDCallbacks {
    /// Called by MHD several times per request: once when the headers are
    /// in, once per piece of body, and once when the request is complete.
    static let access: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadDataSize, requestContext in
        guard let cls, let connection, let requestContext, let uploadDataSize else { return .NO }
        let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        let maxBodyBytes = server.limits.maxBodyBytes

        guard let existing = requestContext.pointee else {
            // First call: headers are complete, no body has been read yet.
            let context = RequestContext(head: readRequestHead(connection, url: url, method: method))
            requestContext.pointee = Unmanaged.passRetained(context).toOpaque()
            // Answering now closes the connection unread: where the body ends is in doubt.
            if let problem = ambiguousBodyLength(context.head.headers) { return queue(.text(400, problem), on: connection, of: server) }
            // Its body is read and dropped, as a too large one is (below), and the 503 sent at its end.
            if server.deadlines?.isBusy(connection) == true { context.refusal = busy(server.limits.maxConnections) }
            // UInt64, as MHD reads it: a length past Int.max must be cut off, not taken for none.
            guard let declared = context.head.headers["Content-Length"].flatMap(UInt64.init) else { return .YES }
            if declared > UInt64(maxBodyBytes) {
                // Answering now makes MHD skip the body and close the
                // connection, and a client still sending then sees a broken
                // pipe instead of the 413. So a body within `drainableExcess`
                // of the limit is read and dropped, and answered at its end;
                // only an absurd one is cut off at once.
                guard declared - UInt64(maxBodyBytes) <= UInt64(HTTPServer.drainableExcess) else {
                    return queue(payloadTooLarge(maxBodyBytes), on: connection, of: server)
                }
                context.refusal = context.refusal ?? payloadTooLarge(maxBodyBytes)
                return .YES
            }
            if context.refusal == nil { context.body.reserveCapacity(Int(declared)) }
            return .YES
        }
        let context = Unmanaged<RequestContext>.fromOpaque(existing).takeUnretainedValue()

        let count = uploadDataSize.pointee
        if count > 0, let uploadData {
            // MHD cannot answer in the middle of an upload (e.g. chunked,
            // with no Content-Length), so past the limit the rest is read
            // and dropped, and the 413 goes out once the request ends.
            if context.refusal == nil {
                if context.body.count + count > maxBodyBytes {
                    context.refusal = payloadTooLarge(maxBodyBytes)
                    context.body = []
                } else {
                    context.body.append(contentsOf: UnsafeRawBufferPointer(start: uploadData, count: count))
                }
            }
            uploadDataSize.pointee = 0
            return .YES
        }

        // The request is complete.
        if let refusal = context.refusal { return queue(refusal, on: connection, of: server) }
        var request = context.head
        request.body = context.body
        server.deadlines?.requestReceived(connection)
        return queue(server.respond(to: request), on: connection, of: server)
    }

    /// Frees the per-request context once MHD is done with the request.
    static let completed: MHD_RequestCompletedCallback = { cls, connection, requestContext, _ in
        if let cls, let connection {
            Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().deadlines?.answered(connection)
        }
        guard let requestContext, let context = requestContext.pointee else { return }
        Unmanaged<RequestContext>.fromOpaque(context).release()
        requestContext.pointee = nil
    }

    /// Tells the request deadlines of connections opened and closed.
    /// MHD calls it before it closes the socket.
    static let connection: MHD_NotifyConnectionCallback = { cls, connection, _, event in
        guard let cls, let connection,
            let deadlines = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().deadlines else { return }
        if event == .CONNECTION_NOTIFY_STARTED {
            let client = quire_mhd_client_address(connection).flatMap(numericHost) ?? "an unknown address"
            deadlines.opened(connection, socket: quire_mhd_connection_socket(connection), client: client)
        } else {
            deadlines.closed(connection)
        }
    }

    /// Whether MHD may take a connection from `address` (the per-address
    /// limit); called on the thread that accepts, after MHD's own limit.
    static let acceptPolicy: MHD_AcceptPolicyCallback = { cls, address, _ in
        guard let cls, let client = address.flatMap(numericHost),
              let deadlines = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().deadlines else { return .YES }
        return deadlines.admits(client) ? .YES : .NO
    }

    /// Receives MHD's error messages (printf-style format plus arguments).
    static let log: MHD_LogCallback = { cls, format, arguments in
        guard let cls, let format, let arguments else { return }
        var buffer = [CChar](repeating: 0, count: 512)
        _ = vsnprintf(&buffer, buffer.count, format, arguments)
        let message = string(fromNulTerminated: buffer).trimmingCharacters(in: .whitespacesAndNewlines)
        Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().log(message)
    }

    // Options given through C varargs need plain pointers, not Swift function values.
    static var completedPointer: OpaquePointer { unsafeBitCast(completed, to: OpaquePointer.self) }
    static var logPointer: OpaquePointer { unsafeBitCast(log, to: OpaquePointer.self) }
    static var connectionPointer: OpaquePointer { unsafeBitCast(connection, to: OpaquePointer.self) }

    /// Why the request's body length is in doubt, or nil. libmicrohttpd
    /// takes the first of two different Content-Length values, reads a
    /// chunked body whatever Content-Length says, and reads a body of any
    /// other Transfer-Encoding until the connection closes; a proxy in
    /// front may decide otherwise, and the bytes it takes for a second
    /// request would reach the sync service as part of this one (request
    /// smuggling). So only one length, told one way, is accepted.
    /// `headers` joins repeated fields with ", " (`HTTPHeaders`).
    static func ambiguousBodyLength(_ headers: HTTPHeaders) -> String? {
        let lengths = headers["Content-Length"].map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) }
        if let lengths, lengths.count > 1 {
            return "the request gives different Content-Length values (\(lengths.sorted().joined(separator: ", "))): its body's length is ambiguous"
        }
        guard let encoding = headers["Transfer-Encoding"] else { return nil }
        if lengths != nil {
            return "the request gives both Transfer-Encoding and Content-Length: its body's length is ambiguous"
        }
        if encoding.trimmingCharacters(in: .whitespaces).lowercased() != "chunked" {
            return "Transfer-Encoding \"\(encoding)\" is not supported: send the body chunked or with a Content-Length"
        }
        return nil
    }

    /// Everything about a request except its body, read while MHD still
    /// holds the headers.
    private static func readRequestHead(
        _ connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?
    ) -> HTTPRequest {
        HTTPRequest(
            method: method.map { String(cString: $0) } ?? "",
            path: url.map { String(cString: $0) } ?? "/",
            query: Dictionary(connectionValues(connection, kind: .GET_ARGUMENT_KIND), uniquingKeysWith: { $1 }),
            headers: HTTPHeaders(connectionValues(connection, kind: .HEADER_KIND)),
            clientAddress: quire_mhd_client_address(connection).flatMap(numericHost)
        )
    }

    /// The `(key, value)` pairs MHD parsed of one kind (headers or query).
    private static func connectionValues(_ connection: OpaquePointer, kind: MHD_ValueKind) -> [(String, String)] {
        var pairs: [(String, String)] = []
        withUnsafeMutablePointer(to: &pairs) { pairsPointer in
            _ = MHD_get_connection_values(connection, kind, { cls, _, key, value in
                guard let cls, let key else { return .YES }
                let pairs = cls.assumingMemoryBound(to: [(String, String)].self)
                pairs.pointee.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
                return .YES
            }, pairsPointer)
        }
        return pairs
    }

    /// "127.0.0.1" or "::1" for a socket address.
    private static func numericHost(_ address: UnsafePointer<sockaddr>) -> String? {
        let length = address.pointee.sa_family == sa_family_t(AF_INET6)
            ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(address, socklen_t(length), &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else {
            return nil
        }
        return string(fromNulTerminated: host)
    }

    private static func string(fromNulTerminated buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func payloadTooLarge(_ limit: Int) -> HTTPResponse {
        .text(413, "request body larger than \(limit) bytes")
    }

    /// For a connection that came when every one was busy; closed once sent, to free its place.
    private static func busy(_ maxConnections: Int) -> HTTPResponse {
        .text(503, "the server is busy: all \(maxConnections) connections are in use; try again",
              headers: HTTPHeaders([("Retry-After", "1"), ("Connection", "close")]))
    }

    /// Hands `response` to MHD, which copies it and sends it when it can,
    /// and starts the deadline for the client to take it.
    private static func queue(_ response: HTTPResponse, on connection: OpaquePointer, of server: HTTPServer) -> MHD_Result {
        let invalidHeader = HTTPResponse.text(500, "internal server error: the handler produced an invalid header")
        // The status goes with the response MHD took, not the one it refused.
        guard let (status, mhdResponse) = makeMHDResponse(response).map({ (response.status, $0) })
            ?? makeMHDResponse(invalidHeader).map({ (invalidHeader.status, $0) }) else { return .NO }
        defer { MHD_destroy_response(mhdResponse) }
        let queued = MHD_queue_response(connection, UInt32(clamping: status), mhdResponse)
        if queued == .YES { server.deadlines?.answerQueued(connection, bytes: response.body.count) }
        return queued
    }

    /// An MHD response with a copy of the body, or nil if MHD rejects a
    /// header (for example one holding a line break).
    private static func makeMHDResponse(_ response: HTTPResponse) -> OpaquePointer? {
        let mhdResponse = response.body.withUnsafeBytes { body in
            MHD_create_response_from_buffer(body.count, UnsafeMutableRawPointer(mutating: body.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let mhdResponse else { return nil }
        // MHD refuses empty values; such a header says nothing, so it is left out.
        for (name, value) in response.headers where !value.isEmpty
            && MHD_add_response_header(mhdResponse, name, value) != .YES {
            MHD_destroy_response(mhdResponse)
            return nil
        }
        return mhdResponse
    }
}

/// What the access handler keeps between its calls for one request.
/// Created on the first call, freed in `MHDCallbacks.completed`.
final class RequestContext {
    let head: HTTPRequest
    var body: [UInt8] = []
    /// The answer decided before the body was read (413, or 503 when the
    /// server is busy): the body is dropped, and it is sent at the request's end.
    var refusal: HTTPResponse?

    init(head: HTTPRequest) { self.head = head }
}
