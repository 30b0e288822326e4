import Foundation
import QuireBenchKit

@MainActor let storeSubcommand = Subcommand(
    name: "store",
    usage: """
        store [--edits N] [--batch N] [--threads N] [--documents N] [--dir DIR] [--runs N] [--json]
            Durable edits per second on a store file in DIR (default the temporary directory):
            N single-keystroke edits one commit each (default 300), the same keystrokes --batch
            to a commit (default 50), and --threads threads on as many documents (default 8)
            sharing commits; then the time to open a store of --documents documents (default 1000).
        """,
    run: { arguments throws(UsageError) in
        let (options, json) = try parseStoreOptions(arguments)
        return runStoreBenchmark(options, json: json)
    }
)

/// `quire-bench store`: runs `StoreBenchmark` and prints its table or JSON line.
func runStoreBenchmark(_ options: StoreBenchmark.Options, json: Bool) -> Int32 {
    do {
        let result = try StoreBenchmark.run(options)
        printLine(json ? result.jsonLine : result.table)
        return 0
    } catch {
        printError("error: \(error)")
        return 1
    }
}

/// The options of `quire-bench store`, each a positive integer but `--dir`.
func parseStoreOptions(_ arguments: [String]) throws(UsageError) -> (StoreBenchmark.Options, json: Bool) {
    let parsed = try parse(arguments, flags: ["--json"], options: ["--runs", "--edits", "--batch", "--threads", "--documents", "--dir"])
    guard parsed.positional.isEmpty else { throw UsageError(message: "store takes no FILE") }
    var options = StoreBenchmark.Options()
    let numbers: [(String, WritableKeyPath<StoreBenchmark.Options, Int>)] = [
        ("--runs", \.runs), ("--edits", \.edits), ("--batch", \.batch), ("--threads", \.threads), ("--documents", \.documents),
    ]
    for (flag, keyPath) in numbers {
        options[keyPath: keyPath] = try parsed.positiveInteger(flag, default: options[keyPath: keyPath])
    }
    if let directory = parsed.options["--dir"] { options.directory = directory }
    return (options, parsed.flags.contains("--json"))
}
