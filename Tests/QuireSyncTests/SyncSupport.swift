import Foundation
import QuireTestSupport
import Quire
import QuireStore
import QuireSync
import Synchronization

/// A transport to a `SyncService` in memory that misbehaves like a network,
/// from a seed so that a failure repeats: it drops requests, drops answers
/// after the server did the work ("committed but the response was lost"),
/// delivers requests twice, and delivers a stale duplicate of an earlier
/// request later (reordering). Each loss is reported as `.unreachable`,
/// as HTTP reports a timeout.
final class FaultyTransport: SyncTransport {
    let service: any SyncService
    let access: Access
    private let state: Mutex<(random: SeededGenerator, earlier: [[UInt8]])>
    /// Chance of each fault, per request.
    nonisolated(unsafe) var dropRequest = 0.1, dropAnswer = 0.1, duplicate = 0.1, replayOld = 0.1

    init(service: any SyncService, access: Access = .unrestricted, seed: UInt64) {
        self.service = service
        self.access = access
        state = Mutex((SeededGenerator(seed: seed), []))
    }

    private func roll(_ chance: Double) -> Bool {
        state.withLock { Double.random(in: 0..<1, using: &$0.random) < chance }
    }

    func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
        if roll(replayOld), let old = state.withLock({ $0.earlier.randomElement(using: &$0.random) }) {
            _ = await service.respond(toMessage: old, access: access)
        }
        state.withLock { $0.earlier.append(request) }
        if roll(dropRequest) { throw .unreachable("request lost") }
        var answer = await service.respond(toMessage: request, access: access)
        if roll(duplicate) { answer = await service.respond(toMessage: request, access: access) }
        if roll(dropAnswer) { throw .unreachable("answer lost after the server committed") }
        return answer
    }
}

/// Syncs until a sync completes; a lost message only makes it try again,
/// as `quire sync` would be run again.
@discardableResult
func syncUntilDone(_ client: SyncClient, attempts: Int = 200) async throws -> SyncClient.Report {
    for _ in 1..<attempts {
        do { return try await client.sync() } catch {
            guard case .unreachable = error.kind else { throw error }
        }
    }
    return try await client.sync()
}


/// Writes `key = value` in a new change.
func write(_ store: DocumentStore, _ id: DocumentID, _ key: String, _ value: Int64) throws {
    try store.edit(id) { tx in try tx.put(.root, key: key, .int(value)) }
}

/// A store in memory holding documents `ids`, each made with `key = value`.
func storeHolding(_ ids: [DocumentID], _ key: String, _ value: Int64) throws -> DocumentStore {
    let store = try DocumentStore.inMemory()
    for id in ids {
        try store.create(id: id)
        try write(store, id, key, value)
    }
    return store
}

/// The value a document holds at `key`.
func value(_ store: DocumentStore, _ id: DocumentID, _ key: String) throws -> Value? {
    try store.read(id) { doc in try doc.get(.root, key: key) }
}

/// Hands requests to a `SyncService` in memory, which decodes them within
/// `limits`, as a server configured with them does.
struct LimitedTransport: SyncTransport {
    let service: any SyncService
    let limits: SyncMessage.Limits

    func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
        await service.respond(toMessage: request, access: .unrestricted, limits: limits)
    }
}

/// Overwrites every logged change of document `id` in the file at `path`
/// with bytes that decode as no change, as a disk's damage leaves them:
/// rows of a store's `changes`, or with `serverLog` of a server's `log`.
/// Nothing may have the file open.
func damageTheRows(of id: DocumentID, inFileAt path: String, serverLog: Bool = false) throws {
    let database = try Database(path: path)
    defer { database.close() }
    try database.write { db in
        try db.execute(sql: serverLog ? "UPDATE log SET data = x'00112233' WHERE document_id = ?"
                           : "UPDATE changes SET data = x'00112233' WHERE document = (SELECT number FROM documents WHERE id = ?)",
                       arguments: [.text(id.rawValue)])
    }
}
