import Foundation
@testable import QuireBenchKit
import QuireTestSupport
import Testing

/// `MergeTurns` driving a stand-in for `peers.py merge-turns`: a shell
/// script that speaks the same lines.
@Suite struct MergeTurnsTests {
    /// Runs `test` with the path of a shell script made of `body`, removed afterwards.
    private static func withRunner(_ body: String, _ test: (String) throws -> Void) throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/merge-turns.sh"
            try writeShellScript(body, to: path)
            try test(path)
        }
    }

    @Test func quireAndThePeersTakeTurns() throws {
        // Each answer counts the rounds so far: the peers' times are 1, 2, 3 ms.
        let counting = """
            echo ready
            n=0
            while read line; do n=$((n + 1)); echo "{\\"yrs\\": $n, \\"loro\\": $((n * 10))}"; done
            """
        try Self.withRunner(counting) { script in
            var turns = try MergeTurns(runner: script, command: "trace", path: "unused")
            // Each round merges twice in Quire and times the second: the 90 ms merges are the untimed ones.
            var quireMerges: [UInt64] = [90_000_000, 4_000_000, 90_000_000, 6_000_000, 90_000_000, 5_000_000]
            let spreads = try turns.measure(rounds: 3) { quireMerges.removeFirst() }
            turns.finish()
            #expect(quireMerges.isEmpty)
            #expect(spreads["quire"] == Spread(median: 5, min: 4, max: 6))
            #expect(spreads["yrs"] == Spread(median: 2, min: 1, max: 3))
            #expect(spreads["loro"] == Spread(median: 20, min: 10, max: 30))
        }
    }

    @Test func aPeerProcessThatDoesNotStartIsAnError() throws {
        try Self.withRunner("echo 'cannot import pycrdt' >&2; exit 1") { script in
            #expect(throws: MergeTurns.TurnsError.self) { try MergeTurns(runner: script, command: "trace", path: "unused") }
        }
    }

    @Test func aPeerProcessThatStopsAnsweringIsAnError() throws {
        try Self.withRunner("echo ready; read line; echo 'Traceback (most recent call last):'") { script in
            var turns = try MergeTurns(runner: script, command: "trace", path: "unused")
            defer { turns.finish() }
            #expect(throws: MergeTurns.TurnsError.self) { try turns.measure(rounds: 2) { 1_000_000 } }
        }
    }

    @Test func aPeerProcessThatHasEndedStoppedAnswering() throws {
        try Self.withRunner("echo ready") { script in
            var turns = try MergeTurns(runner: script, command: "trace", path: "unused")
            defer { turns.finish() }
            usleep(200_000)  // it has ended: writing to it fails
            let error = #expect(throws: MergeTurns.TurnsError.self) { try turns.measure(rounds: 2) { 1_000_000 } }
            #expect(error?.message == "peers.py merge-turns stopped answering")
        }
    }

    @Test func aPeerProcessThatHangsIsAnErrorAndIsEnded() throws {
        // It reads the first round and never answers, nor ends when its input closes.
        try Self.withRunner("echo ready; read line; exec sleep 600") { script in
            var turns = try MergeTurns(runner: script, command: "trace", path: "unused", answerTimeout: .milliseconds(300))
            let error = #expect(throws: MergeTurns.TurnsError.self) { try turns.measure(rounds: 2) { 1_000_000 } }
            #expect(error?.message.hasPrefix("peers.py merge-turns gave no answer within") == true)
            turns.finish()
            #expect(!turns.isRunning)
        }
    }

    @Test func answersAreMillisecondsByPeer() {
        #expect(MergeTurns.peerTimes(#"{"yrs": 1.5, "loro": 40}"#) == ["yrs": 1.5, "loro": 40])
        #expect(MergeTurns.peerTimes("ready") == nil)
        #expect(MergeTurns.peerTimes("{}") == nil)
        #expect(MergeTurns.peerTimes(#"{"yrs": "fast"}"#) == nil)
        #expect(MergeTurns.peerTimes(#"{"yrs": -1}"#) == nil)
    }
}
