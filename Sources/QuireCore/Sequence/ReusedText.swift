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
    /// Below `reusedBytes`. (32 bits: the struct stays as large as a
    /// `ScalarStorage`, and the decoder's change 128 bytes, which LLVM
    /// copies without a `memcpy` call: 8 bytes more made the merge loop
    /// call `memcpy` at every change read alone, 230 K instructions.)
    private var storedStart: UInt32 = 0

    static let reusedBytes = 1024

    var start: Int { Int(storedStart) }
    /// Where the text is in `buffer`.
    var range: Range<Int> { start..<buffer.count }

    mutating func removeAll() {
        if buffer.form == .oneByte && buffer.bytes.count < Self.reusedBytes {
            storedStart = UInt32(truncatingIfNeeded: buffer.bytes.count)
        } else {
            buffer.removeAllKeepingCapacity()
            storedStart = 0
        }
    }
}
