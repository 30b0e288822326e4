extension String {
    /// Whether the two hold the same UTF-8 bytes, as SQLite compares TEXT.
    /// Swift's `==` also equates canonically equivalent strings ("é" as one
    /// scalar, or "e" and a combining accent), which the file keeps apart:
    /// document ids must be compared this way.
    public func hasSameBytes(as other: String) -> Bool {
        utf8.elementsEqual(other.utf8)
    }
}
