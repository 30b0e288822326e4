import Foundation

/// `note edit` without options: the note in a temporary file, opened with
/// `$EDITOR` (or `$VISUAL`, else `vi`), read back when the editor exits.
///
/// The file holds the title on its first line, an empty line, then the
/// body; one newline an editor adds at the end is ignored.
struct EditorSession {
    let environment: [String: String]

    func edit(title: String, body: String) throws -> (title: String, body: String) {
        let editor = environment["EDITOR"].flatMap { $0.isEmpty ? nil : $0 } ?? environment["VISUAL"] ?? "vi"
        let path = NSTemporaryDirectory() + "quire-note-\(UUID().uuidString).txt"
        try "\(title)\n\n\(body)\n".write(toFile: path, atomically: true, encoding: .utf8)
        var keepFile = false
        defer { if !keepFile { try? FileManager.default.removeItem(atPath: path) } }

        // Through the shell, so EDITOR may hold arguments ("code --wait").
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "\(editor) \"$1\"", "sh", path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CLIError.failure("the editor (\(editor)) exited with status \(process.terminationStatus); the note is unchanged")
        }
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw CLIError.failure("the editor (\(editor)) left no file at \(path); the note is unchanged")
        }
        guard var text = String(data: contents, encoding: .utf8) else {
            // What was typed is not thrown away: it can be fixed and pasted back.
            keepFile = true
            throw CLIError.failure("the editor (\(editor)) left a file that is not UTF-8 text, kept at \(path); the note is unchanged")
        }
        if text.hasSuffix("\n") { text.removeLast() }
        let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        var rest = lines.count > 1 ? Substring(lines[1]) : ""
        if rest.hasPrefix("\n") { rest.removeFirst() }
        return (String(lines[0]), String(rest))
    }
}
