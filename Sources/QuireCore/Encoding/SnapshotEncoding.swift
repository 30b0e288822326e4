/// The binary form of a whole document: its state (tombstones included)
/// and its history. Two replicas that applied the same changes encode the
/// same state bytes, whatever order the changes came in.
/// `Specs/encoding.md`, "Document snapshots", gives the layout byte by byte.
public enum SnapshotEncoding {
    static let magic = Array("QDOC".utf8)
    /// The version written. Stores hold snapshots of the earlier versions,
    /// which are still read: version 1 stored each text run's UTF-8 right
    /// after its header, version 2 wrote run headers one after another and
    /// kept the history's inserted text.
    static let version: UInt64 = 3
    /// Objects may not nest deeper than this many levels, so that walking
    /// the tree of a hostile snapshot stays bounded.
    public static let maxDepth = 512
}

// MARK: Encoding

extension Document {
    /// The document's state and, unless `includeHistory` is false, its
    /// history as change bundles. A document loaded from a snapshot without
    /// history has no full history to write, so it writes none. The state part is canonical: equal for
    /// every replica that applied the same changes. Pending changes are not
    /// included.
    public func encodeSnapshot(includeHistory: Bool = true) -> [UInt8] {
        let versions = versionVector.sortedEntries
        // Each object's slot comes with its id: looking each up (twice) cost
        // a snapshot of 1,540 writers' small maps 7% of its instructions.
        let nested = objects.slots.nestedObjects
        let replicaTable = Self.replicaTable(versions: versions, creators: nested.lazy.map(\.id))
        let replicaIndex = ReplicaIndexTable(replicaTable)

        // The state holds every inserted element's text: the history leaves
        // it out. (The recorded changes are about `bundleSize` at most.)
        let snapshotHistory = includeHistory && base == nil
            ? SnapshotHistory(bundles: history.bundles.map(\.bytes), records: history.hasRecords ? history.recordsBundle() : nil) : nil
        // Written straight into the sealed bytes, with room for the history,
        // the texts and the maps ahead: growing a snapshot of many megabytes
        // by doubling, then copying it into its frame, took more time than
        // writing it (fresh pages from the kernel each time).
        var capacity = 64
        for bundle in snapshotHistory?.bundles ?? [] { capacity += bundle.count + 10 }
        if let records = snapshotHistory?.records { capacity += records.sealedSize + 10 }
        for text in objects.texts { capacity += text.content.count + text.spanCount * Self.runHeaderSizeEstimate }
        for map in objects.maps {
            for key in map.keys { capacity += key.string.utf8.count + 1 }
            for register in map.values {
                for entry in register { capacity += Self.registerEntrySizeEstimate(entry.value) }
            }
        }
        return Envelope.seal(magic: SnapshotEncoding.magic, version: SnapshotEncoding.version, bodySize: .about(capacity)) { body in
            // The state is mostly small writes (ids, lengths, keys, short
            // values): gathered, and appended a chunk at a time.
            body.writeGathered { body in
                body.writeVarint(replicaTable.count)
                for replica in replicaTable { body.writeUInt64(replica.rawValue) }
                writeClockAndVersionVector(versions, to: &body, replicaIndex)
                body.writeVarint(heads.count)
                for head in heads { body.writeID(head, replicaIndex) }
                writeObjects(nested, to: &body, replicaIndex)
                for slot in [ObjectTable.rootSlot] + nested.map(\.slot) {
                    switch slot.kind {
                    case .map: writeMap(slot, to: &body, replicaIndex)
                    case .text: body.withWriter { writeText(slot, to: &$0, replicaIndex) }
                    case .list: writeList(slot, to: &body, replicaIndex)
                    case .counter: body.writeSigned(objects.counters[slot.index])
                    }
                }
            }
            return Self.writeHistory(snapshotHistory, to: &body)
        }
    }

    /// A snapshot's history: the bundles the history holds, then its
    /// recorded changes as one more, sealed in place.
    private struct SnapshotHistory {
        let bundles: [[UInt8]]
        let records: FinishedBundle?
    }

    /// Room for a text run's header, four varints (replica index, counter
    /// step, Lamport step, length), in the estimate of a snapshot's size:
    /// at 4 bytes, automerge-paper's, rustcode's and seph-blog1's bodies
    /// outgrew it and were copied as they doubled (`HISTORY.md`,
    /// forty-fourth session). A span is at most one run.
    private static let runHeaderSizeEstimate = 8

    /// Room for a register entry in the estimate of a snapshot's size: its
    /// id, Lamport value and value tag, and a string's or bytes' contents,
    /// which are most of a map of long values (crdt-benchmarks B3.3).
    private static func registerEntrySizeEstimate(_ value: Value?) -> Int {
        switch value {
        case .scalar(.string(let string)): 24 + string.utf8.count
        case .scalar(.bytes(let bytes)): 24 + bytes.count
        default: 24
        }
    }

    /// Every replica the state names, sorted: those of the version vector,
    /// and any object's creator, which is among them unless the state is
    /// damaged. Both lists come sorted by replica, so one walk finds the others.
    private static func replicaTable(versions: [(replica: ReplicaID, value: UInt64)], creators: some Sequence<OpID>) -> [ReplicaID] {
        let replicas = versions.map(\.replica)
        var others: [ReplicaID] = []
        var index = 0
        for creator in creators {
            while index < replicas.count && replicas[index] < creator.replica { index += 1 }
            if index == replicas.count || replicas[index] != creator.replica { others.append(creator.replica) }
        }
        return others.isEmpty ? replicas : Set(replicas + others).sorted()
    }

    /// The Lamport clock, then the version vector: each replica's highest
    /// id and last Lamport value.
    private func writeClockAndVersionVector(_ versions: [(replica: ReplicaID, value: UInt64)], to body: inout GatheringWriter,
                                            _ replicaIndex: ReplicaIndexTable) {
        body.writeVarint(maxLamport)
        body.writeVarint(versions.count)
        // Each replica's last Lamport value, walking both sorted tables
        // together rather than searching one for each replica.
        let clocks = replicaClocks.entries
        var clockIndex = clocks.startIndex
        for (replica, counter) in versions {
            body.writeID(OpID(replica: replica, counter: counter), replicaIndex)
            while clockIndex < clocks.endIndex && clocks[clockIndex].replica < replica { clockIndex += 1 }
            let isRecorded = clockIndex < clocks.endIndex && clocks[clockIndex].replica == replica
            body.writeVarint(replica == self.replica ? lastLamport(of: replica) : isRecorded ? clocks[clockIndex].value.lastLamport : 0)
        }
    }

    /// The objects other than the root, in id order: each one's id, kind,
    /// parent and key.
    private func writeObjects(_ nested: [(id: OpID, slot: ObjectTable.Slot)], to body: inout GatheringWriter,
                              _ replicaIndex: ReplicaIndexTable) {
        body.writeVarint(nested.count)
        for (creator, slot) in nested {
            body.writeID(creator, replicaIndex)
            body.writeByte(slot.kind.rawValue)
            let (parent, key) = objects.placement(of: slot)!
            if let parentCreator = parent.creator {
                body.writeVarint(replicaIndex.index(of: parentCreator.replica) + 1)
                body.writeVarint(parentCreator.counter)
            } else {
                body.writeVarint(0)
            }
            if let key { body.writeByte(1); body.writeString(key) } else { body.writeByte(0) }
        }
    }

    /// A map's keys, sorted, each with its register's entries.
    private func writeMap(_ slot: ObjectTable.Slot, to body: inout GatheringWriter, _ replicaIndex: ReplicaIndexTable) {
        // Read where they are, in key order through their positions in the
        // dictionary: copied into an array first (keys and registers, each
        // retained and released), an object of two fields took about 6,000
        // instructions, nearly half of a snapshot of 1,540 writers' objects
        // (crdt-benchmarks B3.2).
        let map = objects.maps[slot.index]
        body.writeVarint(map.count)
        KeyOrder.forEachSortedIndex(of: map.keys) { index in
            body.writeString(map.keys[index].string)
            let register = map.values[index]
            body.writeVarint(register.count)
            for entry in register {
                body.writeID(entry.id, replicaIndex)
                body.writeVarint(entry.lamport)
                body.writeValue(entry.value.map(NewValue.init))
            }
        }
    }

    /// A text's run headers as columns, then all its content in one piece:
    /// zstd compresses each column and the text far better than rows of
    /// mixed fields (see encoding.md).
    private func writeText(_ slot: ObjectTable.Slot, to body: inout ByteWriter, _ replicaIndex: ReplicaIndexTable) {
        let text = objects.texts[slot.index]
        let found = text.tree.runs()
        // The text's replica indices to the table's, each looked up
        // once: hashing every run's replica (in a `Dictionary`) cost
        // a sixth of a snapshot.
        var tableIndex = [Int](repeating: -1, count: text.tree.replicaCount)
        for run in found.runs where tableIndex[Int(run.replica)] < 0 {
            tableIndex[Int(run.replica)] = replicaIndex.index(of: run.header.id.replica)
        }
        body.writeVarint(found.runs.count)
        found.runs.withUnsafeBufferPointer { runs in
            body.writeVarints(count: runs.count) { UInt64(tableIndex[Int(runs[$0].replica)]) }
            body.writeVarints(count: runs.count) { index in
                let run = runs[index].header
                let previousEnd = index == 0 ? 0 : runs[index - 1].header.id.counter &+ UInt64(runs[index - 1].header.count)
                return ByteWriter.zigzag(Int64(bitPattern: run.id.counter &- previousEnd))
            }
            body.writeVarints(count: runs.count) {
                ByteWriter.zigzag(Int64(bitPattern: runs[$0].header.lamport &- runs[$0].header.id.counter))
            }
            body.writeVarints(count: runs.count) { UInt64(runs[$0].header.count) << 1 | (runs[$0].header.isDeleted ? 1 : 0) }
        }
        text.content.writeUTF8(of: found.contents, to: &body)
    }

    /// A list's runs, each header followed by its values.
    private func writeList(_ slot: ObjectTable.Slot, to body: inout GatheringWriter, _ replicaIndex: ReplicaIndexTable) {
        var runs: [SequenceRun<Value>] = []
        objects.lists[slot.index].forEachRun { runs.append($0) }
        body.writeVarint(runs.count)
        for run in runs {
            body.writeID(run.id, replicaIndex)
            body.writeVarint(run.lamport)
            body.writeByte(run.isDeleted ? 1 : 0)
            body.writeVarint(run.elements.count)
            for value in run.elements { body.writeValue(NewValue(value)) }
        }
    }

    /// The history flag and, if there is a history, its bundles; returns
    /// where each bundle lies in the body.
    private static func writeHistory(_ history: SnapshotHistory?, to body: inout ByteWriter) -> [Range<Int>] {
        guard let history else {
            body.writeByte(0)
            return []
        }
        body.writeByte(1)
        body.writeVarint(history.bundles.count + (history.records == nil ? 0 : 1))
        // Each bundle is sealed, so the snapshot's checksum need not read it again.
        var sealedBundles: [Range<Int>] = []
        for bundle in history.bundles {
            body.writeData(bundle)
            sealedBundles.append(body.bytes.count - bundle.count..<body.bytes.count)
        }
        if let records = history.records {
            body.writeVarint(records.sealedSize)
            let start = body.bytes.count
            records.seal(into: &body)
            sealedBundles.append(start..<body.bytes.count)
        }
        return sealedBundles
    }
}

private extension ByteSink {
    /// An id in a snapshot: its replica's index in the replica table, then its counter.
    mutating func writeID(_ id: OpID, _ replicaIndex: ReplicaIndexTable) {
        writeVarint(replicaIndex.index(of: id.replica))
        writeVarint(id.counter)
    }
}

// MARK: Loading

extension Document {
    /// Loads a document from `encodeSnapshot()` output, to be edited as `replica`.
    ///
    /// A snapshot without history loads a document that can be read, edited
    /// and merged with, but `changes(since:)` only knows changes made after.
    /// The history is checked (framing, checksum) now and decoded when first
    /// read, so damage inside it surfaces as a `DecodingError` from the
    /// methods that read it.
    public init(snapshot bytes: [UInt8], replica: ReplicaID, limits: DecodingLimits = .default) throws(DecodingError) {
        try self.init(snapshot: bytes, replica: replica, limits: limits, checksum: .compared)
    }

    /// Whether loading a snapshot compares its own CRC-32
    /// (`Specs/storage.md`, "Which check covers a snapshot").
    package enum SnapshotChecksum: Sendable {
        /// Compared: bytes a caller hands in, read from a file or sent by a peer.
        case compared
        /// Not compared: bytes every one of which a check has covered
        /// already, the CRC-32 of the store snapshot frame whose payload
        /// they were decompressed from (`SnapshotFrame.document(in:replica:limits:)`)
        /// or this document's own load (`rebuiltWithoutUncommittedEdits`).
        /// The history's bundles are still checked each: they are kept,
        /// and written again as sealed pieces whose checksum a writer
        /// does not read (`CRC32.checksum(_:selfChecked:)`).
        case covered
    }

    /// `init(snapshot:replica:limits:)`, comparing the snapshot's own
    /// CRC-32 or not (`SnapshotChecksum`); its other checks are the same.
    package init(snapshot bytes: [UInt8], replica: ReplicaID, limits: DecodingLimits,
                 checksum: SnapshotChecksum) throws(DecodingError) {
        let frame = try Envelope.openLeavingChecksum(bytes, magic: SnapshotEncoding.magic, name: "a Quire document snapshot",
                                                     versions: 1...SnapshotEncoding.version)
        // The snapshot's checksum is compared last, so that it need not
        // read the history's bundles again after each bundle's own check.
        var checkedBundles: [Range<Int>] = []
        do {
            try self.init(snapshotBody: frame.body, version: frame.version, of: bytes, replica: replica, limits: limits,
                          checkedBundles: &checkedBundles)
        } catch {
            // Damage the checksum shows is reported as such, as if it had been checked first.
            if checksum == .compared { try frame.checkChecksum() }
            throw error
        }
        if checksum == .compared { try frame.checkChecksum(selfChecked: checkedBundles) }
    }

    /// Reads a snapshot's body, whose checksum the caller compares after;
    /// adds to `checkedBundles` where each history bundle lies in `bytes`,
    /// its own checksum checked. Each step reads one section of the body,
    /// in the order `Specs/encoding.md` lists them.
    private init(snapshotBody body: ByteReader, version: UInt64, of bytes: [UInt8], replica: ReplicaID,
                 limits: DecodingLimits, checkedBundles: inout [Range<Int>]) throws(DecodingError) {
        self.init(replica: replica)
        var snapshot = try SnapshotReader(body: body, version: version, limits: limits)
        try readClocksAndHeads(from: &snapshot)
        let order = try readObjects(from: &snapshot)
        try checkObjectTree(order)
        for (object, _, slot) in order {
            switch slot.kind {
            case .map: objects.maps[slot.index] = try readMap(from: &snapshot)
            case .text: objects.texts[slot.index] = try readText(object, from: &snapshot)
            case .list: objects.lists[slot.index] = try readList(object, from: &snapshot)
            case .counter: objects.counters[slot.index] = try snapshot.body.readSigned("a counter value")
            }
        }
        try readHistory(from: &snapshot, of: bytes, checkedBundles: &checkedBundles)
        guard snapshot.body.isAtEnd else { throw .invalid("bytes follow the history") }
    }

    /// An object of the snapshot with its parent and slot.
    private typealias PlacedObject = (object: ObjectID, parent: ObjectID, slot: ObjectTable.Slot)

    /// The Lamport clock, the version vector with each replica's last
    /// Lamport value, then the heads, set once all are read
    /// (`setLoadedClocks`). The heads and the entries are both sorted by
    /// replica, so one walk finds each head's entry.
    private mutating func readClocksAndHeads(from snapshot: inout SnapshotReader) throws(DecodingError) {
        maxLamport = try snapshot.body.readVarint("the Lamport clock")
        guard maxLamport < Document.lamportLimit else { throw .invalid("the Lamport clock \(maxLamport) reaches 2^62") }
        let entryCount = try snapshot.body.readCount("version vector entries", minimumItemSize: 2)
        var replicas: [LoadedReplica] = []
        // Room up front up to a bound, as for the objects.
        replicas.reserveCapacity(min(entryCount, 1 << 16))
        var inOrder = true
        for _ in 0..<entryCount {
            let entry = try snapshot.readID("a version vector entry")
            let lamport = try snapshot.body.readVarint("a replica's last Lamport value")
            guard lamport >= entry.counter, lamport <= maxLamport else { throw .invalid("replica \(entry.replica)'s last Lamport value \(lamport) is out of range") }
            if let last = replicas.last, last.replica >= entry.replica { inOrder = false }
            replicas.append((entry.replica, entry.counter, ReplicaClock(lastLamport: lamport)))
        }
        if !inOrder {
            // Entries a writer put out of the canonical order load as the
            // same state (`Specs/encoding.md`); a replica named twice does not.
            replicas.sort { $0.replica < $1.replica }
            for index in replicas.indices.dropFirst() where replicas[index - 1].replica == replicas[index].replica {
                throw .invalid("the version vector names \(replicas[index].replica) twice")
            }
        }
        var previousHead: OpID?
        var next = 0  // the first entry the next head may be of
        for _ in 0..<(try snapshot.body.readCount("heads", minimumItemSize: 2)) {
            let head = try snapshot.readID("a head")
            guard previousHead.map({ $0.replica < head.replica }) ?? true else {
                throw .invalid("the heads are not sorted, one per replica")
            }
            while next < replicas.count, replicas[next].replica < head.replica { next += 1 }
            guard next < replicas.count, replicas[next].replica == head.replica, head.counter <= replicas[next].counter else {
                throw .invalid("head \(head) is not in the version vector")
            }
            replicas[next].clock.headCounter = head.counter
            previousHead = head
        }
        setLoadedClocks(replicas)
    }

    /// Creates the objects the snapshot lists, and returns them after the
    /// root in id order: the passes after read them there rather than hash
    /// their ids again.
    private mutating func readObjects(from snapshot: inout SnapshotReader) throws(DecodingError) -> [PlacedObject] {
        var order: [PlacedObject] = [(.root, .root, objects.slots[.root]!)]
        let objectCount = try snapshot.body.readCount("objects", minimumItemSize: 4)
        // Room up front for the objects listed, up to a bound: a hostile
        // count (one object per 4 bytes left) must not reserve gigabytes.
        let reserved = min(objectCount, 1 << 16)
        objects.reserveCapacity(objects: reserved)
        order.reserveCapacity(reserved + 1)
        for _ in 0..<objectCount {
            let creator = try snapshot.readID("an object id")
            guard versionVector.contains(creator) else { throw .invalid("object \(creator) is not in the version vector") }
            let object = ObjectID(creator)
            // Strictly increasing, so listed once (and after the root, the least id).
            guard order[order.count - 1].object < object else { throw .invalid("object \(creator) is listed twice or out of order") }
            let rawKind = try snapshot.body.readByte("an object kind")
            guard let kind = ObjectKind(rawValue: rawKind) else { throw .invalid("unknown object kind \(rawKind)") }
            let parentCode = try snapshot.body.readIndex("the parent of \(creator)", below: snapshot.replicaTable.count + 1)
            let parent = parentCode == 0 ? ObjectID.root
                : ObjectID(OpID(replica: snapshot.replicaTable[parentCode - 1], counter: try snapshot.body.readVarint("a parent counter")))
            let key: String? = switch try snapshot.body.readByte("a key flag") {
            case 0: nil
            case 1: try snapshot.body.readString("a key")
            case let flag: throw .invalid("object \(creator)'s key flag is \(flag)")
            }
            order.append((object, parent, objects.create(kind, id: creator, parent: parent, key: key)))
        }
        return order
    }

    /// Checks, once every object is known, that their parents make a tree
    /// rooted at the root, of bounded depth.
    private func checkObjectTree(_ order: [PlacedObject]) throws(DecodingError) {
        var depth: [ObjectID: Int] = Dictionary(minimumCapacity: order.count)
        depth[.root] = 0
        for (object, parent, _) in order.dropFirst() {
            // Most parents come before their children: their depth is known.
            if let parentDepth = depth[parent] {
                guard parentDepth < SnapshotEncoding.maxDepth else { throw .invalid("objects nest deeper than \(SnapshotEncoding.maxDepth) levels") }
                depth[object] = parentDepth + 1
                continue
            }
            var chain: [ObjectID] = []
            var current = object
            while depth[current] == nil {
                guard let parent = objects.placement(of: current)?.parent, objects.slots[parent] != nil else {
                    throw .invalid("object \(object) has no parent in the document")
                }
                guard chain.count < SnapshotEncoding.maxDepth else { throw .invalid("objects nest deeper than \(SnapshotEncoding.maxDepth) levels or form a cycle") }
                chain.append(current)
                current = parent
            }
            var level = depth[current]!
            for child in chain.reversed() {
                level += 1
                guard level <= SnapshotEncoding.maxDepth else { throw .invalid("objects nest deeper than \(SnapshotEncoding.maxDepth) levels") }
                depth[child] = level
            }
        }
    }

    private func readMap(from snapshot: inout SnapshotReader) throws(DecodingError) -> [MapKey: MapRegister] {
        let keyCount = try snapshot.body.readCount("map keys", minimumItemSize: 2)
        // Sized once (growing from empty reallocated at the first and second
        // keys); bounded, as a hostile count must not reserve gigabytes.
        var map = [MapKey: MapRegister](minimumCapacity: min(keyCount, 1 << 10))
        // A key's entries, read winner first and written into its
        // register last first: each then wins over those before it,
        // where in the order read each would lose to all of them.
        var entries: [RegisterEntry] = []
        for _ in 0..<keyCount {
            let key = try snapshot.body.readString("a map key")
            guard map[MapKey(key)] == nil else { throw .invalid("key \(key) appears twice") }
            entries.removeAll(keepingCapacity: true)
            for _ in 0..<(try snapshot.body.readCount("register entries", minimumItemSize: 4)) {
                let id = try snapshot.readID("a register entry")
                let lamport = try snapshot.body.readVarint("a Lamport value")
                let value = try snapshot.body.readValue()
                let stored: Value?
                switch value {
                case nil: stored = nil
                case .scalar(let scalar): stored = .scalar(scalar)
                case .object(let kind):
                    guard objects.slots[ObjectID(id)]?.kind == kind else { throw .invalid("key \(key) names a missing object \(id)") }
                    stored = .object(kind, ObjectID(id))
                }
                entries.append(RegisterEntry(id: id, lamport: lamport, value: stored))
            }
            var register = MapRegister()
            for entry in entries.reversed() { register.write(entry, replacing: []) }
            map[MapKey(key)] = register
        }
        return map
    }

    private func readText(_ object: ObjectID, from snapshot: inout SnapshotReader) throws(DecodingError) -> RGASequence<Unicode.Scalar> {
        switch snapshot.version {
        case 1, 2:
            let (content, utf8Count, runs) = if snapshot.version == 1 {
                try readTextRunsVersion1(from: &snapshot)
            } else {
                try readTextRunsVersion2(from: &snapshot)
            }
            return try runs.withUnsafeBufferPointer { runs throws(DecodingError) in
                try Self.loadedText(object, content: content, utf8Count: utf8Count, runs: runs)
            }
        default:
            // The runs are read into room made once at their full count (at
            // most a quarter of the bytes left, as `readCount` checks) and
            // given to the tree as they are: no array to fill first, and no
            // closure around the columns' loops for the inliner to keep or
            // leave (review205's per-run check lost 8% when it left one).
            let count = try snapshot.body.readCount("text runs", minimumItemSize: 4)
            let runs = UnsafeMutableBufferPointer<RunHeader>.allocate(capacity: count)
            defer { runs.deallocate() }
            let (content, utf8Count) = try readTextRuns(into: runs, from: &snapshot)
            return try Self.loadedText(object, content: content, utf8Count: utf8Count, runs: UnsafeBufferPointer(runs))
        }
    }

    /// The text of `runs` over `content`, whose UTF-8 is `utf8Count` bytes.
    private static func loadedText(_ object: ObjectID, content: ScalarStorage, utf8Count: Int,
                                   runs: UnsafeBufferPointer<RunHeader>) throws(DecodingError) -> RGASequence<Unicode.Scalar> {
        // Mostly ASCII, which is when the UTF-8 has a byte per scalar:
        // then the runs' widths are their counts, not measured run by run.
        let isASCII = content.count == utf8Count
        do { return try RGASequence(storage: content, runs: runs, widthsAreCounts: isASCII) }
        catch { throw .invalid("text \(object): \(error)") }
    }

    /// Version 3: the run headers as four columns, then all the content as
    /// one UTF-8 string. Fills `runs`, one per run the snapshot counts.
    ///
    /// A column is a pass over the runs, each writing its own fields of
    /// every run through the pointer (`RunHeader` is trivial, so the room
    /// needs no initializing first): appending and the arrays' bounds and
    /// uniqueness checks cost nearly as much as the varints (merge-k8-m1000's
    /// runs took about 96 instructions each, 68 this way). The passes are
    /// plain loops in this function, reading through a local copy of the
    /// reader, put back after them, and the replica table through a copy of
    /// its own: the table's index is checked as it is read, and the array
    /// checked it again.
    private func readTextRuns(into runs: UnsafeMutableBufferPointer<RunHeader>,
                              from snapshot: inout SnapshotReader) throws(DecodingError) -> (ScalarStorage, utf8Count: Int) {
        let count = runs.count
        let runLengths = RunLengthLimit(snapshot.limits)
        let replicaCount = snapshot.replicaTable.count
        var body = snapshot.body
        let replicaTable = UnsafeMutableBufferPointer<ReplicaID>.allocate(capacity: replicaCount)
        defer { replicaTable.deallocate() }
        _ = replicaTable.initialize(fromContentsOf: snapshot.replicaTable)
        // Per replica, the run that ends highest (an end of 0: none yet, as
        // every run ends above its first counter, which is at least 1): if
        // it is in the version vector, they all are, and one check each is
        // enough.
        let highestRuns = UnsafeMutableBufferPointer<(end: UInt64, run: Int)>.allocate(capacity: replicaCount)
        defer { highestRuns.deallocate() }
        highestRuns.initialize(repeating: (0, 0))
        // Each run's index in the replica table, for the highest runs in
        // the last pass. Not filled first: the first pass writes every
        // entry before the last reads any, and the fill was a `memset`
        // of 8 bytes a run (2.5% of merge-k32-m10000's load).
        let replicaColumn = UnsafeMutableBufferPointer<Int>.allocate(capacity: count)
        defer { replicaColumn.deallocate() }
        for i in 0..<count {
            let index = try body.readIndex("the replica of a run", below: replicaCount)
            replicaColumn[i] = index
            runs[i].id.replica = replicaTable[index]
        }
        for i in 0..<count {
            runs[i].id.counter = UInt64(bitPattern: try body.readSigned("the counter of a run"))
        }
        for i in 0..<count {
            runs[i].lamport = UInt64(bitPattern: try body.readSigned("a run's Lamport value"))
        }
        var previousEnd: UInt64 = 0
        var scalarCount = 0
        for i in 0..<count {
            runs[i].id.counter = previousEnd &+ runs[i].id.counter
            runs[i].lamport = runs[i].id.counter &+ runs[i].lamport
            try runLengths.complete(&runs[i], try body.readVarint("a run length"))
            previousEnd = runs[i].id.counter &+ UInt64(runs[i].count)
            scalarCount += runs[i].count
            if previousEnd > highestRuns[replicaColumn[i]].end { highestRuns[replicaColumn[i]] = (previousEnd, i) }
        }
        snapshot.body = body
        for highest in highestRuns where highest.end > 0 { try checkInVersionVector(runs[highest.run]) }
        return try snapshot.readTextContent(scalarCount: scalarCount)
    }

    /// Version 2: each run's header, delta-coded as in version 3, in turn;
    /// then all the content as one UTF-8 string.
    private func readTextRunsVersion2(from snapshot: inout SnapshotReader) throws(DecodingError) -> (ScalarStorage, utf8Count: Int, [RunHeader]) {
        var runs: [RunHeader] = []
        var previousEnd: UInt64 = 0
        var scalarCount = 0
        let runLengths = RunLengthLimit(snapshot.limits)
        for _ in 0..<(try snapshot.body.readCount("text runs", minimumItemSize: 4)) {
            let replica = snapshot.replicaTable[try snapshot.body.readIndex("the replica of a run", below: snapshot.replicaTable.count)]
            let counter = previousEnd &+ UInt64(bitPattern: try snapshot.body.readSigned("the counter of a run"))
            let lamport = counter &+ UInt64(bitPattern: try snapshot.body.readSigned("a run's Lamport value"))
            var run = RunHeader(id: OpID(replica: replica, counter: counter), lamport: lamport, isDeleted: false, count: 0)
            try runLengths.complete(&run, try snapshot.body.readVarint("a run length"))
            try checkInVersionVector(run)
            runs.append(run)
            previousEnd = counter &+ UInt64(run.count)
            scalarCount += run.count
        }
        let (content, utf8Count) = try snapshot.readTextContent(scalarCount: scalarCount)
        return (content, utf8Count, runs)
    }

    /// Version 1: each run's header followed by its own content.
    private func readTextRunsVersion1(from snapshot: inout SnapshotReader) throws(DecodingError) -> (ScalarStorage, utf8Count: Int, [RunHeader]) {
        var runs: [RunHeader] = []
        var content = ScalarStorage()
        var utf8Count = 0
        for _ in 0..<(try snapshot.body.readCount("text runs", minimumItemSize: 4)) {
            let run = try readRunHeader(from: &snapshot)
            let utf8 = try snapshot.body.readData("text content")
            let countBefore = content.count
            guard content.append(decodingUTF8: utf8, textLength: utf8.count) != nil else {
                throw .invalid("text content is not valid UTF-8")
            }
            let count = content.count - countBefore
            guard count == run.count else { throw .invalid("a text run claims \(run.count) scalars but holds \(count)") }
            runs.append(run)
            utf8Count += utf8.count
        }
        content.releaseSpareCapacity()
        return (content, utf8Count, runs)
    }

    private func readList(_ object: ObjectID, from snapshot: inout SnapshotReader) throws(DecodingError) -> RGASequence<Value> {
        var runs: [RunHeader] = []
        var values: [Value] = []
        for _ in 0..<(try snapshot.body.readCount("list runs", minimumItemSize: 4)) {
            let run = try readRunHeader(from: &snapshot)
            guard run.count <= snapshot.body.remaining else { throw .truncated("a list run") }
            for offset in 0..<run.count {
                switch try snapshot.body.readValue() {
                case nil: throw .invalid("a list holds a removal")
                case .scalar(let scalar): values.append(.scalar(scalar))
                case .object(let kind):
                    let element = ObjectID(run.id.advanced(by: UInt64(offset)))
                    guard objects.slots[element]?.kind == kind else { throw .invalid("list element \(element) names a missing object") }
                    values.append(.object(kind, element))
                }
            }
            runs.append(run)
        }
        do { return try RGASequence(content: values, runs: runs) }
        catch { throw .invalid("list \(object): \(error)") }
    }

    /// A run header written whole (a list's, or a version 1 text's): first
    /// id, Lamport value, deleted flag and length.
    private func readRunHeader(from snapshot: inout SnapshotReader) throws(DecodingError) -> RunHeader {
        let id = try snapshot.readID("a run")
        let lamport = try snapshot.body.readVarint("a run's Lamport value")
        let flag = try snapshot.body.readByte("a deleted flag")
        guard flag <= 1 else { throw .invalid("a deleted flag is \(flag)") }
        let count = try snapshot.body.readVarint("a run length")
        let run = RunHeader(id: id, lamport: lamport, isDeleted: flag == 1, count: try RunLengthLimit(snapshot.limits).checked(id, count))
        try checkInVersionVector(run)
        return run
    }

    private func checkInVersionVector(_ run: RunHeader) throws(DecodingError) {
        guard versionVector.contains(run.id.advanced(by: UInt64(run.count - 1))) else {
            throw .invalid("run \(run.id) is not in the version vector")
        }
    }

    /// The history flag and the history's bundles, if any.
    private mutating func readHistory(from snapshot: inout SnapshotReader, of bytes: [UInt8],
                                      checkedBundles: inout [Range<Int>]) throws(DecodingError) {
        switch try snapshot.body.readByte("the history flag") {
        case 0:
            base = bytes
            history.start = versionVector
        case 1:
            // The bundles are checked (frame, checksum, header) but decoded
            // only when someone reads the history: loading stays fast and small.
            let bundleCount = try snapshot.body.readCount("history bundles", minimumItemSize: 8)
            // Each bundle is held to the limits; the history as a whole is
            // not, since it is kept as the bytes read.
            checkedBundles.reserveCapacity(bundleCount)
            for _ in 0..<bundleCount {
                let bundleBytes = try snapshot.body.readData("the history")
                let bundle = Array(bundleBytes)
                let count = try ChangeEncoding.changeCount(of: bundle, limits: snapshot.limits, elidedTextAllowed: snapshot.version >= 3)
                history.append(bundle: bundle, count: count, version: versionVector)
                checkedBundles.append(bundleBytes.indices)
            }
        case let flag: throw .invalid("the history flag is \(flag)")
        }
    }
}

/// A snapshot body being read: the reader, and what reading the rest
/// depends on (the format's version, the limits, and the replica table,
/// which every id after it indexes).
private struct SnapshotReader {
    var body: ByteReader
    let version: UInt64
    let limits: DecodingLimits
    let replicaTable: [ReplicaID]

    /// Starts reading `body` with its replica table.
    init(body: ByteReader, version: UInt64, limits: DecodingLimits) throws(DecodingError) {
        var body = body
        let replicaCount = try body.readCount("replicas", minimumItemSize: 8)
        var replicaTable: [ReplicaID] = []
        for _ in 0..<replicaCount {
            let replica = ReplicaID(try body.readUInt64("a replica id"))
            guard replicaTable.last.map({ $0 < replica }) ?? true else { throw .invalid("the replica table is not sorted") }
            replicaTable.append(replica)
        }
        (self.body, self.version, self.limits, self.replicaTable) = (body, version, limits, replicaTable)
    }

    mutating func readID(_ what: String) throws(DecodingError) -> OpID {
        let replica = replicaTable[try body.readIndex("the replica of \(what)", below: replicaTable.count)]
        let counter = try body.readVarint("the counter of \(what)")
        guard counter > 0 else { throw .invalid("\(what) has counter 0") }
        return OpID(replica: replica, counter: counter)
    }

    /// The UTF-8 data that holds the content of every run of a text, in
    /// order, and its size in bytes. `scalarCount` is the runs' elements
    /// together, summed as they were read.
    mutating func readTextContent(scalarCount: Int) throws(DecodingError) -> (ScalarStorage, utf8Count: Int) {
        let utf8 = try body.readData("text content")
        guard let content = ScalarStorage(utf8: utf8) else {
            throw .invalid("text content is not valid UTF-8")
        }
        guard content.count == scalarCount else { throw .invalid("text runs claim \(scalarCount) scalars but hold \(content.count)") }
        return (content, utf8.count)
    }
}

/// A snapshot's run lengths, checked against the limits' widest
/// operation. (Not on the reader: the columns' loop reads through its own
/// copy of the reader, and a call on the whole reader copied it, retains and
/// all, for every run.) The limit is converted once: converted for every
/// run, it cost the columns' loop a load, a sign test and two branches more
/// a run.
private struct RunLengthLimit {
    /// The longest run allowed; 0, so that every run is refused, for a negative limit.
    let longest: UInt64

    init(_ limits: DecodingLimits) {
        longest = UInt64(clamping: limits.maxOperationWidth)
    }

    /// `count`, checked: not zero, within the limit, and not overflowing `id`'s counter.
    func checked(_ id: OpID, _ count: UInt64) throws(DecodingError) -> Int {
        guard count > 0, count <= longest,
              !id.counter.addingReportingOverflow(count).overflow else { throw .invalid("a run has length \(count)") }
        return Int(count)
    }

    /// Completes `run` from its packed `element count << 1 | deleted`, checking its id and length.
    func complete(_ run: inout RunHeader, _ packed: UInt64) throws(DecodingError) {
        guard run.id.counter > 0 else { throw .invalid("a run has counter 0") }
        run.count = try checked(run.id, packed >> 1)
        run.isDeleted = packed & 1 == 1
    }
}

extension NewValue {
    /// The value as an operation writes it; an object becomes "a new object of its kind".
    init(_ value: Value) {
        switch value {
        case .scalar(let scalar): self = .scalar(scalar)
        case .object(let kind, _): self = .object(kind)
        }
    }
}
