import Foundation
import Quire

/// `note new --request-id KEY`: the key a script gives a note it creates,
/// so that running the command again (it was killed after the note was
/// committed, before its id was printed) finds that note instead of
/// making a second one.
///
/// The key is kept in the note's id, committed with the note: a UUIDv7
/// (so listings keep creation order) whose last 60 random bits are a hash
/// of the key and the store's replica id. Finding it reads only the ids of
/// the store; a note another replica made with the same key (synced in)
/// is another store's request, and is not found. The store looks for it
/// in the transaction that would make the note, so that of two runs at
/// the same time with one key, one makes it and the other prints its id.
struct NoteRequestKey {
    /// The end of the id of the note made with this key: the last 3 hex
    /// digits of its fourth group, a dash, and its fifth group.
    private let idSuffix: String

    init(_ key: String, replica: ReplicaID) {
        // FNV-1a (64 bits): a hash that is the same in every process, as Swift's `Hasher` is not.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in withUnsafeBytes(of: replica.rawValue.littleEndian, Array.init) + Array(key.utf8) {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash & (1 << 60 - 1), radix: 16)
        let digits = String(repeating: "0", count: 15 - hex.count) + hex
        idSuffix = digits.prefix(3) + "-" + digits.dropFirst(3)
    }

    /// A new note id for the key.
    func newID() -> DocumentID {
        DocumentID(rawValue: DocumentID.generate().rawValue.dropLast(idSuffix.count) + idSuffix)!
    }

    /// Whether `id` is of a note made with this key.
    func madeIt(_ id: DocumentID) -> Bool {
        id.rawValue.utf8.count == 36 && id.rawValue.hasSuffix(idSuffix)
    }
}
