import Testing
@testable import QuireCore

/// `ReusedText` keeps the texts it held before an emptying in its buffer:
/// these check that they never show, and that copies stay apart.
@Suite struct ReusedTextTests {
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

    /// Copied whole at some calls of the merge loop: up to 128 bytes LLVM
    /// copies in line, past them through a `memcpy` call (230 K instructions
    /// of sveltecomponent's merge when the text's start took 8 bytes more).
    @Test func aChangeReadStaysWithin128Bytes() {
        #expect(MemoryLayout<ReusedText>.size == MemoryLayout<ScalarStorage>.stride)
        #expect(MemoryLayout<ChangeDecoder.Current>.size <= 128)
    }
}
