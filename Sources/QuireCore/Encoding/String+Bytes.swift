extension String {
    /// Whether the two hold the same UTF-8 bytes: the same Unicode scalars,
    /// as written, as SQLite compares TEXT. Swift's `==` also equates
    /// canonically equivalent strings ("é" as one scalar, or "e" and a
    /// combining accent), which Quire keeps apart: document ids, map keys
    /// (`MapKey`), string values and texts compare this way.
    public func hasSameBytes(as other: String) -> Bool {
        let x = utf8, y = other.utf8
        guard x.count == y.count else { return false }
        // Native strings hold their UTF-8 contiguously: compared as buffers,
        // where stepping through the views cost a map-heavy merge 1% more.
        return x.withContiguousStorageIfAvailable { a in
            y.withContiguousStorageIfAvailable { b in sameBytes(a, b) }
        }.flatMap { $0 } ?? x.elementsEqual(y)
    }
}

/// Whether two buffers of the same length hold the same bytes, compared
/// eight at a time (`elementsEqual` goes byte by byte).
func sameBytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    guard let x = a.baseAddress.map(UnsafeRawPointer.init), let y = b.baseAddress.map(UnsafeRawPointer.init) else {
        return a.isEmpty && b.isEmpty
    }
    var offset = 0
    while offset + 8 <= a.count {
        if x.loadUnaligned(fromByteOffset: offset, as: UInt64.self) != y.loadUnaligned(fromByteOffset: offset, as: UInt64.self) {
            return false
        }
        offset += 8
    }
    while offset < a.count {
        if a[offset] != b[offset] { return false }
        offset += 1
    }
    return true
}
