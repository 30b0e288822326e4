import Foundation
import JSONText
import Quire
import QuireSync

/// `quire demo`: the whole story in a few seconds. Two replicas ("laptop"
/// and "phone") edit the same notes offline, sync through a sync server on
/// 127.0.0.1, and end up identical; the tool prints each step, the merged
/// notes and the conflicts with how they were resolved. Everything lives in
/// a temporary directory that is deleted at the end.
enum DemoCommand {
    static let command = Command(
        name: "demo",
        summary: "Show two replicas editing the same notes offline, syncing through a local server, and merging.",
        usage: ["[--json]"],
        options: [.json],
        examples: ["quire demo", "quire demo --json"],
        run: { invocation in
            try invocation.expectArguments(atMost: 0)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("quire-demo-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let demo = try Demo(directory: directory)
            defer { demo.stop() }
            let summary = try demo.run()
            let output = invocation.context.output
            if invocation.flag("--json") { output.print(json: summary.json) } else { output.print(summary.text(output)) }
            guard summary.identical else { throw CLIError.failure("the laptop and the phone differ after syncing; please report this bug") }
        })
}

/// The demo's replicas, its server, and the story it plays.
private final class Demo {
    let laptop: DocumentStore
    let phone: DocumentStore
    let http: HTTPServer
    let server: URL
    var steps: [String] = []

    init(directory: String) throws {
        laptop = try DocumentStore(path: directory + "/laptop.quire", onWarning: { _ in })
        phone = try DocumentStore(path: directory + "/phone.quire", onWarning: { _ in })
        // No tokens: the server listens on 127.0.0.1 only, for this process.
        let sync = SyncServer(log: try ServerLog(path: directory + "/server.db"), tokens: nil)
        http = HTTPServer(host: "127.0.0.1", port: 0, handler: sync.handle)
        try http.start()
        server = URL(string: "http://127.0.0.1:\(http.port)")!
    }

    func stop() { http.stop() }

    func run() throws -> DemoSummary {
        step("A sync server listens on \(server.absoluteString); the laptop and the phone are two stores.")
        let groceries = try laptop.createDocument()
        try laptop.edit(groceries) { tx in try tx.createNote(title: "Groceries", body: "milk, eggs", tags: ["home"], pinned: false) }
        let trip = try laptop.createDocument()
        try laptop.edit(trip) { tx in try tx.createNote(title: "Trip", body: "Book the train to Lyon", tags: [], pinned: false) }
        step("The laptop writes two notes, \"Groceries\" and \"Trip\".")
        try sync(laptop, "laptop")
        try sync(phone, "phone")

        step("Both go offline and edit the same notes.")
        try laptop.edit(groceries) { tx in
            try tx.setNoteText(Note.Key.body, to: "milk, eggs, bread")
            try tx.put(.root, key: Note.Key.pinned, .bool(true))
        }
        step("laptop: appends \", bread\" to the Groceries body and pins it.")
        try phone.edit(groceries) { tx in try tx.setNoteText(Note.Key.body, to: "oat milk, eggs") }
        try phone.edit(groceries) { tx in try tx.setNoteText(Note.Key.title, to: "Shopping list") }
        try phone.edit(groceries) { tx in try tx.put(.root, key: Note.Key.pinned, .bool(false)) }
        try phone.edit(groceries) { tx in try tx.addTag("errands") }
        step("phone: types \"oat \" before \"milk\", renames the note \"Shopping list\", unpins it, tags it \"errands\".")
        try laptop.edit(trip) { tx in try tx.put(.root, key: Note.Key.removed, .bool(true)) }
        step("laptop: removes the Trip note.")
        try phone.edit(trip) { tx in try tx.setNoteText(Note.Key.body, to: "Book the train to Lyon for Friday") }
        step("phone: adds \" for Friday\" to the Trip body.")

        step("Both come back online and sync: the laptop, the phone, then the laptop again for the phone's changes.")
        try sync(laptop, "laptop")
        try sync(phone, "phone")
        try sync(laptop, "laptop")
        return try DemoSummary(server: server.absoluteString, steps: steps, laptop: laptop, phone: phone)
    }

    private func step(_ text: String) { steps.append(text) }

    private func sync(_ store: DocumentStore, _ name: String) throws {
        let client = SyncClient(store: store, peer: server.absoluteString, transport: HTTPSyncTransport(server: server, token: nil))
        let report = try runBlocking { try await client.sync() }
        step("\(name) syncs: sent \(report.sent), received \(report.received) change\(report.received == 1 ? "" : "s").")
    }
}

/// What the demo ends with: the notes as the laptop has them, their
/// conflicts, and whether the phone holds exactly the same.
private struct DemoSummary {
    struct MergedNote {
        let note: Note
        let conflicts: [Conflict]
        let version: VersionVector
    }

    let server: String
    let steps: [String]
    let notes: [MergedNote]
    /// Same documents, same version vectors, same notes on both replicas.
    let identical: Bool

    init(server: String, steps: [String], laptop: DocumentStore, phone: DocumentStore) throws {
        self.server = server
        self.steps = steps
        notes = try laptop.documents(includeRemoved: true).map { info in
            let history = try DocumentHistory(info.id, in: laptop)
            return try laptop.read(info.id) { document in
                MergedNote(note: try Note(id: info.id, document: document), conflicts: try Conflict.report(in: document, history: history),
                           version: document.versionVector)
            }
        }
        let phoneNotes = try phone.documents(includeRemoved: true).map { info in
            try phone.read(info.id) { document in (try Note(id: info.id, document: document).json, document.versionVector) }
        }
        identical = phoneNotes.count == notes.count
            && zip(notes, phoneNotes).allSatisfy { $0.note.json == $1.0 && $0.version == $1.1 }
    }

    func text(_ output: Output) -> String {
        var lines = ["Quire demo: two replicas edit the same notes offline, then sync through a local server.", ""]
        lines += steps.enumerated().map { index, step in "\(index + 1). \(step)" }
        lines += ["", output.styled("Merged notes", .bold) + " (text edits merge character by character):"]
        for merged in notes {
            let note = merged.note
            lines.append("")
            lines.append("  " + output.styled(note.title, .bold) + (note.removed ? "  (removed; `quire note restore` brings it back with every edit)" : ""))
            lines.append("    body:   \(note.body)")
            lines.append("    tags:   \(note.tags.isEmpty ? "-" : note.tags.joined(separator: ", "))")
            lines.append("    pinned: \(note.pinned ? "yes" : "no")")
        }
        lines += ["", output.styled("Conflicts", .bold) + " (concurrent writes to one field: the higher stamp wins, the others are kept):"]
        for merged in notes {
            let text = ConflictsCommand.text(merged.conflicts, output)
            lines.append("")
            lines.append("  \(merged.note.title):")
            lines += text.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }
        }
        lines.append("")
        lines.append(identical
            ? "The laptop and the phone are identical: same notes, same version vectors."
            : "The laptop and the phone differ:")
        for merged in notes { lines.append("  \(merged.note.title): \(merged.version)") }
        return lines.joined(separator: "\n")
    }

    var json: JSONValue {
        .object([
            "server": .string(server),
            "steps": .array(steps.map(JSONValue.string)),
            "notes": .array(notes.map { merged in
                .object(["note": merged.note.json, "conflicts": .array(merged.conflicts.map(\.json)), "version": .version(merged.version)])
            }),
            "identical": .bool(identical),
        ])
    }
}
