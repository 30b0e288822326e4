import Foundation

/// Runs `body` with the path of a new empty directory, removed afterwards.
public func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let path = try makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

/// `withTemporaryDirectory` for an async `body`, run on the caller's actor
/// (a `@MainActor` test's body stays on the main actor).
public func withTemporaryDirectory<T>(isolation: isolated (any Actor)? = #isolation, _ body: (String) async throws -> T) async throws -> T {
    let path = try makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

private func makeTemporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "quire-tests-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
