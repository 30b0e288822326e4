import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

extension URLSession {
    /// `data(for:)`, cancelled from a queue of its own.
    ///
    /// On Linux, `data(for:)` cancels its `URLSessionTask` from inside the
    /// Swift task's cancellation, which holds the task's status lock while
    /// `URLSessionTask.cancel()` waits for the session's work queue. If that
    /// queue is finishing the same request at that moment, it waits for the
    /// status lock in turn, and both wait forever (swift-corelibs-foundation
    /// issue 5412, fixed upstream in pull request 5417, after this
    /// toolchain's Foundation was built). Here cancelling only asks a global queue to
    /// cancel the `URLSessionTask`, so no lock is held across the two.
    func fetch(_ request: URLRequest) async throws -> (Data, URLResponse) {
        let handle = CancellableFetch()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let task = dataTask(with: request) { data, response, error in
                    if let data, let response, error == nil {
                        continuation.resume(returning: (data, response))
                    } else {
                        continuation.resume(throwing: error ?? URLError(.badServerResponse))
                    }
                }
                handle.start(task)
            }
        } onCancel: {
            handle.cancel()
        }
    }
}

/// The `URLSessionTask` of one fetch, for a cancellation that may come
/// before it starts, while it runs, or after it ended.
private final class CancellableFetch: Sendable {
    private let state = Mutex<(task: URLSessionTask?, isCancelled: Bool)>((nil, false))

    /// Starts `task`, and cancels it if the fetch was cancelled already.
    func start(_ task: URLSessionTask) {
        let isCancelled = state.withLock { state in
            state.task = task
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

    private static func cancelLater(_ task: URLSessionTask) {
        DispatchQueue.global().async { task.cancel() }
    }
}
