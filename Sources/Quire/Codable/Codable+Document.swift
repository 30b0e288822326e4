// The Codable bridge: plain Swift values written into a document as the
// few operations that make it hold them, and read back. The mapping from
// Swift types is in Specs/storage.md, "Codable bridge".

extension Transaction {
    /// Makes the map `map` hold `value`, which must encode as a keyed
    /// container (a struct, a class or a dictionary), recording only what
    /// differs from what the map holds now:
    ///
    /// - a `String` is a text object changed with `setText` (a minimal diff),
    ///   so concurrent edits to other parts of the text merge;
    /// - a `UUID`, a `DocumentID` or a string enum case (`enum Status: String`) is a string
    ///   scalar: concurrent changes leave one of the values, never a mix;
    /// - a nested struct is a map, updated field by field in the same way;
    /// - an enum case with associated values (a map of one key, the case's
    ///   name), a `URL` or a `Decimal` is a map replaced whole when it
    ///   changes: concurrent changes leave one of the values, never a mix
    ///   (so it cannot be the value written into `map` itself, only a field
    ///   or an element inside it);
    /// - a dictionary whose keys are not strings or ints (which Swift lists
    ///   among its values) is a map keyed by each key's JSON text;
    /// - an array is a list: kept elements stay, elements that differ are
    ///   deleted and inserted, and a changed struct or string inside it is
    ///   updated in place (a struct of an `Identifiable` type only into the
    ///   item of its `id`, however the type stores or computes it: without
    ///   one, an item written in place of a deleted one may be taken for an
    ///   edit of it, by what they share or by position). A list has no move: an array
    ///   written in another order keeps the longest run of elements in
    ///   order where they are, and each other element is deleted and
    ///   inserted anew at its new place, a new object holding the value
    ///   written. Another replica's
    ///   concurrent edit of a moved element is made to the deleted one and
    ///   is not read (it stays in the log), and two replicas moving the same
    ///   element make two of it;
    /// - a set is a list whose order means nothing: the elements it holds
    ///   stay where they are, the others are deleted, new ones are appended;
    /// - a number, bool, `Data` or `Date` is a scalar, written only if it
    ///   changed (a `Date` as seconds since 1970, which reads back up to
    ///   0.24 µs off before 2106);
    /// - an integer where a counter is (which reads as its total) increments
    ///   the counter by the difference;
    /// - a key the value does not encode (a nil optional, a field the type
    ///   no longer has) is removed.
    ///
    /// Unchanged fields make no operation; writing the same value twice
    /// makes no change the second time. The map ends holding `value`, so a
    /// value read a while ago undoes what other edits did since: write it
    /// with `write(_:into:editedFrom:)`.
    ///
    /// A value the document cannot hold (a `UInt64` above `Int64.max`, one
    /// that is no keyed container) throws Swift's `EncodingError.invalidValue`
    /// before anything is written; its context's `codingPath` and
    /// `debugDescription` say where and why (its `localizedDescription`,
    /// Foundation's, names nothing). A `map` that is no map throws
    /// `DocumentError`.
    ///
    ///     struct Note: Codable { var title: String; var done: Bool }
    ///     try store.edit(id) { tx in try tx.write(Note(title: "Milk", done: false), into: .root) }
    ///     try store.edit(id) { tx in try tx.write(Note(title: "Milk!", done: false), into: .root) }  // one insert
    public mutating func write(_ value: some Encodable, into map: ObjectID) throws {
        try update(map, to: Self.fields(of: value))
    }

    /// As `write(_:into:)`, for a value edited from what the map held in
    /// `base`, the document as it was read (when a form was opened, say):
    /// only what the value changes from `base` is written, so that what other
    /// edits did since (a sync, another window) stays, where `write(_:into:)`
    /// would undo it.
    ///
    /// - a field the value holds as `base` did is left as the document has it now;
    /// - a `String` edited is merged as `setText(_:to:editedFrom:)` merges:
    ///   what was typed goes in, other edits of the text stay;
    /// - a nested struct edited is merged field by field in the same way;
    /// - an integer where a counter is increments it by what the value
    ///   changed from `base`, so that other increments count too;
    /// - an array or a set edited gets only the deletes, inserts and element
    ///   edits that `write(_:into:)` would make to the list `base` held,
    ///   each at the element it was read from, wherever other edits have
    ///   put it since: elements they inserted or deleted meanwhile stay as
    ///   they left them, an edited element is merged in the same way (a
    ///   struct field by field), and one they deleted stays deleted unless
    ///   the value changed it, which brings it back as the value holds it.
    ///   A moved element is deleted and inserted anew, as `write(_:into:)`
    ///   does, without their edits of it;
    /// - any other field that differs from `base` (a scalar, an enum case
    ///   with values, an object replaced since) is written as
    ///   `write(_:into:)` writes it;
    /// - a key the value drops is removed; one added since `base` stays.
    ///
    /// `base` must be the document the value was read from (or last saved
    /// as): what the value changes from an older one is written again.
    ///
    ///     var (note, seen) = try store.read(id) { doc in (try doc.read(Note.self, from: .root), doc) }
    ///     // ... the person edits `note`; meanwhile a sync changes the note ...
    ///     seen = try store.edit(id) { tx in
    ///         try tx.write(note, into: .root, editedFrom: seen)
    ///         return tx.document                               // the next save's reading
    ///     }
    ///     note = try seen.read(Note.self, from: .root)         // with the sync's changes
    public mutating func write(_ value: some Encodable, into map: ObjectID, editedFrom base: Document) throws {
        try update(map, to: Self.fields(of: value), editedFrom: base)
    }

    /// The fields of a value written into a map.
    private static func fields(of value: some Encodable) throws -> [String: DocumentNode] {
        switch try NodeEncoder.encoded(value, codingPath: []).node {
        case .map(let fields)?, .identified(let fields, _)?:
            return fields
        case .atomic?:
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription:
                "\(type(of: value)) is replaced whole when it changes, which a map written into is not: write it as a field of a struct"))
        default:
            throw EncodingError.invalidValue(value, .init(
                codingPath: [], debugDescription: "only a value that encodes as a keyed container can be written into a map"))
        }
    }

    /// Makes a map hold exactly `fields` or, given `base`, changes in it what
    /// `fields` change from what it held in `base`. Keys in sorted order, so
    /// that the same edit always makes the same operations.
    private mutating func update(_ map: ObjectID, to fields: [String: DocumentNode], editedFrom base: Document? = nil) throws {
        // A map created since `base` was read: nothing of it was edited from `base`.
        let base = base?.kind(of: map) == .map ? base : nil
        let baseKeys = try base.map { Set(try $0.keys(map)) }
        for key in try document.keys(map) where fields[key] == nil && baseKeys?.contains(key) != false { try remove(map, key: key) }
        for (key, node) in fields.sorted(by: { $0.key < $1.key }) {
            let current = try document.get(map, key: key)
            if let base, let read = try base.get(map, key: key) {
                if try DocumentNode(reading: read, in: base).holds(node) { continue }
                if try merge(current, to: node, editedFrom: read, in: base) { continue }
            }
            if try updateInPlace(current, to: node) { continue }
            if case .scalar(let scalar) = node {
                if current != .scalar(scalar) { try put(map, key: key, scalar) }
            } else {
                try updateContents(of: putObject(map, key: key, kind: node.kind!), to: node)
            }
        }
    }

    /// Merges into `current` the edit that turned `read`, what `base` held
    /// there, into `node`, if `current` is still the object `read` was: a
    /// text as `setText(_:to:editedFrom:)` does, a map key by key, a list
    /// element by element, a counter by the difference. False if it must be
    /// written as `write` writes it.
    private mutating func merge(_ current: Value?, to node: DocumentNode, editedFrom read: Value, in base: Document) throws -> Bool {
        guard case .object(let kind, let object)? = current, read == current else { return false }
        switch (kind, node) {
        case (.text, .text(let string)):
            try setText(object, to: string, editedFrom: base.reading(object))
        case (.map, .map(let fields)), (.map, .identified(let fields, _)):
            try update(object, to: fields, editedFrom: base)
        case (.list, .list(let items)):
            return try updateList(object, to: items, editedFrom: base)
        case (.list, .set(let elements)):
            return try updateList(object, to: elements, isSet: true, editedFrom: base)
        case (.counter, .scalar(.int(let total))):
            // Never 0: a total equal to the one read was left alone as unchanged.
            try increment(object, by: total &- (try base.counter(object)))
        default:
            return false
        }
        return true
    }

    /// Makes a map's or list's value `current` hold `node` where it is, if
    /// it can; false if it must be replaced. An object of the node's kind
    /// is updated; a counter, which reads as its total, given an int is
    /// incremented by the difference, so that concurrent increments add up
    /// (replaced by a scalar, they would be lost). An atomic map is left
    /// alone if it holds the node already, and replaced otherwise: then
    /// concurrent changes are writes of one key (or list element), and
    /// leave one whole value where key-by-key edits would leave a mix.
    private mutating func updateInPlace(_ current: Value?, to node: DocumentNode) throws -> Bool {
        switch (current, node) {
        case (.object(.counter, let counter)?, .scalar(.int(let total))):
            let delta = total &- (try document.counter(counter))
            if delta != 0 { try increment(counter, by: delta) }
        case (.object(.map, let map)?, .atomic):
            return try DocumentNode(readingMap: map, in: document).holds(node)
        case (.object(let kind, let object)?, _) where kind == node.kind:
            try updateContents(of: object, to: node)
        default:
            return false
        }
        return true
    }

    /// Makes an object of the node's kind (text, map or list) hold the node.
    private mutating func updateContents(of object: ObjectID, to node: DocumentNode) throws {
        switch node {
        case .text(let string): try setText(object, to: string)
        case .map(let fields), .atomic(let fields), .identified(let fields, _): try update(object, to: fields)
        case .list(let items): try updateList(object, to: items)
        case .set(let elements): try updateList(object, to: elements, isSet: true)
        case .scalar: preconditionFailure("a scalar is not an object")
        }
    }

    /// Makes a list hold `items` with the edits `TextDiff` finds between the
    /// elements it holds and `items` (`listEdits`).
    ///
    /// `items` that are a set's elements, which come in no order of their
    /// own, go in the list's order: those it holds stay where they are, the
    /// others are deleted, and the new ones are appended. (In the set's
    /// order, writing an equal set would move elements, each a delete and
    /// an insert, which bring back an element another replica removed
    /// meanwhile.) An element is what it holds: none is updated in place
    /// into another.
    private mutating func updateList(_ list: ObjectID, to items: [DocumentNode], isSet: Bool = false) throws {
        let values = try document.list(list)
        let old = try values.map { try DocumentNode(reading: $0, in: document) }
        let items = isSet ? Self.inOrder(of: old, items) : items
        var shift = 0  // an index in the list as edited so far, less the same element's in `old`
        for edit in Self.listEdits(from: old, to: items, isSet: isSet) {
            switch edit {
            case .delete(let elements):
                try delete(list, at: elements.lowerBound + shift, count: elements.count)
                shift -= elements.count
            case let .update(element, item):
                if try updateInPlace(values[element], to: items[item]) { continue }
                try delete(list, at: element + shift)
                try insertItem(list, at: element + shift, items[item])
            case let .insert(inserted, before):
                for (offset, item) in items[inserted].enumerated() { try insertItem(list, at: before + shift + offset, item) }
                shift += inserted.count
            }
        }
    }

    /// Merges into `list`, which `base` held too, the edit that turned what
    /// it held there into `items`, as `listEdits` finds it: each element
    /// deleted or edited is found by its id wherever other edits since have
    /// moved it, and an edited one is merged as `merge` merges a map's
    /// value; new items go after the element they follow in `base`. So the
    /// elements others inserted, deleted or edited meanwhile stay as they
    /// left them; an element another edit deleted stays deleted unless
    /// `items` changed it, which brings it back as `items` holds it. False
    /// if an element `base` held is not in the list (which never drops
    /// one): it must be written whole.
    private mutating func updateList(_ list: ObjectID, to items: [DocumentNode], isSet: Bool = false, editedFrom base: Document) throws -> Bool {
        let baseValues = try base.list(list), baseIDs = try base.elementIDs(list)
        let old = try baseValues.map { try DocumentNode(reading: $0, in: base) }
        let items = isSet ? Self.inOrder(of: old, items) : items
        let current = try document.list(list)
        var positions: [(index: Int, isDeleted: Bool)] = []
        for id in baseIDs {
            guard let position = try document.position(of: id, inList: list) else { return false }
            positions.append(position)
        }

        // Applied from the end, so that each index still holds when its turn
        // comes: at one index, the element there is deleted first, then the
        // items go in, the last first (the others go before it).
        var steps: [(index: Int, order: Int, step: ListStep)] = []
        for edit in Self.listEdits(from: old, to: items, isSet: isSet) {
            switch edit {
            case .delete(let elements):
                // Another edit may have deleted one already.
                for now in positions[elements] where !now.isDeleted { steps.append((now.index, .max, .delete)) }
            case let .update(element, item):
                if old[element].holds(items[item]) { continue }
                let now = positions[element]
                if !now.isDeleted {
                    if try merge(current[now.index], to: items[item], editedFrom: baseValues[element], in: base) { continue }
                    steps.append((now.index, .max, .delete))
                }
                // Replaced, or brought back where it was: the edit may be all
                // that is left of an item new in `items` (without ids,
                // `pairing` tells an edit from a new item only by what they share).
                steps.append((now.index, item, .insert(item..<(item + 1))))
            case let .insert(inserted, before):
                var index = 0
                if before > 0 {
                    let anchor = positions[before - 1]
                    index = anchor.index + (anchor.isDeleted ? 0 : 1)
                }
                steps.append((index, inserted.lowerBound, .insert(inserted)))
            }
        }
        steps.sort { ($0.index, $0.order) > ($1.index, $1.order) }
        for (index, _, step) in steps {
            switch step {
            case .delete:
                try delete(list, at: index)
            case .insert(let inserted):
                for (offset, item) in items[inserted].enumerated() { try insertItem(list, at: index + offset, item) }
            }
        }
        return true
    }

    /// One edit `updateList(_:to:isSet:editedFrom:)` makes, at an index of
    /// the list as it is then.
    private enum ListStep {
        case delete
        case insert(Range<Int>)
    }

    /// One edit of what turns a list's elements `old` into `items`, in
    /// positions of `old` and `items`.
    private enum ListEdit {
        /// Elements of `old` deleted.
        case delete(Range<Int>)
        /// An element of `old` taken for an edit of an item (`pairing`): it
        /// is updated in place if it is an object of the item's kind (a
        /// struct, a string, an array), or a counter given an int, so that
        /// concurrent edits inside it survive; otherwise it is deleted and
        /// the item inserted in its place.
        case update(element: Int, item: Int)
        /// Items inserted before an element of `old` (or at its end).
        case insert(Range<Int>, before: Int)
    }

    /// The edits that turn a list's elements `old` into `items`, in order:
    /// the deletes and inserts `TextDiff` finds between them and, where a
    /// run of elements is replaced (not in a set), each item paired with
    /// the replaced element it is taken for an edit of (`pairing`), the
    /// others deleted or inserted.
    private static func listEdits(from old: [DocumentNode], to items: [DocumentNode], isSet: Bool) -> [ListEdit] {
        var listEdits: [ListEdit] = []
        var edits = TextDiff.edits(from: old.map(ListElement.read), to: items.map(ListElement.written))[...]
        var shift = 0  // a position in the edited list, less the same position in `old`
        while let edit = edits.popFirst() {
            switch edit {
            case let .delete(at, count):
                let start = at - shift
                shift -= count
                // A delete followed by an insert at the same place replaces elements.
                guard !isSet, case let .insert(insertAt, insertCount, from)? = edits.first, insertAt == at else {
                    listEdits.append(.delete(start..<(start + count)))
                    continue
                }
                edits.removeFirst()
                shift += insertCount
                let pairs = pairing(Array(old[start..<(start + count)]), Array(items[from..<(from + insertCount)]))
                var unpaired = 0  // the first replaced element neither updated nor deleted yet
                for (offset, pair) in pairs.enumerated() {
                    guard let pair else {
                        listEdits.append(.insert((from + offset)..<(from + offset + 1), before: start + unpaired))
                        continue
                    }
                    if pair > unpaired { listEdits.append(.delete((start + unpaired)..<(start + pair))) }
                    unpaired = pair + 1
                    listEdits.append(.update(element: start + pair, item: from + offset))
                }
                if count > unpaired { listEdits.append(.delete((start + unpaired)..<(start + count))) }
            case let .insert(at, count, from):
                listEdits.append(.insert(from..<(from + count), before: at - shift))
                shift += count
            }
        }
        return listEdits
    }

    /// A list element as `updateList` diffs it: read from the list or
    /// written, one read equal to one written that it holds
    /// (`DocumentNode.holds`), so that a struct holding a set matches
    /// whatever order the set lists its elements in.
    private enum ListElement: Equatable {
        case read(DocumentNode), written(DocumentNode)

        static func == (a: ListElement, b: ListElement) -> Bool {
            switch (a, b) {
            case let (.read(read), .written(written)), let (.written(written), .read(read)): read.holds(written)
            case let (.read(x), .read(y)), let (.written(x), .written(y)): x == y
            }
        }
    }

    /// `elements` with those that `list` holds first, in its order, then
    /// the others, in theirs. An element of the list holds at most one.
    private static func inOrder(of list: [DocumentNode], _ elements: [DocumentNode]) -> [DocumentNode] {
        var placed = [Bool](repeating: false, count: elements.count)
        var equal = Dictionary(grouping: elements.indices.reversed(), by: { elements[$0] })
        func take(_ element: DocumentNode) -> Int? {
            while let index = equal[element]?.popLast() {
                if !placed[index] {
                    placed[index] = true
                    return index
                }
            }
            // Not equal to any: a map or list may hold one whose set lists its elements in another order.
            guard element.kind == .map || element.kind == .list,
                  let index = elements.indices.first(where: { !placed[$0] && element.holds(elements[$0]) }) else { return nil }
            placed[index] = true
            return index
        }
        let kept = list.compactMap(take)
        return kept.map { elements[$0] } + elements.indices.filter { !placed[$0] }.map { elements[$0] }
    }

    /// Past this many comparisons (100 elements replaced by 100), items pair
    /// by id or by position (`pairingByIDOrPosition`): the time `pairing`
    /// takes stays bounded.
    static let pairingLimit = 10_000

    /// For each of `items`, the offset of the element of `replaced` it is
    /// taken for an edit of, if any: pairs in order that share the most
    /// (`DocumentNode.resemblance`), and of those the most pairs, earliest
    /// first, an item of an `Identifiable` type only with the element of
    /// its id (`ItemIDs`). So a struct deleted before one edited is not
    /// updated into it, elements that share nothing pair by position, and
    /// items with ids pair by them alone.
    static func pairing(_ replaced: [DocumentNode], _ items: [DocumentNode]) -> [Int?] {
        let (n, m) = (replaced.count, items.count)
        let ids = ItemIDs(replaced, items)
        guard n * m <= pairingLimit else { return pairingByIDOrPosition(replaced, items, ids) }
        // A pair's score: what it shares, above the one pair it adds (pairs <= m); nil if the pair may not be.
        func paired(_ i: Int, _ j: Int) -> Int? {
            ids.mayPair(element: i, item: j) ? replaced[i].resemblance(to: items[j]) * (m + 1) + 1 : nil
        }
        // best[i][j]: the greatest total score between replaced[i...] and items[j...].
        var best = [[Int]](repeating: [Int](repeating: 0, count: m + 1), count: n + 1)
        for i in (0..<n).reversed() {
            for j in (0..<m).reversed() {
                best[i][j] = max(paired(i, j).map { $0 + best[i + 1][j + 1] } ?? 0, best[i + 1][j], best[i][j + 1])
            }
        }
        var pairs = [Int?](repeating: nil, count: m)
        var (i, j) = (0, 0)
        while i < n && j < m {
            if let score = paired(i, j), best[i][j] == score + best[i + 1][j + 1] {
                pairs[j] = i
                (i, j) = (i + 1, j + 1)
            } else if best[i][j] == best[i + 1][j] {
                i += 1
            } else {
                j += 1
            }
        }
        return pairs
    }

    /// `pairing` past `pairingLimit`, in one pass: an item of an
    /// `Identifiable` type pairs with the first element after the last pair
    /// that holds its id, found in a table, so that a long list with an item
    /// inserted before others, all rewritten, keeps every one's identity and
    /// the edits others make to it; any other item, or one whose id no such
    /// element holds, with the element just after the last pair, if it may
    /// be edited into it.
    private static func pairingByIDOrPosition(_ replaced: [DocumentNode], _ items: [DocumentNode], _ ids: ItemIDs) -> [Int?] {
        // For each type of item, each id's elements, last first, so that
        // the first is popped off the end (in place, through the subscripts).
        var elementsOfID: [ObjectIdentifier: [AnyHashable: [Int]]] = [:]
        var next = 0  // the first element after the last pair
        return items.indices.map { item in
            var pair: Int?
            if let identified = ids.ofItems[item] {
                let (type, id, elementIDs) = identified
                if elementsOfID[type] == nil {
                    elementsOfID[type] = Dictionary(grouping: replaced.indices.reversed().filter { elementIDs[$0] != nil }) { elementIDs[$0]! }
                }
                while let first = elementsOfID[type]![id]?.last, first < next { elementsOfID[type]![id]!.removeLast() }
                pair = elementsOfID[type]![id]?.popLast()
            }
            if pair == nil, next < replaced.count, ids.mayPair(element: next, item: item) { pair = next }
            if let pair { next = pair + 1 }
            return pair
        }
    }

    /// The ids `pairing` tells items of `Identifiable` types apart by: each
    /// item's, and each replaced element's as the item's type reads it
    /// (`ItemIdentity`), read once for each type. Only looked up, never
    /// iterated: the pairing is the same on every replica.
    struct ItemIDs {
        /// For each item, its type, its id and the replaced elements' ids
        /// as that type reads them; nil for an item of no id.
        let ofItems: [(type: ObjectIdentifier, id: AnyHashable, elements: [AnyHashable?])?]

        init(_ replaced: [DocumentNode], _ items: [DocumentNode]) {
            var elementIDs: [ObjectIdentifier: [AnyHashable?]] = [:]
            ofItems = items.map { item in
                guard case .identified(_, let identity) = item, let id = identity.id(item) else { return nil }
                let elements = elementIDs[identity.type] ?? replaced.map(identity.id)
                elementIDs[identity.type] = elements
                return (identity.type, id, elements)
            }
        }

        /// Whether item `item` may be taken for an edit of replaced element
        /// `element`: one of an `Identifiable` type only if the element has
        /// its id, or none (it does not read as the type: written before
        /// the type had its `id`), so that an item never takes another's
        /// place, and the edits others make to it, by resembling it.
        func mayPair(element: Int, item: Int) -> Bool {
            guard let identified = ofItems[item], let elementID = identified.elements[element] else { return true }
            return elementID == identified.id
        }
    }

    private mutating func insertItem(_ list: ObjectID, at index: Int, _ item: DocumentNode) throws {
        if case .scalar(let scalar) = item {
            try insert(list, at: index, scalar)
        } else {
            try updateContents(of: insertObject(list, at: index, kind: item.kind!), to: item)
        }
    }
}

extension Document {
    /// Reads a value of type `T` from the map `map`, as `Transaction.write`
    /// stores it. A missing key throws Swift's `DecodingError.keyNotFound`,
    /// a value of the wrong kind `typeMismatch`, each with the path and, in
    /// its context's `debugDescription`, what the document holds there.
    /// Catch them as `Swift.DecodingError`: where Quire is imported, plain
    /// `DecodingError` is QuireCore's, for bytes that do not decode. Their
    /// `localizedDescription` is Foundation's, which names nothing: show
    /// the context's `debugDescription`.
    ///
    /// Two keys of a map that Swift's `String` takes for one ("é" precomposed
    /// and decomposed, written on two machines) read as the one whose value
    /// was written last, spelled as written (`Specs/storage.md`, "Codable bridge").
    ///
    ///     let note = try store.read(id) { doc in try doc.read(Note.self, from: .root) }
    ///
    ///     do { note = try store.read(id) { doc in try doc.read(Note.self, from: .root) } }
    ///     catch let Swift.DecodingError.keyNotFound(key, context) {
    ///         print(key.stringValue, context.debugDescription)  // tags the document has no value at key "tags"
    ///     }
    public func read<T: Decodable>(_ type: T.Type, from map: ObjectID) throws -> T {
        try NodeDecoder.decode(type, from: DocumentNode(readingMap: map, in: self), codingPath: [])
    }
}
