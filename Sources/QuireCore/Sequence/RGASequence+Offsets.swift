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
        // Counted from the nearer end of the span, so that a lookup in a
        // long pasted span walks at most half of it.
        let start = Int(span.contentStart)
        let end = start + Int(span.length)
        if inside <= Int(span.length) - inside {
            var offset = location.before[metric]
            for position in start..<start + inside { offset += Self.width(of: content[position], in: metric) }
            return offset
        }
        var offset = location.before[metric] + span.summary[metric]
        for position in start + inside..<end { offset -= Self.width(of: content[position], in: metric) }
        return offset
    }

    @inlinable
    func index(ofOffset offset: Int, in metric: Metric) -> Int {
        precondition(offset >= 0 && offset <= tree.summary[metric], "RGASequence offset out of range")
        if offset == tree.summary[metric] { return count }
        let location = tree.locate(metric, offset)
        let span = tree.span(location.leaf, location.slot)
        if span.isUniform { return location.before.count + offset - location.before[metric] }
        // Walked from the nearer end of the span, as in `offset(ofIndex:in:)`.
        let inside = offset - location.before[metric]
        if inside <= span.summary[metric] - inside {
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
        // Back from the end to the element that starts at or before `offset`.
        var units = location.before[metric] + span.summary[metric]
        var index = location.before.count + Int(span.length)
        var position = Int(span.contentStart) + Int(span.length)
        while units > offset {
            position -= 1
            index -= 1
            units -= Self.width(of: content[position], in: metric)
        }
        return index
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
