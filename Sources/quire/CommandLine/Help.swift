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
            let help = path.isEmpty ? [("help [COMMAND]", "Show a command's help, as COMMAND --help does.")] : []
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
        return sections.joined(separator: "\n\n") + "\n"
    }

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
