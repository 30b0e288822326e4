/// A map key as a document holds it: its Unicode scalars exactly as
/// written. As a dictionary key, `String` would take canonically
/// equivalent keys (an "é" precomposed, or "e" and U+0301) for one, so two
/// keys written apart would share a register, and the spelling kept would
/// be whichever write a replica met first: replicas would disagree on a
/// map's keys.
struct MapKey: Hashable {
    var string: String

    init(_ string: String) { self.string = string }

    static func == (a: MapKey, b: MapKey) -> Bool { a.string.hasSameBytes(as: b.string) }

    /// `String`'s hash (quick for ASCII), which keys of the same scalars,
    /// being canonically equivalent, share.
    func hash(into hasher: inout Hasher) { hasher.combine(string) }
}
