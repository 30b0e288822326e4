/// What `quire-bench sync` measures: a fresh replica catching up with a
/// trace's document through the HTTP sync server on loopback, the rate at
/// which the server accepts changes from concurrent clients, and the CPU a
/// client's long-poll burns while it waits. The measuring lives in the
/// command (`measureSync`); `sync` and `suite` both report these figures.
public struct SyncFigures: Sendable {
    /// Changes in the document caught up with: one per trace transaction.
    public var changes: Int
    /// Run times of the catch-up.
    public var catchUp: Spread
    public var catchUpBytes: Int
    public var catchUpRounds: Int
    /// Concurrent clients pushing changes, and the changes each pushes in one run.
    public var writers: Int
    public var changesPerWriter: Int
    /// Run times of the clients' pushes over HTTP, one change a request.
    public var accepting: Spread
    /// The same with the server's HTTP handler called in process.
    public var acceptingWithoutHTTP: Spread
    /// The process's CPU time (user and system) while a caught-up client
    /// waits `longPollSeconds` for news that does not come.
    public var longPollCPU: Spread
    public var longPollSeconds: Double

    public init(
        changes: Int, catchUp: Spread, catchUpBytes: Int, catchUpRounds: Int,
        writers: Int, changesPerWriter: Int, accepting: Spread, acceptingWithoutHTTP: Spread,
        longPollCPU: Spread, longPollSeconds: Double
    ) {
        self.changes = changes
        self.catchUp = catchUp
        self.catchUpBytes = catchUpBytes
        self.catchUpRounds = catchUpRounds
        self.writers = writers
        self.changesPerWriter = changesPerWriter
        self.accepting = accepting
        self.acceptingWithoutHTTP = acceptingWithoutHTTP
        self.longPollCPU = longPollCPU
        self.longPollSeconds = longPollSeconds
    }

    public var bytesPerChange: Double { Double(catchUpBytes) / Double(changes) }
    /// Changes per second the server accepts, over HTTP and without it.
    public var acceptedPerSecond: Spread { accepting.perSecond(writers * changesPerWriter) }
    public var acceptedPerSecondWithoutHTTP: Spread { acceptingWithoutHTTP.perSecond(writers * changesPerWriter) }

    public var measures: [Measure] {
        [
            Measure("catch-up of \(changes) changes", "ms", catchUp),
            Measure("catch-up bytes received", "bytes", exactly: Double(catchUpBytes)),
            Measure("catch-up round trips", "round trip(s)", exactly: Double(catchUpRounds)),
            Measure("bytes on the wire per change", "bytes", exactly: bytesPerChange),
            Measure("accepted from \(writers) clients, one change a request", "changes/s", acceptedPerSecond),
            Measure("the same without HTTP (handler called in process)", "changes/s", acceptedPerSecondWithoutHTTP),
            Measure("CPU used by a \(longPollSeconds.formatted()) s long-poll with nothing new", "ms", longPollCPU),
        ]
    }
}
