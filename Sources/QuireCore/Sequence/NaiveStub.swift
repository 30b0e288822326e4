// TEMPORARY naive stub; replaced by the B-tree RGASequence from branch rga.
public protocol SequenceElement: Sendable { var utf16Width: Int { get }; var utf8Width: Int { get } }
extension Unicode.Scalar: SequenceElement {
    public var utf16Width: Int { utf16.count }
    public var utf8Width: Int { utf8.count }
}
public enum SequenceError: Error, Equatable { case unknownElement(OpID); case duplicateElement(OpID); case indexOutOfRange(Int) }
public struct IDRun: Hashable, Sendable { public var start: OpID; public var length: Int
  public init(start: OpID, length: Int) { self.start = start; self.length = length } }
public struct SequenceRun<Element> { public var id: OpID; public var lamport: UInt64; public var isDeleted: Bool; public var elements: ArraySlice<Element> }
public struct RGASequence<Element: SequenceElement>: Sendable {
    struct Item { var id: OpID; var lamport: UInt64; var deleted: Bool; var element: Element }
    var items: [Item] = []
    public init() {}
    public var count: Int { items.filter { !$0.deleted }.count }
    public var utf16Count: Int { items.filter { !$0.deleted }.reduce(0) { $0 + $1.element.utf16Width } }
    public var utf8Count: Int { items.filter { !$0.deleted }.reduce(0) { $0 + $1.element.utf8Width } }
    public var tombstoneCount: Int { items.filter { $0.deleted }.count }
    public var spanCount: Int { items.count }
    func raw(_ index: Int) -> Int? { var v = 0; for (i, it) in items.enumerated() where !it.deleted { if v == index { return i }; v += 1 }; return nil }
    public mutating func insertLocal(at index: Int, id: OpID, lamport: UInt64, contentsOf elements: some Collection<Element>) throws(SequenceError) -> OpID? {
        guard index >= 0 && index <= count else { throw .indexOutOfRange(index) }
        var pos = 0; var origin: OpID? = nil
        if index > 0 { let r = raw(index - 1)!; pos = r + 1; origin = items[r].id }
        for (k, e) in elements.enumerated() { items.insert(Item(id: id.advanced(by: UInt64(k)), lamport: lamport + UInt64(k), deleted: false, element: e), at: pos + k) }
        return origin
    }
    public mutating func deleteLocal(_ range: Range<Int>) throws(SequenceError) -> [IDRun] {
        guard range.lowerBound >= 0 && range.upperBound <= count else { throw .indexOutOfRange(range.upperBound) }
        var runs: [IDRun] = []
        for i in range.reversed() { let r = raw(range.lowerBound)!; _ = i; items[r].deleted = true
            let id = items[r].id
            if let last = runs.last, last.start.replica == id.replica, last.start.counter + UInt64(last.length) == id.counter { runs[runs.count-1].length += 1 } else { runs.append(IDRun(start: id, length: 1)) } }
        return runs
    }
    public mutating func insertRemote(origin: OpID?, id: OpID, lamport: UInt64, contentsOf elements: some Collection<Element>) throws(SequenceError) {
        var pos = 0
        if let origin { guard let o = items.firstIndex(where: { $0.id == origin }) else { throw .unknownElement(origin) }; pos = o + 1 }
        if contains(id) { throw .duplicateElement(id) }
        let stamp = Stamp(lamport: lamport, replica: id.replica)
        while pos < items.count && Stamp(lamport: items[pos].lamport, replica: items[pos].id.replica) > stamp { pos += 1 }
        for (k, e) in elements.enumerated() { items.insert(Item(id: id.advanced(by: UInt64(k)), lamport: lamport + UInt64(k), deleted: false, element: e), at: pos + k) }
    }
    @discardableResult public mutating func deleteRemote(_ run: IDRun) throws(SequenceError) -> Int {
        for k in 0..<run.length { if !contains(run.start.advanced(by: UInt64(k))) { throw .unknownElement(run.start.advanced(by: UInt64(k))) } }
        var n = 0
        for k in 0..<run.length { let i = items.firstIndex(where: { $0.id == run.start.advanced(by: UInt64(k)) })!; if !items[i].deleted { n += 1 }; items[i].deleted = true }
        return n
    }
    public func contains(_ id: OpID) -> Bool { items.contains { $0.id == id } }
    public func lamport(of id: OpID) -> UInt64? { items.first { $0.id == id }?.lamport }
    public var elements: [Element] { items.filter { !$0.deleted }.map(\.element) }
    public func index(ofUTF16Offset offset: Int) -> Int { var u = 0; var i = 0; for e in elements { if u + e.utf16Width > offset { return i }; u += e.utf16Width; i += 1 }; return i }
    public func utf16Offset(ofIndex index: Int) -> Int { elements.prefix(index).reduce(0) { $0 + $1.utf16Width } }
    public func index(ofUTF8Offset offset: Int) -> Int { var u = 0; var i = 0; for e in elements { if u + e.utf8Width > offset { return i }; u += e.utf8Width; i += 1 }; return i }
    public func utf8Offset(ofIndex index: Int) -> Int { elements.prefix(index).reduce(0) { $0 + $1.utf8Width } }
    public func forEachRun(_ body: (SequenceRun<Element>) throws -> Void) rethrows {
        for it in items { try body(SequenceRun(id: it.id, lamport: it.lamport, isDeleted: it.deleted, elements: [it.element][...])) }
    }
    public init(runs: some Sequence<SequenceRun<Element>>) throws(SequenceError) {
        for r in runs { for (k, e) in r.elements.enumerated() { items.append(Item(id: r.id.advanced(by: UInt64(k)), lamport: r.lamport + UInt64(k), deleted: r.isDeleted, element: e)) } }
    }
}
