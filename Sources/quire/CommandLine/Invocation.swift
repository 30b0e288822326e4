/// A command as the user invoked it: its positional arguments and options,
/// checked against the command's `Option`s, and the context to run in.
struct Invocation {
    let command: Command
    /// Words from the root, such as `["note", "show"]`, for messages.
    let path: [String]
    let arguments: [String]
    /// Each option given, with its values, in the order given.
    let options: [(name: String, values: [String])]
    let context: Context

    /// Whether a flag was given.
    func flag(_ name: String) -> Bool {
        options.contains { $0.name == name }
    }

    /// The value of a one-value option given at most once (the last one wins).
    func value(_ name: String) -> String? {
        options.last { $0.name == name }?.values.first
    }

    /// Every set of values of an option, in the order given.
    func values(_ name: String) -> [[String]] {
        options.filter { $0.name == name }.map(\.values)
    }

    /// The positional argument at `index`, which the usage requires.
    func argument(_ index: Int, _ name: String) throws -> String {
        guard index < arguments.count else { throw usageError("missing \(name)") }
        return arguments[index]
    }

    /// A usage error about this command: exits with 64 and shows its usage.
    func usageError(_ message: String) -> CLIError {
        .usage(message, command: command, path: path)
    }

    /// Checks that at most `count` positional arguments were given.
    func expectArguments(atMost count: Int) throws {
        if arguments.count > count {
            throw usageError("unexpected argument \"\(arguments[count])\"")
        }
    }

    /// An integer option value or argument, or a usage error naming it.
    func integer(_ text: String, _ what: String) throws -> Int {
        guard let number = Int(text), number >= 0 else {
            throw usageError("\(what) must be a whole number of 0 or more, not \"\(text)\"")
        }
        return number
    }
}
