#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A flat array of plain values that grows in place: the storage of a
/// `SpanTree`'s leaves and of its `ElementIndex`'s pages, which hold most of
/// a large document's memory.
///
/// An `Array` grows by allocating a bigger block, copying into it and
/// freeing the old one; past the allocator's mmap threshold every new block
/// is fresh memory that the kernel must map page by page as the copy
/// touches it. A document typed for hours (automerge-paper 100 times, 26 M
/// edits) grew its spans to 106 MB that way and touched about four times
/// that: 72% of its replay's page faults. `realloc` moves a large
/// block by remapping its pages (`mremap` on Linux): nothing is copied and
/// only the new room is touched.
///
/// A value type with copy-on-write, like `Array`: a copy shares the
/// storage until one of them is written. `Element` must be bitwise
/// movable (no references), as `realloc` moves its bytes.
struct Arena<Element: BitwiseCopyable> {
    private final class Storage {
        private(set) var base: UnsafeMutablePointer<Element>
        var count = 0
        private(set) var capacity: Int
        /// The capacity the arena's current step of a third started from
        /// (`grownCapacity(stride:)`).
        private var thirdStart = 0

        init(capacity: Int) {
            base = Self.reallocate(nil, capacity: capacity)
            self.capacity = capacity
        }

        deinit { free(base) }

        func copy() -> Storage {
            let copy = Storage(capacity: count)
            copy.base.initialize(from: base, count: count)
            copy.count = count
            return copy
        }

        /// Makes room for exactly `capacity` elements (at least `count`).
        func resize(to capacity: Int) {
            guard capacity != self.capacity else { return }
            base = Self.reallocate(base, capacity: capacity)
            self.capacity = capacity
        }

        /// The room after `capacity` when the arena is full: double below
        /// `growsInThirdsFrom`; from there, every capacity that growing by a
        /// third at a time reaches, and between each two `stepsInAThird - 1`
        /// more, evenly spaced. A new step starts from a capacity that is not
        /// inside the current one (the first past the threshold, or one that
        /// `reserveCapacity` or a copy made).
        func grownCapacity(stride: Int) -> Int {
            guard capacity * stride >= Arena.growsInThirdsFrom else { return 2 * capacity }
            if capacity >= thirdStart + thirdStart / 3 || capacity < thirdStart { thirdStart = capacity }
            let third = thirdStart / 3
            return Swift.min(thirdStart + third, capacity + (third + Arena.stepsInAThird - 1) / Arena.stepsInAThird)
        }

        private static func reallocate(_ base: UnsafeMutablePointer<Element>?, capacity: Int) -> UnsafeMutablePointer<Element> {
            let bytes = Swift.max(capacity, 1) * MemoryLayout<Element>.stride
            guard let moved = realloc(base, bytes) else { preconditionFailure("Arena: out of memory for \(capacity) elements") }
            return moved.bindMemory(to: Element.self, capacity: Swift.max(capacity, 1))
        }
    }

    private var storage: Storage
    /// `storage.base`, kept beside it: an element is then one load away, not two.
    private var base: UnsafeMutablePointer<Element>

    init() {
        storage = Storage(capacity: 0)
        base = storage.base
    }

    init(repeating element: Element, count: Int) {
        self.init()
        append(repeating: element, count: count)
    }

    /// An arena with room for `capacity` elements, of which `initializer`
    /// writes the first ones and says how many, as `Array`'s initializer of
    /// the same name does. Inlined by rule: a snapshot's spans are written
    /// in its closure, and left to the inliner's budget, such a loop may
    /// become a function of its own with its captures in memory (HISTORY.md,
    /// review205).
    @inline(__always)
    init<Failure: Error>(unsafeUninitializedCapacity capacity: Int,
                         initializingWith initializer: (UnsafeMutableBufferPointer<Element>, inout Int) throws(Failure) -> Void) throws(Failure) {
        self.init()
        reserveCapacity(capacity)
        var count = 0
        try initializer(UnsafeMutableBufferPointer(start: base, count: capacity), &count)
        precondition(count <= capacity, "Arena: initialized more elements than its capacity")
        storage.count = count
    }

    var count: Int { storage.count }
    var capacity: Int { storage.capacity }
    var isEmpty: Bool { storage.count == 0 }

    subscript(index: Int) -> Element {
        @inline(__always) get {
            checkIndex(index)
            return base[index]
        }
        @inline(__always) _modify {
            checkIndex(index)
            makeUnique()
            yield &base[index]
        }
    }

    /// One unsigned comparison: a negative index wraps past any count.
    @inline(__always)
    private func checkIndex(_ index: Int) {
        precondition(UInt(bitPattern: index) < UInt(bitPattern: storage.count), "Arena: index out of range")
    }

    func withUnsafeBufferPointer<Result>(_ body: (UnsafeBufferPointer<Element>) throws -> Result) rethrows -> Result {
        try body(UnsafeBufferPointer(start: base, count: storage.count))
    }

    mutating func withUnsafeMutableBufferPointer<Result>(
        _ body: (UnsafeMutableBufferPointer<Element>) throws -> Result
    ) rethrows -> Result {
        makeUnique()
        return try body(UnsafeMutableBufferPointer(start: base, count: storage.count))
    }

    mutating func append(_ element: Element) {
        append(repeating: element, count: 1)
    }

    /// Appends `element` `count` times.
    mutating func append(repeating element: Element, count added: Int) {
        growIfNeeded(adding: added)
        (base + storage.count).initialize(repeating: element, count: added)
        storage.count += added
    }

    /// Adds `count` elements at the end without writing them: their bytes
    /// are whatever the memory held, for a caller that writes each element
    /// before it reads it (a span tree's new leaf, whose slots past its
    /// span count are never read). `Element` being bitwise copyable, copying
    /// such bytes with the rest is harmless.
    mutating func appendUnwritten(count added: Int) {
        growIfNeeded(adding: added)
        storage.count += added
    }

    /// Appends the elements of `buffer`, which must not be this arena's own.
    mutating func append(contentsOf buffer: UnsafeBufferPointer<Element>) {
        growIfNeeded(adding: buffer.count)
        if let start = buffer.baseAddress { (base + storage.count).initialize(from: start, count: buffer.count) }
        storage.count += buffer.count
    }

    mutating func removeLast(_ removed: Int) {
        precondition(removed >= 0 && removed <= storage.count, "Arena: cannot remove more elements than it holds")
        makeUnique()
        storage.count -= removed
    }

    /// Sets the elements in `range` to `element`.
    mutating func update(_ range: Range<Int>, repeating element: Element) {
        precondition(range.lowerBound >= 0 && range.upperBound <= storage.count, "Arena: range out of bounds")
        makeUnique()
        (base + range.lowerBound).update(repeating: element, count: range.count)
    }

    /// Makes room for `capacity` elements in all.
    mutating func reserveCapacity(_ capacity: Int) {
        makeUnique()
        if capacity > storage.capacity { storage.resize(to: capacity) }
        base = storage.base
    }

    /// Gives back the room past the elements (after a load), when
    /// `isWorthShrinking` says so, as `compacted(_:)` does for arrays.
    mutating func shrinkToFit() {
        guard isWorthShrinking(count: storage.count, capacity: storage.capacity) else { return }
        makeUnique()
        storage.resize(to: storage.count)
        base = storage.base
    }

    /// Where an arena starts growing by thirds rather than doubling:
    /// 512 KiB, not the 4 MiB of arrays. The arenas hold most of a
    /// document's memory, and their spare room counts in it: a doubling step
    /// at 2 MB left B2.4's span arena half empty (3.9 MB for 2.0 MB of
    /// leaves) once its text passed 2,048 leaves. Below 512 KiB (546 leaves,
    /// 512 pages of the id index) they double as before and make the same
    /// copies; past it, growing in small steps copies several times the final
    /// size instead of once where `realloc` cannot remap (glibc remaps only
    /// blocks it mmapped, and raises its mmap threshold to 32 MiB as a
    /// process frees large blocks).
    fileprivate static var growsInThirdsFrom: Int { 512 << 10 }

    /// How many steps a growth by a third takes. Whole thirds left an arena
    /// that just passed a step a quarter empty: merge-k32-m10000's 261,984
    /// span slots in 327,298. The steps between keep every capacity the
    /// thirds reach, so no arena ends larger than whole thirds would leave it.
    fileprivate static var stepsInAThird: Int { 3 }

    /// The capacity the arena grows to when an append finds it full (as
    /// `Storage.grownCapacity` says), for one that needs no more than that:
    /// what a caller weighs a reservation against. (Asking twice at one
    /// capacity gives the same answer: the step it starts is the one the
    /// growth would start.)
    var nextCapacity: Int {
        Swift.max(storage.grownCapacity(stride: MemoryLayout<Element>.stride), 16)
    }

    /// Room for `added` more elements, grown as `nextCapacity` says.
    private mutating func growIfNeeded(adding added: Int) {
        makeUnique()
        let needed = storage.count + added
        guard needed > storage.capacity else { return }
        storage.resize(to: Swift.max(needed, nextCapacity))
        base = storage.base
    }

    @inline(__always)
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) {
            storage = storage.copy()
            base = storage.base
        }
    }
}

/// Copy-on-write makes an arena a value, as `Array` is.
extension Arena: @unchecked Sendable where Element: Sendable {}
