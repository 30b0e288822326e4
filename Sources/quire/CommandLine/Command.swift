/// One command of the tool: its help text, the options it accepts, and
/// either subcommands (`quire note ...`) or the code that runs it.
///
/// Every command is a value built in one of the files of `Commands/`, and
/// listed once in `Commands.all`. A new command group (say `quire sync`)
/// is a new file there and one more entry in that list.
struct Command: Sendable {
    /// The word typed on the command line, such as `new` in `quire note new`.
    let name: String
    /// One sentence for listings and the help's OVERVIEW.
    let summary: String
    /// The USAGE line(s), without the leading `quire`, such as `note show ID [--json]`.
    var usage: [String] = []
    var arguments: [Argument] = []
    var options: [Option] = []
    var examples: [String] = []
    var subcommands: [Command] = []
    /// Runs the command; `nil` for a group that only holds subcommands.
    var run: (@Sendable (Invocation) throws -> Void)?

    /// A positional argument, for the help text.
    struct Argument: Sendable {
        let name: String
        let help: String
    }

    func subcommand(named name: String) -> Command? {
        subcommands.first { $0.name == name }
    }

    func option(named name: String) -> Option? {
        (options + [.help]).first { $0.name == name }
    }
}

/// An option such as `--json` (a flag), `--title TEXT` (one value) or
/// `--insert POS TEXT` (two values).
struct Option: Sendable {
    /// With the dashes: `--title`.
    let name: String
    /// The names of its values, for the help text; empty for a flag.
    var values: [String] = []
    let help: String
    /// Whether it may be given more than once (`--tag a --tag b`).
    var repeatable = false

    static let help = Option(name: "--help", help: "Show this help.")
    static let json = Option(name: "--json", help: "Print JSON instead of text (shapes in Specs/cli.md).")
}
