import Foundation
import JSONText
import QuireCore

/// Many replicas each writing once, merged by one replica (crdt-benchmarks
/// B3). Edits to a map or a list do not fit the text trace format, so B3 has
/// this small format of its own, read by Quire and by `peers.py replicas`:
///
///     {"kind": "replicas", "container": "map" | "list", "values": [v0, v1, ...]}
///
/// Replica `i` (from 0) writes `values[i]`: into a map, under the root key
/// `"v"`, the one key every replica writes, as in crdt-benchmarks (the
/// conflict is what B3 measures); into a list, at index 0 of the root list
/// `"list"`. A value is an integer, a string, or (in a map) an object of
/// those, written as a nested map. The merged map must hold only `"v"`, with
/// one of the values (which one is each CRDT's own rule); the merged list
/// must hold every value once (in each CRDT's own order). A replica that
/// loads the merged document must hold the same.
public struct ReplicaWorkload: Sendable, Equatable {
    public enum Container: String, Sendable { case map, list }

    /// The map key every replica writes.
    public static let key = "v"

    public indirect enum Value: Sendable, Hashable {
        case number(Int)
        case string(String)
        case object([String: Value])
    }

    public var container: Container
    public var values: [Value]

    public init(container: Container, values: [Value]) {
        self.container = container
        self.values = values
    }

    /// The file's text; object keys sorted so that the file is reproducible.
    public var json: String {
        func encode(_ value: Value) -> JSONValue {
            switch value {
            case .number(let number): .integer(number)
            case .string(let string): .string(string)
            case .object(let fields): .object(fields.mapValues(encode))
            }
        }
        return JSONValue.orderedObject([
            ("kind", .string("replicas")), ("container", .string(container.rawValue)), ("values", .array(values.map(encode))),
        ]).compact
    }

    public static func parse(json: [UInt8]) throws(TraceFormatError) -> ReplicaWorkload {
        func value(_ any: Any, at index: Int, nested: Bool) throws(TraceFormatError) -> Value {
            switch any {
            case let number as Int:
                return .number(number)
            case let string as String:
                return .string(string)
            case let object as [String: Any] where !nested:
                var fields: [String: Value] = [:]
                for (key, field) in object { fields[key] = try value(field, at: index, nested: true) }
                return .object(fields)
            default:
                throw TraceFormatError(description: "values[\(index)] must be an integer, a string or an object of those")
            }
        }
        let object: [String: Any]?
        do { object = try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] } catch {
            throw TraceFormatError(description: "invalid JSON (\(error))")
        }
        guard let object, object["kind"] as? String == "replicas" else {
            throw TraceFormatError(description: "not a replica workload (kind must be \"replicas\")")
        }
        guard let name = object["container"] as? String, let container = Container(rawValue: name) else {
            throw TraceFormatError(description: "container must be \"map\" or \"list\"")
        }
        guard let rawValues = object["values"] as? [Any] else { throw TraceFormatError(description: "values must be an array") }
        var values: [Value] = []
        for (index, raw) in rawValues.enumerated() { values.append(try value(raw, at: index, nested: false)) }
        if container == .list, values.contains(where: { if case .object = $0 { true } else { false } }) {
            throw TraceFormatError(description: "a list workload holds integers and strings only")
        }
        return ReplicaWorkload(container: container, values: values)
    }

    public static func load(path: String) throws(TraceFileError) -> ReplicaWorkload {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw TraceFileError(path: path, problem: "cannot read the file")
        }
        do { return try parse(json: [UInt8](data)) } catch { throw TraceFileError(path: path, problem: error.description) }
    }
}

extension TraceReplay {
    /// Replica `i` is `Document(replica: i + 2)`; replica 1 merges. For a
    /// list, replica 1 first creates it in a setup change that every replica
    /// applies (in Yrs and Loro a root list exists without an operation).
    /// Timed (`localNanos`): making the replicas, their writes, encoding
    /// each one's change and the merger applying it.
    public static func replay(_ workload: ReplicaWorkload) throws -> ReplayResult {
        let start = CPUClock.now()
        var merged = Document(replica: ReplicaID(1))
        var list = ObjectID.root, setup: [UInt8] = []
        if workload.container == .list {
            list = try merged.transact { tx in try tx.putObject(.root, key: "list", kind: .list) }
            setup = try merged.encodeChanges()
        }
        for (index, value) in workload.values.enumerated() {
            var replica = Document(replica: ReplicaID(UInt64(index + 2)))
            if !setup.isEmpty { try replica.applyEncoded(setup) }
            try replica.transact { tx in
                switch (workload.container, value) {
                case (.list, _): try tx.insert(list, at: 0, value.scalar)
                case (.map, .object(let fields)):
                    let object = try tx.putObject(.root, key: ReplicaWorkload.key, kind: .map)
                    for (key, field) in fields.sorted(by: { $0.key < $1.key }) { try tx.put(object, key: key, field.scalar) }
                case (.map, _): try tx.put(.root, key: ReplicaWorkload.key, value.scalar)
                }
            }
            try merged.applyEncoded(replica.encodeChanges(since: merged.versionVector))
        }
        let localNanos = CPUClock.now() - start

        let contents = try workload.contents(of: merged, list: list)
        return try measureMerge(of: merged, localNanos: localNanos, failures: workload.problem(with: contents).map { [$0] } ?? []) { fresh in
            try workload.contents(of: fresh, list: list) == contents ? nil : "decoded from the encoded history: not what the merging replica holds"
        }
    }
}

extension ReplicaWorkload {
    /// What `doc` holds where the replicas wrote: the values of the root
    /// map's keys (in key order), or the list's elements.
    func contents(of doc: Document, list: ObjectID) throws -> [Value?] {
        func read(_ value: QuireCore.Value?) throws -> Value? {
            switch value {
            case .scalar(.int(let number))?: return .number(Int(number))
            case .scalar(.string(let string))?: return .string(string)
            case .object(.map, let object)?:
                var fields: [String: Value] = [:]
                for key in try doc.keys(object) {
                    guard let field = try read(doc.get(object, key: key)) else { return nil }
                    fields[key] = field
                }
                return .object(fields)
            default: return nil
            }
        }
        switch container {
        case .map: return try doc.keys(.root).map { try read(doc.get(.root, key: $0)) }
        case .list: return try doc.list(list).map(read)
        }
    }

    /// What is wrong with the merged `contents`, or nil.
    func problem(with contents: [Value?]) -> String? {
        switch container {
        case .map:
            guard contents.count == 1, let value = contents[0], values.contains(value) else {
                return "the merged map should hold one key, \"\(Self.key)\", with one of the values written: it holds \(contents.count) keys"
            }
            return nil
        case .list:
            var counts: [Value: Int] = [:]
            for value in values { counts[value, default: 0] += 1 }
            for value in contents {
                guard let value, let count = counts[value], count > 0 else {
                    return "the merged list holds a value no replica wrote, or one twice"
                }
                counts[value] = count - 1
            }
            return contents.count == values.count ? nil : "the merged list holds \(contents.count) values, not \(values.count)"
        }
    }
}

extension ReplicaWorkload.Value {
    /// Objects are written field by field, so only their fields get here.
    fileprivate var scalar: ScalarValue {
        switch self {
        case .number(let number): .int(Int64(number))
        case .string(let string): .string(string)
        case .object: .null
        }
    }
}

extension TraceMeasurement {
    /// Measures a replica workload as `measure(trace:named:runs:)` does a trace.
    public static func measure(replicas workload: ReplicaWorkload, named name: String, runs: Int) -> TraceMeasurement {
        TraceMeasurement(trace: name, kind: "replicas", ops: workload.values.count, txns: workload.values.count, runs: 0, failures: [])
            .measuringRuns(runs) { try TraceReplay.replay(workload) }
    }
}
