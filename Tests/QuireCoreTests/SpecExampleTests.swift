import Testing
@testable import QuireCore

/// The worked example of `Specs/encoding.md` ("A bundle byte by byte"),
/// assembled from the spec's tables by hand and read with the decoder, so
/// that the spec and the code cannot drift apart unnoticed.
@Suite struct SpecExampleTests {
    static let replica = ReplicaID(0x0102_0304_0506_0708)

    /// The body of the example, as the spec lists it.
    static let body: [UInt8] = [
        0x01, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // replica table
        0x01, 0x01, 0x74,  // key table: "t"
        0x01,  // one change
        0x02, 0x05, 0x00,  //  0 changeReplica: index 0
        0x02, 0x05, 0x00,  //  1 changeCounter: 1 - (1 + 0)
        0x02, 0x05, 0x00,  //  2 changeLamport: 1 - (1 + 0)
        0x02, 0x05, 0x01,  //  3 parentCount: no explicit parent
        0x00, 0x00,  //  4, 5 parentReplica, parentCounter
        0x03, 0x05, 0xD0, 0x0F,  //  6 changeTime: 1000, zigzag 2000
        0x02, 0x05, 0x02,  //  7 operationCount
        0x03, 0x09, 0x00, 0x02,  //  8 operationKind: put, insert text
        0x03, 0x09, 0x00, 0x01,  //  9 objectReplica: the root, replica index 0 + 1
        0x03, 0x09, 0x00, 0x01,  // 10 objectCounter
        0x02, 0x05, 0x00,  // 11 originMode: head
        0x00, 0x00,  // 12, 13 originReplica, originCounter
        0x02, 0x05, 0x02,  // 14 textLength
        0x00, 0x00, 0x00, 0x00,  // 15-18 valueCount, deleteReplica, deleteCounter, deleteLength
        0x02, 0x05, 0x00,  // 19 key: "t"
        0x02, 0x05, 0x00,  // 20 predCount
        0x00, 0x00, 0x00,  // 21-23 predReplica, predCounter, incrementDelta
        0x02, 0x68, 0x69,  // text content: "hi"
        0x02, 0x08, 0x02,  // values: a new text
    ]

    static func framed(_ body: [UInt8]) -> [UInt8] {
        let front = Array("QCHG".utf8) + [0x05, UInt8(body.count)] + body
        let crc = CRC32.checksum(front)
        return front + (0..<4).map { UInt8(truncatingIfNeeded: crc >> (8 * $0)) }
    }

    static let change = Change(
        id: OpID(replica: replica, counter: 1), lamport: 1, parents: [], time: 1000,
        operations: [
            .put(object: .root, key: "t", value: .object(.text), pred: []),
            .insert(object: ObjectID(OpID(replica: replica, counter: 1)), origin: nil, content: .text("hi")),
        ])

    @Test func theSpecsExampleBundleDecodesAsTheSpecSays() throws {
        #expect(try ChangeEncoding.decode(Self.framed(Self.body)) == [Self.change])
        // The writer writes exactly these bytes: shortest varints, a value
        // that comes once as a literal run.
        #expect(ChangeEncoding.encode([Self.change]) == Self.framed(Self.body))
    }

    /// `maxOperationWidth` bounds what the input's bytes do not: a text
    /// insert that holds its text is bounded by them instead.
    @Test func aTextInsertHoldingItsTextIsNotHeldToTheWidthLimit() throws {
        let narrow = DecodingLimits(maxOperationWidth: 1)
        #expect(try ChangeEncoding.decode(Self.framed(Self.body), limits: narrow) == [Self.change])
        let delete = Change(id: OpID(replica: Self.replica, counter: 4), lamport: 4, parents: [Self.change.lastID], operations: [
            .delete(object: ObjectID(Self.change.id), target: IDRun(start: OpID(replica: Self.replica, counter: 2), length: 2)),
        ])
        #expect(throws: DecodingError.invalid("a delete of 2 elements exceeds the limit")) {
            try ChangeEncoding.decode(ChangeEncoding.encode([Self.change, delete]), limits: narrow)
        }
    }

    @Test func aPaddedVarintReadsAsItsValue() throws {
        // `81 00` for 1, the change count.
        var padded = Self.body
        padded.replaceSubrange(12...12, with: [0x81, 0x00])
        #expect(try ChangeEncoding.decode(Self.framed(padded)) == [Self.change])
        // Ten bytes at most, the tenth 0 or 1.
        var tenBytes = ByteReader([UInt8](repeating: 0xFF, count: 9) + [0x01])
        #expect(try tenBytes.readVarint() == .max)
        for tooLong: [UInt8] in [[UInt8](repeating: 0xFF, count: 9) + [0x02], [UInt8](repeating: 0x80, count: 10) + [0x00]] {
            var reader = ByteReader(tooLong)
            #expect(throws: DecodingError.invalid("a number does not fit in 64 bits")) { try reader.readVarint() }
        }
    }
}
