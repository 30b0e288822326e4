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

    @Test func aVersionPastTheNotesIsSaidToBeSo() throws {
        try withRunner { quire in
            let (laptop, phone) = (quire.directory + "/laptop.quire", quire.directory + "/phone.quire")
            try quire.ok(["init"], store: laptop)
            try quire.ok(["init"], store: phone)
            let id = try quire.ok(["note", "new", "--title", "T", "--body", "milk"], store: laptop).trimmingCharacters(in: .newlines)
            try quire.ok(["merge", laptop], store: phone)
            try quire.ok(["note", "edit", id, "--append", " and eggs"], store: phone)
            try quire.ok(["merge", phone], store: laptop)
            try quire.ok(["note", "edit", id, "--append", "!"], store: laptop)
            let laptopReplica = try #require(try quire.run(["status", "--json"], store: laptop).json() as? [String: Any])["replica"] as? String
            // The laptop's last change builds on the phone's, which the
            // version leaves out: but what is wrong is the counter past the note's.
            let future = "\(try #require(laptopReplica)):99"
            let result = try quire.run(["show", id, "--at", future], store: laptop)
            #expect(result.status == 1)
            #expect(result.stderr == "error: version \(future) names operations document \(id) does not have; `quire log \(id)` lists its versions\n")
        }
    }
}
