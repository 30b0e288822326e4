import QuireCore

/// The rule that refuses a remote change whose Lamport values jump far
/// ahead (`DocumentStore.maxLamportLead`, `Specs/storage.md`): each change
/// of a batch may reach at most `lead` beyond the highest value before it,
/// which is the holder's highest before the batch or that of a change
/// given earlier in the batch. Counting the batch's earlier changes makes
/// one batch meet the rule exactly as the same changes taken in steps do,
/// where each step raises the holder's highest. The store and the sync
/// server both check through it, so they refuse alike.
///
///     var check = LamportLeadCheck(highest: document.maxLamportWithPending, lead: DocumentStore.maxLamportLead)
///     if let change = check.firstFarAhead(in: changes) { /* refuse it; check.highest is the value before it */ }
public struct LamportLeadCheck: Sendable {
    /// How far beyond the highest before it a change may reach.
    public let lead: UInt64
    /// The highest Lamport value before the next change checked.
    public private(set) var highest: UInt64

    public init(highest: UInt64, lead: UInt64) {
        self.highest = highest
        self.lead = lead
    }

    /// Whether a change whose last Lamport value is `lastLamport` lies
    /// within the lead; one that does raises `highest` for the changes after it.
    public mutating func admits(lastLamport: UInt64) -> Bool {
        // A lead so large that the sum overflows allows every value.
        let ceiling = highest.addingReportingOverflow(lead)
        guard ceiling.overflow || lastLamport <= ceiling.partialValue else { return false }
        count(lastLamport: lastLamport)
        return true
    }

    /// Counts a change taken without the check (one admitted when it was
    /// left waiting, taken now): the changes after it are measured from it too.
    public mutating func count(lastLamport: UInt64) {
        highest = max(highest, lastLamport)
    }

    /// The first of `changes`, in order, that lies beyond the lead; nil if
    /// none does. Each change before it raises `highest`.
    public mutating func firstFarAhead(in changes: [Change]) -> Change? {
        changes.first { !admits(lastLamport: $0.lastLamport) }
    }
}
