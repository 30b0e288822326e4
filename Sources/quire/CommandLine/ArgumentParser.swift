/// Turns the words of the command line into an `Invocation`.
///
/// Grammar: `quire [--store PATH] [--version] [--help] COMMAND [SUBCOMMAND] [ARGUMENTS AND OPTIONS]`,
/// or `quire help [COMMAND [SUBCOMMAND]]` for a command's `--help`.
/// Options may come before, between or after positional arguments; `--`
/// ends the options (every later word is positional, even `-x`); an option
/// with one value also accepts `--name=value`. `--store PATH` is accepted
/// anywhere. An unknown option is a usage error.
struct ArgumentParser {
    let root: Command

    /// What the command line asks for.
    enum Outcome {
        case run(Invocation)
        /// `--help` on a command: print its help.
        case help(Command, path: [String])
        case version
    }

    func parse(_ words: [String], environment: [String: String]) throws -> Outcome {
        var command = root
        var path: [String] = []
        var arguments: [String] = []
        var options: [(name: String, values: [String])] = []
        var storePath: String?
        var remaining = words[...]
        var optionsEnded = false
        /// `quire help COMMAND SUBCOMMAND`: the help of the command the words
        /// name, as `--help` on it prints (git and swift-argument-parser take
        /// both). `help` is a command as any other: `--help` and `--store PATH`
        /// are taken after it as anywhere else.
        var asksForHelp = false

        func usageError(_ message: String) -> CLIError { .usage(message, command: command, path: path) }

        while let word = remaining.popFirst() {
            if optionsEnded || !word.hasPrefix("-") || word == "-" {
                if !optionsEnded, !asksForHelp, path.isEmpty, arguments.isEmpty, word == "help", command.subcommand(named: word) == nil {
                    asksForHelp = true
                    continue
                }
                if asksForHelp {
                    guard let subcommand = command.subcommand(named: word) else {
                        throw usageError("help: no command \"\((["quire"] + path + [word]).joined(separator: " "))\"")
                    }
                    command = subcommand
                    path.append(word)
                    continue
                }
                // A word naming a subcommand is one only before any positional argument.
                if !optionsEnded, arguments.isEmpty, let subcommand = command.subcommand(named: word) {
                    command = subcommand
                    path.append(word)
                } else if command.run == nil {
                    throw usageError(path.isEmpty ? "unknown command \"\(word)\"" : "unknown subcommand \"\(word)\"")
                } else {
                    arguments.append(word)
                }
                continue
            }
            if word == "--" { optionsEnded = true; continue }
            var name = word
            var inlineValue: String?
            if let equals = word.firstIndex(of: "=") {
                name = String(word[..<equals])
                inlineValue = String(word[word.index(after: equals)...])
            }
            if name == "--help" || (name == "--version" && path.isEmpty) {
                // Flags, like the others: `--help=3` is a mistake, not a request for help.
                guard inlineValue == nil else { throw usageError("\(name) does not take \"=value\"") }
                return name == "--help" ? .help(command, path: path) : .version
            }
            let option: Option
            if name == "--store" {
                option = Context.storeOption
            } else if !asksForHelp, let known = command.option(named: name) {
                option = known
            } else {
                throw usageError((asksForHelp ? "help: " : "") + "unknown option \"\(name)\"")
            }
            var values: [String] = []
            if let inlineValue {
                guard option.values.count == 1 else { throw usageError("\(name) does not take \"=value\"") }
                values = [inlineValue]
            } else {
                for valueName in option.values {
                    guard let value = remaining.popFirst() else { throw usageError("\(name) needs a value for \(valueName)") }
                    values.append(value)
                }
            }
            if name == "--store" {
                guard storePath == nil else { throw usageError("--store may be given only once") }
                guard !values[0].isEmpty else { throw usageError("--store needs a path, not an empty word") }
                storePath = values[0]
                continue
            }
            if !option.repeatable, options.contains(where: { $0.name == name }) {
                throw usageError("\(name) may be given only once")
            }
            options.append((name, values))
        }
        if asksForHelp { return .help(command, path: path) }
        guard command.run != nil else {
            throw usageError(path.isEmpty ? "missing command" : "missing subcommand")
        }
        let context = Context(storePath: storePath ?? Context.defaultStorePath(environment: environment), environment: environment)
        return .run(Invocation(command: command, path: path, arguments: arguments, options: options, context: context))
    }
}
