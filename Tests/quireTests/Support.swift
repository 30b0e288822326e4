import Foundation
import Quire
import QuireTestSupport
import Testing

/// Runs the built `quire` binary, as a person would, on temporary stores.
struct QuireRunner {
    /// The binary, built beside the test bundle (as QuireTests finds `quire-store-writer`).
    static var binaryURL: URL {
        let candidates = [
            Bundle.main.bundleURL.appendingPathComponent("quire"),
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("quire"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    struct Result {
        let stdout: String
        let stderr: String
        let status: Int32

        /// Standard output parsed as JSON.
        func json() throws -> Any {
            try JSONSerialization.jsonObject(with: Data(stdout.utf8), options: [.fragmentsAllowed])
        }
    }

    /// The runner's own directory, which `withRunner` makes and removes.
    let directory: String
    /// The store every `run` uses unless the arguments name another.
    var store: String { directory + "/notes.quire" }

    /// A launcher that runs quire as a shell runs a command on a terminal:
    /// in a process group of its own (which a signal to the group, as
    /// Ctrl-C sends, reaches without reaching the tests), with no signal
    /// blocked (the test runner's threads block most, and a process started
    /// from one inherits that mask).
    static let asForegroundGroup = [
        "python3", "-c", "import os, signal, sys; os.setpgrp(); signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.argv[1], sys.argv[1:])",
    ]

    /// A launcher under which folder permissions hold: root may write any
    /// folder, so as root (CI runs the tests as root) quire runs as nobody.
    static let withoutRootsPermissions = getuid() == 0 ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []

    /// Runs `quire --store STORE ARGUMENTS`, with `environment` added and
    /// `input` (if any) on its standard input; through `launcher` (a command
    /// that runs the words after its own) when one is given.
    @discardableResult
    func run(_ arguments: [String], store: String? = nil, environment: [String: String] = [:], input: Data? = nil,
             launcher: [String] = []) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: launcher.isEmpty ? Self.binaryURL.path : "/usr/bin/env")
        process.arguments = launcher + (launcher.isEmpty ? [] : [Self.binaryURL.path]) + ["--store", store ?? self.store] + arguments
        var fullEnvironment = ProcessInfo.processInfo.environment
        fullEnvironment["NO_COLOR"] = "1"
        fullEnvironment.merge(environment) { $1 }
        process.environment = fullEnvironment
        let output = Pipe(), error = Pipe()
        process.standardOutput = output
        process.standardError = error
        let inputPipe = input.map { _ in Pipe() }
        if let inputPipe { process.standardInput = inputPipe }
        try process.run()
        if let inputPipe, let input {
            try inputPipe.fileHandleForWriting.write(contentsOf: input)
            try inputPipe.fileHandleForWriting.close()
        }
        // Read both pipes before waiting, so a large output cannot block the process.
        let errorData = Captured()
        let reader = Thread { errorData.data = error.fileHandleForReading.readDataToEndOfFile() }
        reader.start()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !errorData.isSet { usleep(1000) }
        return Result(stdout: String(decoding: outputData, as: UTF8.self),
                      stderr: String(decoding: errorData.data ?? Data(), as: UTF8.self),
                      status: process.terminationStatus)
    }

    /// Runs `quire --store STORE ARGUMENTS` on a pseudo-terminal (through
    /// util-linux's `script`), with colour on, and returns what it wrote there.
    func runOnTerminal(_ arguments: [String]) throws -> String {
        let quoted = ([Self.binaryURL.path, "--store", store] + arguments)
            .map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-qec", quoted, "/dev/null"]
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = nil
        environment["TERM"] = "xterm"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// Runs a command that must succeed, and returns its standard output.
    @discardableResult
    func ok(_ arguments: [String], store: String? = nil, environment: [String: String] = [:],
            sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let result = try run(arguments, store: store, environment: environment)
        #expect(result.status == 0, "quire \(arguments.joined(separator: " ")) failed: \(result.stderr)", sourceLocation: sourceLocation)
        return result.stdout
    }

    /// What a `quire init` killed before it committed the store's tables
    /// leaves at `store`: a SQLite database switched to WAL and holding
    /// nothing; with `withHotJournal`, killed while committing that switch,
    /// its header and a hot journal whose rollback empties the file (the
    /// bytes such a kill left).
    func writeWhatAKilledInitLeaves(withHotJournal: Bool) throws {
        guard withHotJournal else {
            try Database(path: store).close()
            return
        }
        func page(_ hex: String, size: Int) -> Data {
            var bytes = stride(from: 0, to: hex.count, by: 2).map { offset in UInt8(hex.dropFirst(offset).prefix(2), radix: 16)! }
            bytes += Array(repeating: 0, count: size - bytes.count)
            return Data(bytes)
        }
        try page("53514c69746520666f726d617420330010000202004020200000000100000001" + String(repeating: "0", count: 126)
                 + "01002e63010d0000000010", size: 4096).write(to: URL(fileURLWithPath: store))
        try page("d9d505f920a163d700000000777bf9c2000000000000020000001000", size: 512).write(to: URL(fileURLWithPath: store + "-journal"))
    }

    /// Overwrites the logged changes of note `id` (in the store at `path`,
    /// else the runner's) with bytes that decode as no change: what a
    /// disk's damage leaves.
    func damageTheChanges(ofNote id: String, in path: String? = nil) throws {
        let database = try Database(path: path ?? store)
        defer { database.close() }
        try database.write { db in
            try db.execute(sql: "UPDATE changes SET data = x'00112233' WHERE document = (SELECT number FROM documents WHERE id = ?)", arguments: [.text(id)])
        }
    }

    /// Initialises the runner's store with two notes, "first", whose
    /// changes are then damaged, and "second": their ids.
    func storeWithADamagedNote() throws -> (damaged: String, whole: String) {
        try ok(["init"])
        let damaged = try ok(["note", "new", "--title", "first"]).trimmingCharacters(in: .newlines)
        let whole = try ok(["note", "new", "--title", "second"]).trimmingCharacters(in: .newlines)
        try damageTheChanges(ofNote: damaged)
        return (damaged, whole)
    }

    /// Initialises the runner's store with 20 notes, then zeroes a page of
    /// their log (`zeroLeafPage`): some of the notes cannot be read.
    func storeWithADamagedPage() throws {
        try storeOfTwentyNotes()
        try zeroLeafPage(of: "changes", in: store)
    }

    /// Initialises the runner's store with 20 notes whose bodies zstd
    /// cannot shrink much, so that their rows (here and in a server's log)
    /// span several pages.
    func storeOfTwentyNotes() throws {
        try ok(["init"])
        var random = SeededGenerator(seed: 7)
        for index in 0..<20 {
            let body = String((0..<1500).map { _ in Character(UnicodeScalar(UInt8(97 + random.next() % 26))) })
            try ok(["note", "new", "--title", "note \(index)", "--body", body])
        }
    }
}

/// Data handed from the reader thread to the test thread.
final class Captured: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: Data?
    var data: Data? {
        get { lock.withLock { storage } }
        set { lock.withLock { storage = newValue } }
    }
    var isSet: Bool { data != nil }
}

/// Runs `body` with a runner in a new directory, removed afterwards.
func withRunner(_ body: (QuireRunner) throws -> Void) throws {
    try withTemporaryDirectory { directory in try body(QuireRunner(directory: directory)) }
}

/// `withRunner` for an async `body` (one that awaits a store's events), run
/// on the caller's actor.
func withRunner(isolation: isolated (any Actor)? = #isolation, _ body: (QuireRunner) async throws -> Void) async throws {
    try await withTemporaryDirectory { directory in try await body(QuireRunner(directory: directory)) }
}

/// A note `quire merge` or `quire sync` names as changed, from its text:
/// the command it gives, as arguments after `quire`, and what follows its
/// `#` (the title, and `(new)` or `(removed)` marks).
struct BroughtNote: Equatable {
    let arguments: [String]
    let comment: String

    /// Whether it is `quire show ID --at VERSION`, the line of a note new
    /// here or replaced, for note `id` (abbreviated), at `version` if given.
    func isShow(of id: String, at version: String? = nil) -> Bool {
        arguments.count == 4 && arguments[0] == "show" && id.hasPrefix(arguments[1]) && arguments[2] == "--at"
            && version.map { $0 == arguments[3] } != false
    }
}

/// The notes listed under the heading `quire merge` or `quire sync` (`event`)
/// prints after a run that changed notes, and the `... and N more` line if
/// any; nil when there is no heading.
func broughtNotes(in output: String, by event: String) -> (notes: [BroughtNote], more: String?)? {
    let lines = output.split(separator: "\n").map(String.init)
    let heading = "What the \(event) brought into each note, against the note's version here before the \(event) (of a new note, all of it):"
    guard let start = lines.firstIndex(of: heading) else { return nil }
    var notes: [BroughtNote] = [], more: String?
    for line in lines[(start + 1)...] {
        if line.hasPrefix("  ... and ") { more = line; break }
        guard line.hasPrefix("  quire "), let hash = line.range(of: "  # ") else { break }
        notes.append(BroughtNote(arguments: line[line.index(line.startIndex, offsetBy: 8)..<hash.lowerBound].split(separator: " ").map(String.init),
                                 comment: String(line[hash.upperBound...])))
    }
    return (notes, more)
}

/// The words `/bin/sh` reads from `line`, a command line as quire prints
/// it for a person to paste: what the command it stands for would be given.
/// Throws when the shell cannot read it (an unmatched quote).
func shellWords(_ line: String) throws -> [String] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    // Each word ends with a NUL byte, which no word can hold.
    process.arguments = ["-c", "printf '%s\\0' " + line]
    let output = Pipe(), errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let words = output.fileHandleForReading.readDataToEndOfFile()
    let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw UnreadableByShell(line: line, said: said) }
    return words.split(separator: 0, omittingEmptySubsequences: false).dropLast().map { String(decoding: $0, as: UTF8.self) }
}

/// A line `/bin/sh` cannot read as words, with what it said.
struct UnreadableByShell: Error, CustomStringConvertible {
    let line: String
    let said: String
    var description: String { "sh cannot read \(line): \(said)" }
}
