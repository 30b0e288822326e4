import Foundation
import Synchronization

/// How a store's async calls (`AsyncDocumentStore`) get a thread to run on.
///
/// A store call may block: on the store's lock while another call works on
/// its document, on a commit's disk sync, on another process's lock for up
/// to its timeout (5 s). Swift's cooperative pool has about one thread per
/// core and must never block, and neither must the main actor, so each
/// call runs on a thread of `StoreThreads`, and the task that awaits it is
/// resumed through a continuation. At most `limit` of a store's calls run
/// at once; calls beyond wait, in the order made (a thousand tasks editing
/// at once do not make a thousand threads), and a thread that ends one of
/// the store's calls takes the next waiting one. None of them waits for a
/// call that has not started, so the limit never deadlocks; calls on
/// different documents that run together still share a commit (group
/// commit).
final class CallThreads: Sendable {
    /// At most this many of a store's async calls run at once.
    static let limit = 16

    private struct Queue {
        /// Calls on a thread now.
        var running = 0
        /// Calls waiting for one of the `limit` places, in the order made.
        var waiting: [StoreThreads.Job] = []
    }

    private let queue = Mutex(Queue())
    private let threads: StoreThreads

    /// - Parameter threads: the threads the calls run on; the process's, but for tests.
    init(threads: StoreThreads = .shared) {
        self.threads = threads
    }

    /// How many calls run, and how many wait; for tests.
    var counts: (busy: Int, waiting: Int) { queue.withLock { ($0.running, $0.waiting.count) } }

    /// Runs `call` on a thread of `StoreThreads` and returns what it
    /// returns, or throws what it throws, as it is.
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

    /// Hands `job` to a thread if fewer than `limit` of the store's calls
    /// run, or queues it for the next of them to end.
    private func submit(_ job: @escaping StoreThreads.Job) {
        let runsNow = queue.withLock { queue in
            guard queue.running < Self.limit else {
                queue.waiting.append(job)
                return false
            }
            queue.running += 1
            return true
        }
        if runsNow { threads.run { self.runInTurn(job) } }
    }

    /// Runs `job`, then every call of the store's that waits, in order;
    /// returns the last one's hand-over.
    private func runInTurn(_ job: @escaping StoreThreads.Job) -> @Sendable () -> Void {
        var job = job
        while true {
            let handOver = job()
            let next = queue.withLock { queue in
                guard !queue.waiting.isEmpty else {
                    queue.running -= 1
                    return nil as StoreThreads.Job?
                }
                return queue.waiting.removeFirst()
            }
            guard let next else { return handOver }
            handOver()
            job = next
        }
    }
}

/// The threads every store's async calls run on, shared by the process.
///
/// Shared, not a store's own, and a thread is idle before it resumes its
/// caller, because memory is cheapest where it was used last: glibc gives
/// a thread started while the others live a malloc arena of its own, whose
/// pages the kernel supplies afresh, a page fault each. With a store's own
/// threads, each sync into a new store (quire-bench's catch-up) decoded on
/// new threads: about 650 page faults under `apply` a catch-up of
/// automerge-paper, against about 270 on a thread used before.
///
/// A thread that ends a job takes the next waiting one, or waits
/// `idleSeconds` for one before it ends: jobs made one after another (a
/// read per keystroke, a sync's steps) reuse one thread instead of starting
/// one each. A job finding no idle thread starts one; the stores' limits
/// bound how many run.
final class StoreThreads: @unchecked Sendable {
    // @unchecked: every `var` is guarded by `condition`.

    /// A job does its work and returns its hand-over, which gives the
    /// outcome to whoever awaits it. The thread counts itself idle before
    /// it calls that, so that the caller's next job, made as soon as the
    /// caller has the outcome, finds this thread instead of starting one.
    typealias Job = @Sendable () -> (@Sendable () -> Void)

    static let shared = StoreThreads()

    /// How long a thread with nothing to do waits for a job before it ends.
    let idleSeconds: TimeInterval

    init(idleSeconds: TimeInterval = 2) {
        self.idleSeconds = idleSeconds
    }

    /// Guards the `var`s below; idle threads wait on it for a job.
    private let condition = NSCondition()
    /// Threads that will take a waiting job without waiting for anything
    /// else: those waiting for one, those handing over an outcome, and
    /// those started and not yet at their first job.
    private var idle = 0
    /// Jobs no thread has taken yet, in the order made.
    private var waiting: [Job] = []
    /// Threads started so far.
    private var started = 0

    /// How many threads have been started; for tests.
    var threadsStarted: Int { condition.withLock { started } }

    /// Queues `job` for an idle thread, and starts a thread if there are
    /// more waiting jobs than idle threads to take them.
    func run(_ job: @escaping Job) {
        let startsThread = condition.withLock {
            waiting.append(job)
            if idle > 0 { condition.signal() }
            guard waiting.count > idle else { return false }
            idle += 1
            started += 1
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
                idle -= 1
                condition.unlock()
                let handOver = job()
                condition.withLock { idle += 1 }
                handOver()
                condition.lock()
                continue
            }
            let woken = condition.wait(until: Date().addingTimeInterval(idleSeconds))
            if !woken && waiting.isEmpty { break }
        }
        idle -= 1
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

    /// Runs `call`, unless the call was cancelled before it got here, and
    /// returns what resumes the caller with its outcome.
    func start(_ call: () throws -> T) -> @Sendable () -> Void {
        let continuation = stage.withLock { stage -> CheckedContinuation<T, any Error>? in
            guard case .waiting(let continuation) = stage else { return nil }
            stage = .started
            return continuation
        }
        guard let continuation else { return {} }
        let outcome = Result { try call() }
        return { continuation.resume(with: outcome) }
    }
}
