/// The order in which Quire lists map keys, in its encodings and in
/// `keys(_:)`: by their Unicode scalars, as written (their UTF-8 bytes,
/// which sort as their scalars do), so that every replica writes the same
/// bytes for the same keys. Not `String`'s `<`, which compares canonical
/// forms: two keys spelled apart but canonically equivalent (`MapKey`)
/// would tie, and their order would be the order a replica met them.
///
/// Comparing keys is the slow part of sorting many short ones (a map
/// written by 1,540 replicas spent a sixth of its snapshot's state there),
/// so keys that are all short ASCII sort as integers built from their bytes.
enum KeyOrder {
    /// The indices of `keys`, in the order of the keys they point to.
    static func sortedIndices(of keys: [String]) -> [Int] {
        // A few keys (an object's fields) sort faster than they pack.
        guard keys.count > fewKeys, let packed = packedASCII(keys) else {
            return keys.indices.sorted { precedes(keys[$0], keys[$1]) }
        }
        return packed.sorted { a, b in
            a.high != b.high ? a.high < b.high : a.low != b.low ? a.low < b.low : a.length < b.length
        }.map { Int($0.index) }
    }

    /// Calls `body` with the index of each of a map's `keys`, in the order
    /// of the keys they point to. A few keys are sorted where they are, in
    /// room on the stack: copied out into arrays and sorted there, the two
    /// fields of each of 1,540 writers' objects (crdt-benchmarks B3.2) cost
    /// a snapshot of them about a tenth of its instructions.
    static func forEachSortedIndex<Keys: Collection<MapKey>>(of keys: Keys, _ body: (Keys.Index) -> Void) {
        guard keys.count > fewKeys else {
            withUnsafeTemporaryAllocation(of: Keys.Index.self, capacity: keys.count) { order in
                _ = order.initialize(from: keys.indices)
                // Insertion sort: each index moves down past the keys above its own.
                for end in order.indices.dropFirst() {
                    var position = end
                    while position > 0 && precedes(keys[order[position]].string, keys[order[position - 1]].string) {
                        order.swapAt(position, position - 1)
                        position -= 1
                    }
                }
                for index in order { body(index) }
                order.deinitialize()
            }
            return
        }
        let indices = Array(keys.indices)
        for position in sortedIndices(of: keys.map(\.string)) { body(indices[position]) }
    }

    /// Up to this many keys are sorted by comparing them as they are.
    private static let fewKeys = 8

    /// Whether `a` comes before `b`: their UTF-8 compared byte by byte.
    private static func precedes(_ a: String, _ b: String) -> Bool {
        var (a, b) = (a, b)
        return a.withUTF8 { a in
            b.withUTF8 { b in
                for (byteOfA, byteOfB) in zip(a, b) where byteOfA != byteOfB { return byteOfA < byteOfB }
                return a.count < b.count
            }
        }
    }

    /// `keys`, sorted.
    static func sorted(_ keys: [String]) -> [String] {
        sortedIndices(of: keys).map { keys[$0] }
    }

    /// A key of at most 16 ASCII bytes as two big-endian words, padded
    /// with zero bytes. A key that is a prefix of another (shorter, and
    /// equal to the other up to the padding) sorts first by its length.
    private struct PackedKey {
        var high: UInt64 = 0, low: UInt64 = 0
        var length: UInt8 = 0
        var index: UInt32
    }

    /// Every key packed, or nil if one is not ASCII or is longer than 16 bytes.
    private static func packedASCII(_ keys: [String]) -> [PackedKey]? {
        guard keys.count <= Int(UInt32.max) else { return nil }
        var packed: [PackedKey] = []
        packed.reserveCapacity(keys.count)
        for (index, key) in keys.enumerated() {
            // Native strings (all but bridged ones) hold their UTF-8 contiguously.
            guard let entry = key.utf8.withContiguousStorageIfAvailable({ pack($0, index: index) }) ?? nil else { return nil }
            packed.append(entry)
        }
        return packed
    }

    private static func pack(_ bytes: UnsafeBufferPointer<UInt8>, index: Int) -> PackedKey? {
        guard bytes.count <= 16 else { return nil }
        var entry = PackedKey(length: UInt8(bytes.count), index: UInt32(index))
        for (position, byte) in bytes.enumerated() {
            guard byte < 0x80 else { return nil }
            if position < 8 {
                entry.high |= UInt64(byte) << (56 - 8 * position)
            } else {
                entry.low |= UInt64(byte) << (120 - 8 * position)
            }
        }
        return entry
    }
}
