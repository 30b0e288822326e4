/// The sorted table of replica ids an encoding refers to by index.
///
/// Encoders look a replica up for every id they write; a document has few
/// replicas, so binary search in a short array beats hashing.
struct ReplicaTable {
    private(set) var replicas: [ReplicaID] = []

    mutating func insert(_ replica: ReplicaID) {
        let index = position(of: replica)
        if index == replicas.count || replicas[index] != replica { replicas.insert(replica, at: index) }
    }

    /// The index of a replica that was inserted.
    func index(of replica: ReplicaID) -> Int {
        let index = position(of: replica)
        precondition(index < replicas.count && replicas[index] == replica, "replica \(replica) is not in the table")
        return index
    }

    private func position(of replica: ReplicaID) -> Int {
        var low = 0, high = replicas.count
        while low < high {
            let mid = (low + high) / 2
            if replicas[mid] < replica { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
