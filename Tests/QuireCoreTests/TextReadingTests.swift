import Testing
import QuireTestSupport
@testable import QuireCore

/// `setText(_:to:editedFrom:)`: a copy edited away from the document (a
/// note in `$EDITOR`) comes back without undoing what other edits did
/// to the text meanwhile.
@Suite struct TextReadingTests {
    /// Scalars no other part of a test uses, so that each can be traced.
    struct UniqueScalars {
        var next: UInt32 = 0x4E00
        mutating func take(_ count: Int) -> [Unicode.Scalar] {
            defer { next += UInt32(count) }
            return (0..<UInt32(count)).map { Unicode.Scalar(next + $0)! }
        }
    }

    /// `scalars` with a few random deletions and insertions of new scalars.
    func randomlyEdited(_ scalars: [Unicode.Scalar], _ unique: inout UniqueScalars,
                        _ random: inout SeededGenerator) -> [Unicode.Scalar] {
        var edited = scalars
        for _ in 0..<Int.random(in: 0...5, using: &random) {
            if !edited.isEmpty && Bool.random(using: &random) {
                let start = Int.random(in: 0..<edited.count, using: &random)
                edited.removeSubrange(start..<min(edited.count, start + Int.random(in: 1...4, using: &random)))
            } else {
                edited.insert(contentsOf: unique.take(Int.random(in: 1...4, using: &random)),
                              at: Int.random(in: 0...edited.count, using: &random))
            }
        }
        return edited
    }

    func string(_ scalars: [Unicode.Scalar]) -> String { String(String.UnicodeScalarView(scalars)) }

    @Test(arguments: 1...UInt64(fuzzSeedCount(default: 300)))
    func anEditedCopyKeepsWhatOthersDidMeanwhile(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        var unique = UniqueScalars()
        var here = Document(replica: ReplicaID(1))
        let body = try here.transact { tx in try tx.putObject(.root, key: "body", kind: .text) }
        let original = unique.take(Int.random(in: 0...12, using: &random))
        try here.transact { tx in try tx.insertText(body, at: 0, string(original)) }
        var there = Document(replica: ReplicaID(2))
        try there.apply(here.changes(since: VersionVector()))

        let base = try here.reading(body)
        #expect(base.scalars == original)
        // Meanwhile: another replica edits (merged here), and so may this one.
        let theirs = randomlyEdited(original, &unique, &random)
        try there.transact { tx in try tx.setText(body, to: string(theirs)) }
        try here.apply(there.changes(since: here.versionVector))
        let concurrentHere = Bool.random(using: &random)
        if concurrentHere {
            let now = Array(try here.text(body).unicodeScalars)
            try here.transact { tx in try tx.setText(body, to: string(randomlyEdited(now, &unique, &random))) }
        }
        let before = Array(try here.text(body).unicodeScalars)

        let mine = randomlyEdited(original, &unique, &random)
        try here.transact { tx in try tx.setText(body, to: string(mine), editedFrom: base) }
        let result = Array(try here.text(body).unicodeScalars)

        // Every scalar is where one side put it: what the copy deleted from
        // the reading is gone, what it added is there, and so is everything
        // the other edits left, in the order each side had it.
        let deletedByMe = Set(original).subtracting(mine)
        let addedByMe = Set(mine).subtracting(original)
        let expected = Set(before).subtracting(deletedByMe).union(addedByMe)
        #expect(Set(result) == expected)
        #expect(result.count == expected.count)
        #expect(result.filter(Set(mine).contains) == mine.filter(expected.contains))
        #expect(result.filter(Set(before).contains) == before.filter(expected.contains))
        if !concurrentHere && theirs == original { #expect(result == mine) }

        // The change merges like any other.
        try there.apply(here.changes(since: there.versionVector))
        #expect(try there.text(body) == string(result))
    }

    @Test func anAppendMadeWhileTheCopyWasEditedStays() throws {
        var (doc, body) = try documentWithText(ReplicaID(1), "milk\neggs\nbread")
        let base = try doc.reading(body)
        try doc.transact { tx in try tx.insertText(body, at: 15, "\nbutter") }
        try doc.transact { tx in try tx.setText(body, to: "milk\neggs (a dozen)\n", editedFrom: base) }
        #expect(try doc.text(body) == "milk\neggs (a dozen)\n\nbutter")
    }

    /// Text the copy rewrote around a scalar another edit deleted goes where
    /// that scalar was; a reading of a field since replaced is a two-way set.
    @Test func insertsNextToDeletedScalarsAndReplacedFields() throws {
        var (doc, body) = try documentWithText(ReplicaID(1), "abcdef")
        let base = try doc.reading(body)
        try doc.transact { tx in try tx.deleteText(body, at: 2, count: 2) }  // "abef"
        try doc.transact { tx in try tx.setText(body, to: "abcXdef", editedFrom: base) }
        #expect(try doc.text(body) == "abXef")

        let replaced = try doc.transact { tx in try tx.putObject(.root, key: "body", kind: .text) }
        try doc.transact { tx in try tx.setText(replaced, to: "new", editedFrom: base) }
        #expect(try doc.text(replaced) == "new")
    }
}
