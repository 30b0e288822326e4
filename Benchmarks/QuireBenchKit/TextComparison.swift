/// Where two texts first differ, or nil when they have the same scalars.
/// Compares scalars, not `String`s: `String ==` treats canonically
/// equivalent texts as equal, and a CRDT must reproduce the exact scalars.
func scalarDifference(_ actual: some Collection<Unicode.Scalar>, _ expected: some Collection<Unicode.Scalar>) -> String? {
    var index = 0
    var a = actual.makeIterator(), e = expected.makeIterator()
    while true {
        switch (a.next(), e.next()) {
        case (nil, nil):
            return nil
        case let (x, y) where x != y:
            return "differs from the expected text at scalar \(index) (\(actual.count) scalars, expected \(expected.count))"
        default:
            index += 1
        }
    }
}
