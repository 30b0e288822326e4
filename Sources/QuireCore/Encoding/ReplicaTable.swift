/// The sorted table of replica ids an encoding refers to by index.
struct ReplicaTable {
    private var map = ReplicaMap<Void>()

    var replicas: [ReplicaID] { map.replicas }

    mutating func insert(_ replica: ReplicaID) {
        if !map.position(of: replica).found { map[replica] = () }
    }

    /// The index of a replica that was inserted.
    func index(of replica: ReplicaID) -> Int {
        let (index, found) = map.position(of: replica)
        precondition(found, "replica \(replica) is not in the table")
        return index
    }
}
