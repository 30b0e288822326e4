import Quire

/// A document's logged changes, and the document as it was at any version
/// of it: the basis of `log`, `show --at`, `diff`, `blame` and `conflicts`.
/// After `quire compact --drop-history`, the changes still logged and the
/// versions from the compaction point on (`compaction`).
struct DocumentHistory {
    let id: DocumentID
    /// In the order this store applied them, a causal order.
    let changes: [Change]
    /// The replica the store edits as; replayed documents take it too.
    let replica: ReplicaID
    /// Where the log starts when compaction deleted changes of the note; nil when it is whole.
    let compaction: Compaction?
    /// Each replica's changes in counter order, searched by halves: blame
    /// looks up a change for every piece and heads for every change, and a
    /// scan of the log for each made them quadratic (seconds on a note of
    /// 10,000 changes).
    private let changesByReplica: [ReplicaID: [Change]]

    /// What `quire compact --drop-history` left of a note's history
    /// (Specs/storage.md, "Compaction").
    struct Compaction {
        /// The version at the compaction point: every change this store had
        /// applied then, deleted or kept.
        let version: VersionVector
        /// How many of `changes`, at their start, are from before the point:
        /// local changes a peer lacks, and the note's newest change then.
        let keptCount: Int
        /// The note at its oldest snapshot since the point, where replays
        /// start: usually the compaction's own, at `version`.
        let snapshot: Document
    }

    /// The store's log of note `id`; when changes of it were compacted
    /// away, what is left of it (`compaction`).
    init(_ id: DocumentID, in store: DocumentStore) throws {
        do {
            self.init(id, changes: try store.changes(id), replica: store.replicaID)
        } catch StoreError.historyCompacted {
            let log = try store.compactedLog(id)
            // The version at the point: the note's now (the snapshot and the
            // changes after it) without the changes logged since. A replica's
            // changes are applied in counter order, so its counter then is
            // one below its first change logged after the point (a replica
            // with none logged since is as the snapshot has it).
            var point = log.oldestSnapshot.versionVector
            for change in log.afterPoint.reversed() { point[change.replica] = change.id.counter - 1 }
            self.init(id, changes: log.keptBefore + log.afterPoint, replica: store.replicaID,
                      compaction: Compaction(version: point, keptCount: log.keptBefore.count, snapshot: log.oldestSnapshot))
        }
    }

    /// `changes` in a causal order: a store's log, or one with changes
    /// merged in after it (`StoreMerge`).
    init(_ id: DocumentID, changes: [Change], replica: ReplicaID, compaction: Compaction? = nil) {
        self.id = id
        self.changes = changes
        self.replica = replica
        self.compaction = compaction
        changesByReplica = Dictionary(grouping: changes, by: \.replica).mapValues { $0.sorted { $0.id.counter < $1.id.counter } }
    }

    /// The version vector of the whole history.
    var current: VersionVector {
        changes.reduce(into: compaction?.version ?? VersionVector()) { version, change in
            version[change.replica] = max(version[change.replica], change.lastID.counter)
        }
    }

    /// For each change (in log order), the version right after it in this
    /// store: every change logged up to and including it. Nil for a change
    /// kept from before the compaction point: the deleted ones interleaved.
    var versionsAfterEachChange: [VersionVector?] {
        var version = compaction?.version ?? VersionVector()
        return changes.enumerated().map { index, change in
            guard index >= compaction?.keptCount ?? 0 else { return nil }
            version[change.replica] = max(version[change.replica], change.lastID.counter)
            return version
        }
    }

    /// The change that holds the operation `id`.
    func change(containing id: OpID) -> Change? {
        position(of: id).map { $0.changes[$0.index] }
    }

    /// Whether the operation `id` was in a change compaction deleted.
    func wasCompacted(_ id: OpID) -> Bool {
        compaction?.version.contains(id) == true && change(containing: id) == nil
    }

    /// The first logged change of `id`'s replica that starts after `id`.
    func firstChange(after id: OpID) -> Change? {
        guard let ofReplica = changesByReplica[id.replica] else { return nil }
        let index = firstIndex(startingAfter: id.counter, in: ofReplica)
        return index < ofReplica.endIndex ? ofReplica[index] : nil
    }

    /// Where the change holding `id` is among its replica's changes.
    private func position(of id: OpID) -> (changes: [Change], index: Int)? {
        guard let ofReplica = changesByReplica[id.replica] else { return nil }
        // The one before the first change starting after the counter may hold it.
        let low = firstIndex(startingAfter: id.counter, in: ofReplica)
        guard low > 0, ofReplica[low - 1].counters.contains(id.counter) else { return nil }
        return (ofReplica, low - 1)
    }

    /// The index of the first of a replica's changes (in counter order) starting after `counter`.
    private func firstIndex(startingAfter counter: UInt64, in ofReplica: [Change]) -> Int {
        var low = 0, high = ofReplica.count
        while low < high {
            let middle = (low + high) / 2
            if ofReplica[middle].id.counter <= counter { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Which changes saw which, for the questions of concurrency `quire
    /// conflicts` asks: one pass over the log, so build it once a command.
    var concurrency: Concurrency {
        // What one kept from before the compaction point saw went through
        // deleted changes, while two logged after it reach each other, if
        // at all, through logged changes only: only those are compared.
        let logged = changes.dropFirst(compaction?.keptCount ?? 0)
        // What each had seen, itself included, as a version vector: its
        // replica's change before it and its parents had, the log being in
        // a causal order. A parent from before the point adds nothing that
        // a change logged after it could be.
        var seenBy: [OpID: VersionVector] = [:]
        var seenByReplica: [ReplicaID: VersionVector] = [:]
        for change in logged {
            var seen = seenByReplica[change.replica] ?? VersionVector()
            for parent in change.parents {
                if let parentChange = self.change(containing: parent), let seenByParent = seenBy[parentChange.id] { seen.merge(seenByParent) }
            }
            seen[change.replica] = change.lastID.counter
            seenBy[change.id] = seen
            seenByReplica[change.replica] = seen
        }
        return Concurrency(logged: logged, seenBy: seenBy)
    }

    /// The changes logged after the compaction point (all of them when there
    /// was none), each with what it had seen: two are concurrent when
    /// neither's vector holds the other.
    struct Concurrency {
        fileprivate let logged: ArraySlice<Change>
        fileprivate let seenBy: [OpID: VersionVector]

        /// The changes concurrent with `change`: neither saw the other.
        /// None for a change from before the compaction point.
        func changes(concurrentWith change: Change) -> [Change] {
            guard let seenByIt = seenBy[change.id] else { return [] }
            return logged.filter { other in
                other.id != change.id && !seenByIt.contains(other.lastID) && seenBy[other.id]?.contains(change.lastID) == false
            }
        }

        /// The replicas of those of `typed` made concurrently with a change
        /// of another replica among them: neither had seen the other. Changes
        /// from before the compaction point are not compared.
        func replicasEditingConcurrently(among typed: [Change]) -> Set<ReplicaID> {
            // Each replica's changes among `typed`, in counter order, with what each had seen.
            let distinct = Dictionary(typed.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first }).values
            let byReplica = Dictionary(grouping: distinct.compactMap { change in seenBy[change.id].map { (change: change, seen: $0) } },
                                       by: \.change.replica).mapValues { $0.sorted { $0.change.id.counter < $1.change.id.counter } }
            var concurrent: Set<ReplicaID> = []
            for (replica, own) in byReplica {
                for (other, others) in byReplica where other != replica {
                    // A change of `replica` is concurrent with a change of
                    // `other`'s that it had not seen and that had not seen it. Of
                    // those it had not seen (past what it saw of `other`), the
                    // earliest had seen the least of `replica`: if that one saw
                    // it, every later one did. A later change of `replica` saw
                    // at least as much of `other`, so `firstUnseen` only moves on.
                    var firstUnseen = others.startIndex
                    for mine in own {
                        while firstUnseen < others.endIndex && others[firstUnseen].change.id.counter <= mine.seen[other] { firstUnseen += 1 }
                        if firstUnseen < others.endIndex && !others[firstUnseen].seen.contains(mine.change.lastID) {
                            concurrent.formUnion([replica, other])
                            break
                        }
                    }
                }
            }
            return concurrent
        }
    }

    /// The version vector `version` names in this document: heads name
    /// their changes and everything those build on. Throws a failure for a
    /// version naming operations this document does not have, holding part
    /// of a change, or holding a change without one it builds on; after
    /// compaction, for one this store cannot rebuild (`rebuildable(_:_:)`).
    func version(_ version: VersionArgument) throws -> VersionVector {
        switch version.form {
        case .heads(let heads):
            let (vector, reachedCompacted) = try causalPast(of: heads)
            // Past a deleted change, the vector is exact only when it holds
            // everything before the point: the deleted change's past too.
            if reachedCompacted, let compaction, !vector.includes(compaction.version) {
                throw notRebuildable(version.text)
            }
            return try rebuildable(vector, version.text)
        case .vector(let vector):
            // Checked first: a version past the note's may also seem to
            // hold a change without its parents, but what is wrong is the excess.
            guard current.includes(vector) else {
                throw CLIError.failure("version \(version.text) names operations note \(id) does not have; `\(ShellWords.command("quire", "log", "\(id)"))` lists its versions"
                    + Self.fromAnotherStore)
            }
            _ = try rebuildable(vector, version.text)
            // A replay leaves out a change it holds only part of, or whose
            // parents it lacks, so such a version would show a note that never was.
            for change in changes where vector.contains(change.id) {
                guard vector.contains(change.lastID) else {
                    throw CLIError.failure("version \(version.text) holds part of change \(change.id) (counters \(change.id.counter)-\(change.lastID.counter)), which applies whole; `\(ShellWords.command("quire", "log", "\(id)"))` lists the note's versions")
                }
                if let parent = change.parents.first(where: { !vector.contains($0) }) {
                    throw CLIError.failure("version \(version.text) holds change \(change.id) but not \(parent), which it builds on; `\(ShellWords.command("quire", "log", "\(id)"))` lists the note's versions")
                }
            }
            return vector
        }
    }

    /// Whether a replay can build `vector`: after compaction, it must hold
    /// the oldest snapshot's version, which replays start from.
    func canRebuild(_ vector: VersionVector) -> Bool {
        compaction.map { vector.includes($0.snapshot.versionVector) } ?? true
    }

    /// `vector`, if a replay can build it (`canRebuild(_:)`).
    private func rebuildable(_ vector: VersionVector, _ text: String) throws -> VersionVector {
        guard canRebuild(vector) else { throw notRebuildable(text) }
        return vector
    }

    /// The likely cause of a version naming what the note lacks, in the
    /// two-machine story: copied from the other machine's `quire log`
    /// before this store has its changes.
    private static let fromAnotherStore = "; a version copied from another store's `quire log` is shown here once its changes are: sync or merge with that store first"

    /// The failure for a version from before what compaction left.
    private func notRebuildable(_ text: String) -> CLIError {
        let oldest = compaction?.snapshot.versionVector ?? VersionVector()
        return CLIError.failure("version \(text) is from before what `quire compact --drop-history` left of note \(id): "
            + "the oldest version it can show is \(oldest); `\(ShellWords.command("quire", "log", "\(id)"))` lists the versions since")
    }

    /// The versions either side of the change holding operation `id`, which
    /// `quire diff --change` compares: what the change built on (its
    /// parents and everything they build on; nothing, for the note's first
    /// change) and that with the change. Fails as `version(_:)` does for a
    /// change the note lacks, and for one compaction deleted.
    func versions(around id: OpID) throws -> (before: VersionVector, after: VersionVector) {
        // Before the version, which would fail for a deleted change as for a
        // version from before the compaction, not naming the deletion.
        if wasCompacted(id) {
            throw CLIError.failure("the change holding \(id) was deleted by `quire compact --drop-history`, so what it did can no longer be shown; "
                + "`\(ShellWords.command("quire", "log", "\(self.id)"))` lists the changes still logged")
        }
        let after = try version(VersionArgument(text: id.description, form: .heads([id])))
        // The version names a logged change: one the note lacks has failed.
        let change = change(containing: id)!
        let parents = change.parents.map(\.description).joined(separator: ",")
        let before = try version(VersionArgument(text: change.parents.isEmpty ? "before \(change.id)" : parents,
                                                 form: change.parents.isEmpty ? .vector(VersionVector()) : .heads(change.parents)))
        return (before, after)
    }

    /// The smallest version vector holding `heads` and every change they
    /// build on, of the logged changes; and whether it reached changes
    /// compaction deleted, whose pasts it then lacks.
    private func causalPast(of heads: [OpID]) throws -> (version: VersionVector, reachedCompacted: Bool) {
        var version = VersionVector()
        var reachedCompacted = false
        // Changes are marked visited by id, not by the version: the version
        // covers a replica's earlier changes before their parents are visited.
        var visited: Set<OpID> = []
        var pending = heads
        while let head = pending.popLast() {
            guard let (ofReplica, index) = position(of: head) else {
                if wasCompacted(head) {
                    // Its change is gone, not its place in the version: heads
                    // `quire heads` prints may name a deleted change.
                    version[head.replica] = max(version[head.replica], head.counter)
                    reachedCompacted = true
                    continue
                }
                throw CLIError.failure("note \(id) has no operation \(head); `\(ShellWords.command("quire", "log", "\(id)"))` lists its changes" + Self.fromAnotherStore)
            }
            let change = ofReplica[index]
            guard visited.insert(change.id).inserted else { continue }
            // A change includes its parents and every earlier change of its
            // replica: the one just before it, which includes the others.
            version[head.replica] = max(version[head.replica], change.lastID.counter)
            pending += change.parents
            if index > 0 { pending.append(ofReplica[index - 1].lastID) }
            // The first logged change of a replica may follow deleted ones.
            else if change.id.counter > 1, wasCompacted(OpID(replica: change.replica, counter: change.id.counter - 1)) { reachedCompacted = true }
        }
        return (version, reachedCompacted)
    }

    /// The history as it stood at `version` (one `version(_:)` gave): the
    /// logged changes it holds, so that what is asked of the note at that
    /// version (`quire conflicts --at`) sees no later change. Such a version
    /// holds the oldest snapshot's, so every change kept from before the
    /// compaction point stays.
    func upTo(_ version: VersionVector) -> DocumentHistory {
        DocumentHistory(id, changes: changes.filter { version.contains($0.lastID) }, replica: replica, compaction: compaction)
    }

    /// The document as it was at `version`: a fresh replay of the changes
    /// it covers; after compaction, the oldest snapshot and the logged
    /// changes after it that `version` covers.
    func document(at version: VersionVector) throws -> Document {
        var document = compaction?.snapshot ?? Document(replica: replica)
        let base = document.versionVector
        try document.apply(changes.filter { version.contains($0.lastID) && !base.contains($0.lastID) })
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

    /// A version the tool made itself (`quire diff --change`), named by
    /// `text` in messages.
    init(text: String, form: Form) {
        self.text = text
        self.form = form
    }

    /// `option` is the option that gave `text`, which a usage error names
    /// with the part of the text that is wrong.
    init(_ text: String, option: String, invocation: Invocation) throws {
        self.text = text
        let expected = "give replica:counter,... (a version vector) or counter@replica,... (heads), as `quire log` prints them"
        func notAVersion(_ why: String) -> CLIError {
            invocation.usageError("\(option) \"\(text)\" is not a version: \(why); \(expected)")
        }
        // An empty word (an unset shell variable) would be the empty
        // vector, before the note's first change: a note that never was.
        guard !text.isEmpty else { throw invocation.usageError("\(option) is empty, which names no state of the note; \(expected)") }
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        if text.contains("@") {
            form = .heads(try parts.map { part in
                guard let head = OpID(part) else { throw notAVersion("\"\(part)\" is not counter@replica") }
                return head
            })
        } else if let vector = VersionVector(text) {
            form = .vector(vector)
        } else {
            // `VersionVector` only says that the whole does not parse: name
            // the pair it refuses alone (the empty text, which alone is the
            // empty vector, among them), or the replica given twice.
            var seen: Set<ReplicaID> = []
            for part in parts {
                guard let replica = VersionVector(part)?.replicas.first else {
                    throw notAVersion("\"\(part)\" is not replica:counter (16 hex digits, a colon, a counter from 1)")
                }
                guard seen.insert(replica).inserted else { throw notAVersion("replica \(replica) is given twice") }
            }
            preconditionFailure("VersionVector refused \(text), each of whose pairs it takes once")
        }
    }
}

extension Invocation {
    /// The version an option (`--at`, `--from`, `--to`) gives, if given.
    func version(_ option: String) throws -> VersionArgument? {
        try value(option).map { try VersionArgument($0, option: option, invocation: self) }
    }
}

/// The options that pick versions of a document, shared by the commands
/// that travel in time, so they read and document them the same way.
extension Option {
    static let at = Option(name: "--at", values: ["VERSION"], help: "As it was at VERSION: replica:counter,... (a version vector) or counter@replica,... (heads), as `quire log` prints them.")
    static let from = Option(name: "--from", values: ["VERSION"], help: "The version to compare from: replica:counter,... (a version vector) or counter@replica,... (heads), as `quire log` prints them; older, newer or concurrent.")
    static let to = Option(name: "--to", values: ["VERSION"], help: "The version to compare to, as --from (default: the current one).")
}
