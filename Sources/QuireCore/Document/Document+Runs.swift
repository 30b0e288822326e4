/// Read access to the runs of texts and lists: who inserted what, and what
/// is deleted. For tools (`quire blame`, `quire inspect`), not for editing.
extension Document {
    /// Every run of a text object in document order, tombstones included
    /// (see `RGASequence.forEachRun`): each run's scalars were inserted by
    /// consecutive operations of one replica.
    public func textRuns(_ text: ObjectID) throws(DocumentError) -> [SequenceRun<Unicode.Scalar>] {
        var runs: [SequenceRun<Unicode.Scalar>] = []
        objects.texts[try objects.slot(text, .text)].forEachRun { runs.append($0) }
        return runs
    }

    /// Every run of a list in document order, tombstones included with
    /// their values (`quire blame --deleted --tags` lists removed tags):
    /// each run's elements were inserted by consecutive operations of one
    /// replica, at consecutive Lamport values.
    public func listRuns(_ list: ObjectID) throws(DocumentError) -> [SequenceRun<Value>] {
        var runs: [SequenceRun<Value>] = []
        objects.lists[try objects.slot(list, .list)].forEachRun { runs.append($0) }
        return runs
    }

    /// The number of tombstones the document keeps: deleted elements of its
    /// texts and lists, and map keys whose winning entry is a removal.
    public var tombstoneCount: Int {
        var count = objects.texts.reduce(0) { $0 + $1.tombstoneCount } + objects.lists.reduce(0) { $0 + $1.tombstoneCount }
        for map in objects.maps { count += map.values.filter { $0.winner != nil && $0.winner?.value == nil }.count }
        return count
    }
}
