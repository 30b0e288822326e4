/// The binary form of a sequence of changes (a history, or a sync page):
/// columns of run-length varints, ids relative to a replica table.
/// `Specs/encoding.md`, "Change bundles", gives the layout byte by byte.
public enum ChangeEncoding {
    static let magic = Array("QCHG".utf8)
    static let version: UInt64 = 1

    /// The columns, in the order they are stored.
    enum Column: Int, CaseIterable {
        case changeReplica, changeCounter, changeLamport, parentCount, parentReplica, parentCounter
        case changeTime, operationCount
        case operationKind, objectReplica, objectCounter
        case originMode, originReplica, originCounter, textLength, valueCount
        case deleteReplica, deleteCounter, deleteLength
        case key, predCount, predReplica, predCounter, incrementDelta

        /// The case names, for error messages. Made once: interpolating an
        /// enum case goes through reflection, which cost more than the whole
        /// decode of a one-change bundle.
        static let names = allCases.map { "\($0)" }
    }

    enum Kind: UInt64 { case put, remove, insertText, insertValues, delete, increment }
    enum OriginMode: UInt64 { case head, previousElement, explicit }

    // MARK: Encoding

    /// Encodes changes in the order given (which must be a causal order for
    /// the receiver to apply them without waiting).
    public static func encode(_ changes: some Collection<Change>) -> [UInt8] {
        var table = ReplicaTable()
        var keys = Set<String>()
        for change in changes {
            table.insert(change.replica)
            for parent in change.parents { table.insert(parent.replica) }
            for operation in change.operations {
                if let creator = operation.object.creator { table.insert(creator.replica) }
                switch operation {
                case .put(_, let key, _, let pred), .remove(_, let key, let pred):
                    keys.insert(key)
                    for id in pred { table.insert(id.replica) }
                case .insert(_, let origin?, _): table.insert(origin.replica)
                case .delete(_, let target): table.insert(target.start.replica)
                default: break
                }
            }
        }
        func replicaIndex(_ replica: ReplicaID) -> UInt64 { UInt64(table.index(of: replica)) }
        let keyTable = keys.sorted()
        let keyIndex = Dictionary(uniqueKeysWithValues: keyTable.enumerated().map { ($1, UInt64($0)) })

        var columns = Array(repeating: ColumnWriter(), count: Column.allCases.count)
        func put(_ column: Column, _ value: UInt64) { columns[column.rawValue].append(value) }
        func put(_ column: Column, signed value: Int64) { columns[column.rawValue].append(signed: value) }
        var text = ByteWriter()
        var values = ByteWriter()

        var lastCounters = VersionVector()  // the last counter of each replica so far
        var previousLast: OpID?
        var previousLastLamport: UInt64 = 0
        var previousTime: Int64 = 0
        var previousDelete: UInt64 = 0
        for change in changes {
            put(.changeReplica, replicaIndex(change.replica))
            put(.changeCounter, signed: Int64(bitPattern: change.id.counter &- (lastCounters[change.replica] &+ 1)))
            put(.changeLamport, signed: Int64(bitPattern: change.lamport &- (previousLastLamport &+ 1)))
            if let previousLast, change.parents == [previousLast] {
                put(.parentCount, 0)
            } else {
                put(.parentCount, UInt64(change.parents.count) + 1)
                for parent in change.parents {
                    put(.parentReplica, replicaIndex(parent.replica))
                    put(.parentCounter, parent.counter)
                }
            }
            put(.changeTime, signed: change.time &- previousTime)
            put(.operationCount, UInt64(change.operations.count))
            var id = change.id
            for operation in change.operations {
                let object = operation.object.creator
                put(.objectReplica, object.map { replicaIndex($0.replica) + 1 } ?? 0)
                put(.objectCounter, object?.counter ?? 0)
                switch operation {
                case let .put(_, key, value, pred):
                    put(.operationKind, Kind.put.rawValue)
                    put(.key, keyIndex[key]!)
                    putPred(pred)
                    values.writeValue(value)
                case let .remove(_, key, pred):
                    put(.operationKind, Kind.remove.rawValue)
                    put(.key, keyIndex[key]!)
                    putPred(pred)
                case let .insert(_, origin, content):
                    if let origin {
                        if origin.replica == id.replica && origin.counter &+ 1 == id.counter {
                            put(.originMode, OriginMode.previousElement.rawValue)
                        } else {
                            put(.originMode, OriginMode.explicit.rawValue)
                            put(.originReplica, replicaIndex(origin.replica))
                            put(.originCounter, origin.counter)
                        }
                    } else {
                        put(.originMode, OriginMode.head.rawValue)
                    }
                    switch content {
                    case .text(let string):
                        put(.operationKind, Kind.insertText.rawValue)
                        let utf8 = string.utf8
                        put(.textLength, UInt64(utf8.count))
                        text.writeBytes(utf8)
                    case .values(let list):
                        put(.operationKind, Kind.insertValues.rawValue)
                        put(.valueCount, UInt64(list.count))
                        for value in list { values.writeValue(value) }
                    }
                case let .delete(_, target):
                    put(.operationKind, Kind.delete.rawValue)
                    put(.deleteReplica, replicaIndex(target.start.replica))
                    put(.deleteCounter, signed: Int64(bitPattern: target.start.counter &- previousDelete))
                    put(.deleteLength, UInt64(target.length))
                    previousDelete = target.start.counter
                case let .increment(_, delta):
                    put(.operationKind, Kind.increment.rawValue)
                    put(.incrementDelta, signed: delta)
                }
                id = id.advanced(by: UInt64(operation.width))
            }
            lastCounters[change.replica] = change.lastID.counter
            previousLast = change.lastID
            previousLastLamport = change.lastLamport
            previousTime = change.time
        }

        func putPred(_ pred: [OpID]) {
            put(.predCount, UInt64(pred.count))
            for id in pred {
                put(.predReplica, replicaIndex(id.replica))
                put(.predCounter, id.counter)
            }
        }

        var body = ByteWriter()
        body.writeVarint(table.replicas.count)
        for replica in table.replicas { body.writeUInt64(replica.rawValue) }
        body.writeVarint(keyTable.count)
        for key in keyTable { body.writeString(key) }
        body.writeVarint(changes.count)
        for index in columns.indices { body.writeData(columns[index].finish()) }
        body.writeData(text.bytes)
        body.writeData(values.bytes)
        return Envelope.seal(magic: magic, version: version, body: body.bytes)
    }

    // MARK: Decoding

    /// The number of changes a bundle holds, read from its header after
    /// checking its frame and checksum, without decoding the changes.
    public static func changeCount(of bytes: [UInt8], limits: DecodingLimits = .default) throws(DecodingError) -> Int {
        var body = try Envelope.open(bytes, magic: magic, name: "a Quire change bundle", version: version)
        _ = try readTables(&body)
        return try readChangeCount(&body, limits: limits)
    }

    private static func readTables(_ body: inout ByteReader) throws(DecodingError) -> (replicas: [ReplicaID], keys: [String]) {
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

    private static func readChangeCount(_ body: inout ByteReader, limits: DecodingLimits) throws(DecodingError) -> Int {
        let changeCount = try body.readVarint("the number of changes")
        guard changeCount <= UInt64(limits.maxChanges) else {
            throw .invalid("it holds \(changeCount) changes, more than the limit of \(limits.maxChanges)")
        }
        return Int(changeCount)
    }

    /// Decodes what `encode` wrote. Damaged or hostile input gives a
    /// `DecodingError`, in time and memory bounded by the input and `limits`.
    public static func decode(_ bytes: [UInt8], limits: DecodingLimits = .default) throws(DecodingError) -> [Change] {
        var body = try Envelope.open(bytes, magic: magic, name: "a Quire change bundle", version: version)
        let (replicaTable, keyTable) = try readTables(&body)
        let changeCount = try readChangeCount(&body, limits: limits)
        var columns: [ColumnReader] = []
        for column in Column.allCases {
            let name = Column.names[column.rawValue]
            let data = try body.readData("column " + name)
            columns.append(ColumnReader(ByteReader(Array(data)), name: name))
        }
        let textBytes = try body.readData("the text content")
        var values = ByteReader(Array(try body.readData("the values")))
        guard body.isAtEnd else { throw .invalid("bytes follow the last column") }

        func next(_ column: Column) throws(DecodingError) -> UInt64 { try columns[column.rawValue].next() }
        func nextSigned(_ column: Column) throws(DecodingError) -> Int64 { try columns[column.rawValue].nextSigned() }
        func nextReplica(_ column: Column) throws(DecodingError) -> ReplicaID {
            replicaTable[try columns[column.rawValue].nextIndex(below: replicaTable.count)]
        }
        func nextID(_ replica: Column, _ counter: Column) throws(DecodingError) -> OpID {
            let id = OpID(replica: try nextReplica(replica), counter: try next(counter))
            guard id.counter > 0 else { throw .invalid("an id has counter 0") }
            return id
        }
        func nextPred() throws(DecodingError) -> [OpID] {
            let count = try next(.predCount)
            guard count <= 1024 else { throw .invalid("a write replaces \(count) values") }
            var pred: [OpID] = []
            for _ in 0..<count { pred.append(try nextID(.predReplica, .predCounter)) }
            return pred
        }
        func nextKey() throws(DecodingError) -> String { keyTable[try columns[Column.key.rawValue].nextIndex(below: keyTable.count)] }

        var changes: [Change] = []
        changes.reserveCapacity(Int(min(changeCount, 1 << 16)))
        var textOffset = textBytes.startIndex
        var operationTotal = 0
        var lastCounters = VersionVector()  // the last counter of each replica so far
        var previousLast: OpID?
        var previousLastLamport: UInt64 = 0
        var previousTime: Int64 = 0
        var previousDelete: UInt64 = 0
        for _ in 0..<changeCount {
            let replica = try nextReplica(.changeReplica)
            let counter = (lastCounters[replica] &+ 1) &+ UInt64(bitPattern: try nextSigned(.changeCounter))
            let lamport = previousLastLamport &+ 1 &+ UInt64(bitPattern: try nextSigned(.changeLamport))
            guard counter > 0, lamport > 0 else { throw .invalid("a change has counter or Lamport value 0") }
            let parents: [OpID]
            let parentCount = try next(.parentCount)
            if parentCount == 0 {
                guard let previousLast else { throw .invalid("the first change names an implicit parent") }
                parents = [previousLast]
            } else {
                guard parentCount - 1 <= 4096 else { throw .invalid("a change has \(parentCount - 1) parents") }
                var explicit: [OpID] = []
                for _ in 0..<(parentCount - 1) { explicit.append(try nextID(.parentReplica, .parentCounter)) }
                parents = explicit
            }
            let time = previousTime &+ (try nextSigned(.changeTime))
            let operationCount = try next(.operationCount)
            guard operationCount > 0 else { throw .invalid("a change has no operations") }
            guard operationCount <= UInt64(limits.maxOperations - operationTotal) else {
                throw .invalid("it holds more operations than the limit of \(limits.maxOperations)")
            }
            operationTotal += Int(operationCount)
            var operations: [Operation] = []
            operations.reserveCapacity(Int(operationCount))
            var id = OpID(replica: replica, counter: counter)
            for _ in 0..<operationCount {
                let objectCode = try next(.objectReplica)
                let objectCounter = try next(.objectCounter)
                let object: ObjectID
                if objectCode == 0 {
                    guard objectCounter == 0 else { throw .invalid("the root object has a counter") }
                    object = .root
                } else {
                    guard objectCode <= UInt64(replicaTable.count), objectCounter > 0 else { throw .invalid("an object id is out of range") }
                    object = ObjectID(OpID(replica: replicaTable[Int(objectCode - 1)], counter: objectCounter))
                }
                let operation: Operation
                let rawKind = try next(.operationKind)
                guard let kind = Kind(rawValue: rawKind) else { throw .invalid("unknown operation kind \(rawKind)") }
                switch kind {
                case .put:
                    let key = try nextKey()
                    let pred = try nextPred()
                    guard let value = try values.readValue() else { throw .invalid("a put writes a removal") }
                    operation = .put(object: object, key: key, value: value, pred: pred)
                case .remove:
                    operation = .remove(object: object, key: try nextKey(), pred: try nextPred())
                case .insertText, .insertValues:
                    let origin: OpID?
                    let rawMode = try next(.originMode)
                    switch OriginMode(rawValue: rawMode) {
                    case .head: origin = nil
                    case .previousElement:
                        guard id.counter > 1 else { throw .invalid("an insert's origin precedes counter 1") }
                        origin = OpID(replica: id.replica, counter: id.counter - 1)
                    case .explicit: origin = try nextID(.originReplica, .originCounter)
                    case nil: throw .invalid("unknown origin mode \(rawMode)")
                    }
                    if kind == .insertText {
                        let length = try next(.textLength)
                        guard length > 0, length <= UInt64(textBytes.endIndex - textOffset) else {
                            throw .invalid("a text insert runs past the text content")
                        }
                        let slice = textBytes[textOffset..<(textOffset + Int(length))]
                        textOffset += Int(length)
                        guard let string = String(validating: slice, as: UTF8.self) else { throw .invalid("inserted text is not valid UTF-8") }
                        operation = .insert(object: object, origin: origin, content: .text(string))
                    } else {
                        let count = try next(.valueCount)
                        guard count > 0, count <= UInt64(values.remaining) else { throw .invalid("a list insert has \(count) values") }
                        var list: [NewValue] = []
                        for _ in 0..<count {
                            guard let value = try values.readValue() else { throw .invalid("a list insert holds a removal") }
                            list.append(value)
                        }
                        operation = .insert(object: object, origin: origin, content: .values(list))
                    }
                case .delete:
                    let targetReplica = try nextReplica(.deleteReplica)
                    let start = previousDelete &+ UInt64(bitPattern: try nextSigned(.deleteCounter))
                    let length = try next(.deleteLength)
                    guard start > 0, length > 0 else { throw .invalid("a delete has counter 0 or length 0") }
                    guard length <= UInt64(limits.maxOperationWidth) else { throw .invalid("a delete of \(length) elements exceeds the limit") }
                    previousDelete = start
                    operation = .delete(object: object, target: IDRun(start: OpID(replica: targetReplica, counter: start), length: Int(length)))
                case .increment:
                    operation = .increment(object: object, delta: try nextSigned(.incrementDelta))
                }
                operations.append(operation)
                let (advanced, overflow) = id.counter.addingReportingOverflow(UInt64(operation.width))
                guard !overflow else { throw .invalid("a change's counters overflow") }
                id.counter = advanced
            }
            let change = Change(id: OpID(replica: replica, counter: counter), lamport: lamport,
                                parents: parents, time: time, operations: operations)
            guard !change.lamport.addingReportingOverflow(change.width).overflow else { throw .invalid("a change's Lamport values overflow") }
            changes.append(change)
            lastCounters[replica] = change.lastID.counter
            previousLast = change.lastID
            previousLastLamport = change.lastLamport
            previousTime = time
        }
        for column in columns { try column.checkFinished() }
        guard textOffset == textBytes.endIndex, values.isAtEnd else { throw .invalid("content is left over after the last change") }
        return changes
    }
}

extension Document {
    /// The changes `version` lacks, encoded (see `ChangeEncoding`).
    public func encodeChanges(since version: VersionVector = VersionVector()) throws(DocumentError) -> [UInt8] {
        if version.isEmpty, !history.hasRecords, history.bundles.count == 1 {
            return history.bundles[0]  // the whole history arrived as one bundle: send it as it is
        }
        return ChangeEncoding.encode(try changes(since: version))
    }

    /// Decodes a change bundle and applies it (see `apply(_:)`).
    ///
    /// When every change of the bundle is new and ready in the order given,
    /// as when a fresh replica catches up, the history keeps the bundle
    /// encoded instead of holding each change decoded.
    @discardableResult
    public mutating func applyEncoded(_ bytes: [UInt8], limits: DecodingLimits = .default) throws -> Int {
        try apply(ChangeEncoding.decode(bytes, limits: limits), encodedAs: bytes)
    }

    /// `applyEncoded` for a caller that has already decoded the bundle:
    /// `changes` must be what `bytes` decodes to.
    @discardableResult
    public mutating func apply(_ changes: [Change], encodedAs bytes: [UInt8]) throws -> Int {
        guard history.canAppendBundle, pending.isEmpty, appliesInOrder(changes) else { return try apply(changes) }
        for (index, change) in changes.enumerated() {
            do {
                try integrate(change, recordingHistory: false)
            } catch {
                // Keep the changes applied so far, as `apply` would, decoded.
                for applied in changes[..<index] { history.append(applied) }
                throw error
            }
        }
        history.append(bundle: bytes, count: changes.count, version: versionVector)
        return changes.count
    }

    /// Whether each change is ready once the ones before it are applied, none already held.
    private func appliesInOrder(_ changes: [Change]) -> Bool {
        var version = versionVector
        for change in changes {
            guard change.id.counter == version[change.replica] + 1,
                  change.parents.allSatisfy(version.contains) else { return false }
            version[change.replica] = change.lastID.counter
        }
        return true
    }
}
