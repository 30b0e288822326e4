import Foundation
import Quire
import QuireBenchKit
import QuireTestSupport

@MainActor let notesStoreSubcommand = Subcommand(
    name: "notes-store",
    usage: """
        notes-store FILE [--notes N] [--trace TRACE[,TRACE...]]
            Writes a store of notes as `quire` keeps them, for timing the `quire` tool at scale:
            N notes (default 1500) of varied sizes, tags and pins, each made and then edited
            a few times, one commit per edit, their times spread over a year; and one note per
            sequential TRACE whose body has the trace's history, one change per transaction.
        """,
    run: { arguments throws(UsageError) in
        let parsed = try parse(arguments, flags: [], options: ["--notes", "--trace"])
        guard parsed.positional.count == 1 else { throw UsageError(message: "notes-store needs one FILE") }
        let count = try parsed.positiveInteger("--notes", default: 1500)
        // `parse` keeps one value an option; several traces come as a comma-separated list.
        let traces = parsed.options["--trace"].map { $0.split(separator: ",").map(String.init) } ?? []
        do {
            try writeNotesStore(path: parsed.positional[0], notes: count, traces: traces)
            return 0
        } catch {
            printError("error: \(error)")
            return 1
        }
    }
)

/// The store `notes-store` writes; see its usage.
func writeNotesStore(path: String, notes count: Int, traces: [String]) throws {
    let store = try DocumentStore(path: path)
    defer { try? store.close() }
    var random = SeededGenerator(seed: 42)
    let yearAgo = Date().addingTimeInterval(-365 * 86_400)
    let words = ["milk", "meeting", "plan", "draft", "idea", "review", "trip", "budget", "notes", "call",
                 "the", "a", "to", "and", "of", "with", "for", "quarterly", "garden", "recipe", "book"]
    func sentence(_ wordCount: Int) -> String {
        (0..<wordCount).map { _ in words[Int(random.next() % UInt64(words.count))] }.joined(separator: " ")
    }
    for index in 0..<count {
        // Mostly short notes; one in ten long, one in a hundred very long.
        let roll = random.next() % 100
        let bodyWords = roll == 0 ? 20_000 : roll < 10 ? 2_000 : 10 + Int(random.next() % 200)
        let created = yearAgo.addingTimeInterval(Double(index) * 365 * 86_400 / Double(count))
        let id = try store.createDocument(time: created) { tx in
            try tx.insertText(tx.putObject(.root, key: "title", kind: .text), at: 0, "Note \(index): \(sentence(3))")
            try tx.insertText(tx.putObject(.root, key: "body", kind: .text), at: 0, sentence(bodyWords))
            let tags = try tx.putObject(.root, key: "tags", kind: .list)
            for tag in 0..<Int(random.next() % 3) { try tx.insert(tags, at: tag, .string(words[Int(random.next() % 5)])) }
            try tx.put(.root, key: "pinned", .bool(random.next() % 20 == 0))
            try tx.put(.root, key: "removed", .bool(false))
        }
        for edit in 0..<Int(random.next() % 6) {
            try store.edit(id, time: created.addingTimeInterval(Double(edit + 1) * 3600)) { tx in
                guard case .object(.text, let body)? = try tx.document.get(.root, key: "body") else { return }
                let length = try tx.document.text(body).unicodeScalars.count
                try tx.insertText(body, at: Int(random.next() % UInt64(length + 1)), " " + sentence(5))
            }
        }
    }
    for (number, tracePath) in traces.enumerated() {
        guard case .sequential(let trace) = try EditingTrace.load(path: tracePath) else {
            throw UsageError(message: "\(tracePath) is not a sequential trace")
        }
        // Typed on another machine, a transaction every ten seconds, synced in.
        var document = Document(replica: ReplicaID(UInt64(0x7000 + number)))
        let start = Int64(yearAgo.timeIntervalSince1970 * 1000)
        let name = (tracePath as NSString).lastPathComponent
        let body = try document.transact(time: start) { tx in
            try tx.insertText(tx.putObject(.root, key: "title", kind: .text), at: 0, "Long: \(name)")
            _ = try tx.putObject(.root, key: "tags", kind: .list)
            try tx.put(.root, key: "pinned", .bool(false))
            try tx.put(.root, key: "removed", .bool(false))
            return try tx.putObject(.root, key: "body", kind: .text)
        }
        try TraceReplay.type(trace, into: body, of: &document) { start + Int64($0 + 1) * 10_000 }
        let id = DocumentID.generate()
        try store.create(id: id)
        try store.apply(id, document.changes(since: VersionVector()))
        print("\(id) \(name): \(trace.txns.count) transactions")
    }
}
