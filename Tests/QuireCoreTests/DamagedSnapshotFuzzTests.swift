import Testing
import QuireTestSupport
@testable import QuireCore

/// A snapshot damaged inside a valid checksum (a faulty disk under a
/// recomputed frame, or a hostile file handed to `quire inspect`) is
/// refused with an error that says what is wrong, or loads a document
/// Quire can go on with: one whose own snapshot, before and after an edit,
/// loads again to the same bytes. A store writes a loaded document's
/// snapshot back; one that then failed to load would lose the note.
///
/// `HostileInputTests` checks that such damage never traps; this checks
/// what a damaged snapshot that loads leaves behind. Run longer with
/// `QUIRE_FUZZ_SEEDS=5000 swift test --filter DamagedSnapshotFuzz`.
@Suite struct DamagedSnapshotFuzzTests {
    @Test func aDamagedSnapshotIsRefusedOrLoadsADocumentWhoseSnapshotsLoadAgain() throws {
        let seeds = fuzzSeedCount(default: 30)
        for (name, source) in try DamagedBundleFuzzTests.sources() {
            for includeHistory in [false, true] {
                let context = "\(name), \(includeHistory ? "with" : "without") history"
                let snapshot = source.encodeSnapshot(includeHistory: includeHistory)
                let body = Array(try Envelope.open(snapshot, magic: SnapshotEncoding.magic, name: name,
                                                   version: SnapshotEncoding.version).remainingBytes)
                var loadedCount = 0
                for seed in 1...UInt64(seeds) {
                    var rng = SeededGenerator(seed: seed)
                    let damaged = Envelope.seal(magic: SnapshotEncoding.magic, version: SnapshotEncoding.version,
                                                body: DamagedBundleFuzzTests.damage(body, mostlyAt: Array(body.indices), using: &rng))
                    let loaded: Document
                    do {
                        loaded = try Document(snapshot: damaged, replica: ReplicaID(9))
                    } catch {
                        #expect(!"\(error)".isEmpty, "\(context), seed \(seed): a refusal without a reason")
                        continue
                    }
                    loadedCount += 1
                    try Self.requireSnapshotLoadsAgain(loaded, includeHistory: includeHistory, "\(context), seed \(seed)")
                    var edited = loaded
                    // An edit may be refused (a damaged clock at its limit); what it must not do is trap.
                    if (try? edited.transact({ tx in try tx.put(.root, key: "after", .int(1)) })) != nil {
                        try Self.requireSnapshotLoadsAgain(edited, includeHistory: includeHistory, "\(context), seed \(seed), edited")
                    }
                    _ = try? loaded.allChanges()
                }
                // Damage to a count or a tag mostly breaks the snapshot; enough must load for the check to mean something.
                #expect(loadedCount >= seeds / 20, "\(context): only \(loadedCount) of \(seeds) damaged snapshots loaded")
            }
        }
    }

    /// Requires `document`'s snapshot to load, and the loaded document to
    /// write the same snapshot again.
    static func requireSnapshotLoadsAgain(_ document: Document, includeHistory: Bool, _ context: String) throws {
        let written = document.encodeSnapshot(includeHistory: includeHistory)
        let reloaded: Document
        do { reloaded = try Document(snapshot: written, replica: ReplicaID(9)) } catch {
            Issue.record("\(context): its own snapshot does not load: \(error)")
            return
        }
        try #require(reloaded.encodeSnapshot(includeHistory: includeHistory) == written, "\(context): its snapshot loads to another")
    }
}
