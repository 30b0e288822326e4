import Quire

/// A document's logged changes, and the document as it was at any version
/// of it: the basis of `log`, `show --at`, `diff` and `blame`.
struct DocumentHistory {
    let id: DocumentID
    /// In the order this store applied them, a causal order.
    let changes: [Change]
    /// The replica the store edits as; replayed documents take it too.
    let replica: ReplicaID
    /// Each replica's changes in counter order, searched by halves: blame
    /// looks up a change for every piece and heads for every change, and a
    /// scan of the log for each made them quadratic (seconds on a note of
    /// 10,000 changes).
    private let changesByReplica: [ReplicaID: [Change]]

    /// The store's log of note `id`; a failure saying so when changes of
    /// it were compacted away (`quire compact --drop-history`): what
    /// needs the history cannot work from the rest.
    init(_ id: DocumentID, in store: DocumentStore) throws {
        do {
            self.init(id, changes: try store.changes(id), replica: store.replicaID)
        } catch StoreError.historyCompacted {
            throw CLIError.failure("changes of note \(id) were deleted by `quire compact --drop-history`, and log, blame, diff, show --at "
                + "and conflicts replay its whole history; the note itself is whole: `quire note show \(id)`")
        }
    }

    /// `changes` in a causal order: a store's log, or one with changes
    /// merged in after it (`StoreMerge`).
    init(_ id: DocumentID, changes: [Change], replica: ReplicaID) {
        self.id = id
        self.changes = changes
        self.replica = replica
        changesByReplica = Dictionary(grouping: changes, by: \.replica).mapValues { $0.sorted { $0.id.counter < $1.id.counter } }
    }

    /// The version vector of the whole history.
    var current: VersionVector {
        changes.reduce(into: VersionVector()) { version, change in
            version[change.replica] = max(version[change.replica], change.lastID.counter)
        }
    }

    /// For each change (in log order), the version right after it in this
    /// store: every change logged up to and including it.
    var versionsAfterEachChange: [VersionVector] {
        var version = VersionVector()
        return changes.map { change in
            version[change.replica] = max(version[change.replica], change.lastID.counter)
            return version
        }
    }

    /// The change that holds the operation `id`.
    func change(containing id: OpID) -> Change? {
        position(of: id).map { $0.changes[$0.index] }
    }

    /// Where the change holding `id` is among its replica's changes.
    private func position(of id: OpID) -> (changes: [Change], index: Int)? {
        guard let ofReplica = changesByReplica[id.replica] else { return nil }
        // The first change starting after the counter; the one before it may hold it.
        var low = 0, high = ofReplica.count
        while low < high {
            let middle = (low + high) / 2
            if ofReplica[middle].id.counter <= id.counter { low = middle + 1 } else { high = middle }
        }
        guard low > 0, ofReplica[low - 1].counters.contains(id.counter) else { return nil }
        return (ofReplica, low - 1)
    }

    /// The changes concurrent with `change`: neither saw the other.
    func changes(concurrentWith change: Change) throws -> [Change] {
        let seenByIt = try causalPast(of: [change.lastID])
        // The log's order is causal: a change saw `change` when one of its
        // parents, or its replica's change before it, did.
        var sawIt: Set<OpID> = [change.lastID]
        var previousOfReplica: [ReplicaID: OpID] = [:]
        var concurrent: [Change] = []
        for other in changes {
            defer { previousOfReplica[other.replica] = other.lastID }
            if other.id == change.id || seenByIt.contains(other.lastID) { continue }
            if other.parents.contains(where: sawIt.contains) || previousOfReplica[other.replica].map(sawIt.contains) == true {
                sawIt.insert(other.lastID)
            } else {
                concurrent.append(other)
            }
        }
        return concurrent
    }

    /// The version vector `version` names in this document: heads name
    /// their changes and everything those build on. Throws a failure for a
    /// version naming operations this document does not have, holding part
    /// of a change, or holding a change without one it builds on.
    func version(_ version: VersionArgument) throws -> VersionVector {
        switch version.form {
        case .heads(let heads):
            return try causalPast(of: heads)
        case .vector(let vector):
            // Checked first: a version past the note's may also seem to
            // hold a change without its parents, but what is wrong is the excess.
            guard current.includes(vector) else {
                throw CLIError.failure("version \(version.text) names operations document \(id) does not have; `quire log \(id)` lists its versions")
            }
            // A replay leaves out a change it holds only part of, or whose
            // parents it lacks, so such a version would show a note that never was.
            for change in changes where vector.contains(change.id) {
                guard vector.contains(change.lastID) else {
                    throw CLIError.failure("version \(version.text) holds part of change \(change.id) (counters \(change.id.counter)-\(change.lastID.counter)), which applies whole; `quire log \(id)` lists the note's versions")
                }
                if let parent = change.parents.first(where: { !vector.contains($0) }) {
                    throw CLIError.failure("version \(version.text) holds change \(change.id) but not \(parent), which it builds on; `quire log \(id)` lists the note's versions")
                }
            }
            return vector
        }
    }

    /// The smallest version vector holding `heads` and every change they build on.
    private func causalPast(of heads: [OpID]) throws -> VersionVector {
        var version = VersionVector()
        // Changes are marked visited by id, not by the version: the version
        // covers a replica's earlier changes before their parents are visited.
        var visited: Set<OpID> = []
        var pending = heads
        while let head = pending.popLast() {
            guard let (ofReplica, index) = position(of: head) else {
                throw CLIError.failure("document \(id) has no operation \(head); `quire log \(id)` lists its changes")
            }
            let change = ofReplica[index]
            guard visited.insert(change.id).inserted else { continue }
            // A change includes its parents and every earlier change of its
            // replica: the one just before it, which includes the others.
            version[head.replica] = max(version[head.replica], change.lastID.counter)
            pending += change.parents
            if index > 0 { pending.append(ofReplica[index - 1].lastID) }
        }
        return version
    }

    /// The document as it was at `version`: a fresh replay of the changes it covers.
    func document(at version: VersionVector) throws -> Document {
        var document = Document(replica: replica)
        try document.apply(changes.filter { version.contains($0.lastID) })
        return document
    }
}

/// A version as given on the command line: a version vector as
/// `VersionVector.description` prints it (`replica:counter,...`) or heads
/// as `OpID.description` prints them (`counter@replica,...`). Read before
/// the store is opened, so that text that is neither is a usage error
/// whatever the store and the note (Specs/cli.md, "Versions").
struct VersionArgument {
    enum Form {
        case vector(VersionVector)
        case heads([OpID])
    }

    /// As given, for messages.
    let text: String
    let form: Form

    init(_ text: String, invocation: Invocation) throws {
        self.text = text
        // An empty word (an unset shell variable) would be the empty
        // vector, before the note's first change: a note that never was.
        guard !text.isEmpty else { throw invocation.usageError("an empty version names no state of the note: give replica:counter,... or counter@replica,...") }
        if text.contains("@") {
            form = .heads(try text.split(separator: ",", omittingEmptySubsequences: false).map { part in
                guard let head = OpID(part) else { throw invocation.usageError("\"\(part)\" is not an operation id (counter@replica)") }
                return head
            })
        } else {
            guard let vector = VersionVector(text) else {
                throw invocation.usageError("\"\(text)\" is not a version: give replica:counter,... or counter@replica,...")
            }
            form = .vector(vector)
        }
    }
}

extension Invocation {
    /// The version an option (`--at`, `--from`, `--to`) gives, if given.
    func version(_ option: String) throws -> VersionArgument? {
        try value(option).map { try VersionArgument($0, invocation: self) }
    }
}

/// The options that pick versions of a document, shared by the commands
/// that travel in time, so they read and document them the same way.
extension Option {
    static let at = Option(name: "--at", values: ["VERSION"], help: "As it was at VERSION: replica:counter,... (a version vector) or counter@replica,... (heads), as `quire log` prints them.")
    static let from = Option(name: "--from", values: ["VERSION"], help: "The older version (as `quire log` prints them).")
    static let to = Option(name: "--to", values: ["VERSION"], help: "The newer version (default: the current one).")
}
