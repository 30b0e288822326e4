import Foundation
import QuireTestSupport
import Testing
@testable import Quire

/// Many threads using one store at once: what they do must all be there,
/// once, and none of them may wait for another forever.
@Suite struct ConcurrencyTests {
    /// Applies of several documents, each taking them in another order,
    /// while edits keep the documents busy now and then. An apply that
    /// took one document and waited for the next while another apply held
    /// that one and waited for the first would leave both waiting forever.
    @Test func appliesTakingDocumentsInOppositeOrdersNeverDeadlock() throws {
        let source = try DocumentStore.inMemory()
        for id: DocumentID in ["x", "y"] {
            try source.create(id: id)
            try source.edit(id) { tx in try tx.put(.root, key: "k", .int(1)) }
        }
        let bundles = try [DocumentID("x"), "y"].map { id in try ChangeEncoding.encode(source.changes(id)) }
        let store = try DocumentStore.inMemory()
        try store.apply(bundles: [("x", [bundles[0]]), ("y", [bundles[1]])])

        let rounds = 200
        let finished = runOnThreads(4) { thread in
            for round in 0..<rounds {
                switch thread {
                case 0: try! store.apply(bundles: [("x", [bundles[0]]), ("y", [bundles[1]])])
                case 1: try! store.apply(bundles: [("y", [bundles[1]]), ("x", [bundles[0]])])
                default: try! store.edit(thread == 2 ? "x" : "y") { tx in try tx.put(.root, key: "e", .int(Int64(round))) }
                }
            }
        }
        #expect(finished, "the threads deadlocked")
        guard finished else { return }
        for id: DocumentID in ["x", "y"] { #expect(try store.changes(id).count == 1 + rounds) }
    }

    /// A last try (which holds the lock file exclusive) that ends while
    /// another thread writes a batch of another document: the batch must
    /// have read whether a last try holds the lock file before it let the
    /// store's lock go, or (under ThreadSanitizer, which sees it in about
    /// half the rounds) that read races the last try clearing the mark.
    @Test func lastTriesEndingWhileBatchesAreWrittenLoseNothing() throws {
        try withTemporaryDirectory { directory in
            let store = try DocumentStore(path: directory + "/notes.quire")
            try store.create(id: "other")
            let rounds = 10
            for round in 0..<rounds {
                // A read of the file held open keeps the batch from writing until the last try has ended.
                let (reading, readDone, edited) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
                Thread.detachNewThread {
                    try! store.database.read { _ in
                        reading.signal()
                        readDone.wait()
                    }
                }
                reading.wait()
                var tries = 0
                try store.locked {
                    try store.retryingChangedElsewhere { _ in
                        tries += 1
                        guard tries == DocumentStore.commitAttempts else { throw StoreError.changedElsewhere("raced") }
                        Thread.detachNewThread {
                            try! store.edit("other") { tx in try tx.put(.root, key: "k\(round)", .int(1)) }
                            edited.signal()
                        }
                        while !store.isWriting { _ = store.condition.wait(until: Date(timeIntervalSinceNow: 0.001)) }
                    }
                }
                readDone.signal()
                edited.wait()
                #expect(tries == DocumentStore.commitAttempts)
                #expect(!store.condition.withLock { store.holdsWriterLock })
            }
            #expect(try store.changes("other").count == rounds)
        }
    }
}
