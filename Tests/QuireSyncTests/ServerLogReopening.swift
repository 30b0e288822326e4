import Foundation
import QuireSync

/// Opens the server log at `path` again after a test let go of the one it
/// had open there, waiting up to 10 s for the old lock to go.
///
/// Closing a log closes its lock file (`PATH-lock`), but a process another
/// test spawns at that moment holds a copy of every descriptor from its
/// fork until its exec closes them (they are close-on-exec), and on a
/// loaded machine that can take a while: the lock outlives the log, and an
/// immediate reopen fails with `OpenError.inUse`.
func reopenServerLog(_ path: String) throws -> ServerLog {
    let deadline = Date().addingTimeInterval(10)
    while true {
        do {
            return try ServerLog(path: path)
        } catch ServerLog.OpenError.inUse where Date() < deadline {
            usleep(10_000)
        }
    }
}
