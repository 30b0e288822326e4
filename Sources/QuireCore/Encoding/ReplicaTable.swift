/// The sorted table of replica ids an encoding refers to by index.
struct ReplicaTable {
    private var map = ReplicaMap<Void>()

    var replicas: [ReplicaID] { map.replicas }

    mutating func insert(_ replica: ReplicaID) {
        map.modify(replica, default: ()) { _ in }
    }
}
