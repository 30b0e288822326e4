import Quire
import QuireCore
import QuireStore
import QuireSync

/// What a document's whole history costs on the network: the sync message
/// that carries it to a fresh replica, made by QuireSync's own encoding, so
/// compressed with zstd as sync compresses a payload (`Specs/sync.md`,
/// "Messages"). `encodeChanges()` alone is the raw bundle inside it, which
/// Quire neither sends nor stores as it is.
enum SentHistory {
    /// The id the message names the document by: as long as a typical note's.
    static let documentID: DocumentID = "benchmark-document"
    /// The answering peer's replica id, which the answer's cursor carries:
    /// full-width, as the random ids stores take (a small one compresses
    /// better than any real one).
    static let answeringPeer = ReplicaID(0x9E37_79B9_7F4A_7C15)

    /// The bytes of the answer `peer` sends a fresh replica of `document`
    /// (`PeerSyncService`: its cursor, the document's version vector and its
    /// whole history as one bundle), given `history`, the document's
    /// `encodeChanges()`. That is byte for byte the bundle sync makes of the
    /// same changes (`SyncDocument(id:version:changes:)`, checked by
    /// QuireCore's HistoryEncodingTests). A peer or server pages
    /// its answers at 4 MiB of bundles, so a longer history (B3.3's 7.8 MB,
    /// B4x100's) goes in several messages, each compressed on its own; one
    /// message of it is still valid (payloads up to 64 MiB are accepted).
    static func messageBytes(of document: Document, history: [UInt8], answeredBy peer: ReplicaID = answeringPeer) -> Int {
        let sent = SyncDocument(id: documentID, version: document.versionVector, bundles: [history])
        let answer = SyncResponse(cursor: SyncCursor(logID: peer.rawValue, seq: 0), documents: [sent])
        return SyncMessage.response(answer).encoded().count
    }
}
