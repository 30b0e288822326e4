/// The map keys a bundle names, each numbered in the order it was first
/// noted: `BundleTables` notes them, `BundleWriter` finds each operation's.
///
/// Most bundles name a few keys (an object's fields) in every operation,
/// which are found by comparing them in turn: hashed into a `Set` when
/// noted and again into the writer's index, they cost a snapshot of 1,540
/// writers' objects (crdt-benchmarks B3.2) 7% more instructions. Past
/// `scannedKeys`, a dictionary finds them.
struct NotedKeys {
    /// The keys, in the order noted: a key's number is its index here.
    private(set) var keys: [MapKey] = []
    /// Each key's number, once there are more than `scannedKeys`.
    private var numbers: [MapKey: Int] = [:]

    /// Up to this many keys are found by comparing them in turn.
    private static let scannedKeys = 8

    /// Notes `key` if it is not noted yet.
    mutating func note(_ key: String) {
        guard number(of: key) == nil else { return }
        keys.append(MapKey(key))
        if keys.count == Self.scannedKeys + 1 {
            for (number, noted) in keys.enumerated() { numbers[noted] = number }
        } else if keys.count > Self.scannedKeys {
            numbers[keys[keys.count - 1]] = keys.count - 1
        }
    }

    /// The number of `key`, or nil if it was not noted.
    func number(of key: String) -> Int? {
        guard keys.count <= Self.scannedKeys else { return numbers[MapKey(key)] }
        // Mostly `key` is the very string value noted (a small string, or
        // the storage the operations share): found by its two words before
        // any bytes are compared. The keys are distinct by their bytes, so
        // the one found so is the one the bytes would find.
        if let number = keys.firstIndex(where: { $0.string.hasSameBits(as: key) }) { return number }
        return keys.firstIndex(of: MapKey(key))
    }
}
