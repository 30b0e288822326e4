import CMalloc
import QuireCore
import QuireStore

/// The size of a document's snapshot, the time to open it, and the memory
/// the opened document holds.
///
/// The snapshot is a store snapshot frame (`SnapshotFrame`: header,
/// checksum, zstd) around `Document.encodeSnapshot()` with the full
/// history, so a replica opening it can serve every past change.
public struct SnapshotLoad: Sendable {
    /// Bytes of the frame.
    public var frameBytes: Int
    /// Encoding the document and sealing the frame (zstd included).
    public var seal: Spread
    /// Opening the frame (checksum, zstd) and decoding the document, ready to edit.
    public var load: Spread
    /// Heap bytes the opened document holds (median over the runs): what
    /// malloc reports in use after loading minus before, while the document
    /// is alive and everything else the load made is freed.
    public var memoryBytes: Int
    /// A failed check: the opened document's state differs from the original's.
    public var failure: String?

    /// Seals `document` once to warm up and `runs` times measured, then
    /// opens the frame once to warm up and `runs` times measured. A
    /// document keeps nothing between encodes, so each seal does the whole
    /// work; the peers time each replayed doc's first snapshot instead,
    /// since Loro's second export of an unchanged doc copies its first
    /// (`peers.py`, encodeMs).
    public static func measure(_ document: Document, runs: Int) throws -> SnapshotLoad {
        var frame: [UInt8] = []
        var sealTimes: [UInt64] = []
        for run in 0...max(runs, 1) {
            let start = CPUClock.now()
            frame = try SnapshotFrame.seal(document.encodeSnapshot(), changeCount: UInt64(document.changeCount))
            if run > 0 { sealTimes.append(CPUClock.now() - start) }
        }
        var times: [UInt64] = [], memory: [Int] = []
        var failure: String?
        for run in 0...runs {
            let heapBefore = heapInUse()
            let start = CPUClock.now()
            let opened = try open(frame)
            let nanos = CPUClock.now() - start
            let heapAfter = heapInUse()
            if run == 0 {
                if opened.encodeSnapshot(includeHistory: false) != document.encodeSnapshot(includeHistory: false) {
                    failure = "the document opened from its snapshot has a different state"
                }
            } else {
                times.append(nanos)
                memory.append(heapAfter - heapBefore)
            }
            withExtendedLifetime(opened) {}
        }
        return SnapshotLoad(frameBytes: frame.count, seal: Spread(nanoseconds: sealTimes)!, load: Spread(nanoseconds: times)!,
                            memoryBytes: memory.sorted()[memory.count / 2], failure: failure)
    }

    /// A separate function, so that the decompressed bytes are freed when it
    /// returns unless the document keeps them. Opened as the store opens
    /// its snapshots (`SnapshotStore.decode`), the frame's CRC-32 standing
    /// for the encoding's own.
    private static func open(_ frame: [UInt8]) throws -> Document {
        try SnapshotFrame.document(in: frame, replica: ReplicaID(2), limits: .default)
    }

}

/// Heap bytes the process has in use: what malloc has handed out and not had
/// back, in every arena, small blocks (`uordblks`) and the large ones it maps
/// directly (`hblkhd`). Measured, not estimated; what was freed before does
/// not count, unlike a resident-set difference.
func heapInUse() -> Int {
    let info = mallinfo2()
    return Int(info.uordblks + info.hblkhd)
}
