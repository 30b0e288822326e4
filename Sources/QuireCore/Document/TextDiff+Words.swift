extension TextDiff {
    /// Edits turning the text `old` into `new` for a person to read (`quire
    /// diff`): whole words are kept, deleted or inserted, never split around
    /// a letter they share ("cat" to "cart" is `-"cat" +"cart"`, not an "r"
    /// typed inside). The texts are compared word by word: a word is a run of
    /// letters and digits, and every other character (a space, a
    /// punctuation mark, an emoji with its modifiers, an ideograph) is a
    /// word of its own; past `maxDistance` differing words, line by line
    /// first (a search at a time past `maxDistance` differing lines), as
    /// `edits(from:to:)` does, and what that leaves unmatched
    /// (one long line) by searches that each go as far as `maxDistance`
    /// differences take them, so that scattered edits in a line of 50,000
    /// words show as themselves, not as the line replaced. Then an unchanged stretch of spaces
    /// and punctuation between two edits, no longer than the larger side of
    /// the edit on either side of it, is shown as part of them (as
    /// diff-match-patch's semantic cleanup does, but a kept word stays
    /// shown as kept): "the quick fox" to "the quiet box" is `-"quick fox"
    /// +"quiet box"`, not four edits around a kept space.
    ///
    /// Applied to `old`, the edits give `new` exactly. They are no shortest
    /// script: changes are recorded with `edits(from:to:)`, which touches
    /// only the characters that differ.
    public static func wordEdits(from old: [Unicode.Scalar], to new: [Unicode.Scalar]) -> [Edit] {
        var searches = Searches(maxDistance: maxDistance)
        return wordEdits(from: old, to: new, searches: &searches)
    }

    /// `wordEdits(from:to:)` with another search limit, for tests of the line by line comparison.
    static func wordEdits(from old: [Unicode.Scalar], to new: [Unicode.Scalar], searches: inout Searches) -> [Edit] {
        var vocabulary: [ArraySlice<Unicode.Scalar>: Int] = [:]
        let oldWords = Words(old, vocabulary: &vocabulary)
        let newWords = Words(new, vocabulary: &vocabulary)
        let lineEnds = Set(vocabulary.filter { $0.key.last == "\n" }.values)
        let lines = Tokenizer<Int>(endingAt: { lineEnds.contains($0) })
        let keptWords = keptRuns(oldWords.ids[...], newWords.ids[...], tokenizers: [lines], searches: &searches)
        let kept = keptWords.map { run in
            let (oldStart, newStart) = (oldWords.bounds[run.old], newWords.bounds[run.new])
            return (old: oldStart, new: newStart, length: oldWords.bounds[run.old + run.length] - oldStart)
        }
        return script(keeping: foldingShortSeparators(kept, in: old, newCount: new.count),
                      oldCount: old.count, newCount: new.count)
    }

    /// A text as words, each numbered by its text in `vocabulary` (shared by
    /// the texts compared, so that equal words get equal ids).
    private struct Words {
        var ids: [Int] = []
        /// Where each word starts, in scalars, then where the text ends.
        var bounds: [Int] = [0]

        init(_ scalars: [Unicode.Scalar], vocabulary: inout [ArraySlice<Unicode.Scalar>: Int]) {
            var view = String.UnicodeScalarView()
            view.append(contentsOf: scalars)
            var start = 0, end = 0
            var inWord = false
            func endWord() {
                guard end > start else { return }
                let word = scalars[start..<end]
                let id = vocabulary[word] ?? vocabulary.count
                vocabulary[word] = id
                ids.append(id)
                bounds.append(end)
                start = end
            }
            // Characters, not scalars: an accent or an emoji's modifier stays with what it modifies.
            for character in String(view) {
                let isLetter = Self.isLetterOrDigit(character.unicodeScalars.first!)
                if !(isLetter && inWord) { endWord() }
                end += character.unicodeScalars.count
                inWord = isLetter
            }
            endWord()
        }

        /// Ideographs are words of their own: Chinese and Japanese put no space between words.
        static func isLetterOrDigit(_ scalar: Unicode.Scalar) -> Bool {
            (scalar.properties.isAlphabetic && !scalar.properties.isIdeographic) || scalar.properties.numericType != nil
        }
    }

    /// `kept` without each run of `old` between two edits that holds no
    /// letter, digit or ideograph and is no longer than the larger side
    /// (deleted or inserted) of the edit on either side of it, the edits
    /// around a dropped run counting as one.
    private static func foldingShortSeparators(_ kept: [Run], in old: [Unicode.Scalar], newCount: Int) -> [Run] {
        var runs: [Run] = []
        for run in kept {
            // Adjacent runs are one unchanged stretch.
            if let last = runs.last, last.old + last.length == run.old, last.new + last.length == run.new {
                runs[runs.count - 1].length += run.length
            } else {
                runs.append(run)
            }
        }
        var result: [Run] = []
        for (index, run) in runs.enumerated() {
            let next = index + 1 < runs.count ? (old: runs[index + 1].old, new: runs[index + 1].new) : (old: old.count, new: newCount)
            var candidate: Run? = run
            while let run = candidate {
                let before = result.last.map { (old: $0.old + $0.length, new: $0.new + $0.length) } ?? (old: 0, new: 0)
                let editBefore = max(run.old - before.old, run.new - before.new)
                let editAfter = max(next.old - run.old - run.length, next.new - run.new - run.length)
                let holdsWords = old[run.old..<(run.old + run.length)].contains { scalar in
                    scalar.properties.isAlphabetic || scalar.properties.numericType != nil
                }
                if run.length <= editBefore && run.length <= editAfter && !holdsWords {
                    // Dropped: the run before it now borders a larger edit, and may go too.
                    candidate = result.popLast()
                } else {
                    result.append(run)
                    candidate = nil
                }
            }
        }
        return result
    }
}
