import Foundation
import Testing

/// The merge-explaining commands (`show --at`, `diff`, `blame`, `log`,
/// `conflicts`) on the cases a review found them wrong in.
@Suite struct HistoryCommandTests {
    @Test func aVersionThatIsNoVersionIsAUsageErrorWhateverTheNoteAndTheStore() throws {
        try withRunner { quire in
            try quire.ok(["init"])
            let id = try quire.ok(["note", "new", "--title", "T", "--body", "abc"]).trimmingCharacters(in: .newlines)
            let missing = quire.directory + "/missing.quire"
            for (arguments, store) in [(["show", "ffffffff", "--at", "yesterday"], quire.store),
                                       (["note", "show", id, "--at", "1@"], missing),
                                       (["diff", "ffffffff", "--from", "yesterday"], quire.store),
                                       (["diff", id, "--from", "1@0000000000000001", "--to", ","], missing)] {
                let result = try quire.run(arguments, store: store)
                #expect(result.status == 64, "quire \(arguments) exited \(result.status)")
                #expect(result.stderr.contains("usage: quire \(arguments.prefix { !$0.hasPrefix("-") }.dropLast().joined(separator: " ")) ID"),
                        "\(result.stderr)")
            }
        }
    }
}
