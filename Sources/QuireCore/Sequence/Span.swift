/// Sizes of a stretch of a sequence: what every B-tree node sums up about
/// the spans below it, so that lookups by visible index, UTF-16 offset or
/// UTF-8 offset descend in O(log n).
@usableFromInline
struct Summary: Equatable, Sendable {
    /// Visible elements.
    @usableFromInline var count: Int
    /// UTF-16 code units of the visible elements.
    @usableFromInline var utf16: Int
    /// UTF-8 bytes of the visible elements.
    @usableFromInline var utf8: Int
    /// All elements, tombstones included.
    @usableFromInline var total: Int

    @usableFromInline
    static let zero = Summary(count: 0, utf16: 0, utf8: 0, total: 0)

    @inlinable
    init(count: Int, utf16: Int, utf8: Int, total: Int) {
        self.count = count
        self.utf16 = utf16
        self.utf8 = utf8
        self.total = total
    }

    // Sums are bounded by the content buffer (Int32 positions), so they
    // cannot overflow an Int: wrapping arithmetic saves the checks.
    @inlinable
    static func += (a: inout Summary, b: Summary) {
        a.count &+= b.count; a.utf16 &+= b.utf16; a.utf8 &+= b.utf8; a.total &+= b.total
    }

    @inlinable
    static func -= (a: inout Summary, b: Summary) {
        a.count &-= b.count; a.utf16 &-= b.utf16; a.utf8 &-= b.utf8; a.total &-= b.total
    }

    @inlinable
    subscript(metric: Metric) -> Int {
        switch metric {
        case .visible: count
        case .utf16: utf16
        case .utf8: utf8
        }
    }
}

/// The units a position in the sequence can be given in.
@usableFromInline
enum Metric: Sendable {
    case visible, utf16, utf8
}

/// A run of elements stored as one entry: consecutive counters of one
/// replica, consecutive lamports, one deleted flag, and contiguous content in
/// the sequence's content buffer. Ordinary typing extends one span for many
/// characters; spans split only where an edit lands inside them.
///
/// Kept to 40 bytes (the replica is an index into the sequence's replica
/// table) because spans are most of the sequence's memory after the content.
@usableFromInline
struct Span: Sendable, BitwiseCopyable {
    @usableFromInline var counter: UInt64
    @usableFromInline var lamport: UInt64
    /// Where the span's elements start in the content buffer.
    @usableFromInline var contentStart: Int32
    @usableFromInline var length: Int32
    /// UTF-16 units and UTF-8 bytes of all the span's elements, deleted or not.
    @usableFromInline var utf16: Int32
    @usableFromInline var utf8: Int32
    /// Index into `ElementIndex.replicas`.
    @usableFromInline var replica: UInt32
    @usableFromInline var isDeleted: Bool

    @inlinable
    init(counter: UInt64, lamport: UInt64, contentStart: Int32, length: Int32,
         utf16: Int32, utf8: Int32, replica: UInt32, isDeleted: Bool) {
        self.counter = counter
        self.lamport = lamport
        self.contentStart = contentStart
        self.length = length
        self.utf16 = utf16
        self.utf8 = utf8
        self.replica = replica
        self.isDeleted = isDeleted
    }

    /// Filler for the unused slots of the leaves a load builds, which
    /// `ElementIndex.load` reads with the rest (an edit's new leaf leaves
    /// them unwritten).
    static let empty = Span(counter: 0, lamport: 0, contentStart: 0, length: 0,
                            utf16: 0, utf8: 0, replica: 0, isDeleted: true)

    @inlinable
    var summary: Summary {
        isDeleted
            ? Summary(count: 0, utf16: 0, utf8: 0, total: Int(length))
            : Summary(count: Int(length), utf16: Int(utf16), utf8: Int(utf8), total: Int(length))
    }

    @inlinable
    var visibleCount: Int { isDeleted ? 0 : Int(length) }

    /// Every element is one UTF-16 unit and one UTF-8 byte (ASCII text, list
    /// values), so offsets inside the span need no look at the content.
    @inlinable
    var isUniform: Bool { utf16 == length && utf8 == length }

    @inlinable
    var counterEnd: UInt64 { counter + UInt64(length) }

    @inlinable
    func contains(replica: UInt32, counter: UInt64) -> Bool {
        // One unsigned comparison for both bounds (below `self.counter` the
        // difference wraps to a huge value), and no overflow check on the end.
        // The counters first: a leaf's spans are mostly one writer's, so the
        // replica rarely rules a span out, and scanning a leaf for an id
        // (`SpanTree.slotNearHint`) then compares it only at the match.
        counter &- self.counter < UInt64(UInt32(bitPattern: length)) && self.replica == replica
    }

    /// `next` continues this span in every respect, so the two can be one span.
    @inline(__always)
    func canAbsorb(_ next: Span) -> Bool {
        next.replica == replica && next.isDeleted == isDeleted
            && next.counter == counterEnd && next.lamport == lamport + UInt64(length)
            && next.contentStart == contentStart + length
            && Int(utf8) + Int(next.utf8) < Int(Int32.max)
    }

    /// Appends `next`, which `canAbsorb` accepted. Its check that the UTF-8
    /// total fits an `Int32` bounds the other two sums as well (an element
    /// is at least one UTF-16 unit, and a scalar has no more UTF-16 units
    /// than UTF-8 bytes), so the additions need no overflow checks.
    @inline(__always)
    mutating func absorb(_ next: Span) {
        length &+= next.length
        utf16 &+= next.utf16
        utf8 &+= next.utf8
    }
}

/// Counts the UTF-16 units and UTF-8 bytes of `count` content elements from
/// `start`. The span tree is not generic; it calls this only when it splits a
/// span whose elements are not all one unit wide.
@usableFromInline
typealias Measure = (_ start: Int, _ count: Int) -> (utf16: Int, utf8: Int)
