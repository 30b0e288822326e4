import Testing
import QuireTestSupport
@testable import QuireCore

/// `KeyOrder`, the order snapshots and bundles list map keys in: it must be
/// `String`'s `<` whatever path it takes, or replicas would write different bytes.
@Suite struct KeyOrderTests {
    /// Short ASCII keys (the packed path), with prefixes of one another,
    /// NUL bytes, 8 and 16 bytes exactly, and the longer or non-ASCII keys
    /// that send a whole set down `String`'s own comparison.
    @Test func sortsAsStringsCompare() {
        var rng = SeededGenerator(seed: 11)
        let alphabets: [[Character]] = [
            Array("ab"), Array("az09_-\u{0}\u{7F}"), Array("aé"), Array("e\u{301}é"),  // é written both ways
        ]
        for alphabet in alphabets {
            for count in [0, 1, 2, 9, 40, 1_540] {
                for maxLength in [3, 8, 9, 16, 17] {
                    var keys = Set<String>()
                    for _ in 0..<count {
                        let length = Int(rng.next() % UInt64(maxLength + 1))
                        keys.insert(String((0..<length).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }))
                    }
                    let list = Array(keys)
                    let expected = list.sorted()
                    #expect(KeyOrder.sorted(list) == expected, "\(count) keys of \(alphabet) up to \(maxLength)")
                    #expect(KeyOrder.sortedIndices(of: list).map { list[$0] } == expected)
                }
            }
        }
    }

    @Test func keysThatDifferOnlyPastTheFirstWord() {
        let keys = (0..<20).map { "prefix-of-\(19 - $0)" } + ["prefix-o", "prefix-of", "prefix-of-1\u{0}"]
        #expect(KeyOrder.sorted(keys) == keys.sorted())
    }
}
