import Foundation
import Quire
import QuireBenchKit
import QuireSync

/// `quire-bench sync`: a fresh replica catching up with a document through
/// the HTTP sync server on loopback, and the rate at which the server
/// accepts changes from concurrent clients.
func runSyncBenchmark(tracePath: String, runs: Int, json: Bool) -> Int32 {
    do {
        guard case .sequential(let trace) = try EditingTrace.load(path: tracePath) else {
            throw UsageError(message: "sync needs a sequential trace")
        }
        // The history: one change per trace transaction, as an editor makes them.
        var document = Document(replica: ReplicaID(1))
        let text = try document.transact { tx in try tx.putObject(.root, key: "text", kind: .text) }
        for patches in trace.txns {
            try document.transact { tx in
                for patch in patches {
                    if patch.deleteCount > 0 { try tx.deleteText(text, at: patch.position, count: patch.deleteCount) }
                    if !patch.insertedText.isEmpty { try tx.insertText(text, at: patch.position, patch.insertedText) }
                }
            }
        }
        let changes = try document.changes(since: VersionVector())

        let log = try ServerLog(path: ":memory:")
        var configuration = SyncServer.Configuration()
        configuration.requestsPerSecond = 1_000_000
        configuration.burst = 1_000_000
        let server = SyncServer(log: log, tokens: nil, configuration: configuration)
        for start in stride(from: 0, to: changes.count, by: 50_000) {
            _ = try log.push([("paper", Array(changes[start..<min(start + 50_000, changes.count)]))], by: .unrestricted, limits: .init())
        }
        let http = HTTPServer(port: 0, handler: server.handle)
        try http.start()
        defer { http.stop() }
        let url = URL(string: "http://127.0.0.1:\(http.port)")!

        // Catch-up: a fresh in-memory store pulls everything.
        var samples: [UInt64] = []
        var caughtUp: SyncClient.Report?
        for _ in 0..<(runs + 1) {
            let store = try DocumentStore.inMemory()
            let client = SyncClient(store: store, peer: url.absoluteString, transport: HTTPSyncTransport(server: url, token: nil))
            let start = DispatchTime.now().uptimeNanoseconds
            caughtUp = try blocking { try await client.sync() }
            samples.append(DispatchTime.now().uptimeNanoseconds - start)
            guard try store.read("paper", { try $0.text(text) }) == trace.endContent else {
                throw UsageError(message: "the caught-up document differs from the trace's end content")
            }
        }
        let catchUp = Spread(nanoseconds: Array(samples.dropFirst()))!
        let report = caughtUp!

        // Accepting: 4 clients push 500 single-edit changes each, one change
        // a request; each run with new stores and documents.
        let writers = 4, editsPerWriter = 500
        var pushSamples: [UInt64] = []
        for run in 0..<runs {
            let stores = try (0..<writers).map { index in
                let store = try DocumentStore.inMemory()
                let id = DocumentID(rawValue: "run\(run)-writer\(index)")!
                try store.create(id: id)
                for edit in 0..<editsPerWriter { try store.edit(id) { tx in try tx.put(.root, key: "k", .int(Int64(edit))) } }
                return store
            }
            let start = DispatchTime.now().uptimeNanoseconds
            try blocking {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for store in stores {
                        group.addTask {
                            var client = SyncClient(store: store, peer: url.absoluteString, transport: HTTPSyncTransport(server: url, token: nil))
                            client.maxPushChanges = 1
                            _ = try await client.sync()
                        }
                    }
                    try await group.waitForAll()
                }
            }
            pushSamples.append(DispatchTime.now().uptimeNanoseconds - start)
            for index in 0..<writers where try log.version(DocumentID(rawValue: "run\(run)-writer\(index)")!).operationCount != editsPerWriter {
                throw UsageError(message: "the server lacks changes of writer \(index)")
            }
        }
        let push = Spread(nanoseconds: pushSamples)!
        let perSecond = { (milliseconds: Double) in Double(writers * editsPerWriter) / (milliseconds / 1000) }

        let bytesPerChange = Double(report.bytesReceived) / Double(changes.count)
        if json {
            print("{\"trace\":\"\(tracePath)\",\"changes\":\(changes.count),\"catchUpMedianMs\":\(catchUp.median),"
                + "\"catchUpBytes\":\(report.bytesReceived),\"catchUpRounds\":\(report.rounds),\"bytesPerChange\":\(bytesPerChange),"
                + "\"acceptedChangesPerSecond\":\(perSecond(push.median))}")
        } else {
            print("""
                trace                        \(tracePath)
                changes                      \(changes.count)
                catch-up, median (\(runs) runs)  \(String(format: "%.1f", catchUp.median)) ms (min \(String(format: "%.1f", catchUp.min)), max \(String(format: "%.1f", catchUp.max)))
                catch-up bytes received      \(report.bytesReceived) in \(report.rounds) round trip(s)
                bytes on the wire per change \(String(format: "%.1f", bytesPerChange))
                accepted from 4 clients      \(String(format: "%.0f", perSecond(push.median))) changes/s, median (min \(String(format: "%.0f", perSecond(push.max))), max \(String(format: "%.0f", perSecond(push.min)))), one change a request
                """)
        }
        return 0
    } catch {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        return 1
    }
}

/// Runs async work from the synchronous command line and waits for it.
private func blocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    nonisolated(unsafe) var result: Result<T, any Error>?
    let done = DispatchSemaphore(value: 0)
    Task {
        do { result = .success(try await work()) } catch { result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try result!.get()
}
