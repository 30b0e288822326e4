/// The binary form of a sequence of changes (a history, or a sync page):
/// columns of run-length varints, ids relative to a replica table.
/// `Specs/encoding.md`, "Change bundles", gives the layout byte by byte.
public enum ChangeEncoding {
    static let magic = Array("QCHG".utf8)
    /// The version written: columns with runs of the last repeated value,
    /// explicit origins and parents relative to ids the reader knows.
    public static let version: UInt64 = 5
    /// The version of the bundles a snapshot keeps as its history: inserted
    /// text is left out, because the snapshot's state holds every inserted
    /// element's content, and explicit origins are written relative to the
    /// insert, which compresses better. Never sent or stored on its own.
    static let elidedTextVersion: UInt64 = 4

    /// What a bundle's version says about its layout. Versions 1 to 3,
    /// written by earlier builds, are still read: stores and snapshots hold
    /// them, and peers may send them.
    struct Layout {
        /// The text of inserts is left to a snapshot's state (versions 2 and 4).
        let elidesText: Bool
        let columnForm: ColumnForm
        let originCounters: OriginCounterForm
        /// An explicit parent's counter is the last counter of its replica
        /// in the changes before, minus the parent's, and `parentCount`
        /// says whether the change's own replica's last change before it
        /// is a parent, not written out (version 5).
        let relativeParents: Bool

        /// The layout of `version`, one this build reads (1 to 5).
        init(version: UInt64) {
            elidesText = version % 2 == 0
            columnForm = version <= 2 ? .pairs : version <= 4 ? .literalRuns : .reusedRepeats
            originCounters = version >= 5 ? .distanceBackOrCounter : elidesText ? .insertMinusOrigin : .counter
            relativeParents = version >= 5
        }
    }

    /// A version `BundleWriter` writes, as a type: the writer and its
    /// `ColumnWriter`s are compiled for each, so that what the layout says
    /// is settled when compiling. Checked at run time, version 5's choices
    /// (reused runs, relative ids) cost the version 4 bundles of a
    /// history's records up to 0.3% more instructions to write.
    protocol WrittenVersion {
        static var version: UInt64 { get }
        /// The form of the version's columns, `layout.columnForm`, as a type.
        associatedtype Columns: WrittenColumnForm
    }

    /// `version`: the bundles sent, and stored on their own.
    enum Sent: WrittenVersion {
        static var version: UInt64 { ChangeEncoding.version }
        typealias Columns = ReusedRepeatColumns
    }

    /// `elidedTextVersion`: a snapshot's history, a history's records.
    enum ElidedText: WrittenVersion {
        static var version: UInt64 { ChangeEncoding.elidedTextVersion }
        typealias Columns = LiteralRunColumns
    }

    /// `olderReadersVersion`: the bundles a sync answers a client before version 5 with.
    enum ForOlderReaders: WrittenVersion {
        static var version: UInt64 { ChangeEncoding.olderReadersVersion }
        typealias Columns = LiteralRunColumns
    }

    /// The version every build reads (builds before version 5 read 1 and
    /// 3 alone): a server answers in it a client that does not say it
    /// reads `version` (`Specs/sync.md`, "Mixed versions of Quire").
    public static let olderReadersVersion: UInt64 = 3

    /// The versions of a bundle on its own that this build reads.
    public static let readVersions: [UInt64] = [1, olderReadersVersion, version]

    /// The version to write a bundle in for a reader that reads
    /// `versions`: `version` if it is among them, else `olderReadersVersion`.
    public static func writtenVersion(forReaderOf versions: Set<UInt64>) -> UInt64 {
        versions.contains(version) ? version : olderReadersVersion
    }

    /// The version of a bundle whose frame was checked already.
    static func version(checked bundle: [UInt8]) -> UInt64 {
        UInt64(bundle[magic.count])  // every version is a one-byte varint
    }

    /// How `originCounter` writes an explicit origin.
    enum OriginCounterForm {
        /// The origin's counter (versions 1 and 3).
        case counter
        /// Signed: the insert's first counter minus the origin's (versions
        /// 2 and 4, the snapshot's history).
        case insertMinusOrigin
        /// An origin of the insert's own replica as the distance back from
        /// the counter before the insert's first (`first - 1 - origin`),
        /// another replica's as its counter (version 5). A writer's own
        /// origins are always before the insert, and others' are not near
        /// it: both come out smaller than a signed difference.
        case distanceBackOrCounter
    }

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

        /// The column's name, for error messages.
        var name: String { Self.names[rawValue] }
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
        elidingText ? encode(as: ElidedText.self, visiting(changes)) : encode(as: Sent.self, visiting(changes))
    }

    /// Encodes changes as `encode(_:)` does, in `version`: `version` or
    /// `olderReadersVersion`, for a reader that reads no newer.
    public static func encode(_ changes: some Collection<Change>, version: UInt64) -> [UInt8] {
        switch version {
        case Self.version: encode(as: Sent.self, visiting(changes))
        case olderReadersVersion: encode(as: ForOlderReaders.self, visiting(changes))
        default: preconditionFailure("bundles on their own are written in version \(Self.version) or \(olderReadersVersion), not \(version)")
        }
    }

    /// `bundle`, whose frame was checked, for a reader that reads no
    /// version above `version` (`olderReadersVersion` or `version`): as it
    /// is, or its changes written again in `version` if its own is newer.
    public static func readable(_ bundle: [UInt8], upTo version: UInt64) throws(DecodingError) -> [UInt8] {
        self.version(checked: bundle) <= version ? bundle : encode(try decode(bundle), version: version)
    }

    /// `changes` as the closure that hands each to the writer. The changes
    /// reach the writer so, not as the collection: a function generic over
    /// both would stay unspecialized when called from another module, and
    /// there every use of `BundleWriter<Version>` and its columns looked up
    /// their type's metadata (friendsforever's replay, 4,892 small
    /// bundles: 40 M instructions more).
    @inline(__always)
    private static func visiting(_ changes: some Collection<Change>) -> ((Change) -> Void) -> Void {
        { body in for change in changes { body(change) } }
    }

    private static func encode<Version: WrittenVersion>(as _: Version.Type, _ forEachChange: ((Change) -> Void) -> Void) -> [UInt8] {
        var tables = BundleTables()
        forEachChange { change in
            tables.note(change.replica)
            for parent in change.parents { tables.note(parent.replica) }
            change.operations.withUnsafeBufferPointer { tables.note($0) }
        }
        var writer = BundleWriter<Version>(tables)
        forEachChange { change in
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
        var (body, _) = try open(bytes, elidedTextAllowed: elidedTextAllowed)
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
        Layout(version: version(checked: bundle)).elidesText
    }

    /// Checks a bundle's frame; returns its body and its layout.
    static func open(_ bytes: [UInt8], elidedTextAllowed: Bool) throws(DecodingError) -> (body: ByteReader, layout: Layout) {
        let (body, found) = try Envelope.open(bytes, magic: magic, name: "a Quire change bundle", versions: 1...version)
        let layout = Layout(version: found)
        guard elidedTextAllowed || !layout.elidesText else { throw .unsupportedVersion(found) }
        return (body, layout)
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

extension ChangeEncoding.WrittenVersion {
    /// What the version written says of its layout, known when compiling.
    static var layout: ChangeEncoding.Layout { ChangeEncoding.Layout(version: version) }
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
    ///
    /// A large bundle makes room up front for what it adds to a text, from
    /// a bound often several times what it takes; the room left is given
    /// back after it. With `keepingSpanRoom`, for a caller applying several
    /// bundles in a row (a sync's pages, a log's rows), a replica that
    /// held something keeps that room for the bundles after this one, which
    /// then need not grow the text again (a copy of its storage each time):
    /// call `giveBackSpareSpanRoom()` after the last.
    public mutating func applyEncodedRun(_ bytes: [UInt8], limits: DecodingLimits = .default,
                                         keepingSpanRoom: Bool = false) throws -> (applied: Int, run: RunBounds?) {
        guard history.canAppendBundle, pending.isEmpty else { return (try apply(ChangeEncoding.decode(bytes, limits: limits)), nil) }
        // The first text the bundle inserts into reserves its spans from a
        // bound on the bundle, if it is large against the room the text has
        // (`applyBundleInOrder`); what its leaves did not take is given back
        // here, outside that loop: given back there (a `defer`), the loop's
        // code grew slower, +4% of friendsforever's merge. A fresh replica
        // gives back every text's room, with `keepingSpanRoom` too: its
        // texts were all made by the bundle, the others grown step by step.
        let isFresh = versionVector.isEmpty
        defer { if isFresh || !keepingSpanRoom { objects.giveBackSpareSpanRoom(ofEveryText: isFresh) } }
        return try applyBundleInOrder(bytes, limits: limits)
    }

    /// Gives back the room past a text's spans that bundles applied with
    /// `applyEncodedRun(_:limits:keepingSpanRoom:)` kept, after the last.
    public mutating func giveBackSpareSpanRoom() {
        objects.giveBackSpareSpanRoom(ofEveryText: false)
    }
}
