import Foundation
import Quire
import QuireTestSupport
import Testing

/// A program that embeds Quire learns what a `quire` process commits to its
/// file: the notes app showing a note while `quire` edits or syncs it.
@Suite struct OutsideCommitCommandTests {
    @Test func aNoteEditedByQuireMakesAnOutsideEvent() async throws {
        try await withRunner { quire in
            try quire.ok(["init"])
            let rawID = try quire.ok(["note", "new", "--title", "Groceries", "--body", "milk"]).trimmingCharacters(in: .newlines)
            let id = try #require(DocumentID(rawValue: rawID))
            let app = try DocumentStore(path: quire.store)
            guard case .object(.text, let body)? = try app.read(id, { try $0.get(.root, key: "body") }) else {
                Issue.record("the note has no body text")
                return
            }
            app.watchOutsideCommits(every: 0.01)
            let events = app.events(of: id)

            try quire.ok(["note", "edit", rawID, "--append", " and eggs"])
            let event = try #require(await nextElement(of: events))
            #expect(event.origin == .outside)
            #expect(event.changedObjects.contains(body))
            #expect(try event.versionVector == app.versionVector(id))
            #expect(try app.read(id) { try $0.text(body) } == "milk and eggs")
            try app.close()
        }
    }
}
