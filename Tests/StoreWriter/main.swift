// quire-store-writer: the process the kill tests (QuireTests/KillTests)
// kill with SIGKILL. It appends the numbers 1, 2, 3... to a list in one
// document, one edit each, and prints each number on its own line once
// `edit` has returned, that is, once the edit is acknowledged.
//
//     quire-store-writer <store path> <mode>
//
// Modes: `plain` edits only; `snapshot` also snapshots every few edits;
// `compact` also compacts every few edits, with and without history,
// after a pretend peer acknowledges most of the log.
// On a fresh path, the first moments of any mode run the schema migration.
import Foundation
import Quire

let arguments = CommandLine.arguments
guard arguments.count == 3, ["plain", "snapshot", "compact"].contains(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: quire-store-writer <store path> plain|snapshot|compact\n".utf8))
    exit(2)
}
let mode = arguments[2]
let store = try DocumentStore(path: arguments[1], snapshotInterval: mode == "snapshot" ? 5 : 1000)
let id: DocumentID = "kill-test"
if try !store.documents().contains(where: { $0.id == id }) {
    try store.create(id: id)
}
// The list may exist already: made by an earlier run before it was killed.
let list: ObjectID = try store.edit(id) { tx in
    if case .object(.list, let list)? = try tx.document.get(.root, key: "numbers") { return list }
    return try tx.putObject(.root, key: "numbers", kind: .list)
}
var next = try store.read(id) { doc in
    try doc.list(list).compactMap { value -> Int64? in
        if case .scalar(.int(let number)) = value { return number }
        return nil
    }.max() ?? 0
} + 1

while true {
    try store.edit(id) { tx in try tx.insert(list, at: try tx.document.list(list).count, .int(next)) }
    // Unbuffered: the line is out before the next edit starts.
    FileHandle.standardOutput.write(Data("\(next)\n".utf8))
    switch mode {
    case "snapshot" where next % 3 == 0:
        try store.snapshot(id)
    case "compact" where next % 4 == 0:
        // A peer acknowledging most of the log lets compaction delete rows.
        try store.acknowledge(peer: "hub", id: id, version: [store.replicaID: UInt64(max(1, next - 2))])
        try store.compact(id, keepHistory: next % 8 == 0)
    default:
        break
    }
    next += 1
}
