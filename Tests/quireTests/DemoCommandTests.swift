import Foundation
import Testing

/// `quire demo` end to end, with the real binary: the story runs, ends
/// with both replicas identical, and leaves no files behind.
@Suite struct DemoCommandTests {
    @Test func theDemoTellsTheStoryAndCleansUp() throws {
        try withRunner { runner in
            let scratch = runner.directory + "/tmp"
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            let result = try runner.run(["demo"], environment: ["TMPDIR": scratch])
            #expect(result.status == 0, "\(result.stderr)")
            for line in [
                "laptop: appends \", bread\" to the Groceries body and pins it.",
                "phone syncs: sent 5, received 2 changes.",
                "  Shopping list",
                "    body:   oat milk, eggs, bread",
                "    tags:   home, errands",
                "    pinned: no",
                "  Trip  (removed; `quire note restore` brings it back with every edit)",
                "    body:   Book the train to Lyon for Friday",
                "    pinned: higher Lamport value (46 > 33)",
                "The laptop and the phone are identical: same notes, same version vectors.",
            ] {
                #expect(result.stdout.contains(line), "missing line: \(line)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch).isEmpty)
        }
    }

    @Test func theJSONSummaryHasTheMergedNotesAndTheirConflicts() throws {
        try withRunner { runner in
            let result = try runner.run(["demo", "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let summary = try #require(try result.json() as? [String: Any])
            #expect(summary["identical"] as? Bool == true)
            #expect((summary["server"] as? String)?.hasPrefix("http://127.0.0.1:") == true)
            #expect((summary["steps"] as? [String])?.isEmpty == false)
            let notes = try #require(summary["notes"] as? [[String: Any]])
            let titles = notes.compactMap { ($0["note"] as? [String: Any])?["title"] as? String }
            #expect(titles == ["Shopping list", "Trip"])
            let conflicts = try #require(notes[0]["conflicts"] as? [[String: Any]])
            // Then the body, a text merged from concurrent edits (after the conflicts).
            #expect(conflicts.map { $0["key"] as? String } == ["pinned", "body"])
            #expect((conflicts[0]["winner"] as? [String: Any])?["value"] as? Bool == false)
            #expect((notes[0]["version"] as? [String: Any])?.count == 2)
            #expect((notes[1]["note"] as? [String: Any])?["removed"] as? Bool == true)
        }
    }
}
