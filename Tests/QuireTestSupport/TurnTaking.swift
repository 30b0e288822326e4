import QuireCore

/// Two writers (replicas 1 and 2) type three keystrokes each, in turns,
/// into a text that a hub (replica 3) made; the hub takes each keystroke as
/// it comes, so its history lists the writers' changes interleaved:
/// 3, 1, 2, 1, 2, 1, 2.
public struct TurnTaking {
    public var hub = Document(replica: ReplicaID(3))
    public var writers = [Document(replica: ReplicaID(1)), Document(replica: ReplicaID(2))]
    public let text: ObjectID

    public init() throws {
        text = try hub.transact { tx in try tx.putObject(.root, key: "text", kind: .text) }
        for index in writers.indices { try writers[index].apply(hub.allChanges()) }
        for key in 0..<3 {
            for index in writers.indices {
                try writers[index].transact { [text] tx in try tx.insertText(text, at: key, index == 0 ? "a" : "x") }
                try hub.apply(try writers[index].changes(since: hub.versionVector))
            }
        }
    }
}
