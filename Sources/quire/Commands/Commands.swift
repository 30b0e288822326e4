/// Every top-level command, in the order `quire --help` lists them. A new
/// command group is a new file in this folder and one entry here.
enum Commands {
    static let all: [Command] = [
        StoreCommands.initialize, StoreCommands.status, StoreCommands.backup, CompactCommand.command, NoteCommands.group,
        HistoryCommands.log, HistoryCommands.heads, HistoryCommands.versionVector, HistoryCommands.show,
        HistoryCommands.diff, HistoryCommands.blame, ConflictsCommand.command,
        MergeCommand.command, InspectCommand.command, SyncCommands.serve, SyncCommands.sync,
        DemoCommand.command,
    ]
}
