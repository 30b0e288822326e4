import Foundation
import JSONText
import Quire
import QuireSync

/// `quire serve` and `quire sync`: the sync server and its client
/// (Specs/sync.md, "Commands").
enum SyncCommands {
    static let serve = Command(
        name: "serve",
        summary: "Run a sync server on its own store, or answer one sync session on stdin/stdout.",
        usage: ["--listen ADDRESS:PORT [--tokens FILE] [--rate-limit N] [--connections-per-address N] [--request-deadline SECONDS]", "--stdio [--timeout SECONDS] [--idle-timeout SECONDS]"],
        options: [
            Option(name: "--listen", values: ["ADDRESS:PORT"], help: "Serve HTTP there (a numeric address; port 0 picks a free one)."),
            Option(name: "--tokens", values: ["FILE"], help: "Bearer tokens: `TOKEN rw|ro [DOCUMENT...]` a line. Without it, anyone may do anything."),
            Option(name: "--rate-limit", values: ["N"], help: "Requests per second allowed per token (default 50, bursts of twice that)."),
            Option(name: "--connections-per-address", values: ["N"], help: "Connections one client address may hold at once (default 16 of 64; 0 for no limit, behind a reverse proxy)."),
            Option(name: "--request-deadline", values: ["SECONDS"], help: "Close a connection whose request has not arrived whole within that long, or whose answer is not taken within that long plus 1 s per 16 KiB (default 60; 0 for no limit; a long-poll's wait does not count)."),
            Option(name: "--stdio", help: "Speak the sync protocol on stdin/stdout with the store (--store) as the peer."),
            Option(name: "--timeout", values: ["SECONDS"], help: "With --stdio: end the session when a request under way, or an answer, stalls that long (default 30)."),
            Option(name: "--idle-timeout", values: ["SECONDS"], help: "With --stdio: end the session when no request begins for that long (default \(stdioIdleSeconds))."),
        ],
        examples: [
            "quire --store server.quire serve --listen 127.0.0.1:8080 --tokens tokens.txt",
            "quire sync --via 'ssh laptop quire --store notes.quire serve --stdio'",
        ],
        run: { invocation in
            try invocation.expectArguments(atMost: 0)
            let context = invocation.context
            if invocation.flag("--stdio") {
                // They only configure the HTTP server: given with --stdio, they would do nothing.
                if let httpOption = ["--listen", "--tokens", "--rate-limit", "--connections-per-address", "--request-deadline"].first(where: invocation.flag) {
                    throw invocation.usageError("--stdio and \(httpOption) exclude each other")
                }
                let timeout = try timeoutSeconds(invocation)
                let idleTimeout = try timeoutSeconds(invocation, "--idle-timeout", default: Double(stdioIdleSeconds))
                let store = try context.openStore()
                var service = PeerSyncService(store: store)
                let output = context.output
                service.onDamagedDocument = { output.progress($0) }
                let end: StdioFraming.SessionEnd
                do {
                    end = try runBlocking { [service] in try await StdioFraming.serve(service, timeout: timeout, idleTimeout: idleTimeout) }
                } catch {
                    // What was stored stays: each request's push was committed before its answer.
                    throw CLIError.failure("the sync session on standard input ended: \(error)")
                }
                // Not a failure: every request was answered, and what was stored stays.
                if case .idle(let seconds) = end {
                    context.output.progress("no request came for \(Int(seconds)) s (--idle-timeout): the sync session on standard input ends")
                }
                return
            }
            if let stdioOption = ["--timeout", "--idle-timeout"].first(where: invocation.flag) {
                throw invocation.usageError("\(stdioOption) is for --stdio")
            }
            guard let listen = invocation.value("--listen") else { throw invocation.usageError("serve needs --listen ADDRESS:PORT or --stdio") }
            guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
                throw invocation.usageError("--listen needs ADDRESS:PORT, such as 127.0.0.1:8080, not \"\(listen)\"")
            }
            var configuration = SyncServer.Configuration()
            if let rate = invocation.value("--rate-limit") {
                let perSecond = try invocation.integer(rate, "--rate-limit")
                // 0 would be no request at all, not "no limit": a large N is that.
                guard perSecond >= 1 else { throw invocation.usageError("--rate-limit must be 1 or more requests a second, not \"\(rate)\"") }
                configuration.requestsPerSecond = Double(perSecond)
                configuration.burst = Double(perSecond) * 2
            }
            var limits = HTTPServer.Limits()
            if let perAddress = invocation.value("--connections-per-address") {
                limits.maxConnectionsPerAddress = try invocation.integer(perAddress, "--connections-per-address")
            }
            if let deadline = invocation.value("--request-deadline") {
                let seconds = try invocation.integer(deadline, "--request-deadline")
                guard seconds <= 86_400 else {
                    throw invocation.usageError("--request-deadline must be at most 86400 seconds (0 for no limit), not \"\(deadline)\"")
                }
                limits.requestDeadlineSeconds = seconds
            }
            let host = String(listen[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            // Checked before the log is opened, which would make its file for a server that cannot start.
            guard HTTPServer.isListenable(host) else {
                throw invocation.usageError("--listen needs a numeric IPv4 or IPv6 address, such as 127.0.0.1:8080, not \"\(listen)\"")
            }
            // The server's log is a file of its own (Specs/sync.md), whose
            // migrations would take a store's schema version for a newer one's.
            if Database.peek(atPath: context.storePath, StoreSchema.holdsStore) == true {
                throw CLIError.failure("\(context.storePath) is a notes store; the server keeps its own log: give serve a --store of its own, such as server.quire")
            }
            var tokens: AccessTokens?
            if let file = invocation.value("--tokens") {
                let contents = try Context.contents(of: file, called: "the tokens file \(file)")
                do { tokens = try AccessTokens(parsing: String(decoding: contents, as: UTF8.self)) } catch {
                    throw CLIError.failure("cannot use the tokens file \(file): \(error)")
                }
            } else {
                context.output.progress("warning: no --tokens: every client may read and write every document")
            }
            // A server that cannot listen leaves no new file behind, only the error.
            let isNewFile = !FileManager.default.fileExists(atPath: context.storePath)
            let log: ServerLog
            do { log = try ServerLog(path: context.storePath) } catch {
                throw CLIError.failure("cannot open the server store \(context.storePath): \(error)")
            }
            let server = SyncServer(log: log, tokens: tokens, configuration: configuration)
            let http = HTTPServer(host: host, port: port, limits: limits, handler: server.handle)
            do { try http.start() } catch {
                if isNewFile {
                    for suffix in ["", "-wal", "-shm", "-lock"] { try? FileManager.default.removeItem(atPath: context.storePath + suffix) }
                }
                throw CLIError.failure("\(error)")
            }
            // The one line on standard output: scripts and tests read the port from it.
            // An IPv6 address in brackets, as a URL takes it: http://[::1]:8080.
            context.output.print("listening on \(host.contains(":") ? "[\(host)]" : host):\(http.port)")
            while true { sleep(3600) }
        })

    static let sync = Command(
        name: "sync",
        summary: "Exchange changes with a sync server (or, with --via, a peer) until both hold the same.",
        usage: ["URL [--token TOKEN] [--wait SECONDS] [--timeout SECONDS] [--retry-rejected] [--take-theirs NOTE]... [--json]",
                "--via COMMAND [--timeout SECONDS] [--retry-rejected] [--take-theirs NOTE]... [--json]"],
        arguments: [.init(name: "URL", help: "The server, such as http://127.0.0.1:8080.")],
        options: [
            Option(name: "--token", values: ["TOKEN"], help: "The bearer token (default: $QUIRE_TOKEN)."),
            Option(name: "--via", values: ["COMMAND"], help: "Sync with the peer that COMMAND runs (`quire ... serve --stdio`), through sh -c; what it writes to standard error is shown, each line prefixed `peer: `."),
            Option(name: "--wait", values: ["SECONDS"], help: "If nothing is new, wait up to that long for a change (long-poll)."),
            Option(name: "--timeout", values: ["SECONDS"], help: "Give up on an answer after that long (default 30, plus any --wait); with --via, after that long without a byte."),
            Option(name: "--retry-rejected", help: "Offer again the changes the server refused before."),
            Option(name: "--take-theirs", values: ["NOTE"], help: "Replace this store's copy of NOTE with the server's (or the peer's), "
                + "keeping this one as a new note titled \"TITLE (this machine's copy, DATE)\": for a note whose changes from it this store refuses. "
                + "May be repeated: every note given is replaced at once, then one sync brings them all.", repeatable: true),
            .json,
        ],
        examples: ["quire sync http://127.0.0.1:8080 --token s3cret", "quire sync --via 'ssh host quire --store notes.quire serve --stdio'",
                   "quire sync http://127.0.0.1:8080 --take-theirs 0190f1c2"],
        run: { invocation in
            try invocation.expectArguments(atMost: 1)
            let context = invocation.context
            let timeout = try timeoutSeconds(invocation)
            let command = invocation.value("--via")
            var server: (text: String, url: URL)?
            if command != nil {
                guard invocation.arguments.isEmpty else { throw invocation.usageError("give either URL or --via COMMAND, not both") }
                // A token is for a server; a peer run by COMMAND takes none and would never see it.
                guard !invocation.flag("--token") else { throw invocation.usageError("--via and --token exclude each other") }
                // A peer store answers at once: it has no log to wait on.
                guard !invocation.flag("--wait") else { throw invocation.usageError("--wait is for a server; a peer run by --via answers at once") }
            } else {
                guard let text = invocation.arguments.first else { throw invocation.usageError("sync needs a server URL or --via COMMAND") }
                guard let given = URL(string: text), ["http", "https"].contains(given.scheme?.lowercased() ?? ""), given.host != nil,
                      let url = serverURL(given) else {
                    throw invocation.usageError("\"\(text)\" is not an http:// or https:// URL" + Self.whatWasMeant(byURL: text))
                }
                server = (url.absoluteString, url)
            }
            let wait = try seconds("--wait", invocation) ?? 0
            let theirsWanted = try invocation.values("--take-theirs").map { try invocation.noteID($0[0]) }
            if let twice = firstRepeated(theirsWanted) {
                throw invocation.usageError("--take-theirs \(theirsWanted[twice.later]) is given twice; give each note once")
            }
            // The command line is checked before the store (a usage error is
            // one whatever the store), and the store before COMMAND is run: a
            // missing store must not start an ssh session for nothing.
            let store = try context.openStore()
            let taken = try theirsWanted.map { try NoteIDs.resolve($0, in: store) }
            // Two prefixes of one note: found only now, and as much a slip as the same text twice.
            if let twice = firstRepeated(taken) {
                throw invocation.usageError("--take-theirs \(theirsWanted[twice.earlier]) and --take-theirs \(theirsWanted[twice.later]) "
                    + "name the same note, \(taken[twice.later]); give each note once")
            }
            let peer: String
            let transport: any SyncTransport
            var stdio: StdioSyncTransport?
            if let command {
                peer = "via:" + command
                do { stdio = try StdioSyncTransport(command: command, timeout: timeout) } catch {
                    throw CLIError.failure("cannot run \(command): \(error)")
                }
                transport = stdio!
            } else {
                let (text, url) = server!
                peer = text
                // A store synced before this spelled the peer as given: what it knows of it is kept under one name.
                for stored in try store.syncPeers() where stored != peer && URL(string: stored).flatMap(serverURL)?.absoluteString == peer {
                    try store.mergeSyncState(of: stored, into: peer)
                }
                let token = invocation.value("--token") ?? context.environment["QUIRE_TOKEN"]
                let output = context.output
                // A server that does not answer holds a sync for minutes (5 tries of --timeout): each retry says so.
                transport = HTTPSyncTransport(server: url, token: token, replica: store.replicaID, timeout: timeout) { reason, attempt, delay in
                    output.progress("try \(attempt - 1) of \(RetryPolicy().maxAttempts) failed: \(reason); trying again in \(String(format: "%.1f", delay)) s")
                }
            }
            defer { stdio?.close() }
            // Once the transport is made (a command that cannot run drops nothing), and before the sync that brings theirs.
            let keptCopies: [(id: DocumentID, title: String)]
            do {
                keptCopies = try keepThisMachinesCopies(of: taken, in: store, replacedBy: transport.otherSide, peer: peer, context.output)
            } catch where taken.contains(where: { error.isDamage(ofDocument: $0.rawValue) }) {
                throw CLIError.failure(damageFailure(error, taken: taken, in: store, peer: peer, via: command, otherSide: transport.otherSide,
                                                     storePath: context.storePath))
            }
            // After the drop, whose failure writes nothing (damageFailure says so), and before the sync that offers them.
            if invocation.flag("--retry-rejected") { try store.clearRejectedChanges(peer: peer) }

            var client = SyncClient(store: store, peer: peer, transport: transport)
            let output = context.output
            client.progress = { output.progress($0) }
            let configured = client
            let (report, failure) = try runBlocking { await configured.syncKeepingReport(waitSeconds: wait) }
            let pending = try? store.pendingCount(peer: peer).get()
            let pendingText = pending.map { "\($0)" } ?? "an unknown number of (one is damaged)"
            // `pending` counts against this peer, where `quire status` counts
            // against the server synced with last (or any peer): with another
            // count there, both lines that give it (success or failure) give
            // that one too, or a mistyped --via command said 2 changes pending
            // where status said 0.
            func statusCount() -> String {
                let statusPeer = context.serverPeer
                guard statusPeer != peer, let pending, let counted = try? store.pendingCount(peer: statusPeer).get(), counted != pending else {
                    return ""
                }
                return " (`quire status` counts \(counted): those not acknowledged by \(Context.pendingCountedAgainst(statusPeer)))"
            }
            // The line a failed sync ends with.
            func stayPending() -> String {
                "\(pendingText) local change\(pending == 1 ? "" : "s") not acknowledged by \(transport.otherSide) "
                    + "stay\(pending == 1 ? "s" : "") pending" + statusCount()
            }
            let pendingJSON = pending.map { JSONValue.integer(Int64($0)) } ?? .null
            // The notes this sync changed, as `merge` names them: with the
            // versions to diff, which only this run knows, or the copy kept
            // of one whose copy --take-theirs replaced (this run's, or an
            // earlier one's that failed before the note came back). Read as
            // each is taken: the text takes a few of thousands.
            let newOrReplaced = BroughtChanges.NewOrReplaced(in: store, versionsBefore: report.changedDocuments.values.map(\.versionBefore))
            let changed = report.changedDocuments.sorted { $0.key < $1.key }.lazy.map { id, change in
                let note = try? store.read(id) { try Note(id: id, document: $0) }
                let (isNew, keptAs) = newOrReplaced.decide(id, versionBefore: change.versionBefore)
                return BroughtChanges(id: id, title: note?.title, isNew: isNew,
                                      versionBefore: change.versionBefore, versionAfter: change.versionAfter, isRemoved: note?.removed ?? false,
                                      incoming: change.received, replacedCopyKeptAs: keptAs, isInterleaved: change.isInterleaved)
            }
            let changedJSON = { JSONValue.array(changed.map { .object($0.jsonMembers) }) }
            func printChangedNotes() throws {
                guard !changed.isEmpty else { return }
                let idLength = NoteIDs.abbreviationLength(try store.documents(includeRemoved: true).map(\.id))
                output.print(BroughtChanges.listing(changed, by: "sync", idLength: idLength))
            }
            if let failure {
                // What the pages before the failure applied stays applied: listed
                // on standard output as after a sync, or a person cannot see what
                // did arrive. JSON only then, or for a compacted peer (not a
                // failure to reach it: trying again cannot help, and a script must
                // not loop on it); none says nothing changed, and trying again may mend.
                if invocation.flag("--json") {
                    if failure.isHistoryCompacted || !changed.isEmpty {
                        output.print(json: .object(["peer": .string(peer), "pending": pendingJSON, "historyCompacted": .bool(failure.isHistoryCompacted),
                                                    "received": .integer(report.received), "changedNotes": changedJSON()]))
                    }
                } else {
                    try printChangedNotes()
                }
                let kept = changed.isEmpty ? "" : "\n\(report.received) change\(report.received == 1 ? "" : "s") received before that "
                    + "stay\(report.received == 1 ? "s" : "") applied (standard output lists the notes)"
                let advice = failure.isHistoryCompacted ? "; " + compactedAdvice(transport.otherSide) : Self.advice(for: failure)
                throw CLIError.failure("sync with \(peer) failed: \(failure)\(advice)\(kept)\n\(stayPending())")
            }
            // Refused changes, this sync's and earlier ones, wait for
            // --retry-rejected: a later sync does not offer them.
            let rejected = try store.rejectedChanges(peer: peer)
            // The notes left out by the other side's refusal, with their titles here (nil: a note this store lacks).
            func titled<Why>(_ refused: [DocumentID: Why]) -> [(id: DocumentID, title: String?, failure: Why)] {
                refused.sorted { $0.key < $1.key }.map { id, failure in
                    (id: id, title: try? store.read(id) { try Note(id: id, document: $0).title }, failure: failure)
                }
            }
            func notesJSON<Why>(_ notes: [(id: DocumentID, title: String?, failure: Why)]) -> JSONValue {
                .array(notes.map { .object(["id": .string($0.id.rawValue), "title": $0.title.map(JSONValue.string) ?? .null]) })
            }
            // One line a note, its failure said by `reason` (by default, as the other side's refusal).
            func lines<Why>(_ notes: [(id: DocumentID, title: String?, failure: Why)], reason: (Why) -> String) -> String {
                notes.map { "  note \($0.id) (\($0.title.map(TerminalText.inLine) ?? "not in this store")): \(reason($0.failure))" }.joined(separator: "\n")
            }
            func lines(_ notes: [(id: DocumentID, title: String?, failure: SyncFailure)]) -> String {
                lines(notes) { SyncError.refused($0).description(otherSide: transport.otherSide) }
            }
            let compacted = titled(report.historyCompacted), damagedThere = titled(report.damagedOnPeer)
            let notApplied = titled(report.notApplied)
            // Each note whose copy was taken, in the order given, with the other side's title of it here now (nil: it sent none).
            let tookTheirs = zip(taken, keptCopies).map { id, copy in
                (id: id, title: try? store.read(id) { try Note(id: id, document: $0).title }, copy: copy)
            }
            if invocation.flag("--json") {
                var fields: [String: JSONValue] = [
                    "peer": .string(peer), "rounds": .integer(report.rounds), "sent": .integer(report.sent),
                    "received": .integer(report.received), "bytesSent": .integer(report.bytesSent),
                    "bytesReceived": .integer(report.bytesReceived), "rejected": .integer(rejected.count),
                    "pending": pendingJSON,
                    "damaged": .integer(report.damaged.count), "outOfScope": .integer(report.outOfScope.count),
                    "readOnly": .bool(report.writeRefusal != nil), "historyCompacted": .bool(!compacted.isEmpty),
                    "historyCompactedNotes": notesJSON(compacted), "damagedOnPeerNotes": notesJSON(damagedThere),
                    "notAppliedNotes": notesJSON(notApplied),
                    "changedNotes": changedJSON(),
                ]
                let tookJSON = tookTheirs.map { took in
                    JSONValue.object(["id": .string(took.id.rawValue), "title": took.title.map(JSONValue.string) ?? .null,
                                      "copy": .object(["id": .string(took.copy.id.rawValue), "title": .string(took.copy.title)])])
                }
                // The list names every note taken; the one object stays for one note, as scripts written before the list read it.
                if !tookJSON.isEmpty { fields["tookTheirsNotes"] = .array(tookJSON) }
                if tookJSON.count == 1 { fields["tookTheirs"] = tookJSON[0] }
                output.print(json: .object(fields))
            } else {
                output.print("synced with \(peer): sent \(report.sent), received \(report.received) change\(report.received == 1 ? "" : "s") "
                    + "in \(report.rounds) round trip\(report.rounds == 1 ? "" : "s"); \(pending.map { "\($0)" } ?? "unknown") pending" + statusCount())
                for took in tookTheirs {
                    let copy = "this store's copy is kept as note \(took.copy.id) (\(TerminalText.inLine(took.copy.title)))"
                    output.print(took.title.map { "took \(transport.otherSide)'s copy of note \(took.id) (\(TerminalText.inLine($0))); \(copy)" }
                        ?? "\(transport.otherSide) sent no copy of note \(took.id) (it holds none, this token may not read it, or this store refuses it); \(copy)")
                }
                try printChangedNotes()
                // This sync's refusals end it with an error that lists them; earlier ones are only held back.
                if report.rejected.isEmpty && !rejected.isEmpty {
                    output.print("\(rejected.count) change(s) \(transport.otherSide) refused before, and the later changes that build on them, "
                        + "wait for `quire sync --retry-rejected` (quire status lists the refused ones)")
                }
            }
            if !report.outOfScope.isEmpty {
                // Not a failure: a token may be meant for some notes only (a shared notebook's).
                output.progress("note: \(report.outOfScope.count) note(s) with changes \(peer) lacks are outside what this token may read "
                    + "and write, and were not synced; their changes stay pending:\n"
                    + report.outOfScope.map { "  \($0)" }.joined(separator: "\n"))
            }
            if let refusal = report.writeRefusal {
                // Not the changes' fault: they go out with a token that may write, without --retry-rejected.
                throw CLIError.failure("\(peer) lets this token read but not write (\(refusal.message)): \(pendingText) local "
                    + "change\(pending == 1 ? " was" : "s were") not sent and stay\(pending == 1 ? "s" : "") pending, none refused; "
                    + "sync with a token that may write to send them")
            }
            if !compacted.isEmpty {
                // The others synced; these cannot, with this peer, until this store holds what it compacted away.
                throw CLIError.failure("sync with \(peer) left out \(compacted.count) note(s), whose changes this store lacks \(transport.otherSide) "
                    + "no longer holds; the other notes synced:\n" + lines(compacted) + "\n"
                    + "\(compactedAdvice(transport.otherSide)); until then, the local changes of \(compacted.count == 1 ? "this note" : "these notes") "
                    + "stay pending\n\(stayPending())")
            }
            if !damagedThere.isEmpty {
                // The others synced; these wait until that store is repaired, this store's copy untouched.
                // A server's log is no notes store: `quire inspect` refuses it.
                let whereTheDamageIsNamed = transport.otherSide == .server ? "its standard error names the damaged row of its log"
                    : "there, `quire inspect` names the damage"
                throw CLIError.failure("sync with \(peer) left out \(damagedThere.count) note(s) damaged in \(transport.otherSide)'s store, "
                    + "nothing of them sent or taken; the other notes synced:\n" + lines(damagedThere) + "\n"
                    + "this store's copy of \(damagedThere.count == 1 ? "it" : "them") is untouched, and its local changes stay pending "
                    + "until \(transport.otherSide)'s store is repaired (\(whereTheDamageIsNamed)); a store that synced "
                    + "\(damagedThere.count == 1 ? "the note" : "the notes") holds \(damagedThere.count == 1 ? "its" : "their") changes meanwhile\n\(stayPending())")
            }
            if !notApplied.isEmpty {
                // The others synced; these meet the same refusal at every sync until one copy is
                // replaced, or, for changes a newer Quire wrote, until this one is upgraded.
                let one = notApplied.count == 1
                let inNewerFormat = notApplied.filter { note in
                    if case .undecodable(.unsupportedVersion) = note.failure.reason { true } else { false }
                }
                let replaceCopy = "until one copy is replaced: a change with the same id but other content is on each side (forged or damaged "
                    + "on its way to one of them), or \(transport.otherSide)'s copy breaks the rules; to take \(transport.otherSide)'s "
                    + "copy of a note, keeping this store's as a new note, run `\(syncCommand(peer, via: command)) --take-theirs ID`"
                    + (notApplied.count - inNewerFormat.count > 1 ? " (`--take-theirs` once for each note: one run takes them all)" : "")
                // Taking the other side's copy would not help there: this store cannot read it.
                let upgrade = "until quire is upgraded on this machine: \(transport.otherSide) sent changes in a format that a newer "
                    + "version of Quire writes, which the first sync after the upgrade takes"
                let until = inNewerFormat.isEmpty ? replaceCopy
                    : inNewerFormat.count == notApplied.count ? upgrade
                    : replaceCopy + " (a note whose format version is not supported waits instead \(upgrade))"
                throw CLIError.failure("sync with \(peer) left out \(notApplied.count) note(s) whose changes from \(transport.otherSide) "
                    + "this store refuses, nothing of them taken; the other notes synced:\n"
                    + lines(notApplied) { "\($0.reason)" } + "\n"
                    + "this store's copy of \(one ? "it" : "them") is untouched, and every sync with \(peer) leaves \(one ? "it" : "them") out "
                    + "\(until); until then, the local changes of \(one ? "the note" : "the notes") that \(transport.otherSide) lacks "
                    + "stay pending\n\(stayPending())")
            }
            if !report.damaged.isEmpty {
                let lines = report.damaged.sorted { $0.key.rawValue < $1.key.rawValue }.map { "  \($0.key): \($0.value)" }
                throw CLIError.failure("\(report.damaged.count) note(s) cannot be read and were left out; the others synced "
                    + "(`\(ShellWords.command("quire", "inspect", context.storePath))` reports the damage):\n" + lines.joined(separator: "\n"))
            }
            if !report.rejected.isEmpty {
                let lines = report.rejected.map { "  \($0.document) \($0.id): \($0.status) \($0.reason)" }
                throw CLIError.failure("\(transport.otherSide) refused \(report.rejected.count) change(s); they stay in the store "
                    + "(quire status shows them; quire sync --retry-rejected offers them again):\n" + lines.joined(separator: "\n"))
            }
        })
}

extension SyncCommands {
    /// What to do when `otherSide` no longer holds changes this store lacks
    /// (`SyncError.isHistoryCompacted`): no sync with it can bring them.
    static func compactedAdvice(_ otherSide: SyncOtherSide) -> String {
        "sync this store with one that still holds those changes (the store that wrote them), or start again from a copy of "
            + "\(otherSide)'s store, which lacks the local changes pending here; a store served to others keeps them when "
            + "compacted with keepHistory"
    }

    /// `--take-theirs`: keeps this store's copy of each note of `ids` as a
    /// new note (its title, body, tags and pin; titled so that a person
    /// finds it), and drops them all, in one transaction
    /// (`DocumentStore.discardCopies`: one rewind of the cursors, one new
    /// replica id, every note replaced or none), so that the sync that
    /// follows brings `otherSide`'s copy of each whole. Said on standard
    /// error, a line a note, before the sync, which may fail: the new notes
    /// stay either way, and the next sync with `peer` brings theirs.
    /// Returns the new notes' ids and titles, in the order of `ids`.
    static func keepThisMachinesCopies(of ids: [DocumentID], in store: DocumentStore, replacedBy otherSide: SyncOtherSide, peer: String,
                                       _ output: Output) throws -> [(id: DocumentID, title: String)] {
        let date = RelativeTime.isoDate(Date()).prefix(10)
        var made: [DocumentID: (title: String, isRemoved: Bool)] = [:]
        // One transaction: an edit another process makes meanwhile is in the copy, not lost with the note.
        let copies = try store.discardCopies(of: ids, resyncingWith: peer) { id, dropped, copy in
            let old = try Note(id: id, document: dropped)
            let title = [old.title, "(this machine's copy, \(date))"].filter { !$0.isEmpty }.joined(separator: " ")
            try copy.createNote(title: title, body: old.body, tags: old.tags, pinned: old.pinned)
            // A removed note's copy stays removed, as the note was; said, or a person looks for it in `note list` in vain.
            if old.removed { try copy.put(.root, key: Note.Key.removed, .bool(true)) }
            made[id] = (title, old.removed)
        }
        return zip(ids, copies).map { id, copy in
            let (title, isRemoved) = made[id]!
            let removed = isRemoved ? ", removed as the note was: `\(ShellWords.command("quire", "note", "restore", copy.rawValue))` brings it back" : ""
            output.progress("kept this store's copy of note \(id) as note \(copy) (\(TerminalText.inLine(title))\(removed)); taking \(otherSide)'s copy of it")
            return (copy, title)
        }
    }

    /// Why a `--take-theirs` run replaced none of the notes `taken`
    /// (`discardCopies`: all or none, its transaction rolled back) when it
    /// met damage (`error`), and what to do. Either this store cannot read
    /// a note of them to keep its copy (a change or snapshot of it fails
    /// its checks, or a damaged page of the file holds its rows): then the
    /// command that takes the others, leaving out every note given that
    /// cannot be read (named one at a time, they would fail run after run),
    /// and how to get those back. Or the notes read whole, and dropping
    /// them met a damaged page elsewhere (one a table or index they are in
    /// is written through): then how to take the copies in a new store of
    /// the notes still readable. A damaged page is named as SQLite failures
    /// on a store file are (`cli.md`, "Exit codes"): the file, what to do,
    /// then SQLite's report on a line of its own.
    private static func damageFailure(_ error: any Error, taken: [DocumentID], in store: DocumentStore, peer: String, via command: String?,
                                      otherSide: SyncOtherSide, storePath: String) -> String {
        let unreadable = taken.filter { id in
            if (error as? StoreError)?.damagedDocument == id.rawValue { return true }
            do { try store.read(id) { _ in } } catch let readError { return readError.isDamage(ofDocument: id.rawValue) }
            return false
        }
        let (damage, report) = error.isDamagedPage ? ("the store \(storePath) has a damaged page", "\nSQLite's report: \(error)") : ("\(error)", "")
        let what = taken.count == 1 ? "the note was not replaced" : "none of the \(taken.count) notes given to --take-theirs was replaced"
        guard !unreadable.isEmpty else {
            let one = taken.count == 1
            return "\(damage); nothing was written: \(what): this store can read \(one ? "it" : "them"), but dropping "
                + "\(one ? "its copy" : "their copies") meets the damage; `\(ShellWords.command("quire", "inspect", storePath))` reports what is wrong with the file; "
                + "to take \(otherSide)'s \(one ? "copy" : "copies"), copy the notes that can be read into a new store NEW and take "
                + "\(one ? "it" : "them") there: `quire --store NEW init`, `\(ShellWords.command("quire", "--store", "NEW", "merge", storePath))`, then "
                + "`\(syncCommand(peer, via: command, store: "NEW", takingTheirs: taken))`, and use NEW" + report
        }
        let others = taken.filter { !unreadable.contains($0) }
        let one = unreadable.count == 1
        let notes = unreadable.map { "note \($0)" }.joined(separator: ", ")
        let takeOthers = others.isEmpty ? ""
            : "to take the others, run `\(syncCommand(peer, via: command, takingTheirs: others))` (without \(one ? "it" : "them")); "
        return "\(damage); nothing was written: \(what), as this store cannot read \(notes) to keep \(one ? "its copy" : "their copies") "
            + "as \(one ? "a new note" : "new notes"); \(takeOthers)for \(one ? "the note" : "the notes") that cannot be read, "
            + Context.damagedNoteAdvice(path: storePath) + report
    }

    /// The command that syncs with `peer`, as a person gives it: the
    /// server's URL, or `--via` and the peer's command (`command`); with
    /// `store`, that of the store at that path; taking the peer's copies of
    /// `notes`.
    private static func syncCommand(_ peer: String, via command: String?, store: String? = nil, takingTheirs notes: [DocumentID] = []) -> String {
        let storeWords = store.map { ["--store", $0] } ?? []
        let peerWords = command.map { ["--via", $0] } ?? [peer]
        return ShellWords.command(["quire"] + storeWords + ["sync"] + peerWords + notes.flatMap { ["--take-theirs", $0.rawValue] })
    }

    /// The first item of `items` equal to an earlier one, with that one's
    /// index: a note given twice to `--take-theirs`.
    private static func firstRepeated<Item: Hashable>(_ items: [Item]) -> (earlier: Int, later: Int)? {
        var firstIndex: [Item: Int] = [:]
        for (index, item) in items.enumerated() {
            if let earlier = firstIndex[item] { return (earlier, index) }
            firstIndex[item] = index
        }
        return nil
    }

    /// What to do about a failed sync, after `; `, where the error alone
    /// does not say: a server refused the token (401: none, or one its
    /// tokens file lacks); else nothing.
    static func advice(for error: SyncError) -> String {
        guard case .refused(let failure) = error.kind, failure.status == 401, error.otherSide == .server else { return "" }
        return "; give a token the server's --tokens file holds, with --token TOKEN or $QUIRE_TOKEN"
    }

    /// What a person most likely meant by `text`, given as the URL: a
    /// server without its scheme (`127.0.0.1:8080`, as `serve --listen`
    /// prints it), or the other machine's store file, which syncs through
    /// a peer command or merges.
    private static func whatWasMeant(byURL text: String) -> String {
        if FileManager.default.fileExists(atPath: text) {
            let serving = ShellWords.command("quire", "--store", text, "serve", "--stdio")
            return "; \(text) is a file: `\(ShellWords.command("quire", "sync", "--via", serving))` syncs with the store there, "
                + "or `\(ShellWords.command("quire", "merge", text))` merges it in"
        }
        return text.contains("://") ? "" : "; a server's URL starts with its scheme: `\(ShellWords.command("quire", "sync", "http://" + text))`"
    }

    /// The sync server `url` names, spelled one way, which names it as a
    /// peer in the store (Specs/sync.md, "Client state"): scheme and host
    /// in lower case, no default port, no trailing `/` or `/v1/sync` (the
    /// endpoint, which the client adds), no fragment. Nil for a URL that
    /// is not an http(s) server's.
    static func serverURL(_ url: URL) -> URL? {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let scheme = parts.scheme?.lowercased(), ["http", "https"].contains(scheme) else { return nil }
        parts.scheme = scheme
        parts.percentEncodedHost = parts.percentEncodedHost?.lowercased()
        if parts.port == (scheme == "https" ? 443 : 80) { parts.port = nil }
        var path = Substring(parts.percentEncodedPath)
        while path.hasSuffix("/") { path.removeLast() }
        if path.hasSuffix("/v1/sync") { path.removeLast("/v1/sync".count) }
        while path.hasSuffix("/") { path.removeLast() }
        parts.percentEncodedPath = String(path)
        parts.fragment = nil
        return parts.url
    }

    /// The longest `--timeout` and `--wait`: far beyond any sync, and far
    /// below the seconds the clocks they go to can count (nanoseconds in 64 bits).
    static let maxSeconds = 86_400

    /// How long `serve --stdio` waits for a request to begin, unless
    /// `--idle-timeout` says: far above the time a client takes between two
    /// requests (applying a page), far below for ever.
    static let stdioIdleSeconds = 600

    /// `--timeout` (or another `option` of the kind): whole seconds, at
    /// least 1, `default` if not given.
    static func timeoutSeconds(_ invocation: Invocation, _ option: String = "--timeout", default: Double = 30) throws -> Double {
        let timeout = try seconds(option, invocation) ?? `default`
        guard timeout > 0 else { throw invocation.usageError("\(option) must be 1 second or more") }
        return timeout
    }

    /// The whole seconds `option` gives, if given.
    static func seconds(_ option: String, _ invocation: Invocation) throws -> Double? {
        try invocation.value(option).map { text in
            let seconds = try invocation.integer(text, option)
            guard seconds <= maxSeconds else { throw invocation.usageError("\(option) must be at most \(maxSeconds) seconds (a day), not \"\(text)\"") }
            return Double(seconds)
        }
    }
}

/// Runs async work from a command (commands are synchronous) and waits for it.
func runBlocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        do { box.result = .success(try await work()) } catch { box.result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try box.result!.get()
}

/// The result of `runBlocking`'s task, handed over once the semaphore says it is set.
private final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}
