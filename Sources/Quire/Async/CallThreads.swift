import Foundation
import Synchronization

/// The threads a store's async calls (`AsyncDocumentStore`) run on.
///
/// A store call may block: on the store's lock while another call works on
/// its document, on a commit's disk sync, on another process's lock for up
/// to its timeout (5 s). Swift's cooperative pool has about one thread per
/// core and must never block, and neither must the main actor, so each
/// call runs on a thread of these, and the task that awaits it is resumed
/// through a continuation. A thread that ends a call takes the next
/// waiting one, or waits `idleSeconds` for one before it ends: calls made
/// one after another (a read per keystroke) reuse one thread instead of
/// starting one each. A call finding no idle thread starts one, up to
/// `limit` at once; calls beyond wait, in the order made (a thousand tasks
/// editing at once do not make a thousand threads). None of them waits
/// for a call that has not started, so the limit never deadlocks; calls on
/// different documents that run together still share a commit (group
/// commit).
final class CallThreads: @unchecked Sendable {
    // @unchecked: every `var` is guarded by `condition`.

    /// At most this many of a store's async calls run at once.
    static let limit = 16
    /// How long a thread with nothing to do waits for a call before it ends.
    static let idleSeconds: TimeInterval = 2

    /// Guards the `var`s below; idle threads wait on it for a call.
    private let condition = NSCondition()
    private var threads = 0
    /// Threads waiting for a call.
    private var idle = 0
    /// Calls no thread has taken yet, in the order made.
    private var waiting: [@Sendable () -> Void] = []

    /// How many threads run a call, and how many calls wait; for tests.
    var counts: (busy: Int, waiting: Int) { condition.withLock { (threads - idle, waiting.count) } }

    /// Runs `call` on a thread of these and returns what it returns, or
    /// throws what it throws, as it is.
    ///
    /// Cancelling the awaiting task before the call has started throws
    /// `CancellationError` at once, and the call never runs. Once started,
    /// the call runs to its end and its outcome is returned though the task
    /// was cancelled meanwhile: a store call must not be cut short (a commit
    /// happens whole or not at all), and the caller learns what it did.
    func run<T: Sendable>(_ call: @escaping @Sendable () throws -> T) async throws -> T {
        let pending = PendingCall<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard pending.wait(continuation) else { return }
                submit { pending.start(call) }
            }
        } onCancel: {
            pending.cancel()
        }
    }

    /// Queues `job` for an idle thread, and starts a thread if there are
    /// more waiting jobs than idle threads to take them (an idle thread
    /// counts as such until it wakes).
    private func submit(_ job: @escaping @Sendable () -> Void) {
        let startsThread = condition.withLock {
            waiting.append(job)
            if idle > 0 { condition.signal() }
            guard waiting.count > idle, threads < Self.limit else { return false }
            threads += 1
            return true
        }
        if startsThread { Thread.detachNewThread { self.work() } }
    }

    /// A thread's work: every waiting job, until none comes for `idleSeconds`.
    private func work() {
        condition.lock()
        while true {
            if !waiting.isEmpty {
                let job = waiting.removeFirst()
                condition.unlock()
                job()
                condition.lock()
                continue
            }
            idle += 1
            let woken = condition.wait(until: Date().addingTimeInterval(Self.idleSeconds))
            idle -= 1
            if !woken && waiting.isEmpty { break }
        }
        threads -= 1
        condition.unlock()
    }
}

/// One call of `CallThreads.run`, between the caller and the thread: the
/// first of starting and cancelling wins, and the continuation is resumed
/// once, by whichever that is.
private final class PendingCall<T: Sendable>: Sendable {
    private enum Stage {
        /// Made, its continuation not yet known.
        case made
        case waiting(CheckedContinuation<T, any Error>)
        case started
        case cancelled
    }

    private let stage = Mutex(Stage.made)

    /// Records the continuation to resume; false (having resumed it with
    /// `CancellationError`) if the task was cancelled already.
    func wait(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
        let cancelled = stage.withLock { stage in
            if case .cancelled = stage { return true }
            stage = .waiting(continuation)
            return false
        }
        if cancelled { continuation.resume(throwing: CancellationError()) }
        return !cancelled
    }

    /// The task was cancelled: a call not yet started never will be.
    func cancel() {
        let continuation = stage.withLock { stage -> CheckedContinuation<T, any Error>? in
            switch stage {
            case .made:
                stage = .cancelled
                return nil
            case .waiting(let continuation):
                stage = .cancelled
                return continuation
            case .started, .cancelled:
                return nil
            }
        }
        continuation?.resume(throwing: CancellationError())
    }

    /// Runs `call` and resumes the caller with its outcome, unless the call
    /// was cancelled before it got here.
    func start(_ call: () throws -> T) {
        let continuation = stage.withLock { stage -> CheckedContinuation<T, any Error>? in
            guard case .waiting(let continuation) = stage else { return nil }
            stage = .started
            return continuation
        }
        guard let continuation else { return }
        continuation.resume(with: Result { try call() })
    }
}
