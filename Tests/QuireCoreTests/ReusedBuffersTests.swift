import Testing
@testable import QuireCore

/// `ReusedArray` and `ReusedText` keep what they held before an emptying in
/// their buffers: these check that it never shows, and that copies stay apart.
@Suite struct ReusedBuffersTests {
    @Test func aReusedArrayEmptiedAndRefilledHoldsOnlyTheNewElements() {
        var array = ReusedArray<Int>()
        for value in [1, 2, 3] { array.append(value) }
        array.removeAll()
        #expect(array.isEmpty)
        #expect(Array(array) == [])
        array.append(7)
        #expect(Array(array) == [7])
        #expect(array.indices == 0..<1)
        #expect(array[0] == 7)
        // Past the elements left: appended again.
        for value in [8, 9, 10] { array.append(value) }
        #expect(Array(array) == [7, 8, 9, 10])
    }

    @Test func aCopyOfAReusedArrayKeepsItsElementsWhenTheOriginalIsRefilled() {
        var array = ReusedArray<Int>()
        for value in [1, 2, 3] { array.append(value) }
        let copy = array
        array.removeAll()
        array.append(9)
        #expect(Array(copy) == [1, 2, 3])
        #expect(Array(array) == [9])
    }

    @Test func aReusedTextHoldsOnlyTheTextAppendedSinceItWasEmptied() {
        var text = ReusedText()
        text.buffer.append(contentsOf: "abc".unicodeScalars)
        text.removeAll()
        #expect(text.range.isEmpty)
        text.buffer.append(contentsOf: "de".unicodeScalars)
        #expect(String(scalars: text.buffer[text.range]) == "de")
        let copy = text
        text.removeAll()
        text.buffer.append(contentsOf: "x".unicodeScalars)
        #expect(String(scalars: copy.buffer[copy.range]) == "de")
        #expect(String(scalars: text.buffer[text.range]) == "x")
    }

    @Test func aReusedTextIsEmptiedForRealOnceItIsWideOrHoldsTheBytesItReuses() {
        var text = ReusedText()
        text.buffer.append(contentsOf: "a→".unicodeScalars)
        text.removeAll()
        #expect(text.buffer.count == 0 && text.buffer.form == .oneByte)
        text.buffer.append(contentsOf: "b".unicodeScalars)
        #expect(String(scalars: text.buffer[text.range]) == "b")

        text.buffer.append(contentsOf: String(repeating: "c", count: ReusedText.reusedBytes - 2).unicodeScalars)
        text.removeAll()
        #expect(text.buffer.count == ReusedText.reusedBytes - 1 && text.range.isEmpty)
        text.buffer.append(contentsOf: "d".unicodeScalars)
        text.removeAll()
        #expect(text.buffer.count == 0 && text.range.isEmpty)
    }
}
