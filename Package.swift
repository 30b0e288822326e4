// swift-tools-version:6.2
// Quire: a collaborative document store. Layers (see Specs/ and README.md):
// tool (quire, quire-bench) -> sync (QuireSync) -> API (Quire) -> store (QuireStore) -> core (QuireCore, its CRC-32 in CarrylessCRC32) -> C libraries.
import PackageDescription

let package = Package(
    name: "Quire",
    products: [
        .library(name: "QuireCore", targets: ["QuireCore"]),
        .library(name: "QuireStore", targets: ["QuireStore"]),
        .library(name: "QuireSync", targets: ["QuireSync"]),
        .library(name: "Quire", targets: ["Quire"]),
        .executable(name: "quire", targets: ["quire"]),
        .executable(name: "quire-bench", targets: ["quire-bench"]),
    ],
    // Each target lists every module of the package it depends on, directly or
    // through another, not only those it imports: SwiftPM recompiles a target
    // when one of its listed dependencies' .swiftmodule changes, and a stored
    // property more in a QuireCore struct changes QuireCore.swiftmodule but
    // not those of the modules above it, so a target that lays out a Document
    // without listing QuireCore would keep the old size (HISTORY.md).
    targets: [
        // C libraries from Debian's -dev packages.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),

        // Pure Swift CRDT core: no I/O, no clock, no randomness.
        .target(name: "QuireCore", dependencies: ["CarrylessCRC32"]),
        // QuireCore's CRC-32 folded with the carry-less multiply, on x86-64
        // processors that have it. The one module built for a feature past
        // the x86-64 baseline (PCLMULQDQ), and it checks for it before use
        // (CarrylessCRC32.swift says why it takes a module of its own). The
        // feature goes to clang's target options, whose features Swift
        // compiles with, as -target-feature rather than -mpclmul, which clang
        // refuses for other architectures (there it is ignored with a note).
        // SwiftPM before 6.2 refused a tagged dependency holding such an
        // unsafe flag; from tools version 6.2 on it takes it, hence that
        // version above, so that apps can depend on a release of Quire.
        .target(
            name: "CarrylessCRC32",
            swiftSettings: [
                .enableExperimentalFeature("BuiltinModule"),
                .unsafeFlags(["-Xcc", "-Xclang", "-Xcc", "-target-feature", "-Xcc", "-Xclang", "-Xcc", "+pclmul"]),
            ]
        ),

        // Storage: a small SQLite layer and bounded zstd compression.
        .target(name: "QuireStore", dependencies: ["QuireCore", "CarrylessCRC32", "CSQLite", "CZstd"]),

        // Sync: messages, sessions and transports (HTTP over libmicrohttpd and URLSession).
        .target(name: "QuireSync", dependencies: ["Quire", "QuireCore", "CarrylessCRC32", "QuireStore", "TerminalSafety", "CMicroHTTPD", "CZstd"]),
        // The public API: DocumentStore over the store and the core.
        .target(name: "Quire", dependencies: ["QuireCore", "CarrylessCRC32", "QuireStore"]),

        // The JSON text the tools print (quire --json, quire-bench report lines), byte for byte.
        .target(name: "JSONText"),
        // Text others wrote (notes, a peer's standard error) made safe to show on a terminal.
        .target(name: "TerminalSafety"),

        // The command-line tool: notes, merge inspection, file inspection.
        .executableTarget(name: "quire", dependencies: ["Quire", "QuireCore", "CarrylessCRC32", "QuireStore", "QuireSync", "JSONText", "TerminalSafety"]),

        // The benchmark harness: reusable, tested pieces in QuireBenchKit, a thin command line on top.
        // glibc's malloc statistics, for the memory a loaded document holds.
        .systemLibrary(name: "CMalloc", path: "Benchmarks/CMalloc"),
        .target(
            name: "QuireBenchKit",
            dependencies: ["Quire", "QuireCore", "CarrylessCRC32", "QuireStore", "QuireSync", "TerminalSafety", "CZlib", "CMalloc", "QuireTestSupport", "JSONText"],
            path: "Benchmarks/QuireBenchKit"
        ),
        .executableTarget(
            name: "quire-bench",
            dependencies: ["QuireBenchKit", "Quire", "QuireCore", "CarrylessCRC32", "QuireStore", "QuireSync", "TerminalSafety", "QuireTestSupport", "JSONText"],
            path: "Benchmarks/quire-bench"
        ),

        // The seeded generator (and fuzzing helpers) the tests and the benchmark workloads share, and raw sockets for the HTTP tests.
        .target(name: "QuireTestSupport", dependencies: ["QuireCore", "CarrylessCRC32", "QuireStore"], path: "Tests/QuireTestSupport"),
        .testTarget(name: "QuireCoreTests", dependencies: ["QuireCore", "CarrylessCRC32", "QuireTestSupport"]),
        // CZlib: gzip answers, as a hostile server sends them.
        .testTarget(name: "QuireSyncTests", dependencies: ["QuireTestSupport", "QuireSync", "Quire", "QuireCore", "CarrylessCRC32", "QuireStore", "CZlib"]),
        .testTarget(name: "QuireStoreTests", dependencies: ["QuireTestSupport", "QuireStore", "QuireCore", "CarrylessCRC32", "CSQLite", "CZstd"]),
        // A real process for the kill tests of QuireTests: writes edits in a
        // loop and reports each acknowledged one.
        .executableTarget(name: "quire-store-writer", dependencies: ["Quire", "QuireCore", "CarrylessCRC32", "QuireStore"], path: "Tests/StoreWriter"),
        .testTarget(name: "QuireTests", dependencies: ["QuireTestSupport", "Quire", "QuireCore", "CarrylessCRC32", "QuireStore", "CSQLite", "quire-store-writer"]),
        .testTarget(
            name: "QuireBenchKitTests",
            dependencies: ["QuireBenchKit", "Quire", "QuireCore", "CarrylessCRC32", "QuireStore", "QuireSync", "TerminalSafety", "QuireTestSupport", "JSONText", "quire-bench"]
        ),
        .testTarget(name: "JSONTextTests", dependencies: ["JSONText"]),
        // End-to-end tests that run the built `quire` binary.
        // QuireSync: a sync answer built by hand, served raw (`RawAnswerServer`).
        .testTarget(name: "quireTests", dependencies: ["quire", "Quire", "QuireCore", "CarrylessCRC32", "QuireStore", "QuireSync", "QuireTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
