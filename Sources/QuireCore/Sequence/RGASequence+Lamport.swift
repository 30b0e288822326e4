extension RGASequence {
    /// The Lamport value of an element, tombstones included; nil if the
    /// sequence has no such element. Checking a remote insert needs it: an
    /// element's stamp must be above its origin's.
    public func lamport(of id: OpID) -> UInt64? {
        guard let found = tree.find(id) else { return nil }
        return tree.span(found.leaf, found.slot).lamport + UInt64(found.offset)
    }
}
