import Testing
@testable import QuireCore

/// `Arena` is a value with copy-on-write whose storage moves as it grows:
/// these check that copies stay apart and that growing keeps every element.
@Suite struct ArenaTests {
    @Test func growingPastTheThirdsThresholdKeepsEveryElement() {
        // 512 KiB of 8-byte elements is 65,536: past it the arena grows in
        // steps of about a tenth, through many moves of its block.
        var arena = Arena<UInt64>()
        var model: [UInt64] = []
        for value in 0..<UInt64(1_500_000) {
            arena.append(value &* 2_654_435_761)
            model.append(value &* 2_654_435_761)
        }
        #expect(arena.count == model.count)
        #expect(arena.capacity >= model.count)
        #expect(arena.withUnsafeBufferPointer { Array($0) } == model)
    }

    @Test func anArenaDoublesBelow512KiBAndFromItStepsThroughEveryThird() {
        // Its spare room counts in a document's memory: B2.4's span arena,
        // doubled from 2 MB, held 3.9 MB for 2.0 MB of leaves; grown by
        // whole thirds, merge-k32-m10000's held 327,298 slots for 261,984.
        var arena = Arena<Int32>()
        arena.append(repeating: 1, count: 65_536)  // 256 KiB, full
        #expect(arena.capacity == 65_536)
        arena.append(2)
        #expect(arena.capacity == 131_072)  // 512 KiB
        var capacities: [Int] = []
        for value in Int32(3)...8 {
            arena.append(repeating: value, count: arena.capacity - arena.count)
            arena.append(value)
            capacities.append(arena.capacity)
        }
        // Three steps to 131,072 + 131,072 / 3, then three to 174,762 + 174,762 / 3.
        #expect(capacities == [145_636, 160_200, 174_762, 194_180, 213_598, 233_016])
        #expect(arena.count == 213_599 && arena[65_536] == 2 && arena[131_072] == 3 && arena[194_180] == 7 && arena[213_598] == 8)

        // A capacity reserved starts a new third from itself.
        var reserved = Arena<Int32>()
        reserved.reserveCapacity(300_000)
        reserved.append(repeating: 1, count: 300_001)
        #expect(reserved.capacity == 333_334)
    }

    @Test func aCopyKeepsItsElementsWhenTheOriginalChanges() {
        var original = Arena<Int32>()
        original.append(repeating: 7, count: 10)
        var copy = original
        original[3] = -1
        original.append(repeating: 9, count: 100_000)
        copy[4] = 42
        #expect(copy.count == 10)
        #expect(copy.withUnsafeBufferPointer { Array($0) } == [7, 7, 7, 7, 42, 7, 7, 7, 7, 7])
        #expect(original[3] == -1 && original[4] == 7 && original[10] == 9 && original.count == 100_010)

        var third = copy
        third.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        #expect(copy[0] == 7 && third[0] == 0)
        third.shrinkToFit()
        #expect(copy.count == 10 && copy[4] == 42)
    }

    @Test func shrinkToFitGivesBackTheSpareRoom() {
        var arena = Arena<Int32>()
        arena.reserveCapacity(1000)
        arena.append(repeating: 5, count: 100)
        #expect(arena.capacity >= 1000)
        arena.shrinkToFit()
        #expect(arena.capacity == 100)
        #expect(arena.withUnsafeBufferPointer { $0.allSatisfy { $0 == 5 } } && arena.count == 100)
        arena.append(6)
        #expect(arena[100] == 6 && arena.count == 101)
    }

    @Test func bulkWritesMatchAnArray() {
        // The id index's pages go through these: appended whole, emptied in
        // place, trimmed from the end, and rebuilt through a pointer.
        var arena = Arena<Int32>(repeating: -1, count: 300)
        var model = [Int32](repeating: -1, count: 300)
        let page: [Int32] = Array(0..<256)
        page.withUnsafeBufferPointer { arena.append(contentsOf: $0) }
        model += page
        arena.update(10..<20, repeating: 4)
        model.replaceSubrange(10..<20, with: repeatElement(4, count: 10))
        arena.removeLast(56)
        model.removeLast(56)
        #expect(arena.withUnsafeBufferPointer { Array($0) } == model)

        let copy = arena
        arena.update(0..<5, repeating: 9)
        arena.removeLast(100)
        #expect(copy.withUnsafeBufferPointer { Array($0) } == model)

        let rebuilt = Arena<Int32>(unsafeUninitializedCapacity: 1000) { buffer, count in
            for index in 0..<600 { (buffer.baseAddress! + index).initialize(to: Int32(index) * 3) }
            count = 600
        }
        #expect(rebuilt.count == 600 && rebuilt.capacity >= 1000)
        #expect(rebuilt.withUnsafeBufferPointer { Array($0) } == (0..<600).map { Int32($0) * 3 })
    }

    @Test func aSpanTreeCopyIsUnchangedByEditsToTheOriginal() throws {
        // The spans live in an arena: a document copied (as `show --at` and
        // a failed transaction's rollback copy one) must not see later edits.
        var text = RGASequence<Unicode.Scalar>()
        _ = try text.insertLocal(at: 0, id: OpID(replica: ReplicaID(1), counter: 1), lamport: 1, contentsOf: "hello".unicodeScalars)
        let before = text
        _ = try text.insertLocal(at: 5, id: OpID(replica: ReplicaID(1), counter: 6), lamport: 6, contentsOf: " world".unicodeScalars)
        _ = try text.deleteLocal(0..<1)
        #expect(String(String.UnicodeScalarView(before.elements)) == "hello")
        #expect(String(String.UnicodeScalarView(text.elements)) == "ello world")
        before.checkInvariants()
        text.checkInvariants()
    }

    @Test func elementsAddedUnwrittenToACopyLeaveTheOriginalAlone() {
        // A span tree's new leaf: its slots are added unwritten, then written
        // one by one, in a tree that may share its arena with a copy.
        let original = Arena<Int32>(repeating: 3, count: 5)
        var copy = original
        copy.appendUnwritten(count: 24)
        #expect(original.count == 5 && copy.count == 29 && copy.capacity >= 29)
        for index in 5..<29 { copy[index] = Int32(index) }
        #expect(copy.withUnsafeBufferPointer { Array($0) } == [3, 3, 3, 3, 3] + (5..<29).map { Int32($0) })
        #expect(original.withUnsafeBufferPointer { Array($0) } == [3, 3, 3, 3, 3])
    }
}
