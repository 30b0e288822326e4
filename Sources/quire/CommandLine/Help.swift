/// The `--help` text of a command: overview, usage, arguments, options,
/// subcommands and examples, in that order, with aligned columns.
enum Help {
    static func text(for command: Command, path: [String]) -> String {
        let prefix = (["quire"] + path).joined(separator: " ")
        var sections = ["OVERVIEW: \(command.summary)"]
        let usage = command.usage.isEmpty ? [command.subcommands.isEmpty ? "" : "COMMAND"] : command.usage
        sections.append("USAGE: " + usage.map { "\(prefix) \($0)" }.joined(separator: "\n       "))
        if !command.arguments.isEmpty {
            sections.append("ARGUMENTS:\n" + columns(command.arguments.map { ($0.name, $0.help) }))
        }
        if !command.subcommands.isEmpty {
            let help = path.isEmpty ? [("help [COMMAND [SUBCOMMAND]]", "Show a command's help, as COMMAND [SUBCOMMAND] --help does.")] : []
            sections.append("COMMANDS:\n" + columns(command.subcommands.map { ($0.name, $0.summary) } + help))
        }
        var options = command.options
        if path.isEmpty { options = [Context.storeOption, Option(name: "--version", help: "Print the version of quire.")] + options }
        options.append(.help)
        sections.append("OPTIONS:\n" + columns(options.map { option in
            let values = option.values.joined(separator: " ")
            return (values.isEmpty ? option.name : "\(option.name) \(values)", option.help)
        }))
        if !command.examples.isEmpty {
            sections.append("EXAMPLES:\n" + command.examples.map { "  \($0)" }.joined(separator: "\n"))
        }
        if path.isEmpty { sections.append("EXIT STATUS:\n" + columns(exitStatuses)) }
        return sections.joined(separator: "\n\n") + "\n"
    }

    /// What a script needs to tell outcomes apart (Specs/cli.md, "Exit
    /// codes"), said once, in `quire --help`: every command exits so.
    private static let exitStatuses = [
        ("0", "Success."),
        ("\(CLIError.failureExitCode)", "Failure: standard error says what went wrong and what to do. A command that could do part of its work "
            + "(sync, merge, compact, note list) does it, says what it left out, and exits so."),
        ("\(CLIError.usageExitCode)", "Usage error: the command line is wrong (standard error adds the command's usage); nothing was done."),
        ("128+N", "`quire note edit` ended by signal N once the editor had exited; the file the editor left is kept, its path printed."),
    ]

    /// The short form printed with a usage error.
    static func usage(for command: Command, path: [String]) -> String {
        let prefix = (["quire"] + path).joined(separator: " ")
        let usage = command.usage.isEmpty ? ["COMMAND"] : command.usage
        var text = "usage: " + usage.map { "\(prefix) \($0)" }.joined(separator: "\n       ")
        if !command.subcommands.isEmpty {
            text += "\ncommands: " + command.subcommands.map(\.name).joined(separator: ", ")
        }
        return text + "\nSee '\(prefix) --help'.\n"
    }

    private static func columns(_ rows: [(String, String)]) -> String {
        Table(rows: rows.map { [$0.0, $0.1] }, indent: 2).render()
    }
}
