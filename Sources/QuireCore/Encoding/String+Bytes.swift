extension String {
    /// Whether the two hold the same UTF-8 bytes: the same Unicode scalars,
    /// as written, as SQLite compares TEXT. Swift's `==` also equates
    /// canonically equivalent strings ("é" as one scalar, or "e" and a
    /// combining accent), which Quire keeps apart: document ids, map keys
    /// (`MapKey`), string values and texts compare this way.
    public func hasSameBytes(as other: String) -> Bool {
        if hasSameBits(as: other) { return true }
        let x = utf8, y = other.utf8
        guard x.count == y.count else { return false }
        // Native strings hold their UTF-8 contiguously: compared as buffers,
        // where stepping through the views cost a map-heavy merge 1% more.
        return x.withContiguousStorageIfAvailable { a in
            y.withContiguousStorageIfAvailable { b in sameBytes(a, b) }
        }.flatMap { $0 } ?? x.elementsEqual(y)
    }

    /// Whether the two are one string value bit for bit, its two words: a
    /// small string's bytes held in place, or one storage shared. Such
    /// strings hold the same bytes (the check `==` starts with); strings
    /// of the same bytes made apart need not be one value. Equal map keys
    /// mostly are (small strings): compared through the closures of
    /// `hasSameBytes`, each key a bundle's writer looked up cost about 200
    /// instructions (crdt-benchmarks B3.2's snapshot).
    @inline(__always)
    func hasSameBits(as other: String) -> Bool {
        guard MemoryLayout<String>.size == MemoryLayout<(UInt64, UInt64)>.size else { return false }
        return unsafeBitCast(self, to: (UInt64, UInt64).self) == unsafeBitCast(other, to: (UInt64, UInt64).self)
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
