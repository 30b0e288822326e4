import Foundation
import Quire

/// Parses the command line, runs the command, and turns its outcome into
/// an exit code: 0 success, 1 failure, 64 usage error (Specs/cli.md).
enum QuireTool {
    static let version = "0.1.0"

    static let root = Command(
        name: "quire",
        summary: "Notes that you edit offline on several machines and merge without losing anything.",
        usage: ["[--store PATH] COMMAND [ARGUMENTS] [OPTIONS]"],
        examples: ["quire init", "quire note new --title \"Groceries\" --body \"milk\"", "quire note list", "quire log 0190f1c2"],
        subcommands: Commands.all)

    /// Runs the command line's words as given to the process. Each must be
    /// UTF-8: `CommandLine.arguments` turns other bytes into U+FFFD, which
    /// a note's text would then keep for good, so such a word is refused.
    static func run(argv: [UnsafeMutablePointer<CChar>?], environment: [String: String]) -> Int32 {
        var words: [String] = []
        for (index, raw) in argv.enumerated() {
            guard let raw, let word = String(validatingCString: raw) else {
                let shown = raw.map { String(cString: $0) } ?? ""
                writeError("error: argument \(index + 1) (\"\(shown)\") is not UTF-8 text; quire reads its arguments as UTF-8\n")
                return CLIError.usageExitCode
            }
            words.append(word)
        }
        return run(words, environment: environment)
    }

    static func run(_ words: [String], environment: [String: String]) -> Int32 {
        do {
            switch try ArgumentParser(root: root).parse(words, environment: environment) {
            case .version:
                print("quire \(version)")
            case let .help(command, path):
                print(Help.text(for: command, path: path), terminator: "")
            case .run(let invocation):
                do { try invocation.command.run!(invocation) } catch let error as DatabaseError {
                    // The file it names: `merge` reads another store than --store.
                    throw error.file.map { CLIError.failure(Context.storeFailureMessage(error, path: $0)) } ?? error
                } catch let error as StoreError where error.damagedDocument != nil {
                    // One note is damaged, not the store: loading it failed before anything was written.
                    throw CLIError.failure("\(error); nothing was written, and the store's other notes are not affected; "
                        + Context.damagedNoteAdvice(path: invocation.context.storePath))
                }
                if let reason = Output.failedWrite {
                    throw CLIError.failure("cannot write to standard output (\(reason)); the command did its work, only what it printed is lost")
                }
            }
            return 0
        } catch CLIError.usage(let message, let command, let path) {
            writeError("error: \(message)\n" + Help.usage(for: command, path: path))
            return CLIError.usageExitCode
        } catch CLIError.failure(let message) {
            writeError("error: \(message)\n")
            return CLIError.failureExitCode
        } catch {
            writeError("error: \(error)\n")
            return CLIError.failureExitCode
        }
    }

    /// Errors quote what others wrote (a server's refusal, say): their
    /// control characters are shown as progress lines show them.
    private static func writeError(_ text: String) {
        // Nowhere is left to say that standard error fails: the exit code says the rest.
        _ = Output.write(TerminalText.safe(text), to: STDERR_FILENO)
    }
}
