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
/// the store, and takes the hash under each id the store has made changes
/// under: a retry after `sync --take-theirs` gave the store a new one finds
/// the note made under the old. A note another replica made with the same
/// key (synced in) is another store's request, and is not found. The store
/// looks for it in the transaction that would make the note, so that of
/// two runs at the same time with one key, one makes it and the other
/// prints its id.
struct NoteRequestKey {
    /// The end of the id of the note made with this key now: the last 3
    /// hex digits of its fourth group, a dash, and its fifth group.
    private let idSuffix: String
    /// The ends of the ids made with this key under any of the store's ids.
    private let ownIDSuffixes: Set<String>

    /// The key `key` of a store writing under `replica`, which made
    /// changes under `ownReplicas` too (`DocumentStore.ownReplicaIDs`).
    init(_ key: String, replica: ReplicaID, ownReplicas: Set<ReplicaID>) {
        idSuffix = Self.idSuffix(of: key, replica: replica)
        ownIDSuffixes = Set(ownReplicas.union([replica]).map { Self.idSuffix(of: key, replica: $0) })
    }

    private static func idSuffix(of key: String, replica: ReplicaID) -> String {
        // FNV-1a (64 bits): a hash that is the same in every process, as Swift's `Hasher` is not.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in withUnsafeBytes(of: replica.rawValue.littleEndian, Array.init) + Array(key.utf8) {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash & (1 << 60 - 1), radix: 16)
        let digits = String(repeating: "0", count: 15 - hex.count) + hex
        return digits.prefix(3) + "-" + digits.dropFirst(3)
    }

    /// A new note id for the key.
    func newID() -> DocumentID {
        DocumentID(rawValue: DocumentID.generate().rawValue.dropLast(idSuffix.count) + idSuffix)!
    }

    /// Whether `id` is of a note this store made with this key.
    func madeIt(_ id: DocumentID) -> Bool {
        id.rawValue.utf8.count == 36 && ownIDSuffixes.contains(String(id.rawValue.suffix(idSuffix.count)))
    }
}
