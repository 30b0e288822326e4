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
                its whole history for a peer (encodeChanges), the bytes "merge" applies;
                "sent B" is that history in the sync message that carries it to a fresh
                replica, zstd-compressed as sync sends it.
                Times are the CPU time of the measuring thread, not the wall clock.
                --runs N  timed runs after one warm-up run (default 5); the median is shown
                --json    one JSON object per line and trace instead of a table, with the keys
                          `trace`, `kind`, `ops`, `txns`, `ok`, `runs`, `localMs`, `mergeMs` and `loadMs`
                          (medians; the fastest and slowest runs in `localMsMin`, `localMsMax`,
                          `mergeMsMin`, `mergeMsMax`, `loadMsMin`, `loadMsMax`), `historyMs`,
                          `encodedBytes`, `sentHistoryBytes` ("sent B"), `snapshotBytes`, `memoryBytes`
                          and `failures` (the failed checks); times in ms, sizes in bytes, null where
                          not measured
            """,
        run: { arguments throws(UsageError) in
            let parsed = try parse(arguments, flags: ["--json"], options: ["--runs"])
            guard !parsed.positional.isEmpty else { throw UsageError(message: "trace needs at least one FILE") }
            let runs = try parsed.positiveInteger("--runs", default: 5)
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
            let runs = try parsed.positiveInteger("--runs", default: 5)
            return runSyncBenchmark(tracePath: parsed.positional[0], runs: runs, json: parsed.flags.contains("--json"))
        }
    ),
    Subcommand(
        name: "catch-up",
        usage: """
            catch-up FILE... [--runs N] [--json]
                A replica that holds the first half of each trace's history (merged into a fresh
                replica, saved as a snapshot and loaded) merging the rest as one bundle, as a store
                whose copy is behind takes a sync: the merge's CPU time (median of --runs N, default
                5, after one warm-up) and the heap bytes the replica gains by it ("memory B").
                --json    one JSON object per line and trace, with the keys `trace`, `heldChanges`,
                          `mergedChanges`, `bundleBytes`, `ok`, `runs`, `mergeMs`, `mergeMsMin`,
                          `mergeMsMax`, `memoryBytes` and `failures`
            """,
        run: { arguments throws(UsageError) in
            let parsed = try parse(arguments, flags: ["--json"], options: ["--runs"])
            guard !parsed.positional.isEmpty else { throw UsageError(message: "catch-up needs at least one FILE") }
            let runs = try parsed.positiveInteger("--runs", default: 5)
            return runCatchUp(files: parsed.positional, runs: runs, json: parsed.flags.contains("--json"))
        }
    ),
    storeSubcommand,
    writersSubcommand,
    notesStoreSubcommand,
    Subcommand(name: "suite", usage: suiteUsage, run: runSuiteCommand),
]

/// `quire-bench --help`: every subcommand in full.
let usage = "usage: quire-bench SUBCOMMAND [ARGUMENTS]\n       quire-bench [SUBCOMMAND] --help\n\nsubcommands:\n"
    + subcommands.map { "  " + $0.usage.replacingOccurrences(of: "\n", with: "\n  ") }.joined(separator: "\n")

/// After a usage error that names no subcommand: the synopsis of each, so
/// that the error stays in sight above a screenful of help.
let synopses = "usage: quire-bench SUBCOMMAND [ARGUMENTS]\n\nsubcommands:\n"
    + subcommands.map { "  " + ($0.usage.split(separator: "\n").first ?? "") }.joined(separator: "\n")
    + "\n\nquire-bench SUBCOMMAND --help describes one; quire-bench --help, all."

extension Subcommand {
    /// `quire-bench SUBCOMMAND --help`, and what follows a usage error in this subcommand.
    var help: String { "usage: quire-bench " + usage }
}

/// Arguments as `parse` splits them.
struct ParsedArguments {
    var positional: [String]
    var flags: Set<String>
    var options: [String: String]

    /// The value of `option`, which must be a positive integer, or `fallback` if it is not given.
    func positiveInteger(_ option: String, default fallback: Int) throws(UsageError) -> Int {
        guard let value = options[option] else { return fallback }
        guard let number = Int(value), number > 0 else {
            throw UsageError(message: "\(option) needs a positive integer, not \"\(value)\"")
        }
        return number
    }
}

/// Splits arguments into positional ones, boolean `flags` and `options` that
/// take a value (`--runs 3`). Strict: an unknown, repeated or valueless flag
/// is a usage error. `--` ends the flags, for file names starting with `-`.
func parse(_ arguments: [String], flags: Set<String>, options: Set<String>) throws(UsageError) -> ParsedArguments {
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
    return ParsedArguments(positional: positional, flags: seenFlags, options: values)
}

/// Runs the command line; returns the exit status. `--help` anywhere
/// asks for help (of the subcommand, if one is named first), and is not an error.
@MainActor func run(_ arguments: [String]) -> Int32 {
    let asksForHelp = arguments.contains("--help") || arguments.contains("-h")
    guard let name = arguments.first, name != "--help", name != "-h" else {
        if asksForHelp {
            print(usage)
            return 0
        }
        return usageError("no subcommand given", help: synopses)
    }
    guard let subcommand = subcommands.first(where: { $0.name == name }) else {
        // `quire-bench --frob`: an option where the subcommand goes, named as what it is.
        let isOption = name.hasPrefix("-") && name != "-"
        return usageError("unknown \(isOption ? "option" : "subcommand") \(name)", help: synopses)
    }
    if asksForHelp {
        print(subcommand.help)
        return 0
    }
    do {
        return try subcommand.run(Array(arguments.dropFirst()))
    } catch {
        return usageError(error.message, help: subcommand.help)
    }
}

/// Prints a usage error and the help that goes with it on standard error; returns 64.
func usageError(_ message: String, help: String) -> Int32 {
    printError("error: \(message)\n\n\(help)")
    return 64
}

exit(run(Array(CommandLine.arguments.dropFirst())))
