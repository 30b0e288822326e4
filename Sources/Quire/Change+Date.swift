import Foundation

extension Change {
    /// `time` as a `Date`, for a history view; nil when the change has no
    /// time (0) or one before 1970, which no working clock gives.
    ///
    /// The time is the writer's clock when it made the change: machines'
    /// clocks differ, so it is shown only, and never orders anything (a
    /// change may be dated before one it built on); the Lamport value
    /// orders concurrent writes (`Specs/crdt.md`).
    public var date: Date? {
        time > 0 ? DocumentStore.date(time) : nil
    }
}
