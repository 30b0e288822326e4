/// A text object's visible scalars as read at one moment, with the id of
/// each: what a person saw before editing a copy of it somewhere else (a
/// note opened in `$EDITOR`). `Transaction.setText(_:to:editedFrom:)` turns
/// their copy back into edits against this reading, so that what other
/// edits did to the text meanwhile stays.
///
///     let before = try document.reading(body)
///     let edited = openInEditor(before.text)            // minutes, maybe
///     try document.transact { tx in try tx.setText(body, to: edited, editedFrom: before) }
public struct TextReading: Sendable, Equatable {
    /// The text object read.
    public let object: ObjectID
    /// The text as read, scalar by scalar (indices are scalar indices).
    public let scalars: [Unicode.Scalar]
    /// The id of each of `scalars`.
    let ids: [OpID]

    /// The text as read, to show or to edit.
    public var text: String { String(String.UnicodeScalarView(scalars)) }
}

extension Document {
    /// The visible scalars of a text object now, with their ids.
    public func reading(_ text: ObjectID) throws(DocumentError) -> TextReading {
        var scalars: [Unicode.Scalar] = [], ids: [OpID] = []
        for run in try textRuns(text) where !run.isDeleted {
            scalars += run.elements
            ids += (0..<UInt64(run.elements.count)).map(run.id.advanced(by:))
        }
        return TextReading(object: text, scalars: scalars, ids: ids)
    }
}

extension Transaction {
    /// Makes a text object hold `newValue` where it differs from `base`, an
    /// earlier reading of the same object, as a three-way merge: the scalars
    /// `newValue` dropped from `base` are deleted, the ones it added are
    /// inserted after the scalar they followed in `base`, and whatever other
    /// edits did since `base` (text inserted, text deleted) stays as they
    /// left it. With `base` read from another object (the field was replaced
    /// meanwhile), it is `setText(_:to:)`.
    ///
    /// `base` must be the reading `newValue` was edited from, or the text
    /// as last saved: from an older reading, what `newValue` changes from
    /// it is made again (saving "Buy oat milk!" from the "Buy milk" that
    /// "Buy oat milk" was saved from makes "Buy oat oat milk!"). So an
    /// editor that saves more than once reads the text again after each
    /// save, shows it (it holds what others did meanwhile) and saves next
    /// from that reading:
    ///
    ///     before = try store.edit(id) { tx in
    ///         try tx.setText(body, to: edited, editedFrom: before)
    ///         return try tx.document.reading(body)
    ///     }
    public mutating func setText(_ text: ObjectID, to newValue: some StringProtocol, editedFrom base: TextReading) throws(DocumentError) {
        guard base.object == text else { return try setText(text, to: newValue) }
        let new = Array(newValue.unicodeScalars)

        // The diff's edits, in positions of `base`: what each deletes, and
        // where each inserts (after the scalar of `base` before it).
        var deleted: [Int] = []
        var inserts: [(basePosition: Int, scalars: ArraySlice<Unicode.Scalar>)] = []
        var shift = 0  // a position in the edited text, less the same position in `base`
        for edit in TextDiff.edits(from: base.scalars, to: new) {
            switch edit {
            case let .delete(at, count):
                deleted += (at - shift)..<(at - shift + count)
                shift -= count
            case let .insert(at, count, from):
                inserts.append((at - shift, new[from..<(from + count)]))
                shift += count
            }
        }
        if deleted.isEmpty && inserts.isEmpty { return }

        // Where the scalars those edits name are now: visible at an index,
        // or deleted by another edit just before an index.
        var wanted: [OpID: (index: Int, isVisible: Bool)] = [:]
        for position in deleted { wanted[base.ids[position]] = (0, false) }
        for insert in inserts where insert.basePosition > 0 { wanted[base.ids[insert.basePosition - 1]] = (0, false) }
        var visibleBefore = 0, found = 0
        for run in try document.textRuns(text) where found < wanted.count {
            for offset in 0..<run.elements.count {
                let id = run.id.advanced(by: UInt64(offset))
                if wanted[id] != nil {
                    wanted[id] = (visibleBefore, !run.isDeleted)
                    found += 1
                }
                if !run.isDeleted { visibleBefore += 1 }
            }
        }
        // A scalar read from this object is never removed from it, only marked deleted.
        guard found == wanted.count else { return try setText(text, to: newValue) }

        // Applied from the end, so that each index still holds when its turn comes.
        var steps: [(index: Int, order: Int, step: ThreeWayStep)] = []
        for position in deleted {
            let now = wanted[base.ids[position]]!
            if now.isVisible { steps.append((now.index, Int.max, .delete(count: 1))) }  // another edit may have deleted it already
        }
        for insert in inserts {
            var index = 0
            if insert.basePosition > 0 {
                let anchor = wanted[base.ids[insert.basePosition - 1]]!
                index = anchor.index + (anchor.isVisible ? 1 : 0)
            }
            steps.append((index, insert.basePosition, .insert(insert.scalars)))
        }
        // At one index: the deletion of the scalar there first, then the
        // inserts, the one furthest into `base` first (the others go before it).
        steps.sort { ($0.index, $0.order) > ($1.index, $1.order) }
        // Deletions of neighbouring scalars with no insert between them are one deletion.
        var merged: [(index: Int, step: ThreeWayStep)] = []
        for step in steps {
            if case .delete = step.step, let last = merged.last, case .delete(let count) = last.step, last.index == step.index + 1 {
                merged[merged.count - 1] = (step.index, .delete(count: count + 1))
            } else {
                merged.append((step.index, step.step))
            }
        }
        for step in merged {
            switch step.step {
            case .delete(let count):
                try deleteText(text, at: step.index, count: count)
            case .insert(let scalars):
                try insertText(text, at: step.index, String(String.UnicodeScalarView(scalars)))
            }
        }
    }
}

/// One edit `setText(_:to:editedFrom:)` makes, at an index of the text as it is then.
private enum ThreeWayStep {
    case delete(count: Int)
    case insert(ArraySlice<Unicode.Scalar>)
}
