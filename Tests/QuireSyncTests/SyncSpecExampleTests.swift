import QuireCore
import QuireStore
import QuireSync
import Testing

/// The message layouts of `Specs/sync.md` ("Messages"), byte for byte:
/// what the encoder writes is what the spec says a peer must send, so a
/// change to either shows here.
@Suite struct SyncSpecExampleTests {
    /// The envelope around `body` (`encoding.md`): magic `QSYN`, version 1.
    static func sealed(_ body: [UInt8]) -> [UInt8] {
        Envelope.seal(magic: Array("QSYN".utf8), version: 1, body: body)
    }

    /// `kind 1 | flags 0 | cursor (log id u64 LE, seq varint) | wait ms (varint)
    /// | documents (varint) | id (string) | entries | (replica u64, counter varint)
    /// | bundles (varint) | after (string) | through (string)`.
    @Test func aRequestIsLaidOutAsTheSpecSays() throws {
        let request = SyncRequest(cursor: SyncCursor(logID: 0x0102, seq: 300), waitMilliseconds: 1500,
                                  documents: [SyncDocument(id: "n", version: [ReplicaID(5): 3])],
                                  range: DocumentRange(after: "a", through: nil))
        let body: [UInt8] = [1, 0]
            + [0x02, 0x01, 0, 0, 0, 0, 0, 0] + [0xAC, 0x02]  // cursor: log id 0x0102, seq 300
            + [0xDC, 0x0B]  // wait 1500 ms
            + [1] + [1, 0x6E]  // one document, "n"
            + [1] + [5, 0, 0, 0, 0, 0, 0, 0] + [3]  // one entry: replica 5, counter 3
            + [0]  // no bundles
            + [1, 0x61] + [0]  // range: after "a", through open (empty)
        #expect(SyncMessage.request(request).encoded() == Self.sealed(body))
        #expect(try SyncMessage.decode(Self.sealed(body)) == .request(request))

        // Without a range, the request ends after its documents (as before ranges).
        let unranged = SyncRequest(cursor: nil, documents: [])
        #expect(SyncMessage.request(unranged).encoded() == Self.sealed([1, 0] + [UInt8](repeating: 0, count: 9) + [0, 0]))
    }

    /// `kind 2 | flags 0 | cursor | flags (1 more, 2 cursor reset) | documents`.
    @Test func aResponseIsLaidOutAsTheSpecSays() throws {
        let response = SyncResponse(cursor: SyncCursor(logID: 7, seq: 9), more: true, cursorReset: true, documents: [])
        let body: [UInt8] = [2, 0] + [7, 0, 0, 0, 0, 0, 0, 0, 9] + [3] + [0]
        #expect(SyncMessage.response(response).encoded() == Self.sealed(body))
        #expect(try SyncMessage.decode(Self.sealed(body)) == .response(response))
    }

    /// `kind 3 | flags 0 | status (varint) | message (string) | retry-after
    /// seconds + 1 (varint, 0 none)`; a negative delay is sent as 0 s.
    @Test func aFailureIsLaidOutAsTheSpecSays() throws {
        let failure = SyncFailure(status: 413, "x", retryAfterSeconds: 2)
        #expect(SyncMessage.failure(failure).encoded() == Self.sealed([3, 0, 0x9D, 0x03, 1, 0x78, 3]))
        #expect(try SyncMessage.decode(Self.sealed([3, 0, 0x9D, 0x03, 1, 0x78, 3])) == .failure(failure))
        #expect(SyncMessage.failure(SyncFailure(status: 413, "x")).encoded() == Self.sealed([3, 0, 0x9D, 0x03, 1, 0x78, 0]))
        #expect(SyncMessage.failure(SyncFailure(status: 413, "x", retryAfterSeconds: -4)).encoded()
                == Self.sealed([3, 0, 0x9D, 0x03, 1, 0x78, 1]))
        #expect(try SyncMessage.decode(Self.sealed([3, 0, 0x9D, 0x03, 1, 0x78, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]))
                == .failure(SyncFailure(status: 413, "x", retryAfterSeconds: Int.max)))
    }

    /// `kind 4 | flags 0 | versions (string)`, decimal, in order, separated
    /// by commas (stdio's statement of the bundle versions a side reads); a
    /// space around a number is taken. A kind past 4 is refused as unknown,
    /// as peers before kind 4 refuse it.
    @Test func aStatementOfBundleVersionsIsLaidOutAsTheSpecSays() throws {
        let statement: [UInt8] = [4, 0, 5] + Array("1,3,5".utf8)
        #expect(SyncMessage.bundleVersions([5, 1, 3]).encoded() == Self.sealed(statement))
        #expect(try SyncMessage.decode(Self.sealed(statement)) == .bundleVersions([1, 3, 5]))
        #expect(try SyncMessage.decode(Self.sealed([4, 0, 6] + Array(" 3 , 5".utf8))) == .bundleVersions([3, 5]))
        #expect(throws: SyncMessage.DecodeError.malformed("invalid data: unknown message kind")) {
            try SyncMessage.decode(Self.sealed([5, 0]))
        }
    }

    /// Flag bit 0: the payload is one zstd frame, used from 1 KiB of
    /// payload when it compresses smaller; a smaller payload goes as it is.
    @Test func aPayloadOfOneKiBOrMoreIsCompressedWhenThatIsSmaller() throws {
        /// A failure's payload: status 400, a message of `count` letters, no delay.
        func payload(_ count: Int) -> [UInt8] {
            var writer = ByteWriter()
            writer.writeVarint(400)
            writer.writeString(String(repeating: "a", count: count))
            writer.writeVarint(0)
            return writer.bytes
        }
        func encoded(_ count: Int) -> [UInt8] {
            SyncMessage.failure(SyncFailure(status: 400, String(repeating: "a", count: count))).encoded()
        }
        #expect(payload(1019).count == 1024)
        #expect(encoded(1018) == Self.sealed([3, 0] + payload(1018)))
        #expect(try encoded(1019) == Self.sealed([3, 1] + Zstd.compress(payload(1019), level: 1)))
        #expect(try SyncMessage.decode(encoded(1019)) == .failure(SyncFailure(status: 400, String(repeating: "a", count: 1019))))
    }
}
