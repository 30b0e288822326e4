import Foundation
import JSONText
import Quire

/// `quire compact [ID... | --all] [--drop-history] [--json]`: gives a
/// store's space back (Specs/cli.md, "Compaction"; Specs/storage.md,
/// "Compaction" and "Growth").
enum CompactCommand {
    static let command = Command(
        name: "compact",
        summary: "Give the store's space back: a fresh snapshot of each note, older snapshots deleted (history kept unless --drop-history), "
            + "then the file written again without its free pages, which holds the store's write lock meanwhile (another process's write "
            + "waits, and gives up after \(Database.busyTimeout / 1000) s) and needs free disk about twice the store's used bytes.",
        usage: ["[ID... | --all] [--json]", "ID... --drop-history [--json]", "--drop-history --all [--json]"],
        arguments: [Command.Argument(name: "ID", help: "A note to compact: its id, or any prefix of it that no other note's id starts with; none: every note, removed ones too.")],
        options: [
            Option(name: "--drop-history", help: "Also delete these notes' logged changes for good: other replicas', and local ones every peer holds (local changes not yet sent stay); "
                + "log, blame and conflicts of a note that lost some name what those did `compacted`, show --at and diff reach back to the compaction only, "
                + "and a store served over `quire serve --stdio` can no longer send a client a deleted change (its sync refuses the note). "
                + "Needs the notes named, or --all."),
            Option(name: "--all", help: "Every note, removed ones too: what naming none does, and what --drop-history needs to take them all."),
            .json,
        ],
        examples: ["quire compact", "quire compact 0190f1c2 --drop-history", "quire compact --drop-history --all --json"],
        run: { invocation in
            let context = invocation.context
            let dropHistory = invocation.flag("--drop-history")
            let all = invocation.flag("--all")
            if all && !invocation.arguments.isEmpty {
                throw invocation.usageError("give notes or --all, not both")
            }
            // Deleted history cannot be brought back: every note's goes only when asked for by name.
            if dropHistory && !all && invocation.arguments.isEmpty {
                throw invocation.usageError("--drop-history deletes history for good: name the notes (`quire note list --all` lists them), or pass --all for every note")
            }
            let prefixes = try invocation.arguments.map(invocation.noteID)
            let store = try context.openStore()
            var ids: [DocumentID] = []
            for prefix in prefixes {
                let id = try NoteIDs.resolve(prefix, in: store)
                if !ids.contains(id) { ids.append(id) }
            }
            if ids.isEmpty { ids = try store.documents(includeRemoved: true).map(\.id) }

            let before = try store.freeSpace()
            let changesBefore = try loggedChanges(of: ids, in: context.storePath)
            var compacted: [(id: DocumentID, title: String)] = []
            var failures: [String] = []
            for (index, id) in ids.enumerated() {
                do {
                    try store.compactLeavingFreePages(id, keepHistory: !dropHistory)
                    compacted.append((id, try store.read(id) { try Note(id: id, document: $0).title }))
                } catch let error as DatabaseError where [.diskFull, .busy, .readOnly].contains(error.fileProblem) {
                    // The store's trouble, not the note's: every note after
                    // it would fail alike (a full disk: a compaction writes
                    // the fresh snapshot before it deletes the old ones), so
                    // it is said once, with what to do, and they are not tried.
                    let left = ids.count - index - 1
                    failures.append("note \(id)\(left == 0 ? "" : " and the \(left) after it") \(left == 0 ? "was" : "were") not compacted: "
                        + Context.storeFailureMessage(error, path: context.storePath))
                    break
                } catch {
                    failures.append("note \(id): \(error)")
                }
            }
            let beforeVacuum = try store.freeSpace()
            var vacuumFailure: DatabaseError?
            if beforeVacuum.freeBytes > 0 {
                do { try store.vacuum() } catch let error as DatabaseError { vacuumFailure = error }
            }
            let after = try store.freeSpace()
            let report = Report(notes: compacted, historyDropped: dropHistory, before: before, after: after,
                                changesBefore: changesBefore, changesAfter: dropHistory ? try loggedChanges(of: ids, in: context.storePath) : changesBefore,
                                vacuumed: beforeVacuum.freeBytes > 0 && vacuumFailure == nil, vacuumFailure: vacuumFailure,
                                idLength: NoteIDs.abbreviationLength(try store.documents(includeRemoved: true).map(\.id)))
            report.print(json: invocation.flag("--json"), to: context.output)

            // What was done stays done; exit 1 for what was not.
            if let vacuumFailure {
                failures.append("the file was not written again without its free pages (\(after.freeBytes) bytes stay free, for later writes): "
                    + Self.why(vacuumFailure, usedBytes: after.fileBytes - after.freeBytes) + "; the compaction is done and nothing was lost; once that is mended, "
                    + "`quire compact` gives them back\nSQLite's report: \(vacuumFailure)")
            }
            if !failures.isEmpty {
                throw CLIError.failure(failures.joined(separator: "\nerror: "))
            }
        })

    /// How many changes the logs of `ids` hold: the difference is what
    /// --drop-history deleted, and what stays is worth a word when a user
    /// expected it gone. Counted from each row's bundle header, without
    /// decoding the changes. A log with a damaged row counts none: its
    /// note's compaction fails and says why.
    private static func loggedChanges(of ids: [DocumentID], in path: String) throws -> Int {
        let database = try Database(path: path, readOnly: true)
        defer { database.close() }
        return try database.read { db in
            ids.reduce(0) { count, id in count + ((try? ChangeLog.changeCount(document: id.rawValue, db)) ?? 0) }
        }
    }

    /// Why a vacuum of a file using `usedBytes` failed, said so that the
    /// user can mend it.
    private static func why(_ error: DatabaseError, usedBytes: Int64) -> String {
        let room = "a vacuum needs about \(2 * usedBytes) bytes free (twice the store's used bytes: a copy in the temporary directory, "
            + "then one beside the store); make room"
        return switch error.fileProblem {
        case .diskFull: "the disk is full; " + room
        case .busy: "another process kept the store locked for \(Database.busyTimeout / 1000) s; try again once it is done"
        case .readOnly: "the store is read-only; check that you may write to the file and to its directory"
        case .damaged: "SQLite found the file damaged; `quire inspect` reports what is wrong with it"
        case nil: "SQLite could not write it; " + room
        }
    }

    /// What `compact` prints.
    private struct Report {
        let notes: [(id: DocumentID, title: String)]
        let historyDropped: Bool
        let before: FreeSpace
        let after: FreeSpace
        /// The notes' logged changes before and after (the same, keeping history).
        let changesBefore: Int
        let changesAfter: Int
        let vacuumed: Bool
        let vacuumFailure: DatabaseError?
        /// How much of an id the text shows, as listings do.
        let idLength: Int

        private static func loggedChangesText(_ count: Int) -> String {
            "\(count) logged change\(count == 1 ? "" : "s")"
        }

        func print(json: Bool, to output: Output) {
            if json {
                output.print(json: .object([
                    "notes": .array(notes.map { .object(["id": .string($0.id.rawValue), "title": .string($0.title)]) }),
                    "historyDropped": .bool(historyDropped),
                    "changesBefore": .integer(Int64(changesBefore)), "changesAfter": .integer(Int64(changesAfter)),
                    "bytesBefore": .integer(before.fileBytes), "bytesAfter": .integer(after.fileBytes), "freeBytes": .integer(after.freeBytes),
                    "vacuumed": .bool(vacuumed), "vacuumError": vacuumFailure.map { .string($0.description) } ?? .null,
                ]))
                return
            }
            let count = notes.count == 1 ? "1 note" : "\(notes.count) notes"
            if historyDropped {
                output.print("Compacted \(count), dropping \(notes.count == 1 ? "its" : "their") history:")
                for note in notes { output.print("  \(note.id.rawValue.prefix(idLength)) \(TerminalText.inLine(note.title))") }
                output.print("\(changesBefore - changesAfter) of \(Self.loggedChangesText(changesBefore)) deleted; \(changesAfter) \(changesAfter == 1 ? "stays" : "stay"): local changes "
                    + "a peer lacks (all of a note's, until a peer has acknowledged some: sync first), and each note's newest.")
                if changesAfter < changesBefore {
                    output.print("log, blame and conflicts of a note that lost changes name what those did `compacted`, show --at and diff reach back to the compaction only, "
                        + "and served over `quire serve --stdio` this store can no longer send a client a deleted change (its sync refuses the note).")
                }
            } else {
                output.print("Compacted \(count), keeping \(notes.count == 1 ? "its" : "their") history (\(Self.loggedChangesText(changesAfter))): "
                    + "a fresh snapshot each, older snapshots deleted.")
            }
            let sizes = "\(after.fileBytes) bytes (was \(before.fileBytes)), \(after.freeBytes) free"
            if vacuumed {
                output.print("Wrote the file again without its free pages: \(sizes).")
            } else if vacuumFailure != nil {
                output.print("The file keeps its free pages, as the vacuum failed (below): \(sizes).")
            } else {
                output.print("No free pages to give back: \(sizes).")
            }
        }
    }
}
