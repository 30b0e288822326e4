/// A decoded text (a change's, or a chain's) in a buffer reused from one
/// to the next: the scalars of `buffer` from `start` on. Emptying it moves
/// `start` to the end, a store, and the next text is appended after the
/// last. Emptying a `ScalarStorage`, keeping its buffer, cost 55 to 95
/// instructions (`removeLast` checks the buffer's uniqueness at each
/// scalar, `removeAll(keepingCapacity: true)` goes through the general
/// `replaceSubrange` and a `memmove` of nothing): a merge emptied a change's
/// text at every change read alone and a chain's at every chain, 430 K
/// instructions of sveltecomponent's merge (1.1%).
///
/// The buffer is emptied for real when it holds `reusedBytes` or more, so
/// that it stays small, or is wider than a byte a scalar, so that the
/// keystrokes after a wide scalar are stored a byte each again.
struct ReusedText {
    /// The text after what is left of earlier ones. Appended to in place
    /// (by the decoder); the scalars before `start` must stay.
    var buffer = ScalarStorage()
    /// Below `reusedBytes`. (16 bits: the struct is 12 bytes, which leaves
    /// the decoder's change room for its count of edits within 128 bytes,
    /// which LLVM copies without a `memcpy` call: 8 bytes more made the
    /// merge loop call `memcpy` at every change read alone, 230 K instructions.)
    private var storedStart: UInt16 = 0

    static let reusedBytes = 1024

    var start: Int { Int(storedStart) }
    /// Where the text is in `buffer`.
    var range: Range<Int> { start..<buffer.count }

    /// Inlined, the rare emptying for real left out of line: as a call,
    /// the merge loop's emptying of a change's text cost 6 instructions a
    /// change (108 K over two merges of sveltecomponent, review211).
    @inline(__always)
    mutating func removeAll() {
        if buffer.form == .oneByte && buffer.bytes.count < Self.reusedBytes {
            storedStart = UInt16(truncatingIfNeeded: buffer.bytes.count)
        } else {
            emptyBuffer()
        }
    }

    @inline(never)
    private mutating func emptyBuffer() {
        buffer.removeAllKeepingCapacity()
        storedStart = 0
    }
}
