/// Binary search and merging for arrays kept sorted, which the core uses
/// instead of trees where a short array is the common case.
extension RandomAccessCollection {
    /// The index of the first element for which `isAfter` holds, given that
    /// every element for which it does not hold comes before every one for
    /// which it does (`endIndex` if there is none): a binary search.
    ///
    ///     [1, 3, 5, 7].partitioningIndex { $0 > 4 }  // 2
    func partitioningIndex(where isAfter: (Element) throws -> Bool) rethrows -> Index {
        var low = startIndex, count = self.count
        while count > 0 {
            let half = count / 2
            let middle = index(low, offsetBy: half)
            if try isAfter(self[middle]) {
                count = half
            } else {
                low = index(after: middle)
                count -= half + 1
            }
        }
        return low
    }
}

extension Array {
    /// `a` and `b`, each sorted by `areInIncreasingOrder`, as one sorted array.
    static func mergingSorted(_ a: [Element], _ b: [Element], by areInIncreasingOrder: (Element, Element) -> Bool) -> [Element] {
        var merged: [Element] = []
        merged.reserveCapacity(a.count + b.count)
        var (i, j) = (0, 0)
        while i < a.count && j < b.count {
            if areInIncreasingOrder(a[i], b[j]) { merged.append(a[i]); i += 1 } else { merged.append(b[j]); j += 1 }
        }
        merged.append(contentsOf: a[i...])
        merged.append(contentsOf: b[j...])
        return merged
    }
}
