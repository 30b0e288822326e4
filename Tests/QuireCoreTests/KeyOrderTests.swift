import Testing
import QuireTestSupport
@testable import QuireCore

/// `KeyOrder`, the order snapshots and bundles list map keys in: it must be
/// the keys' UTF-8 byte order whatever path it takes, or replicas would
/// write different bytes.
@Suite struct KeyOrderTests {
    /// Short ASCII keys (the packed path), with prefixes of one another,
    /// NUL bytes, 8 and 16 bytes exactly, and the longer or non-ASCII keys
    /// that send a whole set down the general comparison, and keys that
    /// differ only in how "é" is written, which `String`'s `<` ties.
    @Test func sortsByUTF8Bytes() {
        var rng = SeededGenerator(seed: 11)
        let alphabets: [[Character]] = [
            Array("ab"), Array("az09_-\u{0}\u{7F}"), Array("aé"), Array("e\u{301}é"),  // é written both ways
        ]
        for alphabet in alphabets {
            for count in [0, 1, 2, 5, 8, 9, 40, 1_540] {
                for maxLength in [3, 8, 9, 16, 17] {
                    // Distinct by bytes: a `Set<String>` would keep one of two keys spelled apart.
                    var keys = Set<[UInt8]>()
                    for _ in 0..<count {
                        let length = Int(rng.next() % UInt64(maxLength + 1))
                        keys.insert(Array(String((0..<length).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }).utf8))
                    }
                    let list = keys.map { String(decoding: $0, as: UTF8.self) }
                    let expected = keys.sorted { $0.lexicographicallyPrecedes($1) }
                    #expect(KeyOrder.sorted(list).map { Array($0.utf8) } == expected, "\(count) keys of \(alphabet) up to \(maxLength)")
                    #expect(KeyOrder.sortedIndices(of: list).map { Array(list[$0].utf8) } == expected)
                    // A map's keys, sorted in place (a snapshot's maps).
                    let map = Dictionary(uniqueKeysWithValues: list.map { (MapKey($0), 0) })
                    var inOrder: [[UInt8]] = []
                    KeyOrder.forEachSortedIndex(of: map.keys) { inOrder.append(Array(map.keys[$0].string.utf8)) }
                    #expect(inOrder == expected, "a map of \(count) keys of \(alphabet) up to \(maxLength)")
                }
            }
        }
    }

    @Test func keysThatDifferOnlyPastTheFirstWord() {
        let keys = (0..<20).map { "prefix-of-\(19 - $0)" } + ["prefix-o", "prefix-of", "prefix-of-1\u{0}"]
        #expect(KeyOrder.sorted(keys) == keys.sorted())
    }
}
