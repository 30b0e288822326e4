import Foundation
import JSONText
import Quire
import QuireBenchKit
import QuireSync

@MainActor let writersSubcommand = Subcommand(
    name: "writers",
    usage: """
        writers [--count N] [--runs N] [--json]
            One bundle of N concurrent changes from N writers (default 80000), each writing a
            root key of its own ("map"), or all the same root key ("key", each write a conflict
            the register keeps; "resolve": then the replica writes the key once, naming them
            all, timed with the apply; "replace": the second half each replace one entry of the
            first half's), or each inserting one list element at the head, as a hostile push can:
            the CPU time for a fresh replica to apply it and for the sync server to take it,
            writers in increasing and in decreasing id order; medians over --runs N (default 3).
        """,
    run: { arguments throws(UsageError) in
        let parsed = try parse(arguments, flags: ["--json"], options: ["--count", "--runs"])
        guard parsed.positional.isEmpty else { throw UsageError(message: "writers takes no FILE") }
        return runWritersBenchmark(count: try parsed.positiveInteger("--count", default: 80_000),
                                   runs: try parsed.positiveInteger("--runs", default: 3), json: parsed.flags.contains("--json"))
    }
)

/// What each of the writers writes.
private enum WriterShape: String, CaseIterable {
    /// A root key of its own.
    case map
    /// The same root key as every other writer.
    case key
    /// As `key`; then the replica that applied them writes the key once,
    /// naming every entry (what a local write after such a push does).
    case resolve
    /// As `key` for the first half; each writer of the second half then
    /// replaces one entry of the first half's, a different one each.
    case replace
    /// An element at the head of one list.
    case list
}

/// The changes of `count` writers concurrent on one setup change (which
/// makes the list), each writing as `shape` says, with writer ids rising or
/// falling in the order listed.
private func manyWriters(count: Int, shape: WriterShape, descending: Bool) throws -> [Change] {
    var setup = Document(replica: ReplicaID(1))
    let listID = try setup.transact { tx in try tx.putObject(.root, key: "list", kind: .list) }
    let base = try setup.changes(since: VersionVector())
    var changes = base
    for i in 0..<count {
        // Spread ids, as random ones are, in the order asked for.
        let replica = ReplicaID(UInt64(descending ? count - i : i + 1) * 0x9E37_79B9 + 7)
        let operation: QuireCore.Operation = switch shape {
        case .map: .put(object: .root, key: "k\(i)", value: .scalar(.int(Int64(i))), pred: [])
        case .key, .resolve, .replace: .put(object: .root, key: "v", value: .scalar(.int(Int64(i))), pred: [])
        case .list: .insert(object: listID, origin: nil, content: .values([.scalar(.int(Int64(i)))]))
        }
        changes.append(Change(id: OpID(replica: replica, counter: 1), lamport: 2, parents: [base[0].lastID], operations: [operation]))
    }
    guard shape == .replace else { return changes }
    // The first half stays; the second half's writers write again, each
    // naming the entry of one first-half writer (from the last to the first).
    let half = count / 2
    for i in half..<count {
        let named = changes[base.count + count - 1 - i].id
        let writer = changes[base.count + i].id.replica
        changes[base.count + i] = Change(id: OpID(replica: writer, counter: 1), lamport: 3, parents: [named],
                                         operations: [.put(object: .root, key: "v", value: .scalar(.int(Int64(i))), pred: [named])])
    }
    return changes
}

/// `quire-bench writers`: prints a table or one JSON line per shape and order.
func runWritersBenchmark(count: Int, runs: Int, json: Bool) -> Int32 {
    do {
        var rows: [String] = []
        if !json { rows.append("writers  shape   order       apply ms (min-max)          server push ms (min-max)") }
        for shape in WriterShape.allCases {
            for descending in [false, true] {
                let changes = try manyWriters(count: count, shape: shape, descending: descending)
                let bundle = ChangeEncoding.encode(changes)
                var applySamples: [UInt64] = [], pushSamples: [UInt64] = []
                for _ in 0..<runs {
                    var document = Document(replica: ReplicaID(2))
                    var start = CPUClock.now()
                    guard try document.applyEncoded(bundle) == changes.count else {
                        throw UsageError(message: "the bundle did not apply whole")
                    }
                    if shape == .resolve { try document.transact { tx in try tx.put(.root, key: "v", .int(0)) } }
                    applySamples.append(CPUClock.now() - start)
                    let log = try ServerLog(path: ":memory:")
                    start = CPUClock.now()
                    _ = try log.push([("writers", changes)], by: .unrestricted, limits: .init(maxChangesPerRequest: changes.count))
                    pushSamples.append(CPUClock.now() - start)
                }
                let (apply, push) = (Spread(nanoseconds: applySamples)!, Spread(nanoseconds: pushSamples)!)
                let order = descending ? "decreasing" : "increasing"
                if json {
                    let line: JSONValue = .orderedObject([
                        ("writers", .integer(count)), ("shape", .string(shape.rawValue)), ("order", .string(order)), ("runs", .integer(runs)),
                        ("applyMs", .double(apply.median)), ("applyMsMin", .double(apply.min)), ("applyMsMax", .double(apply.max)),
                        ("serverPushMs", .double(push.median)), ("serverPushMsMin", .double(push.min)), ("serverPushMsMax", .double(push.max)),
                    ])
                    rows.append(line.compact)
                } else {
                    func cell(_ spread: Spread) -> String { String(format: "%9.1f (%.1f-%.1f)", spread.median, spread.min, spread.max) }
                    rows.append(String(count).padding(toLength: 9, withPad: " ", startingAt: 0) + shape.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)
                        + order.padding(toLength: 12, withPad: " ", startingAt: 0) + cell(apply).padding(toLength: 28, withPad: " ", startingAt: 0) + cell(push))
                }
            }
        }
        printLine(rows.joined(separator: "\n"))
        return 0
    } catch {
        printError("error: \(error)")
        return 1
    }
}
