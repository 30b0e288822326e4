import Foundation
import JSONText
import Quire
import QuireBenchKit
import QuireSync

/// A fresh replica catching up with TRACE's document through the HTTP sync
/// server on loopback, the rate at which the server accepts changes from
/// concurrent clients, and the CPU a waiting client burns; medians over
/// `runs`. For `quire-bench sync` and `suite`.
func measureSync(tracePath: String, runs: Int) throws -> SyncFigures {
    guard case .sequential(let trace) = try EditingTrace.load(path: tracePath) else {
        throw UsageError(message: "sync needs a sequential trace")
    }
    let (changes, text) = try typedHistory(of: trace)
    let (server, log) = try syncServer(holding: changes)
    let http = HTTPServer(port: 0, handler: server.handle)
    try http.start()
    defer { http.stop() }
    let url = URL(string: "http://127.0.0.1:\(http.port)")!

    let (catchUp, report) = try measureCatchUp(from: url, expecting: trace.endContent, in: text, runs: runs)
    // Accepting, once over HTTP and once calling the server's HTTP handler
    // directly: the difference is the cost of the HTTP stack on both sides.
    let writers = 4, editsPerWriter = 500
    func pushRate(_ transport: any SyncTransport, _ name: String) throws -> Spread {
        try measurePushRate(through: transport, to: url, log: log, writers: writers, editsPerWriter: editsPerWriter, documentPrefix: name, runs: runs)
    }
    let push = try pushRate(HTTPSyncTransport(server: url, token: nil), "http")
    let pushInProcess = try pushRate(HandlerTransport(handler: server.handle), "direct")
    let waitSeconds = 1.0
    let longPollCPU = try measureLongPollCPU(at: url, waitSeconds: waitSeconds, runs: runs)
    return SyncFigures(
        changes: changes.count, catchUp: catchUp, catchUpBytes: report.bytesReceived, catchUpRounds: report.rounds,
        writers: writers, changesPerWriter: editsPerWriter, accepting: push, acceptingWithoutHTTP: pushInProcess,
        longPollCPU: longPollCPU, longPollSeconds: waitSeconds)
}

/// The changes of a document of one text, at root key `text`, into which
/// `trace` was typed, and that text's id.
private func typedHistory(of trace: SequentialTrace) throws -> (changes: [Change], text: ObjectID) {
    var document = Document(replica: ReplicaID(1))
    let text = try document.transact { tx in try tx.putObject(.root, key: "text", kind: .text) }
    try TraceReplay.type(trace, into: text, of: &document)
    return (try document.changes(since: VersionVector()), text)
}

/// A sync server, without tokens or a rate limit that a benchmark would
/// meet, whose log holds `changes` as document `paper`; and that log.
private func syncServer(holding changes: [Change]) throws -> (SyncServer, ServerLog) {
    let log = try ServerLog(path: ":memory:")
    var configuration = SyncServer.Configuration()
    configuration.requestsPerSecond = 1_000_000
    configuration.burst = 1_000_000
    let server = SyncServer(log: log, tokens: nil, configuration: configuration)
    // Pushed in parts: one push of a long history passes a push's limit on changes.
    for start in stride(from: 0, to: changes.count, by: 50_000) {
        _ = try log.push([("paper", Array(changes[start..<min(start + 50_000, changes.count)]))], by: .unrestricted, limits: .init())
    }
    return (server, log)
}

/// Catch-up: a fresh in-memory store pulls everything from the server at
/// `url`, after one warm-up, `runs` times; each must end with `expected`
/// in its `text`. The wall-clock times, and the last sync's report.
private func measureCatchUp(from url: URL, expecting expected: String, in text: ObjectID, runs: Int) throws -> (Spread, SyncClient.Report) {
    var samples: [UInt64] = []
    var caughtUp: SyncClient.Report?
    for _ in 0..<(runs + 1) {
        let store = try DocumentStore.inMemory()
        let client = SyncClient(store: store, peer: url.absoluteString, transport: HTTPSyncTransport(server: url, token: nil))
        let start = DispatchTime.now().uptimeNanoseconds
        caughtUp = try blocking { try await client.sync() }
        samples.append(DispatchTime.now().uptimeNanoseconds - start)
        guard try store.read("paper", { try $0.text(text) }) == expected else {
            throw UsageError(message: "the caught-up document differs from the trace's end content")
        }
    }
    return (Spread(nanoseconds: Array(samples.dropFirst()))!, caughtUp!)
}

/// Accepting: `writers` clients push `editsPerWriter` single-edit changes
/// each through `transport`, one change a request, to the server at `url`
/// whose log is `log`; each run with new stores and documents (named with
/// `documentPrefix`). The wall-clock times of the runs.
private func measurePushRate(through transport: any SyncTransport, to url: URL, log: ServerLog, writers: Int, editsPerWriter: Int,
                             documentPrefix: String, runs: Int) throws -> Spread {
    var samples: [UInt64] = []
    for run in 0..<runs {
        let ids = (0..<writers).map { DocumentID(rawValue: "\(documentPrefix)\(run)-writer\($0)")! }
        let stores = try ids.map { id in
            let store = try DocumentStore.inMemory()
            try store.create(id: id)
            for edit in 0..<editsPerWriter { try store.edit(id) { tx in try tx.put(.root, key: "k", .int(Int64(edit))) } }
            return store
        }
        let start = DispatchTime.now().uptimeNanoseconds
        try blocking {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for store in stores {
                    group.addTask {
                        var client = SyncClient(store: store, peer: url.absoluteString, transport: transport)
                        client.maxPushChanges = 1
                        _ = try await client.sync()
                    }
                }
                try await group.waitForAll()
            }
        }
        samples.append(DispatchTime.now().uptimeNanoseconds - start)
        for id in ids where log.version(id).operationCount != editsPerWriter {
            throw UsageError(message: "the server lacks changes of \(id)")
        }
    }
    return Spread(nanoseconds: samples)!
}

/// Waiting: a caught-up client long-polls the server at `url` for
/// `waitSeconds`, for news that does not come, over a new connection as
/// `quire sync --wait` makes, `runs` times. The server in this process
/// sleeps meanwhile, so the CPU is the client's: the CPU times.
private func measureLongPollCPU(at url: URL, waitSeconds: Double, runs: Int) throws -> Spread {
    let waiter = try DocumentStore.inMemory()
    _ = try blocking { try await SyncClient(store: waiter, peer: url.absoluteString, transport: HTTPSyncTransport(server: url, token: nil)).sync() }
    var cpuSamples: [UInt64] = []
    for _ in 0..<runs {
        let waiting = SyncClient(store: waiter, peer: url.absoluteString, transport: HTTPSyncTransport(server: url, token: nil))
        let start = processCPUTime()
        let report = try blocking { try await waiting.sync(waitSeconds: waitSeconds) }
        cpuSamples.append(processCPUTime() - start)
        guard report.received == 0 else { throw UsageError(message: "news came during the long-poll") }
    }
    return Spread(nanoseconds: cpuSamples)!
}

/// Nanoseconds of CPU time (user and system) every thread of this process has used.
private func processCPUTime() -> UInt64 {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let microseconds = [usage.ru_utime, usage.ru_stime].reduce(0) { $0 + UInt64($1.tv_sec) * 1_000_000 + UInt64($1.tv_usec) }
    return microseconds * 1000
}

/// `quire-bench sync`: prints what `measureSync` measures.
func runSyncBenchmark(tracePath: String, runs: Int, json: Bool) -> Int32 {
    do {
        let figures = try measureSync(tracePath: tracePath, runs: runs)
        let (catchUp, push, pushInProcess) = (figures.catchUp, figures.acceptedPerSecond, figures.acceptedPerSecondWithoutHTTP)
        func rate(_ spread: Spread) -> String {
            String(format: "%.0f changes/s, median (min %.0f, max %.0f)", spread.median, spread.min, spread.max)
        }

        if json {
            let line: JSONValue = .orderedObject([
                ("trace", .string(tracePath)), ("changes", .integer(figures.changes)), ("catchUpMedianMs", .double(catchUp.median)),
                ("catchUpBytes", .integer(figures.catchUpBytes)), ("catchUpRounds", .integer(figures.catchUpRounds)),
                ("bytesPerChange", .double(figures.bytesPerChange)), ("acceptedChangesPerSecond", .double(push.median)),
                ("acceptedChangesPerSecondWithoutHTTP", .double(pushInProcess.median)),
                ("longPollCPUMedianMs", .double(figures.longPollCPU.median)),
            ])
            print(line.compact)
        } else {
            print("""
                trace                        \(tracePath)
                changes                      \(figures.changes)
                catch-up, median (\(runs) runs)  \(String(format: "%.1f", catchUp.median)) ms (min \(String(format: "%.1f", catchUp.min)), max \(String(format: "%.1f", catchUp.max)))
                catch-up bytes received      \(figures.catchUpBytes) in \(figures.catchUpRounds) round trip(s)
                bytes on the wire per change \(String(format: "%.1f", figures.bytesPerChange))
                accepted from 4 clients      \(rate(push)), one change a request
                  the same without HTTP      \(rate(pushInProcess)) (the server's handler called directly)
                CPU in a \(figures.longPollSeconds.formatted()) s long-poll       \(String(format: "%.1f", figures.longPollCPU.median)) ms, median (min \(String(format: "%.1f", figures.longPollCPU.min)), max \(String(format: "%.1f", figures.longPollCPU.max)))
                """)
        }
        return 0
    } catch {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        return 1
    }
}

/// Hands requests straight to the server's HTTP handler, in process.
private struct HandlerTransport: SyncTransport {
    let handler: @Sendable (HTTPRequest) async -> HTTPResponse

    func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
        let response = await handler(HTTPRequest(method: "POST", path: "/v1/sync", body: request))
        guard response.status == 200 else {
            throw .refused(SyncFailure(status: response.status, String(decoding: response.body, as: UTF8.self)))
        }
        return response.body
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
