extension Document {
    // MARK: Maps

    /// The value at `key` of a map, or `nil` if the key is absent or removed.
    public func get(_ map: ObjectID, key: String) throws(DocumentError) -> Value? {
        try objects.maps[objects.slot(map, .map)][MapKey(key)]?.winner?.value
    }

    /// The keys of a map that hold a value, sorted by their Unicode scalars.
    public func keys(_ map: ObjectID) throws(DocumentError) -> [String] {
        try KeyOrder.sorted(objects.maps[objects.slot(map, .map)].compactMap { $0.value.winner?.value == nil ? nil : $0.key.string })
    }

    /// Every entry at `key`, winner first: the values concurrent writes left
    /// there, with their stamps. More than one entry means a conflict;
    /// an entry whose value is `nil` is a removal.
    public func entries(_ map: ObjectID, key: String) throws(DocumentError) -> [RegisterEntry] {
        try objects.maps[objects.slot(map, .map)][MapKey(key)].map(Array.init) ?? []
    }

    /// The keys of a map where concurrent writes left more than one entry,
    /// sorted by their Unicode scalars.
    public func conflictedKeys(_ map: ObjectID) throws(DocumentError) -> [String] {
        try KeyOrder.sorted(objects.maps[objects.slot(map, .map)].filter { $0.value.count > 1 }.map(\.key.string))
    }

    // MARK: Text

    /// The visible content of a text object.
    public func text(_ text: ObjectID) throws(DocumentError) -> String {
        let sequence = try objects.texts[objects.slot(text, .text)]
        var utf8: [UInt8] = []
        utf8.reserveCapacity(sequence.utf8Count)
        utf8.appendUTF8(of: sequence.elements)
        return String(decoding: utf8, as: UTF8.self)
    }

    /// The number of Unicode scalars in a text object.
    public func textCount(_ text: ObjectID) throws(DocumentError) -> Int {
        try objects.texts[objects.slot(text, .text)].count
    }

    /// The scalar index at a UTF-16 offset (inside a surrogate pair: the pair's index).
    public func textIndex(_ text: ObjectID, utf16Offset: Int) throws(DocumentError) -> Int {
        try convert(text, utf16Offset, limit: \.utf16Count) { $0.index(ofUTF16Offset: $1) }
    }

    /// The UTF-16 offset of a scalar index.
    public func utf16Offset(_ text: ObjectID, index: Int) throws(DocumentError) -> Int {
        try convert(text, index, limit: \.count) { $0.utf16Offset(ofIndex: $1) }
    }

    /// The scalar index at a UTF-8 offset (inside a scalar: that scalar's index).
    public func textIndex(_ text: ObjectID, utf8Offset: Int) throws(DocumentError) -> Int {
        try convert(text, utf8Offset, limit: \.utf8Count) { $0.index(ofUTF8Offset: $1) }
    }

    /// The UTF-8 offset of a scalar index.
    public func utf8Offset(_ text: ObjectID, index: Int) throws(DocumentError) -> Int {
        try convert(text, index, limit: \.count) { $0.utf8Offset(ofIndex: $1) }
    }

    /// Converts a position of a text object between units, after checking
    /// it lies within `0...limit`.
    private func convert(
        _ text: ObjectID, _ position: Int, limit: KeyPath<RGASequence<Unicode.Scalar>, Int>,
        _ conversion: (RGASequence<Unicode.Scalar>, Int) -> Int
    ) throws(DocumentError) -> Int {
        let sequence = try objects.texts[objects.slot(text, .text)]
        let count = sequence[keyPath: limit]
        guard position >= 0, position <= count else { throw .indexOutOfRange(index: position, count: count) }
        return conversion(sequence, position)
    }

    // MARK: Lists

    /// The visible elements of a list.
    public func list(_ list: ObjectID) throws(DocumentError) -> [Value] {
        Array(try objects.lists[objects.slot(list, .list)].elements)
    }

    /// The id of each visible element of a list, in order: what finds an
    /// element read now in the list later (`position(of:inList:)`), whatever
    /// other edits insert or delete around it meanwhile.
    public func elementIDs(_ list: ObjectID) throws(DocumentError) -> [OpID] {
        var ids: [OpID] = []
        for run in try listRuns(list) where !run.isDeleted {
            ids += (0..<UInt64(run.elements.count)).map(run.id.advanced(by:))
        }
        return ids
    }

    /// Where the element `id` of a list is now: its index or, deleted, the
    /// index of the visible element after it. Nil if the list has no such
    /// element.
    public func position(of id: OpID, inList list: ObjectID) throws(DocumentError) -> (index: Int, isDeleted: Bool)? {
        try objects.lists[objects.slot(list, .list)].position(of: id)
    }

    // MARK: Counters

    /// The sum of a counter's increments.
    public func counter(_ counter: ObjectID) throws(DocumentError) -> Int64 {
        try objects.counters[objects.slot(counter, .counter)]
    }

    // MARK: History

    /// Every applied change, in the order applied (a causal order).
    ///
    /// Throws `historyUnavailable` for a document loaded from a snapshot
    /// without history, `damagedHistory` if history kept encoded was damaged.
    public func allChanges() throws(DocumentError) -> [Change] { try history.all(objects) }

    /// The number of applied changes held in the history.
    public var changeCount: Int { history.count }

    /// The change applied or made last, unless it arrived inside an encoded bundle.
    public var lastChange: Change? { history.lastRecorded(objects) }

    /// The applied changes that `version` lacks, in causal order.
    public func changes(since version: VersionVector) throws(DocumentError) -> [Change] {
        try history.changes(from: version, objects)
    }

    /// The applied changes in `to` but not in `from`, in causal order.
    public func changes(from: VersionVector, to: VersionVector) throws(DocumentError) -> [Change] {
        try history.changes(from: from, to: to, objects)
    }

    /// Where a nested object was created: its parent and, in a map, its key.
    public func parent(of object: ObjectID) -> (object: ObjectID, key: String?)? {
        objects.placement(of: object).map { ($0.parent, $0.key) }
    }
}
