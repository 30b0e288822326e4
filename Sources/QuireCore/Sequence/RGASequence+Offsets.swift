/// Conversions between visible indices (Unicode scalars for text) and the
/// UTF-16 / UTF-8 offsets that Swift strings and text views count in.
extension RGASequence {
    @inlinable
    public func utf16Offset(ofIndex index: Int) -> Int { offset(ofIndex: index, in: .utf16) }

    /// An offset inside a surrogate pair rounds down to the scalar's index.
    @inlinable
    public func index(ofUTF16Offset offset: Int) -> Int { index(ofOffset: offset, in: .utf16) }

    @inlinable
    public func utf8Offset(ofIndex index: Int) -> Int { offset(ofIndex: index, in: .utf8) }

    /// An offset inside a scalar's encoding rounds down to the scalar's index.
    @inlinable
    public func index(ofUTF8Offset offset: Int) -> Int { index(ofOffset: offset, in: .utf8) }

    @inlinable
    func offset(ofIndex index: Int, in metric: Metric) -> Int {
        precondition(index >= 0 && index <= count, "RGASequence index out of range")
        if index == count { return tree.summary[metric] }
        let location = tree.locate(.visible, index)
        let span = tree.span(location.leaf, location.slot)
        let inside = index - location.before.count
        if span.isUniform { return location.before[metric] + inside }
        let start = Int(span.contentStart)
        var offset = location.before[metric]
        for position in start..<start + inside { offset += Self.width(of: content[position], in: metric) }
        return offset
    }

    @inlinable
    func index(ofOffset offset: Int, in metric: Metric) -> Int {
        precondition(offset >= 0 && offset <= tree.summary[metric], "RGASequence offset out of range")
        if offset == tree.summary[metric] { return count }
        let location = tree.locate(metric, offset)
        let span = tree.span(location.leaf, location.slot)
        if span.isUniform { return location.before.count + offset - location.before[metric] }
        var units = location.before[metric]
        var index = location.before.count
        var position = Int(span.contentStart)
        while true {
            units += Self.width(of: content[position], in: metric)
            if units > offset { return index }
            index += 1
            position += 1
        }
    }

    @inlinable
    static func width(of element: Element, in metric: Metric) -> Int {
        switch metric {
        case .visible: 1
        case .utf16: element.utf16Width
        case .utf8: element.utf8Width
        }
    }
}
