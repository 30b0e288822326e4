/// A value an operation writes: a scalar, or a new nested object whose id
/// will be the id of the operation (or list element) that wrote it.
public enum NewValue: Hashable, Sendable {
    case scalar(ScalarValue)
    case object(ObjectKind)
}

/// What a list or text insert carries: Unicode scalars for text, values for lists.
public enum InsertContent: Hashable, Sendable {
    /// Text content; each Unicode scalar is one element.
    case text(String)
    /// List content; each value is one element.
    case values([NewValue])

    /// The number of elements, and so of counters, the insert takes.
    public var count: Int {
        switch self {
        case .text(let string): string.unicodeScalarCount
        case .values(let values): values.count
        }
    }
}

extension String {
    /// The number of Unicode scalars, counted as the UTF-8 bytes that start
    /// one. Applying a change asks for it several times per insert, and
    /// walking `unicodeScalars` one by one made pasted text a sixth of a merge.
    /// Read in place: `withUTF8` is mutating, and calling it on a copy
    /// retained and released the string and, for a string bound from an
    /// operation matched in place, copied and destroyed the operation (about
    /// 150 instructions a text insert of B2.4's records in a snapshot).
    var unicodeScalarCount: Int {
        utf8.withContiguousStorageIfAvailable { $0.unicodeScalarCount } ?? unicodeScalars.count
    }
}

extension String {
    /// The string of `scalars`, built from their UTF-8.
    /// `String(String.UnicodeScalarView(scalars))` takes the standard
    /// library's unspecialised generic path: about a thousand instructions a
    /// scalar, which made a 6,000-letter insert cost more than its merge.
    public init(scalars: some Collection<Unicode.Scalar>) {
        var utf8: [UInt8] = []
        utf8.reserveCapacity(scalars.count)
        utf8.appendUTF8(of: scalars)
        self.init(decoding: utf8, as: UTF8.self)
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// The number of Unicode scalars these UTF-8 bytes encode: the bytes
    /// that do not continue a scalar.
    var unicodeScalarCount: Int {
        reduce(0) { count, byte in count &+ (byte & 0xC0 == 0x80 ? 0 : 1) }
    }

    /// Whether every byte is ASCII. The bytes ORed, in a loop that
    /// vectorises: `allSatisfy` stops early and does not, at several
    /// instructions a byte of a paste. (Inlinable: text's widths use it.)
    @inlinable
    var isASCII: Bool { reduce(0, |) < 0x80 }

    /// Where the ASCII bytes from `start` on end, at `end` at most: read
    /// eight at a time, and a byte at a time only where the run ends.
    func endOfASCII(from start: Int, upTo end: Int) -> Int {
        precondition(start >= 0 && end <= count, "endOfASCII: range out of bounds")
        let raw = UnsafeRawBufferPointer(self)
        var index = start
        while index + 8 <= end && raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
            index += 8
        }
        while index < end && self[index] < 0x80 { index += 1 }
        return index
    }
}

/// One operation of a change. See `Specs/crdt.md`, "Changes", and the
/// section of each kind of object (maps, lists and text, counters).
///
/// An operation takes as many consecutive counters (and Lamport values) as
/// it has elements: an insert of n scalars or a delete of n elements takes n,
/// every other operation takes 1.
public enum Operation: Hashable, Sendable {
    /// Writes `value` at `key` of a map, replacing the register's values
    /// whose ids are in `pred` (the values the writer had seen there).
    case put(object: ObjectID, key: String, value: NewValue, pred: [OpID])
    /// Removes `key` from a map: a write of a tombstone, replacing `pred`.
    case remove(object: ObjectID, key: String, pred: [OpID])
    /// Inserts a run of elements into a list or text after `origin`
    /// (`nil` for the head); each next element's origin is the previous one.
    case insert(object: ObjectID, origin: OpID?, content: InsertContent)
    /// Marks the elements `target` (consecutive ids of one replica) deleted.
    case delete(object: ObjectID, target: IDRun)
    /// Adds `delta` to a counter object.
    case increment(object: ObjectID, delta: Int64)

    /// The object the operation acts on.
    public var object: ObjectID {
        switch self {
        case .put(let object, _, _, _), .remove(let object, _, _), .insert(let object, _, _),
             .delete(let object, _), .increment(let object, _):
            object
        }
    }

    /// How many counters the operation takes.
    public var width: Int {
        switch self {
        case .insert(_, _, let content): content.count
        case .delete(_, let target): target.length
        case .put, .remove, .increment: 1
        }
    }
}
