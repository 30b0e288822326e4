import Quire
import QuireCore
import QuireSync
@testable import QuireBenchKit
import Testing

/// The history as Quire's sync sends it (`SentHistory`), against the
/// answer a real peer (`PeerSyncService`) gives a fresh replica.
@Suite struct SentHistoryTests {
    /// A sentence typed 60 times, one transaction each: a history above
    /// sync's compression threshold, which compresses well.
    static let trace: EditingTrace = {
        let sentence = "the quick brown fox jumps over the lazy dog. "
        let patches = (0..<60).map { #"{"patches": [[\#($0 * sentence.count), 0, "\#(sentence)"]]}"# }
        let json = #"{"endContent": "\#(String(repeating: sentence, count: 60))", "txns": [\#(patches.joined(separator: ", "))]}"#
        return try! EditingTrace.parse(json: Array(json.utf8))
    }()

    @Test func theFigureIsTheMessageAPeerSendsAFreshReplica() async throws {
        guard case .sequential(let sequential) = Self.trace else { Issue.record("not a sequential trace"); return }
        let document = try TraceReplay.replay(sequential).document
        let history = try document.encodeChanges()

        // A peer holding the document answers a replica that holds nothing and
        // reads what this build reads (as its HTTP transport states), so the
        // bundles go as stored, not in version 3 for an older client.
        let peer = try DocumentStore.inMemory()
        #expect(try peer.applyEach(bundles: [(SentHistory.documentID, [history])]).refused.isEmpty)
        let request = SyncRequest(cursor: nil, documents: [], readsBundleVersions: Set(ChangeEncoding.readVersions))
        let answer = try await PeerSyncService(store: peer).respond(to: request, access: .unrestricted)
        #expect(answer.documents.map(\.id) == [SentHistory.documentID] && !answer.more)
        let message = SyncMessage.response(answer).encoded()

        #expect(SentHistory.messageBytes(of: document, history: history, answeredBy: peer.replicaID) == message.count)
        // The suite's figure, from the history its replay encoded, is the same
        // message from a peer of a fixed id.
        #expect(TraceMeasurement.measure(trace: Self.trace, named: "t", runs: 1).sentHistoryBytes
            == SentHistory.messageBytes(of: document, history: history, answeredBy: SentHistory.answeringPeer))
        // Sync compressed it: the message is smaller than the raw history it carries.
        #expect(message.count < history.count)
    }
}
