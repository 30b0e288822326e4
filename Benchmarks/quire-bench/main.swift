// quire-bench: measures Quire. This file only parses the command line and
// dispatches to a subcommand; the work lives in QuireBenchKit.
import Foundation
import QuireBenchKit

/// A command line that does not make sense: exit 64 with the message and the usage.
/// Also thrown for a TRACE of the wrong kind (sync, B4x100), which is printed as its message.
struct UsageError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// One subcommand. To add one, write a `run` and list it in `subcommands`.
struct Subcommand {
    var name: String
    /// The synopsis after `quire-bench `, and what it does.
    var usage: String
    /// Gets the arguments after the subcommand name; returns the exit status.
    var run: ([String]) throws(UsageError) -> Int32
}

let subcommands = [
    Subcommand(
        name: "trace",
        usage: """
            trace FILE... [--runs N] [--json]
                Replay editing traces (.json or .json.gz, sequential or concurrent)
                through Quire's Document and check the results against endContent (or,
                for a concurrent trace, endContentSorted: the same scalars in any order,
                every replica converged). "history ms" is the replayed document encoding
                its whole history for a peer (encodeChanges), the bytes "merge" applies.
                Times are the CPU time of the measuring thread, not the wall clock.
                --runs N  timed runs after one warm-up run (default 5); the median is shown
                --json    one JSON object per line and trace instead of a table
            """,
        run: { arguments throws(UsageError) in
            let parsed = try parse(arguments, flags: ["--json"], options: ["--runs"])
            guard !parsed.positional.isEmpty else { throw UsageError(message: "trace needs at least one FILE") }
            var runs = 5
            if let value = parsed.options["--runs"] {
                guard let number = Int(value), number > 0 else {
                    throw UsageError(message: "--runs needs a positive integer, not \"\(value)\"")
                }
                runs = number
            }
            return runTrace(files: parsed.positional, runs: runs, json: parsed.flags.contains("--json"))
        }
    ),
    Subcommand(
        name: "sync",
        usage: """
            sync TRACE [--runs N] [--json]
                Time and bytes for a fresh replica to catch up with TRACE's document (one change
                per trace transaction) through the HTTP sync server on 127.0.0.1, and the changes
                per second the server accepts from 4 concurrent clients; medians over --runs N
                (default 5; the catch-up also has one warm-up run).
            """,
        run: { arguments throws(UsageError) in
            let parsed = try parse(arguments, flags: ["--json"], options: ["--runs"])
            guard parsed.positional.count == 1 else { throw UsageError(message: "sync needs one TRACE") }
            let runs = Int(parsed.options["--runs"] ?? "5") ?? 0
            guard runs > 0 else { throw UsageError(message: "--runs needs a positive integer") }
            return runSyncBenchmark(tracePath: parsed.positional[0], runs: runs, json: parsed.flags.contains("--json"))
        }
    ),
    storeSubcommand,
    writersSubcommand,
    Subcommand(name: "suite", usage: suiteUsage, run: runSuiteCommand),
]

let usage = "usage: quire-bench SUBCOMMAND [ARGUMENTS]\n       quire-bench --help\n\nsubcommands:\n"
    + subcommands.map { "  " + $0.usage.replacingOccurrences(of: "\n", with: "\n  ") }.joined(separator: "\n")

/// Splits arguments into positional ones, boolean `flags` and `options` that
/// take a value (`--runs 3`). Strict: an unknown, repeated or valueless flag
/// is a usage error. `--` ends the flags, for file names starting with `-`.
func parse(_ arguments: [String], flags: Set<String>, options: Set<String>) throws(UsageError)
    -> (positional: [String], flags: Set<String>, options: [String: String])
{
    var positional: [String] = [], seenFlags: Set<String> = [], values: [String: String] = [:]
    var rest = arguments[...]
    while let argument = rest.popFirst() {
        if argument == "--" {
            positional += rest
            break
        }
        guard argument.hasPrefix("-"), argument != "-" else {
            positional.append(argument)
            continue
        }
        guard !seenFlags.contains(argument), values[argument] == nil else {
            throw UsageError(message: "\(argument) given twice")
        }
        if flags.contains(argument) {
            seenFlags.insert(argument)
        } else if options.contains(argument) {
            guard let value = rest.popFirst() else { throw UsageError(message: "\(argument) needs a value") }
            values[argument] = value
        } else {
            throw UsageError(message: "unknown option \(argument)")
        }
    }
    return (positional, seenFlags, values)
}

@MainActor func run(_ arguments: [String]) throws(UsageError) -> Int32 {
    // --help anywhere asks for the usage, and is not an error.
    if arguments.contains("--help") || arguments.contains("-h") {
        print(usage)
        return 0
    }
    guard let name = arguments.first else { throw UsageError(message: "no subcommand given") }
    guard let subcommand = subcommands.first(where: { $0.name == name }) else {
        throw UsageError(message: "unknown subcommand \(name)")
    }
    return try subcommand.run(Array(arguments.dropFirst()))
}

do {
    exit(try run(Array(CommandLine.arguments.dropFirst())))
} catch {
    FileHandle.standardError.write(Data("error: \(error.message)\n\n\(usage)\n".utf8))
    exit(64)
}
