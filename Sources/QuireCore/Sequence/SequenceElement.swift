/// What an `RGASequence` can hold: anything that knows how many UTF-16 code
/// units and UTF-8 bytes it takes, so that the sequence can convert the
/// offsets that text views count in. List values use widths 1 and 1.
/// Both widths are at least 1: a span whose widths equal its length is known
/// to be one unit per element without looking at the content.
public protocol SequenceElement: Sendable {
    var utf16Width: Int { get }
    var utf8Width: Int { get }
}

/// Text is a sequence of Unicode scalars: the unit every replica agrees on,
/// whatever encoding its text view counts in.
extension Unicode.Scalar: SequenceElement {
    @inlinable
    public var utf16Width: Int { value > 0xFFFF ? 2 : 1 }

    @inlinable
    public var utf8Width: Int {
        value < 0x80 ? 1 : value < 0x800 ? 2 : value < 0x1_0000 ? 3 : 4
    }
}

public enum SequenceError: Error, Equatable {
    /// An operation names an element (origin or delete target) this sequence does not have.
    case unknownElement(OpID)
    /// An insert (or a snapshot run) reuses an id that is already present.
    case duplicateElement(OpID)
    /// A visible index outside the sequence.
    case indexOutOfRange(Int)
    /// A run that cannot exist: no elements, or counters or lamports that overflow.
    case invalidRun(OpID)
}

/// Ids `start, start+1, ..., start+length-1`: consecutive counters of one replica.
public struct IDRun: Hashable, Sendable {
    public var start: OpID
    public var length: Int

    @inlinable
    public init(start: OpID, length: Int) {
        self.start = start
        self.length = length
    }
}

/// The ids a local delete removed, in document order, as runs. Deleting
/// within one typed stretch (nearly every keystroke) gives one run, which is
/// kept inline so that the delete allocates nothing; only more runs go to an array.
public struct DeletedRuns: RandomAccessCollection, Equatable, ExpressibleByArrayLiteral, Sendable {
    private var firstRun: IDRun?
    private var laterRuns: [IDRun] = []

    public init() {}

    public init(arrayLiteral runs: IDRun...) {
        for run in runs { append(run) }
    }

    mutating func append(_ run: IDRun) {
        if firstRun == nil { firstRun = run } else { laterRuns.append(run) }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { firstRun == nil ? 0 : 1 + laterRuns.count }
    public subscript(position: Int) -> IDRun {
        precondition(position >= 0 && position < endIndex, "DeletedRuns index out of range")
        return position == 0 ? firstRun! : laterRuns[position - 1]
    }
}

/// A maximal stretch of elements with consecutive ids and lamports and the
/// same deleted flag, as `RGASequence.forEachRun` reports them (snapshots).
public struct SequenceRun<Element> {
    public var id: OpID
    public var lamport: UInt64
    public var isDeleted: Bool
    public var elements: ArraySlice<Element>

    @inlinable
    public init(id: OpID, lamport: UInt64, isDeleted: Bool, elements: ArraySlice<Element>) {
        self.id = id
        self.lamport = lamport
        self.isDeleted = isDeleted
        self.elements = elements
    }
}

extension SequenceRun: Equatable where Element: Equatable {}
extension SequenceRun: Sendable where Element: Sendable {}

/// A run without its elements, as a snapshot stores it: `RGASequence.init(content:runs:)`
/// takes the elements of every run in one buffer.
public struct RunHeader: Equatable, Sendable {
    public var id: OpID
    public var lamport: UInt64
    public var isDeleted: Bool
    public var count: Int

    @inlinable
    public init(id: OpID, lamport: UInt64, isDeleted: Bool, count: Int) {
        self.id = id
        self.lamport = lamport
        self.isDeleted = isDeleted
        self.count = count
    }
}
