import Foundation
import Synchronization

/// Sync with a peer through a command that speaks `quire serve --stdio` on
/// its standard input and output, such as
/// `ssh host quire --store notes.quire serve --stdio`. The command runs
/// through `/bin/sh -c` once, for the whole session; its standard error
/// passes through to ours.
///
///     let transport = try StdioSyncTransport(command: "quire --store other.quire serve --stdio")
///     defer { transport.close() }
public final class StdioSyncTransport: SyncTransport {
    public let command: String
    private let process: Mutex<Process?>
    private let toPeer: FileHandle
    private let fromPeer: FileHandle

    public init(command: String) throws {
        // A peer that dies would otherwise kill us with SIGPIPE at the next
        // write; ignored, the write fails with EPIPE and is reported.
        signal(SIGPIPE, SIG_IGN)
        self.command = command
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        toPeer = input.fileHandleForWriting
        fromPeer = output.fileHandleForReading
        self.process = Mutex(process)
    }

    public func exchange(_ request: [UInt8], longPollSeconds: TimeInterval) async throws(SyncError) -> [UInt8] {
        // One request at a time: the answers come back in order on one stream.
        let answer: [UInt8]?
        do {
            answer = try process.withLock { process in
                guard process?.isRunning == true else { return nil }
                try StdioFraming.write(request, to: toPeer)
                return try StdioFraming.read(from: fromPeer)
            }
        } catch {
            throw .unreachable("the command \"\(command)\" failed: \(error)")
        }
        guard let answer else { throw .unreachable("the command \"\(command)\" ended without answering") }
        return answer
    }

    /// Closes the command's input and output, so that it ends, and waits
    /// for it. Its output too: a command that ignores its input and keeps
    /// writing (its answer refused as too large) would otherwise fill the
    /// pipe and block, and the wait with it.
    public func close() {
        process.withLock { process in
            try? toPeer.close()
            try? fromPeer.close()
            process?.waitUntilExit()
            process = nil
        }
    }
}
