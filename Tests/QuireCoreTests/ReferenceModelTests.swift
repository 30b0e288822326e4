import Testing
import QuireTestSupport
@testable import QuireCore

/// After every random local edit, text and lists must equal a plain array
/// edited the same way; UTF-16 and UTF-8 offsets must match Swift's own.
@Suite struct ReferenceModelTests {
    @Test(arguments: 1...UInt64(fuzzSeedCount(default: 20)))
    func textMatchesAnArrayOfScalars(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        var doc = Document(replica: ReplicaID(seed))
        let text = try doc.transact { tx in try tx.putObject(.root, key: "text", kind: .text) }
        var model: [Unicode.Scalar] = []
        for step in 0..<300 {
            try doc.transact { tx in
                if !model.isEmpty && Int.random(in: 0..<3, using: &rng) == 0 {
                    let start = Int.random(in: 0..<model.count, using: &rng)
                    let count = Int.random(in: 1...min(8, model.count - start), using: &rng)
                    try tx.deleteText(text, at: start, count: count)
                    model.removeSubrange(start..<(start + count))
                } else {
                    let index = Int.random(in: 0...model.count, using: &rng)
                    let inserted = randomText(&rng, maxLength: 6)
                    try tx.insertText(text, at: index, inserted)
                    model.insert(contentsOf: inserted.unicodeScalars, at: index)
                }
            }
            var view = String.UnicodeScalarView()
            view.append(contentsOf: model)
            let expected = String(view)
            try #require(try doc.text(text) == expected, "seed \(seed) step \(step)")
            let index = Int.random(in: 0...model.count, using: &rng)
            let utf16 = expected.unicodeScalars.prefix(index).reduce(0) { $0 + $1.utf16.count }
            let utf8 = expected.unicodeScalars.prefix(index).reduce(0) { $0 + $1.utf8.count }
            #expect(try doc.utf16Offset(text, index: index) == utf16)
            #expect(try doc.textIndex(text, utf16Offset: utf16) == index)
            #expect(try doc.utf8Offset(text, index: index) == utf8)
            #expect(try doc.textIndex(text, utf8Offset: utf8) == index)
        }
    }

    @Test(arguments: 1...UInt64(fuzzSeedCount(default: 10)))
    func listMatchesAnArray(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        var doc = Document(replica: ReplicaID(seed))
        let list = try doc.transact { tx in try tx.putObject(.root, key: "list", kind: .list) }
        var model: [Int64] = []
        for step in 0..<200 {
            try doc.transact { tx in
                if !model.isEmpty && Bool.random(using: &rng) {
                    let start = Int.random(in: 0..<model.count, using: &rng)
                    let count = Int.random(in: 1...min(3, model.count - start), using: &rng)
                    try tx.delete(list, at: start, count: count)
                    model.removeSubrange(start..<(start + count))
                } else {
                    let index = Int.random(in: 0...model.count, using: &rng)
                    try tx.insert(list, at: index, .int(Int64(step)))
                    model.insert(Int64(step), at: index)
                }
            }
            try #require(try doc.list(list) == model.map { .scalar(.int($0)) }, "seed \(seed) step \(step)")
        }
    }

    @Test func utf16OffsetsCountSurrogatePairs() throws {
        var doc = Document(replica: ReplicaID(1))
        let text = try doc.transact { tx in
            let text = try tx.putObject(.root, key: "t", kind: .text)
            try tx.insertText(text, at: 0, "a😀b𝄞c")
            return text
        }
        #expect(try doc.textCount(text) == 5)
        #expect(try doc.utf16Offset(text, index: 2) == 3)   // "a" + surrogate pair
        #expect(try doc.textIndex(text, utf16Offset: 2) == 1) // inside the pair: the pair's index
        #expect(try doc.utf8Offset(text, index: 3) == 6)     // "a" 1 + 😀 4 + "b" 1
        try doc.transact { tx in try tx.insertText(text, utf16Offset: 3, "-") }
        #expect(try doc.text(text) == "a😀-b𝄞c")
        try doc.transact { tx in try tx.deleteText(text, utf16Range: 4..<7) }
        #expect(try doc.text(text) == "a😀-c")
        #expect(throws: DocumentError.indexOutOfRange(index: 99, count: 5)) { try doc.textIndex(text, utf16Offset: 99) }
    }

    /// A UTF-16 range deletes every scalar it covers, even in part: a
    /// bound inside a surrogate pair takes the whole pair, at either end.
    @Test func aUTF16RangeEndingInsideASurrogatePairDeletesThePair() throws {
        var doc = Document(replica: ReplicaID(1))
        let text = try doc.transact { tx in try tx.putObject(.root, key: "t", kind: .text) }
        // "a😀b𝄞c": a 0, 😀 1..<3, b 3, 𝄞 4..<6, c 6
        for (range, left) in [(0..<2, "b𝄞c"), (2..<3, "ab𝄞c"), (1..<2, "ab𝄞c"), (2..<5, "ac"), (5..<7, "a😀b"), (2..<2, "a😀b𝄞c")] {
            var edited = doc
            try edited.transact { tx in
                try tx.insertText(text, at: 0, "a😀b𝄞c")
                try tx.deleteText(text, utf16Range: range)
            }
            #expect(try edited.text(text) == left, "\(range)")
        }
    }

    /// A text view's edit, a UTF-16 range and its replacement, goes where
    /// the range began, also when that is inside a surrogate pair (deleting
    /// the range, then inserting at its lower bound as an offset, put "!"
    /// after the "b" that followed the pair).
    @Test func aUTF16RangeIsReplacedWhereItBegins() throws {
        var doc = Document(replica: ReplicaID(1))
        let text = try doc.transact { tx in try tx.putObject(.root, key: "t", kind: .text) }
        // "a😀b𝄞c": a 0, 😀 1..<3, b 3, 𝄞 4..<6, c 6
        for (range, result) in [(2..<3, "a!b𝄞c"), (1..<3, "a!b𝄞c"), (2..<5, "a!c"), (3..<3, "a😀!b𝄞c"), (7..<7, "a😀b𝄞c!")] {
            var edited = doc
            try edited.transact { tx in
                try tx.insertText(text, at: 0, "a😀b𝄞c")
                try tx.replaceText(text, utf16Range: range, with: "!")
            }
            #expect(try edited.text(text) == result, "\(range)")
        }
        #expect(throws: DocumentError.indexOutOfRange(index: 8, count: 7)) {
            try doc.transact { tx in
                try tx.insertText(text, at: 0, "a😀b𝄞c")
                try tx.replaceText(text, utf16Range: 6..<8, with: "!")
            }
        }
    }

    /// A range whose bounds are further apart than an `Int` holds is out
    /// of range, not a trap in counting it.
    @Test func aReplacedRangeTooWideToCountThrows() throws {
        var doc = Document(replica: ReplicaID(1))
        let text = try doc.transact { tx in
            let text = try tx.putObject(.root, key: "t", kind: .text)
            try tx.insertText(text, at: 0, "abc")
            return text
        }
        #expect(throws: DocumentError.indexOutOfRange(index: -1, count: 3)) {
            try doc.transact { tx in try tx.replaceText(text, range: -1..<Int.max, with: "x") }
        }
        #expect(throws: DocumentError.indexOutOfRange(index: Int.max, count: 3)) {
            try doc.transact { tx in try tx.replaceText(text, range: 1..<Int.max, with: "x") }
        }
        #expect(try doc.text(text) == "abc")
    }

    @Test func outOfRangeEditsThrowAndChangeNothing() throws {
        var doc = Document(replica: ReplicaID(1))
        let text = try doc.transact { tx in try tx.putObject(.root, key: "t", kind: .text) }
        #expect(throws: DocumentError.self) { try doc.transact { tx in try tx.insertText(text, at: 1, "x") } }
        #expect(throws: DocumentError.self) { try doc.transact { tx in try tx.deleteText(text, at: 0, count: 1) } }
        #expect(throws: DocumentError.wrongKind(text, expected: .list, actual: .text)) {
            try doc.transact { tx in try tx.insert(text, at: 0, .null) }
        }
        #expect((try doc.allChanges()).count == 1)
    }
}
