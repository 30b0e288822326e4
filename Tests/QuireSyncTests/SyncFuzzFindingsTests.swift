import Quire
import QuireSync
import Testing

/// What `SyncMessageFuzzTests` found, each as a plain test of its own.
@Suite struct SyncFuzzFindingsTests {
    /// A change of one replica, taken from another document (by a hostile
    /// or broken peer) and pushed under this one, waits for a parent the
    /// document never gets. When the replica's own change of that id
    /// arrives, it applies, and the waiting one, which can never apply, is
    /// dropped: the honest push used to be refused as a conflict (409) and
    /// rejected for good, and the peer never converged (seed 159).
    @Test func aWaitingChangeUnderATakenIDDoesNotBlockTheChangeOfThatID() async throws {
        let bob = try DocumentStore.inMemory(), alice = try DocumentStore.inMemory(), served = try DocumentStore.inMemory()
        _ = try bob.createDocument(id: "other") { tx in try tx.put(.root, key: "by", .string("bob")) }
        try alice.create(id: "other")
        try alice.apply("other", try bob.changes("other"))
        try write(alice, "other", "colour", 1)
        // Alice's first change of "other", whose parent is Bob's.
        let foreign = try alice.changes("other", since: bob.versionVector("other"))
        _ = try alice.createDocument(id: "notes") { tx in try tx.put(.root, key: "colour", .int(2)) }
        let peer = PeerSyncService(store: served)
        let hostile = SyncRequest(cursor: nil, documents: [SyncDocument(id: "notes", version: VersionVector(), changes: foreign)])
        guard case .response = try SyncMessage.decode(await peer.respond(toMessage: SyncMessage.request(hostile).encoded(), access: .unrestricted)) else {
            Issue.record("the hostile push was refused: nothing waits")
            return
        }
        let report = try await SyncClient(store: alice, peer: "via:peer", transport: FaultyTransport.sound(peer)).sync()
        #expect(report.rejected.isEmpty)
        #expect(try served.versionVector("notes") == alice.versionVector("notes"))
        #expect(try value(served, "notes", "colour") == .scalar(.int(2)))
    }

    /// A refusal as a hostile or broken peer may send it, its retry delay
    /// at the top of the varint's range, decodes to a delay clamped to
    /// `Int.max`, and encodes again (it trapped adding 1; the fuzzer's
    /// forging of it in the damaged answers, within the first 40 seeds).
    @Test func aRefusalsRetryDelayOfAnySizeEncodesAgain() throws {
        var payload = ByteWriter()
        payload.writeVarint(503)
        payload.writeString("busy")
        payload.writeVarint(UInt64.max)
        let sent = Envelope.seal(magic: Array("QSYN".utf8), version: 1, body: [3, 0] + payload.bytes)
        let decoded = try SyncMessage.decode(sent)
        #expect(decoded == .failure(SyncFailure(status: 503, "busy", retryAfterSeconds: .max)))
        #expect(try SyncMessage.decode(decoded.encoded()) == decoded)
        let negative = SyncMessage.failure(SyncFailure(status: 429, "slow down", retryAfterSeconds: -5))
        #expect(try SyncMessage.decode(negative.encoded()) == .failure(SyncFailure(status: 429, "slow down", retryAfterSeconds: 0)))
    }
}

/// Found reading the code the fuzzer exercised.
@Suite struct ServerParkedChangeTests {
    /// A parked change whose id a logged change took since (a client that
    /// used its replica id twice) is dropped: it stayed parked for good,
    /// counted against `maxParkedPerDocument`, and the document's next
    /// push that parked a change was refused 413.
    @Test func aParkedChangeUnderATakenIDNoLongerCountsAgainstTheLimit() throws {
        let writer = try DocumentStore.inMemory()
        _ = try writer.createDocument(id: "other") { tx in try tx.put(.root, key: "k", .int(0)) }
        try write(writer, "other", "k", 1)
        _ = try writer.createDocument(id: "notes") { tx in try tx.put(.root, key: "k", .int(10)) }
        for value in 11...13 { try write(writer, "notes", "k", Int64(value)) }
        let notes = try writer.changes("notes"), other = try writer.changes("other")
        let log = try ServerLog(path: ":memory:")
        var limits = ServerLog.Limits()
        limits.maxParkedPerDocument = 1
        // The other document's second change, under the id of this one's second: it waits for the first.
        _ = try log.push([("notes", [other[1]])], by: .unrestricted, limits: limits)
        _ = try log.push([("notes", Array(notes[0...1]))], by: .unrestricted, limits: limits)
        // The fourth waits for the third: one parked change, within the limit.
        _ = try log.push([("notes", [notes[3]])], by: .unrestricted, limits: limits)
        #expect(try log.push([("notes", [notes[2]])], by: .unrestricted, limits: limits)["notes"] == writer.versionVector("notes"))
    }
}
