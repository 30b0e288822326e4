import Foundation
import Testing
import QuireTestSupport
@testable import Quire

@Suite struct ScratchProbe {
    struct Item: Codable, Equatable { var name: String; var n: Int?; var sub: [String] }
    enum Kind: Codable, Equatable { case a, b(Int), c(name: String) }
    struct Root: Codable, Equatable {
        var items: [Item]; var names: [String]; var nested: [[Int]]; var opt: [Int?]; var kinds: [Kind]; var dict: [String: Item]; var set: Set<Int>
        var intKeys: [Int: String]
    }
    func rand(_ rng: inout SeededGenerator) -> Root {
        func s(_ rng: inout SeededGenerator) -> String { ["", "a", "b", "ab", "é", "😀", "xyz", "a\nb"].randomElement(using: &rng)! }
        func item(_ rng: inout SeededGenerator) -> Item {
            Item(name: s(&rng), n: Bool.random(using: &rng) ? Int.random(in: 0..<3, using: &rng) : nil, sub: (0..<Int.random(in: 0..<3, using: &rng)).map { _ in s(&rng) })
        }
        let k: [Kind] = (0..<Int.random(in: 0..<4, using: &rng)).map { _ in [Kind.a, .b(Int.random(in: 0..<2, using: &rng)), .c(name: s(&rng))].randomElement(using: &rng)! }
        return Root(items: (0..<Int.random(in: 0..<5, using: &rng)).map { _ in item(&rng) },
                    names: (0..<Int.random(in: 0..<5, using: &rng)).map { _ in s(&rng) },
                    nested: (0..<Int.random(in: 0..<3, using: &rng)).map { _ in (0..<Int.random(in: 0..<3, using: &rng)).map { _ in Int.random(in: 0..<3, using: &rng) } },
                    opt: (0..<Int.random(in: 0..<4, using: &rng)).map { _ in Bool.random(using: &rng) ? nil : Int.random(in: 0..<3, using: &rng) },
                    kinds: k,
                    dict: Dictionary(uniqueKeysWithValues: (0..<Int.random(in: 0..<3, using: &rng)).map { i in ("k\(i)", item(&rng)) }),
                    set: Set((0..<Int.random(in: 0..<4, using: &rng)).map { _ in Int.random(in: 0..<5, using: &rng) }),
                    intKeys: [Int.random(in: 0..<3, using: &rng): s(&rng)])
    }
    @Test func fuzzRoundTrip() throws {
        var failures = 0
        for seed in UInt64(1)...150 {
            var rng = SeededGenerator(seed: seed)
            let store = try DocumentStore.inMemory()
            let id = try store.createDocument()
            for _ in 0..<20 {
                let v = rand(&rng)
                do {
                    try store.edit(id) { tx in try tx.write(v, into: .root) }
                    let back = try store.read(id) { try $0.read(Root.self, from: .root) }
                    if back != v { failures += 1; if failures < 4 { print("PROBE mismatch seed \(seed)\n \(v)\n \(back)") } }
                    let vv = try store.versionVector(id)
                    try store.edit(id) { tx in try tx.write(v, into: .root) }
                    if try store.versionVector(id) != vv { print("PROBE rewrite changed seed \(seed)") }
                } catch { failures += 1; if failures < 4 { print("PROBE error seed \(seed) \(error) \(v)") } }
            }
        }
        print("PROBE fuzz failures \(failures)")
    }
}
