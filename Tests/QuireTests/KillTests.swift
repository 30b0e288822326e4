import Foundation
import QuireTestSupport
import Testing
@testable import Quire

/// A real writer process (`quire-store-writer`) is killed with SIGKILL at
/// random moments while it edits, snapshots, compacts, or creates (migrates)
/// a new store file. After every kill the store must open, pass
/// `PRAGMA integrity_check`, and hold every acknowledged edit exactly once.
@Suite(.serialized) struct KillTests {
    /// The writer binary, built by `swift build --build-tests` beside the test bundle.
    static var writerURL: URL {
        let candidates = [
            Bundle.main.bundleURL.appendingPathComponent("quire-store-writer"),
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("quire-store-writer"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    @Test(arguments: [("plain", 30), ("snapshot", 30), ("compact", 30)])
    func killsWhileWriting(mode: String, kills: Int) throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            var acknowledged: [Int64] = []
            var rng = SeededGenerator(seed: UInt64(mode.utf8.count) &* 7919)
            for _ in 0..<kills {
                acknowledged += try runAndKill(path: path, mode: mode, afterMilliseconds: Int.random(in: 5...120, using: &rng),
                                               countingFromFirstEdit: true)
                try checkStore(path: path, acknowledged: acknowledged)
            }
            // Edits were really made, not just kills during start-up.
            #expect(acknowledged.count > kills)
        }
    }

    /// Kills during the creation of a new store file, where the schema
    /// migration runs. Each run starts from a new path.
    @Test func killsWhileCreatingAStore() throws {
        try withTemporaryDirectory { directory in
            var rng = SeededGenerator(seed: 42)
            for run in 0..<20 {
                let path = directory + "/store-\(run).quire"
                let acknowledged = try runAndKill(path: path, mode: "plain", afterMilliseconds: Int.random(in: 0...25, using: &rng))
                guard FileManager.default.fileExists(atPath: path) else { continue }
                try checkStore(path: path, acknowledged: acknowledged)
            }
        }
    }

    /// Two writer processes append to the same list in one file at once
    /// (snapshotting or compacting as they go, by mode) until both are
    /// killed: every number either acknowledged is in the list (each writer
    /// counts on from what it found, so both may write a number: it is there
    /// as often as it was acknowledged).
    @Test(arguments: ["plain", "snapshot", "compact"])
    func twoWritersOnOneFileLoseNothing(mode: String) throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store.quire"
            try DocumentStore(path: path).create(id: "kill-test")
            let writers = try (0..<2).map { _ in try startWriter(path: path, mode: mode) }
            for writer in writers { writer.waitForFirstEdit() }
            usleep(400_000)
            let exited = writers.filter { !$0.process.isRunning }
            let acknowledged = writers.flatMap { $0.kill() }
            #expect(exited.isEmpty, "a writer stopped on its own: \(exited.map(\.errors))")

            let store = try DocumentStore(path: path)
            let numbers: [Int64] = try store.read("kill-test") { doc in
                guard case .object(.list, let list)? = try doc.get(.root, key: "numbers") else { return [] }
                return try doc.list(list).compactMap { value in
                    if case .scalar(.int(let number)) = value { return number }
                    return nil
                }
            }
            let held = Dictionary(numbers.map { ($0, 1) }, uniquingKeysWith: +)
            let lost = Dictionary(acknowledged.map { ($0, 1) }, uniquingKeysWith: +).filter { held[$0.key, default: 0] < $0.value }
            #expect(lost.isEmpty, "acknowledged edits lost: \(lost.keys.sorted())")
            #expect(acknowledged.count > 20)
        }
    }

    /// A running writer and what it printed.
    final class Writer {
        let process: Process
        private let output: Pipe, errorOutput: Pipe
        private var received = Data()

        init(process: Process, output: Pipe, errorOutput: Pipe) {
            (self.process, self.output, self.errorOutput) = (process, output, errorOutput)
        }

        func waitForFirstEdit() {
            while !received.contains(UInt8(ascii: "\n")) {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { return }
                received.append(chunk)
            }
        }

        var errors: String { String(decoding: errorOutput.fileHandleForReading.availableData, as: UTF8.self) }

        /// Kills it and returns the numbers it acknowledged.
        func kill() -> [Int64] {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            received.append(output.fileHandleForReading.readDataToEndOfFile())
            let text = String(decoding: received, as: UTF8.self)
            return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().compactMap { Int64($0) }
        }
    }

    func startWriter(path: String, mode: String) throws -> Writer {
        let process = Process()
        process.executableURL = Self.writerURL
        process.arguments = [path, mode]
        let output = Pipe(), errorOutput = Pipe()
        process.standardOutput = output
        process.standardError = errorOutput
        try process.run()
        return Writer(process: process, output: output, errorOutput: errorOutput)
    }

    /// Starts the writer, kills it after `afterMilliseconds`, and returns
    /// the numbers it acknowledged (complete lines only). With
    /// `countingFromFirstEdit`, the delay starts once the writer has
    /// acknowledged its first edit, so that on a loaded machine a slow
    /// start-up does not use up the time meant for editing.
    func runAndKill(path: String, mode: String, afterMilliseconds delay: Int,
                    countingFromFirstEdit: Bool = false) throws -> [Int64] {
        let process = Process()
        process.executableURL = Self.writerURL
        process.arguments = [path, mode]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var received = Data()
        while countingFromFirstEdit && !received.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }  // the writer ended before its first edit
            received.append(chunk)
        }
        usleep(UInt32(delay * 1000))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        received.append(output.fileHandleForReading.readDataToEndOfFile())
        let text = String(decoding: received, as: UTF8.self)
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().compactMap { Int64($0) }
    }

    func checkStore(path: String, acknowledged: [Int64]) throws {
        let store = try DocumentStore(path: path)
        #expect(try store.database.integrityCheck())
        guard try store.documents().contains(where: { $0.id == "kill-test" }) else {
            #expect(acknowledged.isEmpty)
            return
        }
        let numbers: [Int64] = try store.read("kill-test") { doc in
            guard case .object(.list, let list)? = try doc.get(.root, key: "numbers") else { return [] }
            return try doc.list(list).compactMap { value in
                if case .scalar(.int(let number)) = value { return number }
                return nil
            }
        }
        try #require(Set(numbers).count == numbers.count, "an edit is present twice")
        let missing = Set(acknowledged).subtracting(numbers)
        try #require(missing.isEmpty, "acknowledged edits lost: \(missing.sorted())")
    }
}
