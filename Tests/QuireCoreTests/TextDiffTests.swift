import Testing
import QuireTestSupport
@testable import QuireCore

@Suite struct TextDiffTests {
    func apply(_ edits: [TextDiff.Edit], to old: [Character], new: [Character]) -> [Character] {
        var result = old
        for edit in edits {
            switch edit {
            case let .delete(at, count): result.removeSubrange(at..<(at + count))
            case let .insert(at, count, from): result.insert(contentsOf: new[from..<(from + count)], at: at)
            }
        }
        return result
    }

    @Test func smallEditsGiveSmallScripts() {
        let old = Array("The quick brown fox")
        let new = Array("The quick red fox!")
        let edits = TextDiff.edits(from: old, to: new)
        #expect(apply(edits, to: old, new: new) == new)
        let touched = edits.reduce(0) { total, edit in
            switch edit { case .delete(_, let c), .insert(_, let c, _): total + c }
        }
        #expect(touched <= 9)  // "brown" -> "red" (at most 5 + 3) and "!"
    }

    @Test func randomPairsRoundTrip() {
        var rng = SeededGenerator(seed: 5)
        for _ in 0..<300 {
            let old = (0..<Int.random(in: 0..<40, using: &rng)).map { _ in "abc".randomElement(using: &rng)! }
            var new = old
            for _ in 0..<Int.random(in: 0..<6, using: &rng) {
                if !new.isEmpty && Bool.random(using: &rng) { new.remove(at: Int.random(in: 0..<new.count, using: &rng)) }
                else { new.insert("xyz".randomElement(using: &rng)!, at: Int.random(in: 0...new.count, using: &rng)) }
            }
            #expect(apply(TextDiff.edits(from: old, to: new), to: old, new: new) == new)
        }
    }

    @Test func setTextKeepsConcurrentEditsElsewhere() throws {
        var a = Document(replica: ReplicaID(1))
        let body = try a.transact { tx in
            let body = try tx.putObject(.root, key: "body", kind: .text)
            try tx.insertText(body, at: 0, "first line\nsecond line\n")
            return body
        }
        var b = Document(replica: ReplicaID(2))
        try b.apply((try a.allChanges()))
        try a.transact { tx in try tx.setText(body, to: "first line, edited\nsecond line\n") }
        try b.transact { tx in try tx.insertText(body, at: 23, "third line\n") }
        try a.apply(b.changes(since: a.versionVector))
        try b.apply(a.changes(since: b.versionVector))
        #expect(try a.text(body) == "first line, edited\nsecond line\nthird line\n")
        #expect(try b.text(body) == a.text(body))
    }
}
