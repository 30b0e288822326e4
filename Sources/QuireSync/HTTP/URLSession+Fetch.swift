import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// A `URLSession` that keeps at most `maxAnswerBytes` of any answer, so that
/// one server cannot make the client exhaust its memory.
///
/// `data(for:)` keeps a whole answer, whatever its size, and on Linux
/// libcurl inflates any `Content-Encoding` it knows even when none was asked
/// for: a 510 KB gzip answer grew `quire sync` to 1.1 GB. Here a delegate
/// takes the bytes as they come and refuses an answer with a
/// `Content-Encoding` other than identity, a `Content-Length` over the limit,
/// or more bytes than the limit: it fails the fetch at once, keeps nothing
/// more and cancels the transfer.
///
/// The delegate runs on the session's own thread (`RunningInPlace`): on
/// Linux, URLSession queues each chunk for the delegate without waiting,
/// and cancelling does not stop libcurl before it has inflated what it
/// read, so a delegate on a queue of its own fell behind and the queued
/// chunks held 593 MB of a gzip bomb although it kept none of them.
final class BoundedURLSession: Sendable {
    let maxAnswerBytes: Int
    private let session: URLSession
    private let fetches: FetchDelegate

    init(configuration: URLSessionConfiguration, maxAnswerBytes: Int) {
        self.maxAnswerBytes = maxAnswerBytes
        fetches = FetchDelegate(maxAnswerBytes: maxAnswerBytes)
        session = URLSession(configuration: configuration, delegate: fetches, delegateQueue: RunningInPlace())
    }

    // A client's requests hold it until they end, so none is left to
    // cancel here. Foundation's `invalidateAndCancel` waits synchronously
    // on the session's work queue, and on Linux that wait deadlocked once
    // while the queue was busy with another session's connection attempt.
    deinit { session.finishTasksAndInvalidate() }

    /// The answer to `request`, cancelled from a queue of its own.
    ///
    /// On Linux, `data(for:)` cancels its `URLSessionTask` from inside the
    /// Swift task's cancellation, which holds the task's status lock while
    /// `URLSessionTask.cancel()` waits for the session's work queue. If that
    /// queue is finishing the same request at that moment, it waits for the
    /// status lock in turn, and both wait forever (swift-corelibs-foundation
    /// issue 5412, fixed upstream in pull request 5417, after this
    /// toolchain's Foundation was built). Here cancelling only asks a global queue to
    /// cancel the `URLSessionTask`, so no lock is held across the two.
    /// - Throws: `AnswerRefused` for an answer over the limits above, else
    ///   what `URLSession` reports.
    func fetch(_ request: URLRequest) async throws -> (Data, URLResponse) {
        let fetch = Fetch()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let task = session.dataTask(with: request)
                fetches.add(fetch, for: task)
                fetch.start(task, endingBy: continuation)
            }
        } onCancel: {
            fetch.cancel()
        }
    }
}

/// Why an answer was refused unread: the server sent more than the client
/// keeps, or encoded it in a way the client did not ask for.
struct AnswerRefused: Error, CustomStringConvertible {
    let description: String
}

/// Runs each operation at once on the thread that adds it: URLSession's
/// work queue, for the delegate of `BoundedURLSession`. The delegate must
/// therefore never wait for that queue (`URLSessionTask.cancel()` does).
private final class RunningInPlace: OperationQueue, @unchecked Sendable {
    override func addOperation(_ block: @escaping @Sendable () -> Void) { block() }
}

/// One fetch: its `URLSessionTask`, for a cancellation that may come before
/// it starts, while it runs, or after it ended, and the answer so far.
private final class Fetch: Sendable {
    private struct State {
        var task: URLSessionTask?
        var isCancelled = false
        /// Nil once the fetch ended.
        var continuation: CheckedContinuation<(Data, URLResponse), any Error>?
        var response: URLResponse?
        var body = Data()
    }
    private let state = Mutex(State())

    /// Starts `task`, to end by `continuation`, and cancels it if the
    /// fetch was cancelled already.
    func start(_ task: URLSessionTask, endingBy continuation: CheckedContinuation<(Data, URLResponse), any Error>) {
        let isCancelled = state.withLock { state in
            state.task = task
            state.continuation = continuation
            return state.isCancelled
        }
        task.resume()
        if isCancelled { Self.cancelLater(task) }
    }

    func cancel() {
        let task = state.withLock { state in
            state.isCancelled = true
            return state.task
        }
        if let task { Self.cancelLater(task) }
    }

    func receive(_ response: URLResponse) {
        state.withLock { $0.response = response }
    }

    /// Keeps `data` unless the answer would pass `limit`; returns whether it did.
    func receive(_ data: Data, limit: Int) -> Bool {
        state.withLock { state in
            guard state.body.count + data.count <= limit else { return false }
            state.body.append(data)
            return true
        }
    }

    /// Ends the fetch with `outcome` (unless it ended already) and drops
    /// what it kept.
    func finish(_ outcome: Result<Void, any Error>) {
        let (continuation, answer) = state.withLock { state in
            defer { state.continuation = nil; state.body = Data() }
            return (state.continuation, state.response.map { (state.body, $0) })
        }
        switch (outcome, answer) {
        case (.success, let answer?): continuation?.resume(returning: answer)
        case (.success, nil): continuation?.resume(throwing: URLError(.badServerResponse))
        case (.failure(let error), _): continuation?.resume(throwing: error)
        }
    }

    /// Fails the fetch with `reason` at once and cancels its transfer.
    func refuse(_ reason: String) {
        finish(.failure(AnswerRefused(description: reason)))
        cancel()
    }

    private static func cancelLater(_ task: URLSessionTask) {
        DispatchQueue.global().async { task.cancel() }
    }
}

/// The session's delegate: hands each task's answer to its `Fetch`, within
/// the limits `BoundedURLSession` describes.
private final class FetchDelegate: NSObject, URLSessionDataDelegate, Sendable {
    let maxAnswerBytes: Int
    private let fetches = Mutex<[Int: Fetch]>([:])

    init(maxAnswerBytes: Int) { self.maxAnswerBytes = maxAnswerBytes }

    func add(_ fetch: Fetch, for task: URLSessionTask) {
        fetches.withLock { $0[task.taskIdentifier] = fetch }
    }

    /// The fetch of `task`, or nil once it ended (a refused answer's
    /// transfer may still run a while: what it brings is dropped).
    private func fetch(of task: URLSessionTask, ending: Bool = false) -> Fetch? {
        fetches.withLock { ending ? $0.removeValue(forKey: task.taskIdentifier) : $0[task.taskIdentifier] }
    }

    private func refuse(_ task: URLSessionTask, _ reason: String) {
        fetch(of: task, ending: true)?.refuse(reason)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        let encoding = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Encoding") ?? "identity"
        let refusal: String? = if encoding.lowercased() != "identity" {
            // The client asks for `identity`: the protocol compresses with zstd itself, within its limits.
            "the answer is encoded as \"\(encoding)\", which the client did not ask for: refused"
        } else if response.expectedContentLength > maxAnswerBytes {
            "the answer is larger than \(maxAnswerBytes) bytes (\(response.expectedContentLength) declared): refused"
        } else {
            nil
        }
        if let refusal { refuse(dataTask, refusal) } else { fetch(of: dataTask)?.receive(response) }
        // Linux ignores the disposition (the transfer goes on meanwhile); Darwin waits for it.
        completionHandler(refusal == nil ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let fetch = fetch(of: dataTask), !fetch.receive(data, limit: maxAnswerBytes) else { return }
        refuse(dataTask, "the answer is larger than \(maxAnswerBytes) bytes: refused")
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        fetch(of: task, ending: true)?.finish(error.map { .failure($0) } ?? .success(()))
    }
}
