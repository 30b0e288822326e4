import Foundation

/// Runs `body(thread)` on `count` new threads at once and waits for them;
/// false if they have not all ended after five minutes, far more than the
/// work of any caller takes on a slow machine: they are deadlocked.
public func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> Bool {
    let group = DispatchGroup()
    for thread in 0..<count {
        group.enter()
        Thread.detachNewThread {
            body(thread)
            group.leave()
        }
    }
    return group.wait(timeout: .now() + 300) == .success
}

/// `runOnThreads` for an async caller: it waits on a thread of its own, not
/// on one of the few of Swift's shared pool that the caller's tasks need.
public func runOnThreadsAsync(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async -> Bool {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: runOnThreads(count, body)) }
    }
}
