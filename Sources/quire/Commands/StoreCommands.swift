import Foundation
import Quire

/// `quire init`, `quire status` and `quire backup`: the store itself.
enum StoreCommands {
    static let initialize = Command(
        name: "init",
        summary: "Create an empty store.",
        usage: ["[--store PATH]"],
        // Every command takes --store; init's usage names it, so its help says what it is.
        options: [Context.storeOption],
        examples: ["quire init", "quire --store ~/work.quire init"],
        run: { invocation in
            try invocation.expectArguments(atMost: 0)
            let path = invocation.context.storePath
            try Context.refuseDirectory(path)
            // An empty file holds no store: init makes one of it.
            guard Context.isMissingOrEmpty(path) else {
                if let kind = Context.notADatabase(path) ?? Database.peek(atPath: path, StoreSchema.foreignKind) ?? nil {
                    throw CLIError.failure("\(path) is \(kind); init makes a store only of a missing or empty file: pass --store PATH for a new one")
                }
                throw CLIError.failure("a store already exists at \(path); use it as it is, or pass --store PATH for a new one")
            }
            let directory = (path as NSString).deletingLastPathComponent
            if !directory.isEmpty {
                do { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch {
                    throw CLIError.failure("cannot create the directory \(directory) for the store; check that every part of it is a directory you may write to")
                }
            }
            if let reason = Database.whyNoFileCanBeMade(in: directory) {
                throw CLIError.failure("cannot create the store \(path): \(reason); pass --store with a path in a folder you may write to, or make that folder writable")
            }
            let store: DocumentStore
            do { store = try DocumentStore(path: path) } catch {
                throw CLIError.failure("cannot create the store \(path): \(error)")
            }
            invocation.context.output.print("Initialized an empty Quire store in \(path) (replica \(store.replicaID))")
        })

    static let status = Command(
        name: "status",
        summary: "Show the store's replica, its number of documents, and the local changes the server (with none, any peer) has not acknowledged.",
        usage: ["[--json]"],
        options: [.json],
        examples: ["quire status", "quire status --json"],
        run: { invocation in
            try invocation.expectArguments(atMost: 0)
            let context = invocation.context
            let store = try context.openStore()
            let documents = try store.documents(includeRemoved: true).count
            let server = context.serverPeer
            let pending = store.pendingCount(peer: server)
            let rejected = try store.rejectedChanges(peer: server)
            if invocation.flag("--json") {
                context.output.print(json: .object([
                    "store": .string(context.storePath), "replica": .string(store.replicaID.description),
                    "documents": .integer(documents), "pending": (try? pending.get()).map { .integer(Int64($0)) } ?? .null,
                    "rejected": .integer(rejected.count),
                ]))
            } else {
                let pendingText = switch pending {
                case .success(let count): "\(count) local change\(count == 1 ? "" : "s") not acknowledged by \(Context.pendingCountedAgainst(server))"
                case .failure: "unknown: a local change is damaged"
                }
                context.output.print(Table(rows: [
                    ["store", context.storePath],
                    ["replica", store.replicaID.description],
                    ["documents", "\(documents)"],
                    ["pending", pendingText],
                ]).render())
                // Refused changes are part of `pending`: shown one by one, as they need the user.
                for change in rejected {
                    context.output.print("rejected by \(change.peer): \(change.document) \(change.id): \(change.status) \(change.reason)")
                }
            }
            if case .failure(let error) = pending {
                throw CLIError.failure("\(error); " + Context.damagedNoteAdvice(path: context.storePath))
            }
        })

    static let backup = Command(
        name: "backup",
        summary: "Copy the store to a new file, safely while other processes use it: the copy holds every change committed when it began.",
        usage: ["DEST [--force]"],
        arguments: [Command.Argument(name: "DEST", help: "The file to write; it must not exist, unless --force is given.")],
        options: [Option(name: "--force", help: "Replace a file at DEST (not a store a program has open there).")],
        examples: ["quire backup /media/usb/notes-2026-12-05.quire", "quire --store ~/work.quire backup ~/work-backup.quire --force"],
        run: { invocation in
            try invocation.expectArguments(atMost: 1)
            let context = invocation.context
            let destination = try invocation.argument(0, "DEST")
            let replacing = invocation.flag("--force")
            // A store an older Quire wrote is copied as it is, not upgraded
            // first: the backup a user keeps from before upgrading.
            let isOlder = Database.peek(atPath: context.storePath, StoreSchema.holdsOlderStore) == true
            let store = isOlder ? nil : try context.openStore()
            do {
                if let store {
                    try store.backup(to: destination, replacing: replacing)
                } else {
                    try DocumentStore.backup(ofStoreAt: context.storePath, to: destination, replacing: replacing)
                }
            } catch StoreError.backupDestinationExists {
                throw CLIError.failure("cannot back up to \(destination): a file is there already; give a new path, or pass --force to replace it")
            } catch let error as StoreError {
                throw CLIError.failure("\(error)")
            } catch let error as DatabaseError where error.fileProblem == .damaged {
                // A copy of a damaged file would be as damaged: the user wants the notes still readable, which `merge` copies.
                throw CLIError.failure("cannot back up \(context.storePath), nothing was written to \(destination) nor changed in the store: "
                    + "a page of it is damaged, so no whole copy can be made. `\(ShellWords.command("quire", "inspect", context.storePath))` names the notes "
                    + "that cannot be read; `\(ShellWords.command("quire", "--store", destination, "init"))`, then "
                    + "`\(ShellWords.command("quire", "--store", destination, "merge", context.storePath))` "
                    + "copies every other note into a new store (`cp` copies the damaged file as it is, while no process has it open)"
                    + "\nSQLite's report: \(error)")
            } catch {
                throw CLIError.failure("cannot back up \(context.storePath) to \(destination), nothing was written there: \(error)")
            }
            let bytes = (try? FileManager.default.attributesOfItem(atPath: destination)[.size] as? Int) ?? 0
            context.output.print("Backed up \(context.storePath) to \(destination) (\(bytes) bytes"
                + (isOlder ? ", as the older version of Quire that wrote it left it, not upgraded" : "") + "); "
                + "opened for writing, the backup takes a new replica id")
        })
}
