/// The binary form of a sequence of changes (a history, or a sync page):
/// columns of run-length varints, ids relative to a replica table.
/// `Specs/encoding.md`, "Change bundles", gives the layout byte by byte.
public enum ChangeEncoding {
    static let magic = Array("QCHG".utf8)
    /// The version written: columns with literal runs.
    static let version: UInt64 = 3
    /// The version of the bundles a snapshot keeps as its history: inserted
    /// text is left out, because the snapshot's state holds every inserted
    /// element's content, and explicit origins are written relative to the
    /// insert, which compresses better. Never sent or stored on its own.
    static let elidedTextVersion: UInt64 = 4
    /// Versions 1 and 2, their forms before literal runs, are still read:
    /// stores and snapshots hold them, and peers may send them.
    static let versionsBeforeLiteralRuns: ClosedRange<UInt64> = 1...2

    /// Whether a bundle of `version` (one this build reads) elides its text.
    private static func elidesText(version: UInt64) -> Bool { version % 2 == 0 }

    /// The columns, in the order they are stored.
    enum Column: Int, CaseIterable {
        case changeReplica, changeCounter, changeLamport, parentCount, parentReplica, parentCounter
        case changeTime, operationCount
        case operationKind, objectReplica, objectCounter
        case originMode, originReplica, originCounter, textLength, valueCount
        case deleteReplica, deleteCounter, deleteLength
        case key, predCount, predReplica, predCounter, incrementDelta

        /// The case names, for error messages, written out: interpolating an
        /// enum case goes through reflection, which cost the first decode of
        /// a process 3.4 M instructions (a millisecond) and costs more than
        /// the whole decode of a one-change bundle after that.
        static let names = [
            "changeReplica", "changeCounter", "changeLamport", "parentCount", "parentReplica", "parentCounter",
            "changeTime", "operationCount",
            "operationKind", "objectReplica", "objectCounter",
            "originMode", "originReplica", "originCounter", "textLength", "valueCount",
            "deleteReplica", "deleteCounter", "deleteLength",
            "key", "predCount", "predReplica", "predCounter", "incrementDelta",
        ]
    }

    enum Kind: UInt64 {
        case put, remove, insertText, insertValues, delete, increment

        /// The kind `rawValue` codes, as the synthesized initializer gives
        /// it, inlined: every operation decoded reads one, and the
        /// synthesized one was a call each.
        @inline(__always)
        init?(rawValue: UInt64) {
            switch rawValue {
            case 0: self = .put
            case 1: self = .remove
            case 2: self = .insertText
            case 3: self = .insertValues
            case 4: self = .delete
            case 5: self = .increment
            default: return nil
            }
        }
    }

    /// The text a text insert of `object` put at the ids `run`, or nil if
    /// there is no such text: what a bundle that elides text is read with.
    typealias InsertedText = (_ object: ObjectID, _ run: IDRun) -> String?
    enum OriginMode: UInt64 { case head, previousElement, explicit }

    // MARK: Encoding

    /// Encodes changes in the order given (which must be a causal order for
    /// the receiver to apply them without waiting). With `elidingText`, in
    /// the form a snapshot's history takes (`elidedTextVersion`).
    public static func encode(_ changes: some Collection<Change>, elidingText: Bool = false) -> [UInt8] {
        var tables = BundleTables()
        for change in changes {
            tables.note(change.replica)
            for parent in change.parents { tables.note(parent.replica) }
            change.operations.withUnsafeBufferPointer { tables.note($0) }
        }
        var writer = BundleWriter(tables, elidingText: elidingText)
        for change in changes {
            change.parents.withUnsafeBufferPointer { parents in
                change.operations.withUnsafeBufferPointer { operations in
                    writer.append(id: change.id, lamport: change.lamport, width: change.width, time: change.time,
                                  parents: parents, operations: operations)
                }
            }
        }
        return writer.finish()
    }

    // MARK: Decoding

    /// The number of changes a bundle holds, read from its header after
    /// checking its frame and checksum, without decoding the changes.
    /// `elidedTextAllowed` also accepts the form a snapshot's history takes.
    public static func changeCount(of bytes: [UInt8], limits: DecodingLimits = .default,
                                   elidedTextAllowed: Bool = false) throws(DecodingError) -> Int {
        var (body, _, _) = try open(bytes, elidedTextAllowed: elidedTextAllowed)
        _ = try readTables(&body)
        return try readChangeCount(&body, limits: limits)
    }

    /// Checks a bundle's frame and checksum alone, reading nothing of its
    /// body: a stored bundle sent on as it is (a server's page) is one the
    /// disk may have damaged since.
    public static func checkFrame(of bytes: [UInt8]) throws(DecodingError) {
        _ = try open(bytes, elidedTextAllowed: false)
    }

    /// Whether a bundle whose frame was checked already elides its text.
    static func elidesText(checked bundle: [UInt8]) -> Bool {
        elidesText(version: UInt64(bundle[magic.count]))  // every version is a one-byte varint
    }

    /// Checks a bundle's frame; returns its body, whether its text is
    /// elided and whether its columns have literal runs.
    static func open(_ bytes: [UInt8], elidedTextAllowed: Bool) throws(DecodingError)
        -> (body: ByteReader, elidesText: Bool, literalRuns: Bool) {
        let (body, found) = try Envelope.open(bytes, magic: magic, name: "a Quire change bundle", versions: 1...elidedTextVersion)
        let elides = elidesText(version: found)
        guard elidedTextAllowed || !elides else { throw .unsupportedVersion(found) }
        return (body, elides, !versionsBeforeLiteralRuns.contains(found))
    }

    static func readTables(_ body: inout ByteReader) throws(DecodingError) -> (replicas: [ReplicaID], keys: [String]) {
        let replicaCount = try body.readCount("replicas", minimumItemSize: 8)
        var replicaTable: [ReplicaID] = []
        replicaTable.reserveCapacity(replicaCount)
        for _ in 0..<replicaCount {
            let replica = ReplicaID(try body.readUInt64("a replica id"))
            guard replicaTable.last.map({ $0 < replica }) ?? true else { throw .invalid("the replica table is not sorted") }
            replicaTable.append(replica)
        }
        let keyCount = try body.readCount("keys")
        var keyTable: [String] = []
        keyTable.reserveCapacity(keyCount)
        for _ in 0..<keyCount { keyTable.append(try body.readString("a map key")) }
        return (replicaTable, keyTable)
    }

    static func readChangeCount(_ body: inout ByteReader, limits: DecodingLimits) throws(DecodingError) -> Int {
        let changeCount = try body.readVarint("the number of changes")
        guard changeCount <= UInt64(limits.maxChanges) else {
            throw .invalid("it holds \(changeCount) changes, more than the limit of \(limits.maxChanges)")
        }
        return Int(changeCount)
    }

    /// Decodes what `encode` wrote. Damaged or hostile input gives a
    /// `DecodingError`, in time and memory bounded by the input and `limits`.
    public static func decode(_ bytes: [UInt8], limits: DecodingLimits = .default) throws(DecodingError) -> [Change] {
        try decode(bytes, limits: limits, insertedText: nil)
    }

    /// `decode`, also accepting a bundle whose text is elided, with
    /// `insertedText` giving the text of each insert (nil if it has none).
    static func decode(_ bytes: [UInt8], limits: DecodingLimits, insertedText: InsertedText?) throws(DecodingError) -> [Change] {
        var decoder = try ChangeDecoder(bytes, limits: limits, insertedText: insertedText)
        var current = ChangeDecoder.Current()
        var changes: [Change] = []
        changes.reserveCapacity(min(decoder.changeCount, 1 << 16))
        while try decoder.next(into: &current) { changes.append(current.change) }
        try decoder.finish()
        return changes
    }
}

extension Document {
    /// The changes `version` lacks, encoded (see `ChangeEncoding`), each
    /// replica's kept together as far as causality allows
    /// (`groupedByReplica`), so that the receiver applies longer runs.
    public func encodeChanges(since version: VersionVector = VersionVector()) throws(DocumentError) -> [UInt8] {
        if version.isEmpty, let bundle = history.wholeHistoryBundle {
            return bundle  // the whole history arrived as one bundle: send it as it is
        }
        return try history.encodedWithText(from: version, objects)
    }

    /// Decodes a change bundle and applies it (see `apply(_:)`).
    ///
    /// When every change of the bundle is new and ready in the order given,
    /// as when a fresh replica catches up, the history keeps the bundle
    /// encoded instead of holding each change decoded (unless the bundle
    /// holds only a few changes).
    @discardableResult
    public mutating func applyEncoded(_ bytes: [UInt8], limits: DecodingLimits = .default) throws -> Int {
        try applyEncodedRun(bytes, limits: limits).applied
    }

    /// `applyEncoded`, also telling whether the bundle was taken whole
    /// (every change new and applied in the order given) and
    /// is one run: then `run` holds its bounds, so that a store can log the
    /// bytes as they came without decoding them again.
    public mutating func applyEncodedRun(_ bytes: [UInt8], limits: DecodingLimits = .default) throws -> (applied: Int, run: RunBounds?) {
        guard history.canAppendBundle, pending.isEmpty else { return (try apply(ChangeEncoding.decode(bytes, limits: limits)), nil) }
        // The first text the bundle inserts into reserves its spans from a
        // bound on the bundle, if the bundle is large against what it holds
        // (`applyBundleInOrder`); what its leaves did not take is given back
        // here, outside that loop: given back there (a `defer`), the loop's
        // code grew slower, +4% of friendsforever's merge. A fresh replica
        // gives back the room of every text, all made by the bundle.
        let isFresh = versionVector.isEmpty
        defer { objects.giveBackSpareSpanRoom(ofEveryText: isFresh) }
        return try applyBundleInOrder(bytes, limits: limits)
    }
}
