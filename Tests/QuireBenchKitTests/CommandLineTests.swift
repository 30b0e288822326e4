import Foundation
import Testing

/// The `quire-bench` binary's command line: help, and usage errors that
/// stay readable (the message first, then the help of the subcommand it
/// concerns, not every subcommand's).
@Suite struct CommandLineTests {
    struct Result {
        let stdout: String
        let stderr: String
        let status: Int32
    }

    /// Runs the built `quire-bench` (beside the test bundle) with `arguments`.
    /// Only for commands that print a little: both pipes are read after it ends.
    func run(_ arguments: [String]) throws -> Result {
        let candidates = [
            Bundle.main.bundleURL.appendingPathComponent("quire-bench"),
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("quire-bench"),
        ]
        let process = Process()
        process.executableURL = candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
        process.arguments = arguments
        let output = Pipe(), error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        process.waitUntilExit()
        return Result(stdout: String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
                      stderr: String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
                      status: process.terminationStatus)
    }

    @Test func helpDescribesEverySubcommandOrTheOneNamed() throws {
        let all = try run(["--help"])
        #expect(all.status == 0 && all.stderr.isEmpty)
        for synopsis in ["trace FILE...", "sync TRACE", "store [--edits N]", "writers [--count N]", "suite [TRACE...]"] {
            #expect(all.stdout.contains(synopsis))
        }
        let suite = try run(["suite", "--help"])
        #expect(suite.status == 0)
        #expect(suite.stdout.hasPrefix("usage: quire-bench suite [TRACE...]"))
        #expect(suite.stdout.contains("--only PATTERN") && !suite.stdout.contains("writers"))
    }

    @Test func aBadOptionNamesItselfAboveItsSubcommandsHelp() throws {
        for (arguments, message) in [(["trace", "--runs", "0", "x.json"], "error: --runs needs a positive integer, not \"0\""),
                                     (["sync", "--runs", "many", "x.json"], "error: --runs needs a positive integer, not \"many\""),
                                     (["writers", "--count", "-5"], "error: --count needs a positive integer, not \"-5\""),
                                     (["store", "--frobnicate"], "error: unknown option --frobnicate")] {
            let result = try run(arguments)
            #expect(result.status == 64, "\(arguments)")
            #expect(result.stdout.isEmpty, "\(arguments)")
            #expect(result.stderr.hasPrefix(message + "\n\nusage: quire-bench " + arguments[0] + " "), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("subcommands:"), "\(arguments)")
        }
    }

    @Test func aMissingOrUnknownSubcommandListsTheSubcommands() throws {
        for (arguments, message) in [([], "error: no subcommand given"), (["bogus"], "error: unknown subcommand bogus")] {
            let result = try run(arguments)
            #expect(result.status == 64)
            #expect(result.stderr.hasPrefix(message + "\n\nusage: quire-bench SUBCOMMAND"))
            #expect(result.stderr.contains("  suite [TRACE...] [--only PATTERN] [--runs N] [--peers]\n"))
            // Synopses only: the subcommands' descriptions are for --help.
            #expect(!result.stderr.contains("Every workload"))
        }
    }

    @Test func anOnlyPatternThatMatchesNothingListsTheWorkloads() throws {
        // (Run from the package root, as `suite` must be; nothing is measured.)
        let result = try run(["suite", "--only", "no-such-workload"])
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("error: --only no-such-workload matches no workload; the workloads are "))
        for name in ["B1.1", "merge-k8-m10000", "B3.4", "B4x100", "families: "] { #expect(result.stderr.contains(name)) }
    }

    @Test func aTraceThatIsNotThereFailsBeforeAnythingRuns() throws {
        let name = "quire-bench-\(UUID().uuidString)"
        let missing = NSTemporaryDirectory() + name + ".json"
        // (--only keeps a regression from running the whole suite.)
        let result = try run(["suite", missing, "--only", name, "--runs", "1"])
        #expect(result.status == 1)
        #expect(result.stderr == "error: \(missing): no such file\n")
        #expect(result.stdout.isEmpty)
    }
}
