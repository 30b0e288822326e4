import JSONText
import Testing

/// The exact bytes the writer prints: scripts read `quire --json` and the
/// `quire-bench` report lines, so a changed byte is a broken consumer.
@Suite struct JSONValueTests {
    @Test func quotesAndBackslashesAreEscaped() {
        #expect(JSONValue.quoted(#"say "hi" \ bye"#) == #""say \"hi\" \\ bye""#)
    }

    @Test func controlCharactersAreEscaped() {
        #expect(JSONValue.quoted("a\nb\rc\td") == #""a\nb\rc\td""#)
        #expect(JSONValue.quoted("\u{0}\u{8}\u{1B}\u{1F}") == #""\u0000\u0008\u001b\u001f""#)
        // JSON allows DEL and the C1 controls raw, but a terminal may obey them (U+009B starts a sequence).
        #expect(JSONValue.quoted("\u{7F}\u{80}\u{9B}\u{9F}\u{A0}") == "\"\\u007f\\u0080\\u009b\\u009f\u{A0}\"")
    }

    @Test func nonASCIIAndEmojiPassThrough() {
        #expect(JSONValue.quoted("café ü 日本 \u{2028} 👩‍👩‍👧 🇫🇷") == "\"café ü 日本 \u{2028} 👩‍👩‍👧 🇫🇷\"")
        #expect(JSONValue.string("é").compact == "\"é\"")
    }

    @Test func scalars() {
        #expect(JSONValue.null.compact == "null")
        #expect(JSONValue.bool(true).compact == "true")
        #expect(JSONValue.bool(false).indented == "false")
        #expect(JSONValue.integer(-42).compact == "-42")
        #expect(JSONValue.integer(Int64.min).compact == "-9223372036854775808")
        #expect(JSONValue.integer(UInt64.max) == .integer(Int64.max))
    }

    @Test func wholeDoublesPrintAsIntegers() {
        #expect(JSONValue.double(3).compact == "3")
        #expect(JSONValue.double(-0.0).compact == "0")
        #expect(JSONValue.double(123_456_789).compact == "123456789")
        #expect(JSONValue.double(999_999_999_999_999).compact == "999999999999999")
        // From 10^15 on, Swift's own form.
        #expect(JSONValue.double(1e15).compact == "1000000000000000.0")
        #expect(JSONValue.double(1e16).compact == "1e+16")
    }

    @Test func fractionalDoublesPrintInShortestForm() {
        #expect(JSONValue.double(1.5).compact == "1.5")
        #expect(JSONValue.double(0.1).compact == "0.1")
        #expect(JSONValue.double(-2.125).compact == "-2.125")
        #expect(JSONValue.double((14.6089 * 1000).rounded() / 1000).compact == "14.609")
        #expect(JSONValue.double(1e-7).compact == "1e-07")
    }

    @Test func objectKeysAreSorted() {
        let object = JSONValue.object(["b": .integer(2), "a": .integer(1), "B": .null])
        #expect(object.compact == #"{"B": null, "a": 1, "b": 2}"#)
        #expect(object.indented == """
            {
              "B": null,
              "a": 1,
              "b": 2
            }
            """)
    }

    @Test func orderedObjectKeepsTheOrderGiven() {
        let fields = JSONValue.orderedObject([("b", .integer(2)), ("a", .integer(1)), ("c", .array([]))])
        #expect(fields.compact == #"{"b": 2, "a": 1, "c": []}"#)
        #expect(fields.indented == """
            {
              "b": 2,
              "a": 1,
              "c": []
            }
            """)
    }

    @Test func keysAreEscapedLikeStrings() {
        #expect(JSONValue.object(["a\"\n": .bool(true)]).compact == #"{"a\"\n": true}"#)
        #expect(JSONValue.orderedObject([("\\", .null)]).indented == "{\n  \"\\\\\": null\n}")
    }

    @Test func emptyArraysAndObjects() {
        for empty in [JSONValue.array([]), .object([:]), .orderedObject([])] {
            #expect(empty.compact == empty.indented)
        }
        #expect(JSONValue.array([]).compact == "[]")
        #expect(JSONValue.object([:]).compact == "{}")
        #expect(JSONValue.orderedObject([]).compact == "{}")
    }

    @Test func nestedValuesIndentTwoSpacesPerLevel() {
        let value = JSONValue.object([
            "list": .array([.integer(1), .array([.string("x")]), .object(["k": .object([:])])]),
            "empty": .array([]),
        ])
        #expect(value.indented == """
            {
              "empty": [],
              "list": [
                1,
                [
                  "x"
                ],
                {
                  "k": {}
                }
              ]
            }
            """)
        #expect(value.compact == #"{"empty": [], "list": [1, ["x"], {"k": {}}]}"#)
    }

    @Test func equality() {
        #expect(JSONValue.orderedObject([("a", .integer(1))]) == .orderedObject([("a", .integer(1))]))
        #expect(JSONValue.orderedObject([("a", .integer(1)), ("b", .null)]) != .orderedObject([("b", .null), ("a", .integer(1))]))
        #expect(JSONValue.object(["a": .integer(1)]) != .orderedObject([("a", .integer(1))]))
        #expect(JSONValue.integer(1) != .double(1))
    }

    /// `quire log --json` writes its array an element at a time: the
    /// pieces make the same bytes as the whole array indented.
    @Test func anArrayWrittenAnElementAtATimeIsTheArrayIndented() {
        let element = JSONValue.object(["id": .string("1@a"), "parents": .array([.string("x"), .string("y")]), "empty": .array([])])
        for elements in [[], [JSONValue.integer(1)], [element, .null, element, .string("z")]] {
            var pieces = ""
            JSONValue.indentedArray(elements) { pieces += $0 }
            #expect(pieces == JSONValue.array(elements).indented)
        }
    }
}
