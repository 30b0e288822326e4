import Foundation

/// One workload of `quire-bench suite`.
public struct SuiteWorkload: Sendable {
    /// The chart and table a workload belongs to.
    public enum Family: String, Sendable, CaseIterable {
        case traces, b1 = "B1", b2 = "B2", b3 = "B3", merge, b4x100 = "B4x100", store, sync

        public var title: String {
            switch self {
            case .traces: "Editing traces (B4 is automerge-paper)"
            case .b1: "B1: one user, one change per edit"
            case .b2: "B2: two users concurrently, then exchanging"
            case .b3: "B3: 1,540 replicas writing once, merged by one"
            case .merge: "Merge throughput: k replicas × m concurrent edits"
            case .b4x100: "B4x100: automerge-paper typed 100 times into one document"
            case .store: "Store: durable commits and opening a store (Quire only)"
            case .sync: "Sync: catch-up through the HTTP sync server on loopback (Quire only)"
            }
        }

        /// Whether its figures are `Measure`s of their own rather than a replay's.
        public var hasMeasures: Bool { self == .store || self == .sync }
    }

    public enum Source: Sendable {
        /// A trace file (editing-trace format), replayed by both sides.
        case traceFile(String)
        /// A replica workload file (`ReplicaWorkload`), replayed by both sides.
        case replicaFile(String)
        /// A trace file typed `times` times (`SequentialTrace.repeated`). Quire
        /// only: the file would be hundreds of MB of JSON for the peers.
        case repeated(String, times: Int)
        /// `StoreBenchmark` with its default options. Quire only, as are the
        /// sync workloads: Yrs and Loro have no store or sync server.
        case store
        /// `quire-bench sync` on a trace file.
        case sync(String)
    }

    public var name: String
    public var family: Family
    public var source: Source
    public var description: String
    /// Its name in crdt-benchmarks, when that is another ("B4" for automerge-paper).
    public var benchmarkName: String? { name == "automerge-paper" ? "B4" : nil }

    public init(name: String, family: Family, source: Source, description: String) {
        self.name = name
        self.family = family
        self.source = source
        self.description = description
    }

    /// The timed runs it gets when `asked` are asked for: B4x100 (a repeated
    /// trace) runs once, being tens of seconds a run; the others, `asked`.
    public func timedRuns(asked: Int) -> Int {
        if case .repeated = source { 1 } else { asked }
    }

    /// Whether the peers can run it.
    public var hasPeers: Bool {
        switch source {
        case .traceFile, .replicaFile: true
        case .repeated, .store, .sync: false
        }
    }

    /// The default workload list: the given trace files, then every
    /// synthetic family (written into `cacheDirectory` by `materialise`),
    /// then the store, then sync and B4x100 if automerge-paper is among the
    /// trace files. A file listed twice (given as a TRACE and also in the
    /// shared folder) is one workload.
    public static func all(traceFiles: [String], cacheDirectory: String) -> [SuiteWorkload] {
        var files = Set<String>()
        let traceFiles = traceFiles.filter { files.insert(URL(fileURLWithPath: $0).standardizedFileURL.resolvingSymlinksInPath().path).inserted }
        var list = traceFiles.map { path in
            SuiteWorkload(name: traceName(path), family: .traces, source: .traceFile(path), description: "editing trace \(URL(fileURLWithPath: path).lastPathComponent)")
        }
        func synthetic(_ name: String, _ family: Family, replicas: Bool = false) -> SuiteWorkload {
            let path = cacheDirectory + "/" + name + ".json"
            return SuiteWorkload(
                name: name, family: family, source: replicas ? .replicaFile(path) : .traceFile(path),
                description: CRDTBenchmarks.descriptions[name] ?? name)
        }
        for name in CRDTBenchmarks.traceNames {
            list.append(synthetic(name, name.hasPrefix("B1") ? .b1 : name.hasPrefix("B2") ? .b2 : .merge))
        }
        list += CRDTBenchmarks.replicaNames.map { synthetic($0, .b3, replicas: true) }
        list.append(SuiteWorkload(
            name: "store", family: .store, source: .store,
            description: "durable edits per second on a store file (single-edit commits, typing batched, group commit), opening a store of 1000 documents"))
        if let paper = traceFiles.first(where: { traceName($0) == "automerge-paper" }) {
            list.append(SuiteWorkload(
                name: "sync", family: .sync, source: .sync(paper),
                description: "a fresh replica catching up with automerge-paper (one change per transaction) through the HTTP sync server on 127.0.0.1; changes/s the server accepts from 4 clients"))
            list.append(SuiteWorkload(
                name: "B4x100", family: .b4x100, source: .repeated(paper, times: 100),
                description: "automerge-paper typed 100 times into one document (26 M edits; slow, Quire only)"))
        }
        return list
    }

    /// The names more than one workload has, in order: a TRACE file named
    /// like a shared trace or a synthetic workload (`B1.1.json`). The report
    /// keeps one result per name, so one would silently replace the other.
    public static func sharedNames(_ workloads: [SuiteWorkload]) -> [String] {
        var seen = Set<String>(), shared: [String] = []
        for name in workloads.map(\.name) where !seen.insert(name).inserted && !shared.contains(name) { shared.append(name) }
        return shared
    }

    /// `automerge-paper.json.gz` -> `automerge-paper`.
    public static func traceName(_ path: String) -> String {
        var name = URL(fileURLWithPath: path).lastPathComponent
        for suffix in [".gz", ".json"] where name.hasSuffix(suffix) { name.removeLast(suffix.count) }
        return name
    }

    /// `--only`: the `workloads`, in order, that one of the comma-separated
    /// `patterns` selects (case-insensitive). A pattern that is a workload's
    /// whole name selects that workload only, so that `merge-k2-m1000` does
    /// not also run merge-k2-m10000, nor `rustcode` rustcode.unicode; any
    /// other pattern selects each workload whose name, crdt-benchmarks name
    /// or family contains it (`merge-k`, `B1`, `B4`).
    public static func selected(by patterns: String, from workloads: [SuiteWorkload]) -> [SuiteWorkload] {
        let names = Set(workloads.map { $0.name.lowercased() })
        let patterns = patterns.split(separator: ",").map { $0.lowercased() }
        return workloads.filter { workload in
            patterns.contains { pattern in
                names.contains(pattern) ? workload.name.lowercased() == pattern
                    : [workload.name, workload.benchmarkName ?? "", workload.family.rawValue].contains { $0.lowercased().contains(pattern) }
            }
        }
    }

    /// Writes the synthetic workload's file into the cache, if it is one.
    public func materialise(cacheDirectory: String) throws {
        if CRDTBenchmarks.traceNames.contains(name) || CRDTBenchmarks.replicaNames.contains(name) {
            _ = try WorkloadFiles.write(name, in: cacheDirectory)
        }
    }
}
