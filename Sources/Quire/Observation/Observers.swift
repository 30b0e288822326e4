import Synchronization

/// The observers of one store: each is the continuation of an `AsyncStream`
/// handed out by `events(of:)` or `allEvents()`, with the document it
/// watches (`nil`: every document).
///
/// The store publishes from `didCommit` and `checkForOutsideCommits`, with
/// its own lock held, so events reach each stream in the order published,
/// exactly once per commit. A stream's
/// termination (its consumer cancelled, or the stream released) removes
/// its observer here.
final class Observers: Sendable {
    private struct Observer {
        var document: DocumentID?
        var continuation: AsyncStream<DocumentEvent>.Continuation
    }

    /// `isFinished`: the store was closed, so a stream asked for later
    /// ends at once, rather than waiting for events that cannot come.
    private let observers = Mutex<(next: Int, byToken: [Int: Observer], isFinished: Bool)>((0, [:], false))

    /// True when nobody observes: committing then builds no event at all.
    var isEmpty: Bool { observers.withLock { $0.byToken.isEmpty } }

    /// The number of registered observers; for tests.
    var count: Int { observers.withLock { $0.byToken.count } }

    /// A new stream of the events of `document` (or of every document).
    /// Its buffer is unbounded, so no event is ever dropped; a consumer that
    /// stops reading without ending the stream makes it grow.
    func stream(of document: DocumentID?) -> AsyncStream<DocumentEvent> {
        let (stream, continuation) = AsyncStream<DocumentEvent>.makeStream(bufferingPolicy: .unbounded)
        let token = observers.withLock { state -> Int? in
            guard !state.isFinished else { return nil }
            state.next += 1
            state.byToken[state.next] = Observer(document: document, continuation: continuation)
            return state.next
        }
        guard let token else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            self?.observers.withLock { _ = $0.byToken.removeValue(forKey: token) }
        }
        return stream
    }

    /// Sends `event` to every observer of its document and of every document.
    func publish(_ event: DocumentEvent) {
        let targets = observers.withLock { state in
            state.byToken.values.filter { $0.document == nil || $0.document == event.document }.map(\.continuation)
        }
        // Yielding outside the lock: a termination handler run by `yield`
        // takes the lock itself.
        for continuation in targets { continuation.yield(event) }
    }

    /// Ends every stream, and every one asked for later, so that no
    /// consumer waits for an event that can no longer come: the store was
    /// closed or went away.
    func finishAll() {
        let finishing = observers.withLock { state in
            state.isFinished = true
            return state.byToken.values
        }
        for observer in finishing { observer.continuation.finish() }
    }

    deinit { finishAll() }
}
