// Buffers that a reader fills again for each value it reads (a merge's
// decoder, once a change), so that emptying one is a store, not a removal.
//
// An `Array` cannot be emptied, keeping its buffer, for less than about 55
// instructions: `removeLast` checks the buffer's uniqueness at each
// element, `removeAll(keepingCapacity: true)` goes through the general
// `replaceSubrange` (and a `memmove` of nothing). A merge emptied a
// change's edits and text, and a chain's text, that way once a change or
// chain: 610 K instructions, 1.6% of sveltecomponent's merge.

/// An array whose elements are overwritten from one value to the next:
/// emptying it stores a count of zero and leaves the elements in its
/// buffer, for the next appends to overwrite. Meant for elements that hold
/// no references: those past `count` are released only when overwritten.
struct ReusedArray<Element>: RandomAccessCollection {
    /// The elements, then the ones left from before the last emptying.
    private var buffer: [Element] = []
    private(set) var count = 0

    var startIndex: Int { 0 }
    var endIndex: Int { count }
    var indices: Range<Int> { 0..<count }

    subscript(position: Int) -> Element {
        precondition(position >= 0 && position < count, "ReusedArray index out of range")
        return buffer[position]
    }

    mutating func append(_ element: Element) {
        if count < buffer.count { buffer[count] = element } else { buffer.append(element) }
        count += 1
    }

    /// Empties the array, keeping its buffer and what it holds.
    mutating func removeAll() { count = 0 }
}

/// A decoded text (a change's, or a chain's) in a buffer reused from one
/// to the next: the scalars of `buffer` from `start` on. Emptying it moves
/// `start` to the end, a store, and the next text is appended after the
/// last. The buffer is emptied for real when it holds `reusedBytes` or
/// more, so that it stays small, or is wider than a byte a scalar, so that
/// the keystrokes after a wide scalar are stored a byte each again.
struct ReusedText {
    /// The text after what is left of earlier ones. Appended to in place
    /// (by the decoder); the scalars before `start` must stay.
    var buffer = ScalarStorage()
    private(set) var start = 0

    static let reusedBytes = 1024

    /// Where the text is in `buffer`.
    var range: Range<Int> { start..<buffer.count }

    mutating func removeAll() {
        if buffer.form == .oneByte && buffer.bytes.count < Self.reusedBytes {
            start = buffer.bytes.count
        } else {
            buffer.removeAllKeepingCapacity()
            start = 0
        }
    }
}
