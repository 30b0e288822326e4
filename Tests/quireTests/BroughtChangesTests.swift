import Quire
@testable import quire
import Testing

/// The lines `quire sync` and `quire merge` print for what they brought.
@Suite struct BroughtChangesTests {
    /// A note something else was committed to while a sync's pages went in
    /// (`SyncClient.ChangedDocument.isInterleaved`) keeps its diff line,
    /// which then says that it shows those edits too; the others say nothing.
    @Test func aDiffSpanningEditsCommittedMeanwhileSaysSo() throws {
        let before = VersionVector([ReplicaID(1): 3]), after = VersionVector([ReplicaID(1): 3, ReplicaID(2): 5])
        let notes = [("0001", true), ("0002", false)].map { id, isInterleaved in
            BroughtChanges(id: DocumentID(rawValue: id)!, title: "Trip", isNew: false, versionBefore: before, versionAfter: after,
                           isRemoved: false, incoming: 2, isInterleaved: isInterleaved)
        }
        let lines = BroughtChanges.listing(notes, by: "sync", idLength: 4).split(separator: "\n").dropFirst()
        #expect(lines == ["  quire diff 0001 --from \(before) --to \(after)  # Trip (the diff also shows edits committed here during the sync)",
                          "  quire diff 0002 --from \(before) --to \(after)  # Trip"])
    }
}
