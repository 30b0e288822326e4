/// A text that was empty, built from a catch-up's edits (a bundle applied
/// into a fresh replica) in one pass at the end rather than edit by edit.
///
/// Applied one at a time, each remote insert looks its origin up in the id
/// index, walks the B-tree, splits spans and leaves and records its ids;
/// each delete does the same to mark its tombstones. Here an insert records
/// its run and where it hangs (its origin's run and offset), a delete its
/// range of counters, each checked as the sequence would check it (the
/// origin and the deleted elements present, the stamp above the origin's).
/// `build()` then orders the runs as RGA would: the document is the
/// depth-first walk of the tree of origins, each element's later inserts
/// (children) in descending stamp order. The sequence is made bottom-up
/// from the runs in that order (`SpanTree(loading:)`, as a snapshot loads),
/// tombstones cut in: the same elements, order and flags as the edits one
/// by one, so the same snapshot bytes.
struct TextBuilder {
    /// Inserted elements: consecutive ids and Lamport values of one replica,
    /// each after the one before it (typing), the first after its origin.
    private struct Run {
        var counter: UInt64
        var lamport: UInt64
        var contentStart: Int
        var length: Int
        /// Into `replicas`.
        var replica: Int32
    }

    /// Run `child` inserted after element `offset` of run `parent` (-1: at the head).
    private struct Attachment {
        var parent: Int32
        var offset: Int
        var child: Int32
    }

    /// The text object built.
    let object: ObjectID
    private var runs: [Run] = []
    private var attachments: [Attachment] = []
    private var replicas: [ReplicaID] = []
    private var replicaIndices: [ReplicaID: Int32] = [:]
    /// The replica looked up last: edits come in runs of one replica.
    private var lastReplica = (id: ReplicaID(0), index: Int32(-1))
    /// Per replica, its first recorded counter and, for each counter from
    /// there, the run holding that element times two, plus one once it is
    /// deleted; -1 for a counter not in the text (another object's edit).
    private var elementsOfReplica: [(first: UInt64, elements: [Int32])] = []
    /// Counters indexed in all, at most: a hostile bundle's counters could
    /// jump (a change's width is its own), and the index is dense.
    private var indexedLeft: Int
    private var content = ScalarStorage()

    /// A builder of `object`, with room for `scalars` scalars, which
    /// gives up (its edits refused) past `ids` element ids.
    init(of object: ObjectID, scalars: Int, ids: Int) {
        self.object = object
        indexedLeft = ids
        content.reserveCapacity(scalars)
    }

    var isEmpty: Bool { runs.isEmpty }

    /// Records an insert of `scalars` after `origin` (nil: the head), as
    /// `RGASequence.insertRemote(..., checkingOriginStamp: true)` would
    /// apply it; false, recording nothing, if that would throw (or if `id`
    /// does not come after its replica's ids recorded so far).
    mutating func insert(origin: OpID?, id: OpID, lamport: UInt64, contentsOf scalars: some Collection<Unicode.Scalar>) -> Bool {
        let length = scalars.count
        // The sequence inserts nothing, checking nothing, for no elements.
        guard length > 0 else { return true }
        guard length < Int(Int32.max), id.counter <= UInt64.max - UInt64(length), lamport <= UInt64.max - UInt64(length),
              content.count + length < Int(Int32.max) else { return false }
        let replica = intern(id.replica)
        if elementsOfReplica[Int(replica)].elements.isEmpty { elementsOfReplica[Int(replica)].first = id.counter }
        let (first, indexed) = (elementsOfReplica[Int(replica)].first, elementsOfReplica[Int(replica)].elements.count)
        // Ids after the replica's recorded ones, and the index kept bounded.
        guard id.counter >= first + UInt64(indexed), id.counter - first - UInt64(indexed) + UInt64(length) <= UInt64(indexedLeft)
        else { return false }
        // Typing on: the last run grows.
        let lastRun = runs.count - 1
        var run = Int32(runs.count)
        if lastRun >= 0, runs[lastRun].replica == replica, let origin, origin.replica == id.replica,
           origin.counter + 1 == id.counter, id.counter == end(of: Int32(lastRun)),
           lamport == runs[lastRun].lamport + UInt64(runs[lastRun].length) {
            runs[lastRun].length += length
            run = Int32(lastRun)
        } else {
            var parent = (run: Int32(-1), offset: 0)
            if let origin {
                guard let found = find(origin), lamport > runs[Int(found.run)].lamport + UInt64(found.offset) else { return false }
                parent = found
            }
            runs.append(Run(counter: id.counter, lamport: lamport, contentStart: content.count, length: length, replica: replica))
            attachments.append(Attachment(parent: parent.run, offset: parent.offset, child: run))
        }
        let gap = Int(id.counter - first) - indexed
        indexedLeft -= gap + length
        elementsOfReplica[Int(replica)].elements.append(contentsOf: repeatElement(-1, count: gap))
        elementsOfReplica[Int(replica)].elements.append(contentsOf: repeatElement(run &* 2, count: length))
        content.append(contentsOf: scalars)
        return true
    }

    /// Records a delete of `target`'s elements, as `RGASequence.deleteRemote`
    /// would apply it; false, recording nothing, if one of them is missing.
    mutating func delete(_ target: IDRun) -> Bool {
        guard target.length > 0, let replica = index(of: target.start.replica),
              target.start.counter >= elementsOfReplica[Int(replica)].first else { return false }
        // (A damaged counter can be far past the index: compared before it is made an Int.)
        let position = target.start.counter - elementsOfReplica[Int(replica)].first
        guard position < UInt64(elementsOfReplica[Int(replica)].elements.count) else { return false }
        let start = Int(position)
        return elementsOfReplica[Int(replica)].elements.withUnsafeMutableBufferPointer { elements in
            guard target.length <= elements.count - start else { return false }
            let range = start..<(start + target.length)
            for position in range where elements[position] < 0 { return false }
            for position in range { elements[position] |= 1 }
            return true
        }
    }

    /// The text: the recorded runs in RGA order, with their tombstones.
    /// Throws as `SpanTree(loading:)` does.
    func build() throws(SequenceError) -> RGASequence<Unicode.Scalar> {
        var loaded: [SpanTree.LoadedRun] = []
        loaded.reserveCapacity(runs.count * 2)
        let (ordered, firstOfParent) = attachmentsByParent()
        content.withUnsafeView { view in
            // Each element is visited after its origin, its children in
            // descending stamp order; a run's own next element counts as a
            // child, so children stamped below it come after the rest of
            // the run and what hangs on it. (A stack: histories of typing
            // nest runs thousands deep.)
            var stack: [(run: Int32, from: Int, next: Int)] = []
            for index in (firstOfParent[0]..<firstOfParent[1]).reversed() {
                let child = ordered[index].child
                stack.append((child, 0, firstOfParent[Int(child) + 1]))
            }
            while let (run, from, next) = stack.popLast() {
                let end = firstOfParent[Int(run) + 2]
                let length = runs[Int(run)].length
                guard next < end else {
                    append(run, from..<length, view, to: &loaded)
                    continue
                }
                let offset = ordered[next].offset
                append(run, from..<(offset + 1), view, to: &loaded)
                var groupEnd = next
                while groupEnd < end, ordered[groupEnd].offset == offset { groupEnd += 1 }
                var greater = groupEnd
                if offset + 1 < length {
                    let following = stamp(of: run, offset: offset + 1)
                    greater = next
                    while greater < groupEnd, following < stamp(of: ordered[greater].child, offset: 0) { greater += 1 }
                }
                for index in (greater..<groupEnd).reversed() {
                    let child = ordered[index].child
                    stack.append((child, 0, firstOfParent[Int(child) + 1]))
                }
                if offset + 1 < length { stack.append((run, offset + 1, groupEnd)) }
                for index in (next..<greater).reversed() {
                    let child = ordered[index].child
                    stack.append((child, 0, firstOfParent[Int(child) + 1]))
                }
            }
        }
        var text = RGASequence<Unicode.Scalar>()
        text.tree = try SpanTree(loading: loaded)
        text.content = content
        return text
    }

    /// The attachments grouped by parent (the head's first), each group by
    /// offset and then by descending stamp; `firstOfParent[p + 1]` is where
    /// run `p`'s group starts (`firstOfParent[0]` the head's), and
    /// `firstOfParent[p + 2]` where it ends. A counting sort: most runs
    /// have one child or none, so the groups' own sorts (by insertion) are short.
    private func attachmentsByParent() -> (ordered: [Attachment], firstOfParent: [Int]) {
        var firstOfParent = [Int](repeating: 0, count: runs.count + 2)
        for attachment in attachments { firstOfParent[Int(attachment.parent) + 2] += 1 }
        for index in 1..<firstOfParent.count { firstOfParent[index] += firstOfParent[index - 1] }
        var filled = firstOfParent
        var ordered = attachments
        for attachment in attachments {
            ordered[filled[Int(attachment.parent) + 1]] = attachment
            filled[Int(attachment.parent) + 1] += 1
        }
        func precedes(_ a: Attachment, _ b: Attachment) -> Bool {
            a.offset != b.offset ? a.offset < b.offset : stamp(of: b.child, offset: 0) < stamp(of: a.child, offset: 0)
        }
        for group in 0..<(runs.count + 1) where firstOfParent[group + 1] - firstOfParent[group] > 1 {
            // Many inserts after one element (a hostile bundle's) are not sorted by insertion.
            guard firstOfParent[group + 1] - firstOfParent[group] <= 16 else {
                ordered[firstOfParent[group]..<firstOfParent[group + 1]].sort(by: precedes)
                continue
            }
            for index in (firstOfParent[group] + 1)..<firstOfParent[group + 1] {
                let moved = ordered[index]
                var slot = index
                while slot > firstOfParent[group], precedes(moved, ordered[slot - 1]) {
                    ordered[slot] = ordered[slot - 1]
                    slot -= 1
                }
                ordered[slot] = moved
            }
        }
        return (ordered, firstOfParent)
    }

    /// Appends the elements `offsets` of `run` to `loaded`, cut where their deleted flag changes.
    private func append(_ run: Int32, _ offsets: Range<Int>, _ view: ScalarStorage.UnsafeView,
                        to loaded: inout [SpanTree.LoadedRun]) {
        let stored = runs[Int(run)]
        let (first, elements) = elementsOfReplica[Int(stored.replica)]
        let base = Int(stored.counter - first)
        var offset = offsets.lowerBound
        while offset < offsets.upperBound {
            let isDeleted = elements[base + offset] & 1 != 0
            var end = offset + 1
            while end < offsets.upperBound, (elements[base + end] & 1 != 0) == isDeleted { end += 1 }
            let start = stored.contentStart + offset
            let (utf16, utf8) = ScalarStorage.widths(view, start, end - offset)
            loaded.append(SpanTree.LoadedRun(
                run: SpanTree.NewRun(id: OpID(replica: replicas[Int(stored.replica)], counter: stored.counter + UInt64(offset)),
                                     lamport: stored.lamport + UInt64(offset), contentStart: start,
                                     length: end - offset, utf16: utf16, utf8: utf8),
                isDeleted: isDeleted))
            offset = end
        }
    }

    private func stamp(of run: Int32, offset: Int) -> Stamp {
        Stamp(lamport: runs[Int(run)].lamport + UInt64(offset), replica: replicas[Int(runs[Int(run)].replica)])
    }

    private func end(of run: Int32) -> UInt64 { runs[Int(run)].counter + UInt64(runs[Int(run)].length) }

    /// The run holding `id` and its offset there.
    private mutating func find(_ id: OpID) -> (run: Int32, offset: Int)? {
        guard let replica = index(of: id.replica), id.counter >= elementsOfReplica[Int(replica)].first else { return nil }
        let position = id.counter - elementsOfReplica[Int(replica)].first
        guard position < UInt64(elementsOfReplica[Int(replica)].elements.count) else { return nil }
        let value = elementsOfReplica[Int(replica)].elements[Int(position)]
        guard value >= 0 else { return nil }
        let run = value >> 1
        return (run, Int(id.counter - runs[Int(run)].counter))
    }

    /// `replica`'s index, if it has recorded anything.
    private mutating func index(of replica: ReplicaID) -> Int32? {
        if replica == lastReplica.id, lastReplica.index >= 0 { return lastReplica.index }
        guard let index = replicaIndices[replica] else { return nil }
        lastReplica = (replica, index)
        return index
    }

    private mutating func intern(_ replica: ReplicaID) -> Int32 {
        if let index = index(of: replica) { return index }
        let index = Int32(replicas.count)
        replicas.append(replica)
        replicaIndices[replica] = index
        elementsOfReplica.append((0, []))
        lastReplica = (replica, index)
        return index
    }
}
