import Testing
import QuireTestSupport
@testable import QuireCore

/// Every decoder gets truncated, bit-flipped, oversized and hand-crafted
/// hostile input: it must answer with a `DecodingError`, never trap, and
/// never allocate in proportion to what the input merely claims.
@Suite struct HostileInputTests {
    /// A document with every kind of object and some history.
    static func sample() throws -> Document {
        var doc = Document(replica: ReplicaID(0x51))
        try doc.transact(time: 1_700_000_000_123) { tx in
            let body = try tx.putObject(.root, key: "body", kind: .text)
            try tx.insertText(body, at: 0, "Grüße 👋 world")
            try tx.deleteText(body, at: 2, count: 3)
            let tags = try tx.putObject(.root, key: "tags", kind: .list)
            try tx.insert(tags, at: 0, .string("x"))
            let nested = try tx.insertObject(tags, at: 1, kind: .map)
            try tx.put(nested, key: "n", .double(1.5))
            let views = try tx.putObject(.root, key: "views", kind: .counter)
            try tx.increment(views, by: 7)
            try tx.put(.root, key: "raw", .bytes([0, 1, 2]))
            try tx.remove(.root, key: "raw")
        }
        return doc
    }

    @Test func everyTruncationOfAChangeBundleIsAnError() throws {
        let bytes = try Self.sample().encodeChanges()
        for length in 0..<bytes.count {
            #expect(throws: DecodingError.self) { try ChangeEncoding.decode(Array(bytes.prefix(length))) }
        }
    }

    @Test func everyTruncationOfASnapshotIsAnError() throws {
        let bytes = try Self.sample().encodeSnapshot()
        for length in 0..<bytes.count {
            #expect(throws: DecodingError.self) { try Document(snapshot: Array(bytes.prefix(length)), replica: ReplicaID(1)) }
        }
    }

    @Test func everySingleBitFlipIsDetected() throws {
        let doc = try Self.sample()
        let bundle = try doc.encodeChanges()
        for bytes in [bundle, doc.encodeSnapshot()] {
            for index in bytes.indices {
                for bit in [0, 3, 7] {
                    var damaged = bytes
                    damaged[index] ^= 1 << bit
                    // CRC-32 detects every single-bit error.
                    #expect(throws: DecodingError.self) {
                        if bytes == bundle { _ = try ChangeEncoding.decode(damaged) }
                        else { _ = try Document(snapshot: damaged, replica: ReplicaID(1)) }
                    }
                }
            }
        }
    }

    /// A snapshot's checksum is compared after its body is read (so that
    /// it skips the history's bundles, each checked on its own): damage
    /// anywhere in the body is still reported as the checksum's, whatever
    /// the damaged body would have said.
    @Test func damageInASnapshotsBodyIsAChecksumMismatch() throws {
        let bytes = try Self.sample().encodeSnapshot()
        let bodyStart = try Envelope.open(bytes, magic: SnapshotEncoding.magic, name: "sample",
                                          version: SnapshotEncoding.version).offset
        for index in bodyStart..<bytes.count {
            var damaged = bytes
            damaged[index] ^= 1 << (index % 8)
            #expect(throws: DecodingError.checksumMismatch) { try Document(snapshot: damaged, replica: ReplicaID(1)) }
        }
    }

    /// A snapshot's history bundle and its body are checked each: a bundle
    /// damaged inside a good snapshot checksum is refused, and so is a good
    /// bundle inside a snapshot whose checksum is not.
    @Test func aSnapshotsBundleAndBodyChecksumsAreEachChecked() throws {
        let snapshot = try Self.sample().encodeSnapshot()
        let body = Array(try Envelope.open(snapshot, magic: SnapshotEncoding.magic, name: "sample",
                                           version: SnapshotEncoding.version).remainingBytes)
        // The history's one bundle, found by its magic and frame.
        let bundleStart = try #require(body.indices.first { body[$0...].starts(with: ChangeEncoding.magic) })
        var frame = ByteReader(Array(body[bundleStart...]))
        _ = try frame.readBytes(ChangeEncoding.magic.count, "the magic")
        let version = try frame.readVarint()
        let length = Int(try frame.readVarint())
        let bundleBody = Array(body[(bundleStart + frame.offset)...].prefix(length))
        let bundleEnd = bundleStart + frame.offset + length + 4
        // Its last column byte changed: what the load reads of it (tables, change count) still holds.
        var damagedBody = bundleBody
        damagedBody[damagedBody.count - 1] ^= 0x10
        let resealed = Envelope.seal(magic: ChangeEncoding.magic, version: version, body: damagedBody)
        #expect(resealed.count == bundleEnd - bundleStart)
        #expect(try ChangeEncoding.changeCount(of: resealed, elidedTextAllowed: true) > 0)
        // The same damage under the bundle's old checksum.
        var unsealed = Array(body[bundleStart..<bundleEnd])
        unsealed[unsealed.count - 5] ^= 0x10
        #expect(unsealed.dropLast(4) == resealed.dropLast(4))

        // The bundle's own checksum wrong, the snapshot's right.
        let bundleDamaged = Envelope.seal(magic: SnapshotEncoding.magic, version: SnapshotEncoding.version,
                                          body: Array(body[..<bundleStart] + unsealed + body[bundleEnd...]))
        _ = try Envelope.open(bundleDamaged, magic: SnapshotEncoding.magic, name: "sample", version: SnapshotEncoding.version)
        #expect(throws: DecodingError.checksumMismatch) { try Document(snapshot: bundleDamaged, replica: ReplicaID(1)) }

        // The bundle's own checksum right, the snapshot's wrong.
        var checksumDamaged = snapshot
        checksumDamaged[snapshot.count - 1] ^= 0x01
        #expect(throws: DecodingError.checksumMismatch) { try Document(snapshot: checksumDamaged, replica: ReplicaID(1)) }

        // The damaged bundle resealed in place: the snapshot's checksum
        // still holds, as it did before the change that skips bundles (the
        // CRC-32 of any bytes followed by their own is one constant), so
        // the snapshot loads and the damage is left to whoever reads the history.
        let snapshotBodyStart = snapshot.count - 4 - body.count
        var resealedInPlace = snapshot
        resealedInPlace.replaceSubrange(snapshotBodyStart + bundleStart..<snapshotBodyStart + bundleEnd, with: resealed)
        #expect(CRC32.checksum(Array(resealedInPlace.dropLast(4))) == CRC32.checksum(Array(snapshot.dropLast(4))))
        _ = try Document(snapshot: resealedInPlace, replica: ReplicaID(1))
    }

    /// A bundle that elides its text is only read inside a snapshot, with the state to restore the text from.
    @Test func aBundleWithElidedTextIsRefusedOnItsOwn() throws {
        let doc = try Self.sample()
        let elided = ChangeEncoding.encode(try doc.allChanges(), elidingText: true)
        #expect(throws: DecodingError.unsupportedVersion(ChangeEncoding.elidedTextVersion)) { try ChangeEncoding.decode(elided) }
        var catchingUp = Document(replica: ReplicaID(3))
        #expect(throws: DecodingError.unsupportedVersion(ChangeEncoding.elidedTextVersion)) { try catchingUp.applyEncoded(elided) }
        #expect(try ChangeEncoding.decode(elided, limits: .default, insertedText: doc.objects.insertedText) == doc.allChanges())
    }

    /// A snapshot whose history inserts text its state does not hold loads
    /// (the history is decoded lazily) and reports damage when read.
    @Test func historyTextMissingFromTheStateIsAClearError() throws {
        var short = Document(replica: ReplicaID(5))
        let text = try short.transact { tx in
            let text = try tx.putObject(.root, key: "t", kind: .text)
            try tx.insertText(text, at: 0, "abc")
            return text
        }
        var long = short
        try long.transact { tx in try tx.insertText(text, at: 3, "def") }
        // `short`'s state with `long`'s history: "def" is in neither the state nor the bundle.
        var body = Array(try Envelope.open(short.encodeSnapshot(includeHistory: false), magic: SnapshotEncoding.magic,
                                           name: "sample", version: SnapshotEncoding.version).remainingBytes)
        #expect(body.removeLast() == 0)  // the history flag
        var history = ByteWriter()
        history.writeByte(1)
        history.writeVarint(1)
        history.writeData(ChangeEncoding.encode(try long.allChanges(), elidingText: true))
        let forged = Envelope.seal(magic: SnapshotEncoding.magic, version: SnapshotEncoding.version, body: body + history.bytes)
        let loaded = try Document(snapshot: forged, replica: ReplicaID(6))
        #expect(throws: DocumentError.self) { try loaded.allChanges() }
        #expect(throws: DocumentError.self) { try loaded.encodeChanges() }
        do {
            _ = try loaded.allChanges()
        } catch {
            #expect("\(error)".contains("the state holds no text for the 3 scalars inserted at"), "\(error)")
        }
    }

    @Test func trailingBytesAndWrongMagicAreRejected() throws {
        let bytes = try Self.sample().encodeChanges()
        #expect(throws: DecodingError.invalid("1 byte(s) follow a Quire change bundle")) { try ChangeEncoding.decode(bytes + [0]) }
        #expect(throws: DecodingError.truncated("the body of a Quire change bundle")) {
            try ChangeEncoding.decode(Array(bytes.dropLast(4)))
        }
        #expect(throws: DecodingError.badMagic(expected: "a Quire change bundle")) {
            try ChangeEncoding.decode(try Self.sample().encodeSnapshot())
        }
        #expect(throws: DecodingError.unsupportedVersion(9)) {
            try ChangeEncoding.decode(Envelope.seal(magic: ChangeEncoding.magic, version: 9, body: []))
        }
    }

    /// A version 5 bundle of two changes of replica 7: a text made at root
    /// key "t", then "hi" typed into it with one explicit parent, whose
    /// counter is written as `parentDelta` (the replica's last counter
    /// minus the parent's, zigzag), at an explicit origin of replica 7
    /// written as `originDistance` (the distance back from counter 1, the
    /// one before the insert's; or at the head, for nil). `parentCounts`
    /// are the two changes' `parentCount` values: by default none, then
    /// one explicit parent, which is written only if the second's says so.
    /// `rawColumns` replaces columns' bytes.
    static func relativeBundle(parentDelta: UInt64, originDistance: UInt64?, parentCounts: [UInt64] = [1, 3],
                               rawColumns: [ChangeEncoding.Column: [UInt8]] = [:]) -> [UInt8] {
        let explicitParent = (parentCounts[1] - 1) >> 1 == 1
        let values: [[UInt64]] = [
            [0, 0], [0, 0], [0, 0], parentCounts, explicitParent ? [0] : [], explicitParent ? [parentDelta] : [],
            [0, 0], [1, 1],
            [0, 2], [0, 1], [0, 1],
            [originDistance == nil ? 0 : 2], originDistance == nil ? [] : [0], originDistance.map { [$0] } ?? [], [2], [],
            [], [], [],
            [0], [0], [], [], [],
        ]
        var body = ByteWriter()
        body.writeVarint(1); body.writeUInt64(7)
        body.writeVarint(1); body.writeString("t")
        body.writeVarint(2)
        for column in ChangeEncoding.Column.allCases {
            var writer = ColumnWriter<ReusedRepeatColumns>()
            for value in values[column.rawValue] { writer.append(value) }
            writer.finish()
            body.writeData(rawColumns[column] ?? Array(writer.written))
        }
        body.writeData(Array("hi".utf8))
        body.writeData([8, ObjectKind.text.rawValue])
        return Envelope.seal(magic: ChangeEncoding.magic, version: 5, body: body.bytes)
    }

    /// Version 5 writes explicit parents and origins relative to counters
    /// the reader knows: one that comes to counter 0 is refused, and a
    /// run of a column's last repeated value needs a repeat run before it.
    @Test func relativeIDsAndRunsOfVersion5AreChecked() throws {
        let typed = try ChangeEncoding.decode(Self.relativeBundle(parentDelta: 0, originDistance: nil))
        #expect(typed.map(\.parents) == [[], [OpID(replica: ReplicaID(7), counter: 1)]])
        var fresh = Document(replica: ReplicaID(2))
        #expect(try fresh.applyEncoded(Self.relativeBundle(parentDelta: 0, originDistance: nil)) == 2)
        #expect(try fresh.text(ObjectID(OpID(replica: ReplicaID(7), counter: 1))) == "hi")

        // The replica's last counter is 1: a delta of 1 (zigzag 2) names counter 0.
        #expect(throws: DecodingError.invalid("column parentCounter names counter 0")) {
            try ChangeEncoding.decode(Self.relativeBundle(parentDelta: 2, originDistance: nil))
        }
        // An origin of the insert's own replica is the distance back from
        // the counter before the insert's, 2: 0 is counter 1, the text.
        let atTheText = try ChangeEncoding.decode(Self.relativeBundle(parentDelta: 0, originDistance: 0))
        guard case .insert(_, let origin, _)? = atTheText[1].operations.first else {
            Issue.record("the second change is not an insert: \(atTheText[1].operations)")
            return
        }
        #expect(origin == OpID(replica: ReplicaID(7), counter: 1))
        // 1 back from counter 1 is counter 0; far back wraps around.
        for distance: UInt64 in [1, .max] {
            #expect(throws: DecodingError.invalid("column originCounter goes back past counter 1"), "\(distance)") {
                try ChangeEncoding.decode(Self.relativeBundle(parentDelta: 0, originDistance: distance))
            }
            var catchingUp = Document(replica: ReplicaID(3))
            #expect(throws: DecodingError.invalid("column originCounter goes back past counter 1"), "\(distance)") {
                try catchingUp.applyEncoded(Self.relativeBundle(parentDelta: 0, originDistance: distance))
            }
            // The change before the damaged one, which made the text, stays applied.
            #expect(catchingUp.changeCount == 1 && catchingUp.kind(of: ObjectID(OpID(replica: ReplicaID(7), counter: 1))) == .text)
        }
        let reuseFirst = Self.relativeBundle(parentDelta: 0, originDistance: nil, rawColumns: [.parentCount: [1 << 2 | 3, 2]])
        #expect(throws: DecodingError.invalid("column parentCount reuses a repeated value before any repeat run")) {
            try ChangeEncoding.decode(reuseFirst)
        }
        var catchingUp = Document(replica: ReplicaID(3))
        #expect(throws: DecodingError.self) { try catchingUp.applyEncoded(reuseFirst) }
        #expect(catchingUp.changeCount == 0)
    }

    /// Version 5 implies a change's own replica's last change as a parent
    /// (`parentCount`'s low bit): it comes back as that change's last id,
    /// and a change with no change of its replica before it in the bundle
    /// (the first change here) cannot imply one: refused by both paths.
    @Test func anImpliedParentIsTheOwnReplicasLastChange() throws {
        let implied = Self.relativeBundle(parentDelta: 0, originDistance: nil, parentCounts: [1, 2])
        #expect(try ChangeEncoding.decode(implied).map(\.parents) == [[], [OpID(replica: ReplicaID(7), counter: 1)]])
        var fresh = Document(replica: ReplicaID(2))
        #expect(try fresh.applyEncoded(implied) == 2)
        #expect(try fresh.text(ObjectID(OpID(replica: ReplicaID(7), counter: 1))) == "hi")

        let noneBefore = Self.relativeBundle(parentDelta: 0, originDistance: nil, parentCounts: [2, 3])
        let refusal = DecodingError.invalid(
            "column parentCount implies a parent of the change's own replica, which has no change before it in the bundle")
        #expect(throws: refusal) { try ChangeEncoding.decode(noneBefore) }
        var catchingUp = Document(replica: ReplicaID(3))
        #expect(throws: refusal) { try catchingUp.applyEncoded(noneBefore) }
        #expect(catchingUp.changeCount == 0)
    }

    /// The implied parent goes back where it sorts among the explicit
    /// ones, before, between or after them; parents out of order (which
    /// `crdt.md` refuses, but a bundle may carry) are written out whole.
    @Test func parentsComeBackInTheirOrderWithTheOwnOneImplied() throws {
        let text = ObjectID(OpID(replica: ReplicaID(5), counter: 1))
        func change(_ replica: UInt64, _ counter: UInt64, lamport: UInt64, parents: [OpID]) -> Change {
            let origin = counter == 1 ? nil : OpID(replica: ReplicaID(replica), counter: counter - 1)
            return Change(id: OpID(replica: ReplicaID(replica), counter: counter), lamport: lamport, parents: parents, time: 0,
                          operations: replica == 5 && counter == 1 ? [.put(object: .root, key: "t", value: .object(.text), pred: [])]
                              : [.insert(object: text, origin: origin, content: .text("x"))])
        }
        let own = OpID(replica: ReplicaID(5), counter: 2)
        let (low, high) = (OpID(replica: ReplicaID(3), counter: 1), OpID(replica: ReplicaID(9), counter: 1))
        for parents in [[low, own, high], [own, high], [low, own], [high, own]] {
            let changes = [
                change(5, 1, lamport: 1, parents: []), change(5, 2, lamport: 2, parents: [OpID(replica: ReplicaID(5), counter: 1)]),
                change(3, 1, lamport: 3, parents: [own]), change(9, 1, lamport: 4, parents: [low]),
                change(5, 3, lamport: 5, parents: parents),
            ]
            #expect(try ChangeEncoding.decode(ChangeEncoding.encode(changes)) == changes, "\(parents)")
        }
    }

    /// A change of 4,097 parents, its own replica's last change among them
    /// (implied in version 5, 4,096 written out), is refused in version 5
    /// as in version 3, which writes all of them: every version holds at
    /// most 4,096. (Version 5 read it, and it was then written again in
    /// version 3 for a client of an older build, and in version 4 in a
    /// snapshot's history, as bundles their readers refuse.)
    @Test func aChangeOfMoreThan4096ParentsIsRefusedInEveryVersion() throws {
        let own = OpID(replica: ReplicaID(5), counter: 1)
        let others = (1...4096).map { OpID(replica: ReplicaID(9), counter: UInt64($0)) }
        func change(_ counter: UInt64, parents: [OpID]) -> Change {
            Change(id: OpID(replica: ReplicaID(5), counter: counter), lamport: counter, parents: parents, time: 0,
                   operations: [.put(object: .root, key: "k", value: .scalar(.int(Int64(counter))), pred: [])])
        }
        let changes = [change(1, parents: []), change(2, parents: (others + [own]).sorted())]
        let refusal = DecodingError.invalid("a change has 4097 parents")
        for version in [ChangeEncoding.version, ChangeEncoding.olderReadersVersion] {
            #expect(throws: refusal, "version \(version)") {
                try ChangeEncoding.decode(ChangeEncoding.encode(changes, version: version)).map(\.parents.count)
            }
        }
        // 4,096 with the implied one are read.
        let most = [change(1, parents: []), change(2, parents: (others.dropLast() + [own]).sorted())]
        #expect(try ChangeEncoding.decode(ChangeEncoding.encode(most)) == most)
    }

    /// An insert whose explicit origin is of its own replica but at or past
    /// its own id names no element that can exist when it applies, and
    /// version 5 cannot write it (such an origin is a distance back): a
    /// bundle of version 3 holding one is refused when read, naming it, so
    /// that every change read can be written again in version 5. (It was
    /// read, and a store or the sync server that parked the change, writing
    /// it so, trapped.)
    @Test(arguments: [UInt64(0), 1, 1 << 40])
    func anInsertsOriginOfItsOwnReplicaNotBeforeItIsRefused(pastTheInsert: UInt64) throws {
        let replica = ReplicaID(7)
        let text = ObjectID(OpID(replica: replica, counter: 1))
        let insert = OpID(replica: replica, counter: 2), origin = OpID(replica: replica, counter: 2 + pastTheInsert)
        let changes = [
            Change(id: OpID(replica: replica, counter: 1), lamport: 1, parents: [], time: 0,
                   operations: [.put(object: .root, key: "t", value: .object(.text), pred: [])]),
            Change(id: insert, lamport: 2, parents: [OpID(replica: replica, counter: 1)], time: 0,
                   operations: [.insert(object: text, origin: origin, content: .text("x"))]),
        ]
        let refusal = DecodingError.invalid("the insert at \(insert) names \(origin) as its origin, of its own replica but not before it")
        let bundle = ChangeEncoding.encode(changes, version: ChangeEncoding.olderReadersVersion)
        #expect(throws: refusal) { try ChangeEncoding.decode(bundle) }
        var catchingUp = Document(replica: ReplicaID(3))
        #expect(throws: refusal) { try catchingUp.applyEncoded(bundle) }
        // One before it is read as it was.
        var before = changes
        before[1] = Change(id: insert, lamport: 2, parents: [OpID(replica: replica, counter: 1)], time: 0,
                           operations: [.insert(object: text, origin: OpID(replica: replica, counter: 1), content: .text("x"))])
        #expect(try ChangeEncoding.decode(ChangeEncoding.encode(before, version: ChangeEncoding.olderReadersVersion)) == before)
    }

    /// Well-framed bodies (valid checksum) whose content lies.
    @Test(arguments: ["a replica count of 2^62", "a varint longer than 64 bits", "2^63 changes", "a key length beyond the input"])
    func liesInABundleBodyAreCaught(_ lie: String) {
        var body = ByteWriter()
        switch lie {
        case "a replica count of 2^62": body.writeVarint(UInt64(1) << 62)
        case "a varint longer than 64 bits": body.writeBytes([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f])
        case "2^63 changes": body.writeVarint(0); body.writeVarint(0); body.writeVarint(UInt64(1) << 63)
        default: body.writeVarint(0); body.writeVarint(1); body.writeVarint(1 << 40)
        }
        let bytes = Envelope.seal(magic: ChangeEncoding.magic, version: ChangeEncoding.version, body: body.bytes)
        #expect(throws: DecodingError.self, "\(lie)") { try ChangeEncoding.decode(bytes) }
    }

    /// A delete whose range runs past the last counter: the decoder refuses
    /// it, so that the catching-up path, which adds up ranges as it chains
    /// deletes, never sees one (it trapped on the addition).
    @Test func aDeleteRangePastTheLastCounterIsRefused() throws {
        var source = Document(replica: ReplicaID(1))
        let text = try source.transact { tx in try tx.putObject(.root, key: "t", kind: .text) }
        try source.transact { tx in try tx.insertText(text, at: 0, "abc") }
        let valid = try source.allChanges()
        var changes = valid
        let last = changes[changes.count - 1]
        let target = IDRun(start: OpID(replica: ReplicaID(1), counter: .max - 1), length: 3)
        changes.append(Change(id: last.id.advanced(by: last.width), lamport: last.lamport + last.width, parents: [last.lastID],
                              time: 0, operations: [.delete(object: text, target: target)], width: 3))
        let bytes = ChangeEncoding.encode(changes)
        #expect(throws: DecodingError.invalid("a delete's range runs past the last counter")) { try ChangeEncoding.decode(bytes) }
        var fresh = Document(replica: ReplicaID(2))
        #expect(throws: DecodingError.invalid("a delete's range runs past the last counter")) { try fresh.applyEncoded(bytes) }
        // What it applied before the damage stays consistent: the valid changes still apply.
        try fresh.applyEncoded(ChangeEncoding.encode(valid))
        #expect(try fresh.text(text) == "abc" && fresh.versionVector == source.versionVector)
    }

    /// A change whose Lamport values reach `2^62` is refused however it
    /// comes (one change, a run read at once, a snapshot's clock): accepted,
    /// one near `2^64` left no Lamport value for the next local edit, and
    /// every edit of the document failed.
    @Test(arguments: [1, 3])
    func aLamportValueAtTheLimitIsRefused(typedCharacters: Int) throws {
        var source = Document(replica: ReplicaID(1))
        let text = try source.transact { tx in try tx.putObject(.root, key: "t", kind: .text) }
        let valid = try source.allChanges()
        var changes = valid
        // Typing at the head that ends at the limit: one change, or a run the decoder reads at once.
        for index in 0..<typedCharacters {
            let previous = changes[changes.count - 1]
            let lamport = Document.lamportLimit - UInt64(typedCharacters - index)
            let origin = index == 0 ? nil : previous.id
            changes.append(Change(id: previous.lastID.advanced(by: 1), lamport: lamport, parents: [previous.lastID],
                                  operations: [.insert(object: text, origin: origin, content: .text("a"))]))
        }
        // Ending one below the limit is fine; reaching it is not.
        var atLimit = changes
        for index in valid.count..<atLimit.count { atLimit[index].lamport += 1 }
        for (history, refused) in [(changes, false), (atLimit, true)] {
            var oneByOne = Document(replica: ReplicaID(2)), bulk = Document(replica: ReplicaID(2))
            let bytes = ChangeEncoding.encode(history)
            if refused {
                #expect(throws: DocumentError.self) { try oneByOne.apply(history) }
                #expect(throws: DecodingError.invalid("a change's Lamport values reach 2^62")) { try ChangeEncoding.decode(bytes) }
                #expect(throws: DecodingError.invalid("a change's Lamport values reach 2^62")) { try bulk.applyEncoded(bytes) }
            } else {
                #expect(try oneByOne.apply(history) == history.count && bulk.applyEncoded(bytes) == history.count)
                #expect(bulk.maxLamport == Document.lamportLimit - 1)
            }
            // Whatever each applied before refusing, the next edit still has Lamport values to take.
            for var document in [oneByOne, bulk] {
                let before = try document.text(text)
                try document.transact { tx in try tx.insertText(text, at: 0, "xy") }
                #expect(try document.text(text) == "xy" + before)
            }
        }
    }

    @Test func aSnapshotWhoseClockReachesTheLimitIsRefused() throws {
        func snapshot(withClock clock: UInt64) throws -> [UInt8] {
            // The clock follows the replica table: a count, then 8 bytes a replica.
            var reader = try Envelope.open(try Self.sample().encodeSnapshot(), magic: SnapshotEncoding.magic,
                                           name: "sample", version: SnapshotEncoding.version)
            let body = Array(reader.remainingBytes)
            let start = reader.offset
            for _ in 0..<(try reader.readCount("replicas")) { _ = try reader.readUInt64("a replica") }
            let clockStart = reader.offset
            _ = try reader.readVarint("the clock")
            var writer = ByteWriter()
            writer.writeVarint(clock)
            let patched = body[..<(clockStart - start)] + writer.bytes + body[(reader.offset - start)...]
            return Envelope.seal(magic: SnapshotEncoding.magic, version: SnapshotEncoding.version, body: Array(patched))
        }
        #expect(try Document(snapshot: snapshot(withClock: Document.lamportLimit - 1), replica: ReplicaID(2)).maxLamport
                == Document.lamportLimit - 1)
        #expect(throws: DecodingError.invalid("the Lamport clock \(Document.lamportLimit) reaches 2^62")) {
            try Document(snapshot: snapshot(withClock: Document.lamportLimit), replica: ReplicaID(2))
        }
    }

    /// A snapshot of three replicas' concurrent changes (three heads, a
    /// version vector of three entries), its body, and where each version
    /// vector entry and each head lies in the body.
    private func threeWritersSnapshot() throws -> (document: Document, body: [UInt8], entries: [Range<Int>], heads: [Range<Int>]) {
        var document = Document(replica: ReplicaID(9))
        for writer in UInt64(1)...3 {
            var other = Document(replica: ReplicaID(writer))
            try other.transact { tx in try tx.put(.root, key: "k\(writer)", .int(Int64(writer))) }
            try document.apply(other.allChanges())
        }
        #expect(document.heads.count == 3)
        let body = Array(try Envelope.open(document.encodeSnapshot(includeHistory: false), magic: SnapshotEncoding.magic,
                                           name: "sample", version: SnapshotEncoding.version).remainingBytes)
        var reader = ByteReader(body)
        for _ in 0..<(try reader.readCount("replicas")) { _ = try reader.readUInt64("a replica") }
        _ = try reader.readVarint("the clock")
        func fields(_ count: Int) throws -> Range<Int> {
            let start = reader.offset
            for _ in 0..<count { _ = try reader.readVarint() }
            return start..<reader.offset
        }
        // An entry: replica index, counter, last Lamport value; a head: replica index, counter.
        let entries = try (0..<(try reader.readCount("entries"))).map { _ in try fields(3) }
        let heads = try (0..<(try reader.readCount("heads"))).map { _ in try fields(2) }
        return (document, body, entries, heads)
    }

    /// `encoding.md`: a reader does not check the canonical order of the
    /// version vector's entries (a state written otherwise loads as the
    /// same state), but refuses one that names a replica twice, heads out
    /// of order, and a head past the version vector. The loader reads the
    /// entries and heads in one walk, sorting entries found out of order.
    @Test func versionVectorEntriesInAnyOrderLoadAndHeadsAreChecked() throws {
        let (document, body, entries, heads) = try threeWritersSnapshot()
        func snapshot(entriesIn order: [Int], heads headOrder: [Int] = [0, 1, 2], lastHeadCounter: UInt8? = nil) -> [UInt8] {
            // Each count is one byte, just before the first entry or head.
            var patched = Array(body[..<(entries[0].lowerBound - 1)])
            patched.append(UInt8(order.count))
            for index in order { patched += body[entries[index]] }
            patched.append(UInt8(headOrder.count))
            for index in headOrder { patched += body[heads[index]] }
            if let lastHeadCounter { patched[patched.count - 1] = lastHeadCounter }
            patched += body[heads[2].upperBound...]
            return Envelope.seal(magic: SnapshotEncoding.magic, version: SnapshotEncoding.version, body: patched)
        }
        #expect(body[entries[0].lowerBound - 1] == 3 && body[heads[0].lowerBound - 1] == 3)
        #expect(snapshot(entriesIn: [0, 1, 2]) == document.encodeSnapshot(includeHistory: false))
        for order in [[2, 0, 1], [1, 0, 2], [2, 1, 0]] {
            var loaded = try Document(snapshot: snapshot(entriesIn: order), replica: ReplicaID(9))
            #expect(loaded.encodeSnapshot(includeHistory: false) == document.encodeSnapshot(includeHistory: false), "\(order)")
            #expect(loaded.heads == document.heads && loaded.versionVector == document.versionVector, "\(order)")
            // Its clocks are the document's: an edit made on both writes the same state.
            var edited = document
            try loaded.transact { tx in try tx.put(.root, key: "after", .int(1)) }
            try edited.transact { tx in try tx.put(.root, key: "after", .int(1)) }
            #expect(loaded.encodeSnapshot(includeHistory: false) == edited.encodeSnapshot(includeHistory: false), "\(order)")
        }
        let first = ReplicaID(1), second = ReplicaID(2)
        #expect(throws: DecodingError.invalid("the version vector names \(first) twice")) {
            try Document(snapshot: snapshot(entriesIn: [0, 1, 0], heads: [0, 1]), replica: ReplicaID(9))
        }
        #expect(throws: DecodingError.invalid("the version vector names \(second) twice")) {
            try Document(snapshot: snapshot(entriesIn: [1, 1, 2], heads: [1, 2]), replica: ReplicaID(9))
        }
        #expect(throws: DecodingError.invalid("the heads are not sorted, one per replica")) {
            try Document(snapshot: snapshot(entriesIn: [0, 1, 2], heads: [0, 2, 1]), replica: ReplicaID(9))
        }
        #expect(throws: DecodingError.invalid("the heads are not sorted, one per replica")) {
            try Document(snapshot: snapshot(entriesIn: [0, 1, 2], heads: [0, 0]), replica: ReplicaID(9))
        }
        #expect(throws: DecodingError.invalid("head \(OpID(replica: ReplicaID(3), counter: 2)) is not in the version vector")) {
            try Document(snapshot: snapshot(entriesIn: [0, 1, 2], lastHeadCounter: 2), replica: ReplicaID(9))
        }
        #expect(throws: DecodingError.invalid("head \(OpID(replica: ReplicaID(3), counter: 1)) is not in the version vector")) {
            try Document(snapshot: snapshot(entriesIn: [0, 1], heads: [0, 2]), replica: ReplicaID(9))
        }
    }

    /// Errors name the column at fault by its case name; the names are
    /// written out (reflection is slow), so they must follow the cases.
    @Test func aDamagedColumnIsNamedInTheError() throws {
        #expect(ChangeEncoding.Column.names == ChangeEncoding.Column.allCases.map { "\($0)" })
        var body = ByteWriter()
        body.writeVarint(1); body.writeUInt64(7)        // one replica
        body.writeVarint(0)                             // no keys
        body.writeVarint(1)                             // one change
        for column in ChangeEncoding.Column.allCases {
            // One run of one 0 in each column (its length shifted past the
            // two kind bits), but an empty one in changeLamport.
            var bytes = ByteWriter()
            bytes.writeVarint(column == .changeLamport ? 0 : 1 << 2); bytes.writeVarint(0)
            body.writeData(bytes.bytes)
        }
        body.writeData([]); body.writeData([])
        let bytes = Envelope.seal(magic: ChangeEncoding.magic, version: ChangeEncoding.version, body: body.bytes)
        #expect(throws: DecodingError.invalid("column changeLamport has an empty run")) { try ChangeEncoding.decode(bytes) }
    }

    /// A body that ends before one of its columns, or before its text, is
    /// refused naming what is missing, however many column readers the
    /// decoder had made for what came before (they are given back).
    @Test func aBodyEndingBeforeAColumnNamesIt() throws {
        func bundle(columns: Int) -> [UInt8] {
            var body = ByteWriter()
            body.writeVarint(1); body.writeUInt64(7)        // one replica
            body.writeVarint(0)                             // no keys
            body.writeVarint(1)                             // one change
            for _ in 0..<columns { body.writeData([1 << 2, 0]) }  // a run of one 0
            return Envelope.seal(magic: ChangeEncoding.magic, version: ChangeEncoding.version, body: body.bytes)
        }
        for missing in ChangeEncoding.Column.allCases {
            #expect(throws: DecodingError.truncated("the number of bytes of column \(missing.name)")) {
                try ChangeEncoding.decode(bundle(columns: missing.rawValue))
            }
        }
        #expect(throws: DecodingError.truncated("the number of bytes of the text content")) {
            var catchingUp = Document(replica: ReplicaID(2))
            try catchingUp.applyEncoded(bundle(columns: ChangeEncoding.Column.allCases.count))
        }
    }

    /// A run-length column can claim billions of values in a few bytes; the
    /// decoder must stop at its limits instead of building them.
    @Test func aHugeRunLengthClaimStopsAtTheLimits() throws {
        var body = ByteWriter()
        body.writeVarint(1); body.writeUInt64(7)        // one replica
        body.writeVarint(0)                             // no keys
        body.writeVarint(UInt64(1) << 40)               // 2^40 changes
        for _ in ChangeEncoding.Column.allCases {
            var column = ByteWriter()
            column.writeVarint(UInt64(1) << 42); column.writeVarint(0)  // a run of 2^40
            body.writeData(column.bytes)
        }
        body.writeData([]); body.writeData([])
        let bytes = Envelope.seal(magic: ChangeEncoding.magic, version: ChangeEncoding.version, body: body.bytes)
        #expect(throws: DecodingError.self) { try ChangeEncoding.decode(bytes) }
        #expect(throws: DecodingError.self) {
            try ChangeEncoding.decode(bytes, limits: DecodingLimits(maxChanges: 1 << 41, maxOperations: 1000))
        }
    }

    /// Text runs are checked against the version vector once per replica,
    /// with the run that ends highest: a run past it is still refused.
    @Test func aTextRunPastTheVersionVectorIsRefused() throws {
        let forged = try snapshotWithReplicaBsCounterLowered(editsOfB: [(1, "xyz")])
        #expect {
            try Document(snapshot: forged, replica: ReplicaID(3))
        } throws: { error in
            "\(error)".contains("run 1@") && "\(error)".contains("is not in the version vector")
        }
    }

    /// The run checked is the one that ends highest, wherever it is in the
    /// text: here B's later insert comes first and its earlier one last.
    @Test func aReplicasHighestRunIsCheckedWhereverItIsInTheText() throws {
        let forged = try snapshotWithReplicaBsCounterLowered(editsOfB: [(3, "Y"), (0, "X")])
        #expect {
            try Document(snapshot: forged, replica: ReplicaID(3))
        } throws: { error in
            "\(error)".contains("run 2@") && "\(error)".contains("is not in the version vector")
        }
    }

    /// With runs of two replicas past the version vector, the run named is
    /// the one that ends highest of the first of them in the replica table:
    /// B's "y" (2@B), not C's "pq" (1@C) nor B's "x" (1@B).
    @Test func runsOfTwoReplicasPastTheVersionVectorNameTheFirstReplicasHighest() throws {
        var a = Document(replica: ReplicaID(1))
        let text = try a.transact { tx in
            let text = try tx.putObject(.root, key: "t", kind: .text)
            try tx.insertText(text, at: 0, "abc")
            return text
        }
        var (b, c) = (Document(replica: ReplicaID(2)), Document(replica: ReplicaID(3)))
        try b.apply(try a.allChanges())
        try c.apply(try a.allChanges())
        try b.transact { tx in try tx.insertText(text, at: 0, "x") }
        try b.transact { tx in try tx.insertText(text, at: 0, "y") }
        try c.transact { tx in try tx.insertText(text, at: 3, "pq") }
        try a.apply(try b.changes(since: a.versionVector))
        try a.apply(try c.changes(since: a.versionVector))
        // A edits after, so that the head is A's and B's and C's changes are only in the text.
        try a.transact { tx in try tx.insertText(text, at: 0, "!") }
        var body = Array(try Envelope.open(a.encodeSnapshot(includeHistory: false), magic: SnapshotEncoding.magic,
                                           name: "sample", version: SnapshotEncoding.version).remainingBytes)
        // Three replicas (1 + 24 bytes), the Lamport clock, then the version
        // vector's count and its entries of (replica index, counter, last
        // Lamport): B's and C's are the second and third. Each one lowered.
        #expect(Array(body[30...31]) == [1, 2] && Array(body[33...34]) == [2, 2])
        body[31] = 1
        body[34] = 1
        let forged = Envelope.seal(magic: SnapshotEncoding.magic, version: SnapshotEncoding.version, body: body)
        #expect {
            try Document(snapshot: forged, replica: ReplicaID(4))
        } throws: { error in
            "\(error)".contains("run 2@") && "\(error)".contains("is not in the version vector")
        }
    }

    /// A snapshot of replica A's text "abc" after replica B's `editsOfB`
    /// (each its own change) and one more edit of A's, whose version
    /// vector gives B one counter fewer than B used.
    private func snapshotWithReplicaBsCounterLowered(editsOfB: [(offset: Int, text: String)]) throws -> [UInt8] {
        var a = Document(replica: ReplicaID(1))
        let text = try a.transact { tx in
            let text = try tx.putObject(.root, key: "t", kind: .text)
            try tx.insertText(text, at: 0, "abc")
            return text
        }
        var b = Document(replica: ReplicaID(2))
        try b.apply(try a.allChanges())
        for edit in editsOfB { try b.transact { tx in try tx.insertText(text, at: edit.offset, edit.text) } }
        // A edits after B's changes, so that the head is A's and B's changes are only in the text.
        try a.apply(try b.changes(since: a.versionVector))
        try a.transact { tx in try tx.insertText(text, at: 0, "!") }
        var body = Array(try Envelope.open(a.encodeSnapshot(includeHistory: false), magic: SnapshotEncoding.magic,
                                           name: "sample", version: SnapshotEncoding.version).remainingBytes)
        // Two replicas (1 + 16 bytes), the Lamport clock, two version vector
        // entries of (replica index, counter, last Lamport): B's is the second.
        let counterOfB = UInt8(editsOfB.reduce(0) { $0 + $1.text.unicodeScalars.count })
        #expect(Array(body[22...23]) == [1, counterOfB])
        body[23] = counterOfB - 1
        return Envelope.seal(magic: SnapshotEncoding.magic, version: SnapshotEncoding.version, body: body)
    }

    /// encoding.md: a reader does not check that runs are maximal, and a
    /// state written otherwise loads as the same state. A text's run split
    /// in two that continue each other (as no writer writes it) loads
    /// apart, as two spans, and must read, take edits and be written again
    /// exactly as the same text written as one run.
    @Test func textRunsThatContinueEachOtherLoadAsTheSameState() throws {
        var doc = Document(replica: ReplicaID(1))
        let text = try doc.transact { tx in
            let text = try tx.putObject(.root, key: "t", kind: .text)
            try tx.insertText(text, at: 0, "abc")
            return text
        }
        try doc.transact { tx in try tx.deleteText(text, at: 1, count: 2) }
        let written = Array(try Envelope.open(doc.encodeSnapshot(includeHistory: false), magic: SnapshotEncoding.magic,
                                              name: "sample", version: SnapshotEncoding.version).remainingBytes)
        // The text's two runs as four columns, then the content: 2@1 "a"
        // and 3@1 "bc" deleted (counter 3 and Lamport 3 continue the first
        // run; `count << 1 | deleted` 2 and 5), then the UTF-8 "abc".
        let asWritten: [UInt8] = [2, 0, 0, 4, 0, 0, 0, 2, 5, 3, 0x61, 0x62, 0x63]
        let at = try #require((0...(written.count - asWritten.count)).first { written[$0..<$0 + asWritten.count].elementsEqual(asWritten) })
        func snapshot(withRuns runs: [UInt8]) -> [UInt8] {
            Envelope.seal(magic: SnapshotEncoding.magic, version: SnapshotEncoding.version,
                          body: written[..<at] + runs + written[(at + asWritten.count)...])
        }
        // "bc" not deleted: the same two runs, continuing each other, against one run of "abc".
        let split = try Document(snapshot: snapshot(withRuns: [2, 0, 0, 4, 0, 0, 0, 2, 4, 3, 0x61, 0x62, 0x63]), replica: ReplicaID(3))
        let whole = try Document(snapshot: snapshot(withRuns: [1, 0, 4, 0, 6, 3, 0x61, 0x62, 0x63]), replica: ReplicaID(3))
        split.objects.texts[0].checkInvariants()
        #expect(try split.text(text) == "abc")
        #expect(split.encodeSnapshot(includeHistory: false) == whole.encodeSnapshot(includeHistory: false))
        // Edits at the join, across it and after it, alike on both.
        let (x, y) = try (edited(split), edited(whole))
        x.objects.texts[0].checkInvariants()
        #expect(try x.text(text) == "aXyz" && y.text(text) == "aXyz")
        #expect(x.encodeSnapshot() == y.encodeSnapshot())
        func edited(_ loaded: Document) throws -> Document {
            var document = loaded
            try document.transact { tx in
                try tx.insertText(text, at: 1, "X")
                try tx.deleteText(text, at: 2, count: 2)
                try tx.insertText(text, at: 2, "yz")
            }
            return document
        }
    }

    @Test func anObjectsKeyFlagOtherThanZeroOrOneIsRefused() throws {
        var doc = Document(replica: ReplicaID(1))
        try doc.transact { tx in
            let list = try tx.putObject(.root, key: "l", kind: .list)
            _ = try tx.insertObject(list, at: 0, kind: .map)
        }
        var body = Array(try Envelope.open(doc.encodeSnapshot(includeHistory: false), magic: SnapshotEncoding.magic,
                                           name: "sample", version: SnapshotEncoding.version).remainingBytes)
        // The second object, the map in the list: id (0, 2), kind 0, parent
        // (1, 1), and its key flag 0, for an element of a list.
        #expect(Array(body[25...30]) == [0, 2, 0, 1, 1, 0])
        body[30] = 2
        let forged = Envelope.seal(magic: SnapshotEncoding.magic, version: SnapshotEncoding.version, body: body)
        #expect {
            try Document(snapshot: forged, replica: ReplicaID(3))
        } throws: { error in
            "\(error)".contains("key flag is 2")
        }
    }

    /// Nests `levels` maps in `parent` straight into the document's state,
    /// past the depth check a transaction or a peer's change meets, as a
    /// hostile snapshot's objects would be; returns the deepest.
    static func nest(_ levels: Int, in parent: ObjectID, of doc: inout Document) throws -> ObjectID {
        var parent = parent
        for _ in 0..<levels {
            let id = OpID(replica: doc.replica, counter: doc.versionVector[doc.replica] + 1)
            let lamport = doc.maxLamport + 1
            try doc.objects.apply(.put(object: parent, key: "k", value: .object(.map), pred: []), id: id, lamport: lamport)
            doc.noteApplied(id: id, lamport: lamport, width: 1, parents: doc.heads)
            parent = ObjectID(id)
        }
        return parent
    }

    @Test func deeplyNestedObjectsInASnapshotAreRefused() throws {
        var doc = Document(replica: ReplicaID(3))
        _ = try Self.nest(SnapshotEncoding.maxDepth + 5, in: .root, of: &doc)
        let bytes = doc.encodeSnapshot(includeHistory: false)
        #expect(throws: DecodingError.self) { try Document(snapshot: bytes, replica: ReplicaID(4)) }
    }

    @Test func objectsListedBeforeTheirParentsLoadAndTheirDepthIsChecked() throws {
        // Replica 2 nests 510 maps; replica 1, whose objects a snapshot lists
        // first (ids sort by replica), nests more inside the deepest.
        // (Past the limit only straight into the state: see `nest`.)
        func nested(deeperBy extra: Int) throws -> Document {
            var writer = Document(replica: ReplicaID(2))
            var parent = ObjectID.root
            try writer.transact { tx in
                for _ in 0..<(SnapshotEncoding.maxDepth - 2) { parent = try tx.putObject(parent, key: "k", kind: .map) }
            }
            var doc = Document(replica: ReplicaID(1))
            try doc.applyEncoded(try writer.encodeChanges())
            _ = try Self.nest(extra, in: parent, of: &doc)
            return doc
        }
        let deepest = try nested(deeperBy: 2)
        let loaded = try Document(snapshot: deepest.encodeSnapshot(includeHistory: false), replica: ReplicaID(3))
        #expect(loaded.encodeSnapshot(includeHistory: false) == deepest.encodeSnapshot(includeHistory: false))
        #expect(throws: DecodingError.self) {
            try Document(snapshot: try nested(deeperBy: 3).encodeSnapshot(includeHistory: false), replica: ReplicaID(3))
        }
    }

    @Test func randomBytesNeverTrap() {
        var rng = SeededGenerator(seed: 99)
        for _ in 0..<2000 {
            let count = Int.random(in: 0..<200, using: &rng)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if Bool.random(using: &rng) { bytes = ChangeEncoding.magic + bytes }
            _ = try? ChangeEncoding.decode(bytes)
            _ = try? Document(snapshot: bytes, replica: ReplicaID(1))
        }
    }

    /// Damage inside a correctly checksummed frame reaches the decoders'
    /// own checks, and whatever they accept must apply without trapping.
    @Test func damagedBodiesWithValidChecksumsNeverTrap() throws {
        let doc = try Self.sample()
        var rng = SeededGenerator(seed: 7)
        let formats: [([UInt8], [UInt8], UInt64)] = [
            (try doc.encodeChanges(), ChangeEncoding.magic, ChangeEncoding.version),
            (ChangeEncoding.encode(try doc.allChanges(), elidingText: true), ChangeEncoding.magic, ChangeEncoding.elidedTextVersion),
            (doc.encodeSnapshot(), SnapshotEncoding.magic, SnapshotEncoding.version),
        ]
        for (bytes, magic, version) in formats {
            let body = Array(try Envelope.open(bytes, magic: magic, name: "sample", version: version).remainingBytes)
            for _ in 0..<3000 {
                var damaged = body
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    let index = Int.random(in: 0..<damaged.count, using: &rng)
                    damaged[index] = UInt8.random(in: 0...255, using: &rng)
                }
                let framed = Envelope.seal(magic: magic, version: version, body: damaged)
                if version == ChangeEncoding.elidedTextVersion {
                    // Read as a snapshot's history is: the text from a document's state.
                    if let changes = try? ChangeEncoding.decode(framed, limits: .default, insertedText: doc.objects.insertedText) {
                        var fresh = Document(replica: ReplicaID(2))
                        _ = try? fresh.apply(changes)
                    }
                } else if magic == ChangeEncoding.magic {
                    if let changes = try? ChangeEncoding.decode(framed) {
                        var fresh = Document(replica: ReplicaID(2))
                        _ = try? fresh.apply(changes)
                    }
                    // The catching-up path reads runs straight from the columns.
                    var catchingUp = Document(replica: ReplicaID(3))
                    _ = try? catchingUp.applyEncoded(framed)
                } else if var loaded = try? Document(snapshot: framed, replica: ReplicaID(2)) {
                    _ = loaded.encodeSnapshot()
                    _ = try? loaded.allChanges()
                    _ = try? loaded.transact { tx in try tx.put(.root, key: "after", .null) }
                }
            }
        }
    }
}
