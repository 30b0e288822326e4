import Foundation
import Testing
@testable import QuireBenchKit

@Suite struct CPUClockTests {
    /// The point of the clock: time spent off the CPU is not counted.
    @Test func sleepingCostsNoCPUTime() {
        let start = CPUClock.now()
        Thread.sleep(forTimeInterval: 0.2)
        #expect(CPUClock.now() - start < 100_000_000)
    }

    @Test func workingAdvancesIt() {
        let start = CPUClock.now()
        var state: UInt64 = 1
        for _ in 0..<20_000_000 { state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
        withExtendedLifetime(state) {}
        #expect(CPUClock.now() - start > 1_000_000)
    }
}
