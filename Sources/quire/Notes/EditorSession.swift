import Foundation

/// `note edit` without options: the note in a temporary file, opened with
/// `$EDITOR` (or `$VISUAL`, else `vi`), read back when the editor exits.
///
/// The file holds the title on its first line, an empty line, then the
/// body; one newline an editor adds at the end is ignored. It is removed
/// once `save` has stored what the editor left, and kept (its path in the
/// error) when that fails, or when the editor changed it and then exited
/// with an error, so that nothing typed is lost.
struct EditorSession {
    let environment: [String: String]

    /// `noteID` names the note in the advice given when the editor leaves
    /// the file empty.
    func edit(noteID: String, title: String, body: String, save: (_ title: String, _ body: String) throws -> Void) throws {
        // An empty variable (`VISUAL=` in a profile) names no editor: it is passed over, as an unset one.
        let editor = [environment["EDITOR"], environment["VISUAL"]].lazy.compactMap { $0 }.first { !$0.isEmpty } ?? "vi"
        let folder = NSTemporaryDirectory()
        let path = folder + "quire-note-\(UUID().uuidString).txt"
        let written = "\(title)\n\n\(body)\n"
        if let reason = Self.writeNewPrivateFile(written, at: path) {
            throw CLIError.failure("cannot write the note to a file for the editor, \(path): \(reason); the note is unchanged: "
                + "make room in \(folder), or set TMPDIR to a folder with room that you may write to")
        }
        var keepFile = false
        defer { if !keepFile { try? FileManager.default.removeItem(atPath: path) } }

        // Through the shell, so EDITOR may hold arguments ("code --wait").
        // The shell traps Ctrl-C and Ctrl-\ (see runShell) so as to wait on
        // for an editor that handles them, which a trap does not change.
        let status = try Self.runShell("trap : INT QUIT; \(editor) \"$1\"", arguments: [path])
        // From here until the edit is saved, it lives only in the file, and
        // applying a long one takes a while: Ctrl-C then must not leave it
        // in the temporary folder unnamed (a signal skips the removal above).
        let handlersBefore = Self.sayOnTerminatingSignals("\nerror: interrupted before the edit was surely saved; what the editor left is kept at \(path)\n")
        defer { for (number, handler) in handlersBefore { signal(number, handler) } }
        guard status == 0 else {
            // An editor quit with an error (vim's :cq) or that failed after a
            // save: the note is not changed, but what was typed is not lost.
            keepFile = FileManager.default.contents(atPath: path).map { $0 != Data(written.utf8) } ?? false
            // The shell's own statuses: it found no such command (127), or
            // could not run the one it found (126). A person who set EDITOR
            // to an editor of another machine needs to hear that, not a number.
            if !keepFile, let notRun = [126: "could not be run", 127: "was not found"][status] {
                throw CLIError.failure("the editor (\(editor)) \(notRun) (the shell's status \(status)); the note is unchanged: "
                    + "set EDITOR to an editor this machine has (nano, vi, `code --wait`), or edit with options (`quire note edit --help`)")
            }
            let kept = keepFile ? " and left a changed file, kept at \(path)" : ""
            throw CLIError.failure("the editor (\(editor)) exited with status \(status)\(kept); the note is unchanged")
        }
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw CLIError.failure("the editor (\(editor)) left no file at \(path); the note is unchanged")
        }
        // Exactly as left (`String(data:encoding:)` drops a leading byte order
        // mark, one a title began with too), less a mark the editor added.
        guard var text = String(validating: contents, as: UTF8.self) else {
            // What was typed is not thrown away: it can be fixed and pasted back.
            keepFile = true
            throw CLIError.failure("the editor (\(editor)) left a file that is not UTF-8 text (\(Context.firstNonUTF8Byte(in: contents)) is not), "
                + "kept at \(path); the note is unchanged")
        }
        if text.unicodeScalars.first == "\u{FEFF}" && written.unicodeScalars.first != "\u{FEFF}" { text.unicodeScalars.removeFirst() }
        text = Self.lineFeedsForCRLF(text, written: written)
        // Nothing edited, nothing to save: read back, a title another replica
        // wrote on several lines would lose all but its first to the body.
        // Compared by scalars: a String's == takes "é" composed and
        // decomposed for equal, and an editor that recomposed it changed it.
        guard !text.unicodeScalars.elementsEqual(written.unicodeScalars) else { return }
        // A file emptied whole (an editor saves an empty buffer as nothing,
        // or as one line break) most likely means "never mind", as an empty
        // message does to `git commit`, not "empty the note": that is said,
        // with how to do it on purpose. The file's lines kept but blanked
        // empty the note, as typed. A note already empty has nothing to lose;
        // one whose title or body is only spaces or line breaks has.
        if (text.isEmpty || text == "\n") && !(title.isEmpty && body.isEmpty) {
            throw CLIError.failure("the editor (\(editor)) left the file empty; the note is unchanged (an empty file cancels the edit): "
                + "to empty the note, blank its lines but keep them (the title's and the empty one after it); "
                + "to empty its body, `\(ShellWords.command("quire", "note", "edit", noteID, "--body", ""))`; "
                + "to remove the note, `\(ShellWords.command("quire", "note", "rm", noteID))`")
        }
        let (newTitle, newBody) = Self.titleAndBody(text)
        do { try save(newTitle, newBody) } catch {
            keepFile = true
            throw CLIError.failure("\(error); what the editor left is kept at \(path)")
        }
    }

    /// `text`, the file as the editor left it, with its line breaks "\n"
    /// when every one of them is "\r\n" and `written`, the file as written
    /// from the note, held no carriage return: an editor set to save CRLF
    /// line ends (as on Windows) would otherwise add a "\r" to every line
    /// of the note, which the user did not type. A note that held a "\r"
    /// (another replica wrote it) is read as the editor left it, its bytes
    /// its own, and so is a file with "\n" alone on some line: a "\r" there
    /// was not the editor's way of ending lines.
    private static func lineFeedsForCRLF(_ text: String, written: String) -> String {
        guard !written.unicodeScalars.contains("\r") else { return text }
        // By scalars: "\r\n" is one Character, in which a search for "\n" finds none.
        let scalars = Array(text.unicodeScalars)
        let lineFeeds = scalars.indices.filter { scalars[$0] == "\n" }
        guard !lineFeeds.isEmpty, lineFeeds.allSatisfy({ $0 > 0 && scalars[$0 - 1] == "\r" }) else { return text }
        var withLineFeeds = String.UnicodeScalarView()
        for (index, scalar) in scalars.enumerated() where !(scalar == "\r" && index + 1 < scalars.count && scalars[index + 1] == "\n") {
            withLineFeeds.append(scalar)
        }
        return String(withLineFeeds)
    }

    /// The title and body in the file as the editor left it: the first
    /// line, then the rest after an empty line, less one line break at the
    /// end. The file's line breaks are the one ending the title, `\n` or
    /// `\r\n`: an editor may save with CRLF line ends. A title that ends
    /// with a carriage return (another replica wrote it) is followed by the
    /// `\n` of the empty line as written, where a CRLF file has `\r\n`.
    static func titleAndBody(_ text: String) -> (title: String, body: String) {
        // By scalars: "\r\n" is one Character, in which a search for "\n" finds none.
        let scalars = Array(text.unicodeScalars)
        guard let firstBreak = scalars.firstIndex(of: "\n") else { return (text, "") }
        let isCRLF = firstBreak > 0 && scalars[firstBreak - 1] == "\r" && scalars[(firstBreak + 1)...].first != "\n"
        let titleEnd = isCRLF ? firstBreak - 1 : firstBreak
        let lineBreak = scalars[titleEnd...firstBreak]
        var rest = scalars[(firstBreak + 1)...]
        if rest.starts(with: lineBreak) { rest.removeFirst(lineBreak.count) }
        if rest.reversed().starts(with: lineBreak.reversed()) { rest.removeLast(lineBreak.count) }
        return (String(String.UnicodeScalarView(scalars[..<titleEnd])), String(String.UnicodeScalarView(rest)))
    }

    /// From now on, Ctrl-C, a kill's SIGTERM and a closed terminal's SIGHUP
    /// end this process having written `message` to standard error (exit
    /// 128 + the signal), as they would end it without; one ignored when it
    /// began (`nohup`) stays ignored. Returns the handlers to put back.
    private static func sayOnTerminatingSignals(_ message: String) -> [(number: Int32, handler: __sighandler_t?)] {
        terminatingSignalMessage.deallocate()
        terminatingSignalMessage = UnsafeMutableBufferPointer.allocate(capacity: message.utf8.count)
        _ = terminatingSignalMessage.initialize(from: message.utf8)
        var before: [(number: Int32, handler: __sighandler_t?)] = []
        for number in [SIGINT, SIGTERM, SIGHUP] {
            let previous = signal(number, writeMessageAndExit)
            if isIgnore(previous) { signal(number, SIG_IGN) }
            before.append((number, previous))
        }
        return before
    }

    /// Writes `text` to a new file at `path` that only this user may read
    /// (a note may be private, and the temporary folder is everyone's), and
    /// returns nil, or why it could not as the system says it (a full disk,
    /// a folder that is missing), having removed what it began.
    private static func writeNewPrivateFile(_ text: String, at path: String) -> String? {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return String(cString: strerror(errno)).lowercased() }
        var failure = Output.write(text, to: descriptor)
        if close(descriptor) != 0 && failure == nil { failure = errno }
        guard let failure else { return nil }
        unlink(path)
        return String(cString: strerror(failure)).lowercased()
    }

    /// Runs `script` with `sh -c`, on this process's standard input, output
    /// and error, and returns its exit status (128 + the signal if one
    /// ended it). It waits for the shell only, not for what the editor
    /// leaves running (an editor's server): Foundation's `Process` learns of
    /// an exit only once every process holding a descriptor it made has
    /// ended, and so waited for those too.
    ///
    /// Ctrl-C and Ctrl-\ typed meanwhile reach every process of the
    /// terminal's foreground group, this one too, while the editor handles
    /// them (vim running a `:!` command, a GUI editor started from the
    /// terminal) and goes on: this process ignores them until the shell
    /// exits, as git does, instead of dying and leaving what the editor
    /// then saves out of the note. The shell starts with them as this
    /// process was started with.
    private static func runShell(_ script: String, arguments: [String]) throws -> Int32 {
        var arguments = (["/bin/sh", "-c", script, "sh"] + arguments).map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        let terminalSignals = [SIGINT, SIGQUIT]
        let startHandlers = terminalSignals.map { signal($0, SIG_IGN) }
        defer { for (number, handler) in zip(terminalSignals, startHandlers) { signal(number, handler) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var setToDefault = sigset_t()
        sigemptyset(&setToDefault)
        for (number, handler) in zip(terminalSignals, startHandlers) where !isIgnore(handler) { sigaddset(&setToDefault, number) }
        posix_spawnattr_setsigdefault(&attributes, &setToDefault)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/sh", nil, &attributes, &arguments, environ)
        guard spawned == 0 else { throw CLIError.failure("cannot run /bin/sh: \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw CLIError.failure("cannot wait for the editor: \(String(cString: strerror(errno)))") }
        }
        let endingSignal = status & 0x7F
        return endingSignal == 0 ? (status >> 8) & 0xFF : 128 + endingSignal
    }

    private static func isIgnore(_ handler: __sighandler_t?) -> Bool {
        handler.map { unsafeBitCast($0, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self) } ?? false
    }
}

/// What `sayOnTerminatingSignals` has its handler write, set before the
/// handler is installed: a signal handler may only write bytes and exit.
nonisolated(unsafe) private var terminatingSignalMessage = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 0)

/// The handler of `sayOnTerminatingSignals`.
private func writeMessageAndExit(_ number: Int32) {
    _ = write(STDERR_FILENO, terminatingSignalMessage.baseAddress, terminatingSignalMessage.count)
    _exit(128 + number)
}
