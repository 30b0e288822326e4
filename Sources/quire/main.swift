// quire: the command-line tool of a Quire store. Everything is in the
// folders beside this file; Specs/cli.md describes every command.
import Foundation

// `CommandLine.arguments` turns bytes that are not UTF-8 into U+FFFD, which
// a note's text would then keep for good: such an argument is refused.
let rawArguments = (1..<Int(CommandLine.argc)).map { index in
    CommandLine.unsafeArgv[index].map { String(validatingCString: $0) } ?? nil
}
if let bad = rawArguments.firstIndex(of: nil) {
    let shown = String(cString: CommandLine.unsafeArgv[bad + 1]!)
    FileHandle.standardError.write(Data("error: argument \(bad + 1) (\"\(TerminalText.safe(shown))\") is not UTF-8 text; quire reads its arguments as UTF-8\n".utf8))
    exit(CLIError.usageExitCode)
}
exit(QuireTool.run(rawArguments.compactMap { $0 }, environment: ProcessInfo.processInfo.environment))
