/// The errors the tool reports itself: every one becomes `error: ...` on
/// standard error and an exit code (Specs/cli.md, "Exit codes").
enum CLIError: Error {
    /// The command line is wrong: exit 64, with the command's usage.
    case usage(String, command: Command, path: [String])
    /// The command could not do its work: exit 1.
    case failure(String)

    static let usageExitCode: Int32 = 64
    static let failureExitCode: Int32 = 1
}
