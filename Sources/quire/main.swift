// quire: the command-line tool of a Quire store. Everything is in the
// folders beside this file; Specs/cli.md describes every command.
import Foundation

exit(QuireTool.run(argv: (1..<Int(CommandLine.argc)).map { CommandLine.unsafeArgv[$0] },
                   environment: ProcessInfo.processInfo.environment))
