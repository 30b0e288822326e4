import Testing
import QuireTestSupport
@testable import QuireCore

/// The run-length columns of change bundles (`Specs/encoding.md`,
/// "column"): repeats as runs, the rest as literal runs since version 3,
/// runs of the last repeated value without it since version 5, and every
/// run a `(length, value)` pair in versions 1 and 2, which are still read.
@Suite struct ColumnFormatTests {
    @Test func varintSizeIsWhatWriteVarintWrites() {
        for bits in 0...64 {
            for value in [bits == 64 ? UInt64.max : (UInt64(1) << bits) - 1, bits == 64 ? 0 : UInt64(1) << bits] {
                var writer = ByteWriter()
                writer.writeVarint(value)
                #expect(ByteWriter.varintSize(value) == writer.bytes.count, "\(value)")
            }
        }
    }

    @Test func aVarintReadsBackWhateverItsSize() throws {
        // One, two (read inline) and three bytes, on either side of each size.
        let values: [UInt64] = [0, 1, 127, 128, 129, 255, 256, 16_383, 16_384, 2_097_151, 2_097_152, .max]
        var writer = ByteWriter()
        for value in values { writer.writeVarint(value) }
        var reader = ByteReader(writer.bytes)
        for value in values { #expect(try reader.readVarint() == value) }
        #expect(reader.isAtEnd)
        // A varint cut after its first byte; one of three bytes.
        for bytes: [UInt8] in [[0x80], [0xFF]] {
            var cut = ByteReader(bytes)
            #expect(throws: DecodingError.truncated("the clock")) { try cut.readVarint("the clock") }
        }
        var spanning = ByteReader([0x80, 0x80, 0x01])
        #expect(try spanning.readVarint() == 1 << 14)
    }

    @Test func aColumnOfVarintsIsEachOneWritten() {
        // Past several of the chunks `writeVarints` fills, of every size.
        let values = (0..<5_000).map { UInt64(1) << ($0 % 64) &- UInt64($0 % 3) }
        var column = ByteWriter(), oneByOne = ByteWriter()
        column.writeByte(9)
        oneByOne.writeByte(9)
        column.writeVarints(count: values.count) { values[$0] }
        for value in values { oneByOne.writeVarint(value) }
        #expect(column.bytes == oneByOne.bytes)
    }

    @Test func gatheredWritesAreTheBytesWrittenStraight() {
        // Small writes, byte strings short and long (long ones go to the
        // writer whole) and a sequence that is not contiguous, past several
        // of the chunks `writeGathered` fills; the writer used in between.
        let values: [NewValue?] = [
            nil, .scalar(.null), .scalar(.bool(true)), .scalar(.int(-300)), .scalar(.double(2.5)), .scalar(.string("name")),
            .scalar(.string(String(repeating: "é", count: 2_100))), .scalar(.bytes([1, 2, 3])), .object(.list),
        ]
        func write(step: Int, to sink: inout some ByteSink) {
            sink.writeVarint(UInt64(1) << UInt64(step % 64) &- UInt64(step % 3))
            sink.writeByte(UInt8(truncatingIfNeeded: step))
            sink.writeSigned(Int64(step) - 500)
            sink.writeString(String(repeating: step % 2 == 0 ? "é" : "a", count: step % 300))
            sink.writeValue(values[step % values.count])
            sink.writeData([UInt8](repeating: UInt8(truncatingIfNeeded: step), count: step * 37 % 5_000))
            sink.writeBytes((0..<step % 20).lazy.map { UInt8($0) })
            sink.writeUInt64(UInt64(step) &* 0x9E37_79B9_7F4A_7C15)
        }
        var straight = ByteWriter(), gathered = ByteWriter()
        straight.writeByte(9)
        gathered.writeByte(9)
        for step in 0..<2_000 {
            write(step: step, to: &straight)
            if step % 500 == 0 { straight.writeByte(0xEE) }
        }
        gathered.writeGathered { sink in
            for step in 0..<2_000 {
                write(step: step, to: &sink)
                if step % 500 == 0 { sink.withWriter { $0.writeByte(0xEE) } }
            }
        }
        #expect(gathered.bytes.count == straight.bytes.count)
        #expect(gathered.bytes == straight.bytes)
    }

    @Test(arguments: [0, 1, 127, 128, 16_383, 16_384, 70_000])
    func aBodyWrittenInPlaceIsSealedAsOneGivenWhole(size: Int) throws {
        // The length goes into room left for the estimate's, and the body
        // moves if its own takes another size: the same bytes as sealing a
        // finished body, whatever the varints' sizes.
        let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let whole = Envelope.seal(magic: ChangeEncoding.magic, version: 3, body: body)
        for estimate in [0, size, size * 2] {
            let inPlace = Envelope.seal(magic: ChangeEncoding.magic, version: 3, bodySize: .about(estimate)) { $0.writeBytes(body); return [] }
            #expect(inPlace == whole)
        }
        #expect(Envelope.seal(magic: ChangeEncoding.magic, version: 3, bodySize: .exactly(size)) { $0.writeBytes(body); return [] } == whole)
        // A sealed piece inside the body, which the checksum skips, stays
        // where it is said to be when the body moves.
        let piece = Envelope.seal(magic: ChangeEncoding.magic, version: 3, body: Array(body.prefix(100)))
        let withPiece = Envelope.seal(magic: ChangeEncoding.magic, version: 3, body: [7] + piece + body)
        for estimate in [0, size, size * 2] {
            let inPlace = Envelope.seal(magic: ChangeEncoding.magic, version: 3, bodySize: .about(estimate)) { writer in
                writer.writeByte(7)
                writer.writeBytes(piece)
                let end = writer.bytes.count
                writer.writeBytes(body)
                return [end - piece.count..<end]
            }
            #expect(inPlace == withPiece)
        }
        let reader = try Envelope.open(whole, magic: ChangeEncoding.magic, name: "a body", version: 3)
        #expect(Array(reader.remainingBytes) == body)
        #expect(whole.count == 4 + 1 + ByteWriter.varintSize(UInt64(size)) + size + 4)
    }

    @Test func repeatsAreRunsAndValuesThatComeOnceAreLiteralRuns() throws {
        var writer = ColumnWriter<LiteralRunColumns>()
        for value: UInt64 in [5, 5, 5, 1, 2, 3, 3, 9, 300] { writer.append(value) }
        writer.append(7, count: 4)
        // A header is the run's length shifted left, its low bit set for a literal run.
        let expected: [[UInt8]] = [
            [3 << 1, 5],                  // 5 three times
            [2 << 1 | 1, 1, 2],           // 1, 2 once each
            [2 << 1, 3],                  // 3 twice
            [2 << 1 | 1, 9, 0xAC, 0x02],  // 9, 300 once each
            [4 << 1, 7],                  // 7 four times
        ]
        writer.finish()
        #expect(Array(writer.written) == expected.flatMap { $0 })

        var long = ColumnWriter<LiteralRunColumns>()
        for value: UInt64 in 0..<64 { long.append(value) }
        long.append(99, count: 2)
        long.finish()
        #expect(Array(long.written) == [0x81, 0x01] + (0..<64).map { UInt8($0) } + [2 << 1, 99])
    }

    /// A version's writer writes the column form its layout says: each
    /// names that form as a type, for its `ColumnWriter`s.
    @Test func eachWrittenVersionNamesTheColumnFormOfItsLayout() {
        #expect(ChangeEncoding.Sent.Columns.form == ChangeEncoding.Sent.layout.columnForm)
        #expect(ChangeEncoding.ElidedText.Columns.form == ChangeEncoding.ElidedText.layout.columnForm)
        #expect(ChangeEncoding.ForOlderReaders.Columns.form == ChangeEncoding.ForOlderReaders.layout.columnForm)
    }

    @Test func whatTheWriterWritesReadsBackValueByValue() throws {
        try writtenColumnsReadBack(ChangeEncoding.ElidedText.self)
        try writtenColumnsReadBack(ChangeEncoding.Sent.self)
    }

    /// Random columns written in the form of `Version` read back value by value.
    func writtenColumnsReadBack<Version: ChangeEncoding.WrittenVersion>(_: Version.Type) throws {
        let form = Version.layout.columnForm
        var rng = SeededGenerator(seed: 11)
        for _ in 0..<200 {
            // Short alphabets make runs, long ones literals; both mixed.
            let alphabet = UInt64.random(in: 1...4, using: &rng) == 1 ? UInt64(1) << 40 : UInt64.random(in: 1...6, using: &rng)
            // Up to 200: a literal run of 64 or more needs a header of two bytes.
            let values = (0..<Int.random(in: 0...200, using: &rng)).map { _ in UInt64.random(in: 0..<alphabet, using: &rng) }
            var writer = ColumnWriter<Version.Columns>()
            for value in values { writer.append(value) }
            writer.finish()
            let bytes = Array(writer.written)
            // The same values written from room lent to the writer, which
            // it outgrows or not: the same bytes.
            let roomSize = 1 + values.count % 40
            let room = UnsafeMutablePointer<UInt8>.allocate(capacity: roomSize)
            do {
                var lent = ColumnWriter<Version.Columns>(room: room, capacity: roomSize)
                for value in values { lent.append(value) }
                lent.finish()
                #expect(Array(lent.written) == bytes)
            }
            room.deallocate()
            var reader = ColumnReader(ByteReader(bytes), column: .changeReplica, form: form)
            var read: [UInt64] = []
            while read.count < values.count {
                // Peeking reports a run it does not consume; a literal is a run of one.
                let (value, count) = try #require(try reader.peekRun())
                #expect(count >= 1 && Array(values[read.count...].prefix(Int(count))) == Array(repeating: value, count: Int(count)))
                // The sum of what is left, from any point of a run or a literal run.
                #expect(try reader.remainingSum() == values[read.count...].reduce(0, +))
                read.append(try reader.next())
            }
            #expect(read == values)
            #expect(try reader.peekRun() == nil && reader.remainingSum() == 0)
            try reader.checkFinished()
        }
    }

    @Test func aColumnsRemainingSumSaturates() throws {
        var writer = ColumnWriter<LiteralRunColumns>()
        for value in [1, UInt64.max, 2, 2] { writer.append(value) }
        writer.finish()
        var reader = ColumnReader(ByteReader(Array(writer.written)), column: .changeReplica, form: .literalRuns)
        #expect(try reader.remainingSum() == .max)
        _ = try reader.next()
        #expect(try reader.remainingSum() == .max)
        _ = try reader.next()
        #expect(try reader.remainingSum() == 4)
    }

    /// The same two changes (replica 7 makes a text at key "t", then types
    /// "hi" into it), hand-written in each column form.
    @Test(arguments: [UInt64(1), 3, 5])
    func aBundleReadsTheSameInEveryColumnForm(_ version: UInt64) throws {
        // One value list per column, in `Column` order: see `Specs/encoding.md`.
        let columns: [[UInt64]] = [
            [0, 0], [0, 0], [0, 0], [1, 0], [], [],  // replica 7, counters 1 and 2, Lamport 1 and 2; no parent, then the previous
            [0, 0], [1, 1],                          // time, one operation each
            [0, 2], [0, 1], [0, 1],                  // a put at the root, a text insert into (7, 1)
            [0], [], [], [2], [],                    // at the head, 2 bytes of text
            [], [], [],                              // no delete
            [0], [0], [], [], [],                    // key "t", replacing nothing; no increment
        ]
        var body = ByteWriter()
        body.writeVarint(1); body.writeUInt64(7)
        body.writeVarint(1); body.writeString("t")
        body.writeVarint(2)
        for values in columns {
            var column = ByteWriter()
            for value in values {
                // Before literal runs every value was a run of its own length;
                // since, this is a literal run of one, behind one kind bit
                // (version 3) or two (version 5).
                column.writeVarint(version == 1 ? 1 : version == 3 ? 1 << 1 | 1 : 1 << 2 | 1)
                column.writeVarint(value)
            }
            body.writeData(column.bytes)
        }
        body.writeData(Array("hi".utf8))
        body.writeData([8, ObjectKind.text.rawValue])
        let bundle = Envelope.seal(magic: ChangeEncoding.magic, version: version, body: body.bytes)

        let text = ObjectID(OpID(replica: ReplicaID(7), counter: 1))
        #expect(try ChangeEncoding.decode(bundle).map(\.id) == [OpID(replica: ReplicaID(7), counter: 1), OpID(replica: ReplicaID(7), counter: 2)])
        var catchingUp = Document(replica: ReplicaID(2))
        #expect(try catchingUp.applyEncoded(bundle) == 2)
        #expect(try catchingUp.text(text) == "hi")
        // What this build writes for them reads back the same.
        let reencoded = ChangeEncoding.encode(try catchingUp.allChanges())
        #expect(reencoded[ChangeEncoding.magic.count] == UInt8(ChangeEncoding.version))
        #expect(try ChangeEncoding.decode(reencoded) == ChangeEncoding.decode(bundle))
    }

    @Test(arguments: [ColumnForm.literalRuns, .reusedRepeats])
    func damagedLiteralRunsAreErrorsNamingTheColumn(form: ColumnForm) throws {
        func read(_ bytes: [UInt8], values: Int) throws(DecodingError) {
            var reader = ColumnReader(ByteReader(bytes), column: .originCounter, form: form)
            for _ in 0..<values { _ = try reader.next() }
            try reader.checkFinished()
        }
        // A literal run's header: its length past the kind bits, the literal bit set.
        func header(_ count: UInt64) -> UInt8 { UInt8(count << form.headerShift | 1) }
        #expect(throws: DecodingError.invalid("column originCounter has an empty run")) { try read([header(0), 4], values: 1) }
        #expect(throws: DecodingError.truncated("a value of column originCounter")) { try read([header(3), 4, 5], values: 3) }
        #expect(throws: DecodingError.invalid("column originCounter has values left over")) { try read([header(3), 4, 5, 6], values: 2) }
        try read([header(3), 4, 5, 6], values: 3)
    }

    @Test func damagedRunsOfTheLastRepeatedValueAreErrorsNamingTheColumn() throws {
        func read(_ bytes: [UInt8], values: Int) throws(DecodingError) {
            var reader = ColumnReader(ByteReader(bytes), column: .parentCount, form: .reusedRepeats)
            for _ in 0..<values { _ = try reader.next() }
            try reader.checkFinished()
        }
        #expect(throws: DecodingError.invalid("column parentCount reuses a repeated value before any repeat run")) {
            try read([2 << 2 | 2], values: 2)
        }
        #expect(throws: DecodingError.invalid("column parentCount has an empty run")) { try read([2 << 2, 4, 0 << 2 | 2], values: 3) }
        // The literal a run promises after it is missing.
        #expect(throws: DecodingError.truncated("a value of column parentCount")) { try read([2 << 2, 4, 1 << 2 | 3], values: 4) }
        #expect(throws: DecodingError.invalid("column parentCount has values left over")) { try read([2 << 2, 4, 1 << 2 | 3, 7], values: 3) }
        try read([2 << 2, 4, 1 << 2 | 3, 7], values: 4)
    }
}
