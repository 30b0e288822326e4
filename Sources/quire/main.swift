// quire: the command-line tool of a Quire store. Everything is in the
// folders beside this file; Specs/cli.md describes every command.
import Foundation

exit(QuireTool.run(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
