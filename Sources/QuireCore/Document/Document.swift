/// A collaborative document: a tree of maps, lists, texts and counters,
/// and the history of changes that made it.
///
/// `Document` is a value type. It is edited locally in transactions, each of
/// which becomes one `Change`, and merges remote changes with `apply(_:)`.
/// Replicas that have applied the same set of changes have the same state,
/// whatever the order they received them in.
///
/// ```swift
/// var doc = Document(replica: ReplicaID(1))
/// let body = try doc.transact { tx in
///     let body = try tx.putObject(.root, key: "body", kind: .text)
///     try tx.insertText(body, at: 0, "Hello")
///     return body
/// }
/// try doc.text(body)   // "Hello"
/// ```
public struct Document: Sendable {
    /// The replica local edits are made as.
    public let replica: ReplicaID
    /// The operations this document holds.
    public private(set) var versionVector = VersionVector()
    /// The local replica's entry of `versionVector`, kept beside it so that
    /// starting a transaction takes it without a lookup in the vector (a
    /// call, a fifth of a keystroke's bookkeeping). Both change only
    /// through `setLastCounter(_:of:)`.
    private(set) var localCounter: UInt64 = 0
    /// The changes no other change builds on, named by their last operation id, sorted.
    public var heads: [OpID] {
        var heads = Array(replicaClocks.entries.lazy.filter { $0.value.headCounter != 0 }.map { OpID(replica: $0.replica, counter: $0.value.headCounter) })
        if localClock.headCounter != 0 {
            heads.insert(OpID(replica: replica, counter: localClock.headCounter), at: heads.firstIndex { $0.replica > replica } ?? heads.endIndex)
        }
        return heads
    }
    /// Each other replica's last Lamport value and head, in one map keyed
    /// by replica: noting an applied change writes both at one lookup, and
    /// a head that goes is marked gone, its entry kept for the replica's
    /// next change. (Two maps, the heads' losing and gaining an entry at
    /// each turn of two writers, cost friendsforever's merge about 318
    /// instructions a note with the version vector's write.) Read and
    /// written through `clock(of:)` and `setClock(_:of:)`.
    var replicaClocks = ReplicaMap<ReplicaClock>()
    /// The local replica's clock, kept out of `replicaClocks` as
    /// `localCounter` is out of the version vector: a keystroke's commit
    /// then writes a field, not a map entry (the map's write cost
    /// automerge-paper's local replay 0.7% more).
    private var localClock = ReplicaClock()
    /// How many replicas' clocks hold a head.
    private(set) var headCount = 0
    /// The head set last. Every change to the heads ends by setting one
    /// (a change noted, a local commit), so while there are heads it is one
    /// of them: while there is one alone it is this one, and a keystroke
    /// asks without a lookup.
    private var lastHead = OpID(replica: ReplicaID(0), counter: 1)
    /// The only head, if there is one alone (a replica typing on its own).
    var soleHead: OpID? { headCount == 1 ? lastHead : nil }
    /// The highest Lamport value seen; a local operation takes the next one.
    public internal(set) var maxLamport: UInt64 = 0
    /// The bound of every Lamport value (`2^62`): a change whose values
    /// reach it is refused. Editing takes one value per operation, so no
    /// real history comes near it; a hostile peer's change that went up to
    /// `2^64 - 1` would leave no value for the next local edit.
    public static let lamportLimit: UInt64 = 1 << 62

    /// Whether the `count` Lamport values from `first` on stay below `lamportLimit`.
    static func lamportValuesFit(from first: UInt64, count: UInt64) -> Bool {
        count <= lamportLimit && first <= lamportLimit - count
    }

    /// Every applied change, in the order applied.
    var history = ChangeHistory()
    /// The snapshot this document was loaded from, when that snapshot held
    /// no history: with `history`, what it takes to rebuild the document.
    var base: [UInt8]?
    /// Changes received before the changes they depend on.
    var pending: [Change] = []
    /// How many changes may wait in `pending`.
    public var pendingLimit = 100_000

    var objects: ObjectTable

    /// An empty document (its root map only) whose edits `replica` makes.
    /// Each replica editing a document needs an id of its own: two writing
    /// with one id make changes whose ids clash.
    public init(replica: ReplicaID) {
        self.replica = replica
        objects = ObjectTable()
    }

    /// Notes that the operations of `replica` up to `counter` are applied.
    /// (Inlined: as a call, about 20 of its 57 instructions were the call's
    /// own, at every change noted and every local commit.)
    @inline(__always)
    mutating func setLastCounter(_ counter: UInt64, of replica: ReplicaID) {
        versionVector[replica] = counter
        if replica == self.replica { localCounter = counter }
    }

    /// `replica`'s last Lamport value and head, zero for none.
    func clock(of replica: ReplicaID) -> ReplicaClock {
        replica == self.replica ? localClock : replicaClocks[replica] ?? ReplicaClock()
    }

    /// Sets `replica`'s clock; returns its head counter before, 0 for none.
    /// (Inlined, as `setHead` is: a merge notes each run of changes so.)
    @inline(__always)
    @discardableResult
    mutating func setClock(_ clock: ReplicaClock, of replica: ReplicaID) -> UInt64 {
        if replica == self.replica {
            defer { localClock = clock }
            return localClock.headCounter
        }
        return replicaClocks.updateValue(clock, for: replica)?.headCounter ?? 0
    }

    /// The Lamport value of `replica`'s last applied operation, 0 if none:
    /// its next change must start above it, so no two operations share a stamp.
    func lastLamport(of replica: ReplicaID) -> UInt64 {
        clock(of: replica).lastLamport
    }

    /// Makes `head` a head of its replica, in place of the replica's last
    /// (a change builds on its replica's last), with `lastLamport` its last
    /// Lamport value. (Inlined, as `setOnlyHead` is: as calls, they cost
    /// automerge-paper's local replay 6% more, every keystroke commits.)
    @inline(__always)
    mutating func setHead(_ head: OpID, lastLamport: UInt64) {
        if setClock(ReplicaClock(lastLamport: lastLamport, headCounter: head.counter), of: head.replica) == 0 { headCount += 1 }
        lastHead = head
    }

    /// Sets the version vector, the clocks and the heads of a document
    /// being loaded, which has none yet, from `replicas`: sorted by
    /// replica, one each. In one pass: set one by one, through
    /// `setLastCounter`, `setClock` and `setHead`, each head cost three
    /// binary searches of maps of every replica (B3.3: 1,540 heads, 12% of
    /// its load).
    mutating func setLoadedClocks(_ replicas: [LoadedReplica]) {
        var counters: [(replica: ReplicaID, value: UInt64)] = []
        var clocks: [(replica: ReplicaID, value: ReplicaClock)] = []
        counters.reserveCapacity(replicas.count)
        clocks.reserveCapacity(replicas.count)
        for loaded in replicas {
            counters.append((loaded.replica, loaded.counter))
            if loaded.replica == replica {
                (localCounter, localClock) = (loaded.counter, loaded.clock)
            } else {
                clocks.append((loaded.replica, loaded.clock))
            }
            if loaded.clock.headCounter != 0 {
                headCount += 1
                lastHead = OpID(replica: loaded.replica, counter: loaded.clock.headCounter)
            }
        }
        versionVector = VersionVector(sortedEntries: counters)
        replicaClocks = ReplicaMap(sorted: clocks)
    }

    /// Makes the local change whose last id is `head`, with `lastLamport`
    /// its last Lamport value, the only head: a local change builds on
    /// every head. While the local replica's head is the only one, that is
    /// two fields' writes.
    @inline(__always)
    mutating func setOnlyHead(_ head: OpID, lastLamport: UInt64) {
        if headCount != 1 || lastHead.replica != replica {
            replicaClocks.modifyEach { $0.headCounter = 0 }
            headCount = 1
        }
        localClock = ReplicaClock(lastLamport: lastLamport, headCounter: head.counter)
        lastHead = head
    }

    /// Drops the heads that `parents` name, but for `replica`'s. While one
    /// head is left alone it is `lastHead` (see there); while two are, one
    /// of them `replica`'s own, the other is `lastHead`. Either way only
    /// `lastHead` can go and no other clock is read: a merge of two writers
    /// taking turns names the other writer's changes at most turns, and
    /// reading a clock for each parent named cost friendsforever's merge
    /// 4,892 reads to drop 992 heads.
    @inline(__always)
    mutating func dropHeads(namedIn parents: [OpID], besides replica: ReplicaID) {
        if headCount == 1 || headCount == 2 && lastHead.replica != replica && clock(of: replica).headCounter != 0 {
            if lastHead.replica != replica, parents.contains(lastHead) { dropHead(lastHead) }
            return
        }
        for parent in parents where parent.replica != replica { dropHead(parent) }
    }

    /// Whether `id` names a head.
    func isHead(_ id: OpID) -> Bool { clock(of: id.replica).headCounter == id.counter }

    /// Drops `id` from the heads, if it is one.
    mutating func dropHead(_ id: OpID) {
        let current = clock(of: id.replica)
        guard current.headCounter == id.counter else { return }
        setClock(ReplicaClock(lastLamport: current.lastLamport, headCounter: 0), of: id.replica)
        headCount -= 1
    }

    /// The number of changes waiting for changes they depend on.
    public var pendingCount: Int { pending.count }
    /// The highest Lamport value of the document, its waiting changes
    /// counted: what a store measures a remote change's lead from
    /// (`Specs/storage.md`), so that a change left waiting by an earlier
    /// batch counts for a later one as it would within one batch.
    public var maxLamportWithPending: UInt64 { pending.reduce(maxLamport) { max($0, $1.lastLamport) } }

    /// The kind of an object, or `nil` if the document has no such object.
    public func kind(of object: ObjectID) -> ObjectKind? { objects.slots[object]?.kind }
}

/// One replica as a snapshot gives it: its version vector entry's
/// counter and its clock (`Document.setLoadedClocks`).
typealias LoadedReplica = (replica: ReplicaID, counter: UInt64, clock: ReplicaClock)

/// What a document keeps of one replica besides its version vector's entry.
struct ReplicaClock: Sendable {
    /// The Lamport value of the replica's last applied operation, 0 if
    /// none is recorded (see `Document.lastLamport(of:)`).
    var lastLamport: UInt64 = 0
    /// The counter of the replica's head (its last change, when no change
    /// builds on it), 0 if it has none: counters start at 1.
    var headCounter: UInt64 = 0
}

/// Where each object's state lives: one array per kind, so that editing an
/// object mutates its state in place without copying it.
struct ObjectTable: Sendable {
    struct Slot: Hashable, Sendable {
        var kind: ObjectKind
        /// The object's state: `maps[index]`, `texts[index]`, ...
        var index: Int
        /// Where it was created: `placements[placement]`, -1 for the root.
        /// (In the slot, so that creating an object hashes its id once.)
        var placement: Int32
    }

    /// The root map's slot, in every table.
    static let rootSlot = Slot(kind: .map, index: 0, placement: -1)

    private(set) var slots = ObjectIndex()
    var maps: [[MapKey: MapRegister]] = [[:]]
    var texts: [RGASequence<Unicode.Scalar>] = []
    var lists: [RGASequence<Value>] = []
    var counters: [Int64] = []
    /// Where each nested object was created, in creation order: its parent
    /// object and, for maps, the key.
    private var placements: [(parent: ObjectID, key: String?)] = []

    /// The object found last: edits come in runs on one object, and
    /// comparing ids is cheaper than hashing them.
    private var lastFound: (object: ObjectID, slot: Slot)?

    /// The text whose spans `reserveCapacity(in:for:)` made room in for a
    /// bundle, the room to give back after it, or after the last of several
    /// (`giveBackSpareSpanRoom(ofEveryText:)`). Kept here rather than
    /// returned: the merge loop that reserves is slower for every state it
    /// carries past its body (HISTORY.md, review152).
    var textWithSpanRoom: Int?

    func slot(_ object: ObjectID, _ kind: ObjectKind) throws(DocumentError) -> Int {
        try Self.check(object, slots[object], kind)
    }

    /// `slot(_:_:)` through the one-entry cache, for the paths that edit.
    /// (Inlined: every edit asks, and the call cost as much as the answer.)
    @inline(__always)
    mutating func editableSlot(_ object: ObjectID, _ kind: ObjectKind) throws(DocumentError) -> Int {
        try Self.check(object, find(object), kind)
    }

    /// Where an object lives, through the one-entry cache. The root needs
    /// no lookup: writes to it alternate with writes into the objects they
    /// create, which the cache keeps.
    @inline(__always)
    mutating func find(_ object: ObjectID) -> Slot? {
        if let lastFound, lastFound.object == object { return lastFound.slot }
        if object.creator == nil { return Self.rootSlot }
        guard let slot = slots[object] else { return nil }
        lastFound = (object, slot)
        return slot
    }

    /// The parent of a nested object and, in a map, its key; nil for the root.
    func placement(of slot: Slot) -> (parent: ObjectID, key: String?)? {
        slot.placement < 0 ? nil : placements[Int(slot.placement)]
    }

    /// `placement(of:)` by id; nil for the root and for an unknown object.
    func placement(of object: ObjectID) -> (parent: ObjectID, key: String?)? {
        slots[object].flatMap(placement(of:))
    }

    /// How many levels below the root `object` is (the root is at 0), its
    /// parents counted up to `SnapshotEncoding.maxDepth` at most: where an
    /// object may be made (`mayHoldNewObject`), nothing deeper is.
    func depth(of object: ObjectID) -> Int {
        var (depth, current) = (0, object)
        while depth < SnapshotEncoding.maxDepth, let parent = placement(of: current)?.parent {
            (depth, current) = (depth + 1, parent)
        }
        return depth
    }

    /// Whether an object made in `object` stays within the depth a snapshot
    /// allows (`SnapshotEncoding.maxDepth`).
    func mayHoldNewObject(_ object: ObjectID) -> Bool {
        depth(of: object) < SnapshotEncoding.maxDepth
    }

    private static func check(_ object: ObjectID, _ slot: Slot?, _ kind: ObjectKind) throws(DocumentError) -> Int {
        guard let slot else { throw .unknownObject(object) }
        guard slot.kind == kind else { throw .wrongKind(object, expected: kind, actual: slot.kind) }
        return slot.index
    }

    /// Stores the texts' and lists' id indexes compactly, those that grew
    /// enough since they last were (`ElementIndex.compactIfGrown`).
    mutating func compactElementIndexes() {
        for index in texts.indices { texts[index].tree.ids.compactIfGrown() }
        for index in lists.indices { lists[index].tree.ids.compactIfGrown() }
    }

    /// Makes room for `count` more objects (a snapshot being loaded).
    mutating func reserveCapacity(objects count: Int) {
        placements.reserveCapacity(placements.count + count)
    }

    /// Creates an empty object of `kind`, made by operation `id` inside `parent`.
    @discardableResult
    mutating func create(_ kind: ObjectKind, id: OpID, parent: ObjectID, key: String?) -> Slot {
        let object = ObjectID(id)
        let index: Int
        switch kind {
        // A new map is filled next (an object value's fields): room for a
        // few keys at once, where growing from empty reallocated twice by its second key.
        case .map: index = maps.count; maps.append(Self.newMap)
        case .text: index = texts.count; texts.append(RGASequence())
        case .list: index = lists.count; lists.append(RGASequence())
        case .counter: index = counters.count; counters.append(0)
        }
        let slot = Slot(kind: kind, index: index, placement: Int32(placements.count))
        slots.insert(slot, madeBy: id)
        placements.append((parent, key))
        // The operations that follow most often fill the new object.
        lastFound = (object, slot)
        return slot
    }

    /// An empty map with room for 3 keys, shared until its first write
    /// copies it: `Dictionary(minimumCapacity:)`, not specialised, cost
    /// several times more per map.
    private static let newMap = [MapKey: MapRegister](minimumCapacity: 3)

    /// The text that inserting the elements `run` into text `object` wrote,
    /// tombstones included, or nil if the text has no such elements. (A
    /// snapshot's history leaves inserted text out: the state holds it.)
    func insertedText(_ object: ObjectID, _ run: IDRun) -> String? {
        guard let slot = slots[object], slot.kind == .text else { return nil }
        return texts[slot.index].withUTF8(of: run) { String(decoding: $0, as: UTF8.self) }
    }

    /// The value a list element or register holds once written by operation `id`,
    /// creating the nested object if the value is one.
    mutating func materialize(_ value: NewValue, id: OpID, parent: ObjectID, key: String?) -> Value {
        if case .object(let kind) = value { create(kind, id: id, parent: parent, key: key) }
        return Value(value, writtenBy: id)
    }
}
