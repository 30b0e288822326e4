import Foundation

/// An error whose `description` names what went wrong, given as its
/// `localizedDescription` too: that is what an app shows in an alert, and
/// without `LocalizedError` Foundation makes it "The operation could not be
/// completed. (QuireStore.StoreError error 0.)", which names nothing.
public protocol DescribedError: LocalizedError, CustomStringConvertible {}

extension DescribedError {
    public var errorDescription: String? { description }
}
