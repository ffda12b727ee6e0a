// swift-tools-version:6.0
import PackageDescription

// The program uses FoundationEssentials, never Foundation (whose ICU and CoreFoundation made a
// 92 MB binary that starts ~0.6 ms slower and has a third more conformances for every runtime
// lookup to scan). swift-crypto imports Foundation, and without this feature its String
// extensions (`range(of:)`, ...) would be usable here unnoticed and link all of it back in.
//
// The engine is eight targets: in a release build, cross-module optimization lets a layer's
// generic and small functions be specialized and inlined in the layers above it, as they were
// when the engine was one module (BENCHMARKS.md as of 278b2e0, "Layers as targets").
let essentialsOnly: [SwiftSetting] = [
    .enableUpcomingFeature("MemberImportVisibility"),
    .unsafeFlags(["-cross-module-optimization"], .when(configuration: .release)),
]

let package = Package(
    name: "worker",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "worker", targets: ["worker"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // libcurl's headers (libcurl4-openssl-dev) at build time; libcurl.so.4 is loaded when the
        // first download needs it (see Sources/CCurl/include/worker_curl.h). Only CurlTransport
        // imports it.
        .target(name: "CCurl", linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "CWorkerSystem"),
        // The engine, one target per layer; each uses only the layers above it in this list
        // (docs/ARCHITECTURE.md draws the graph). `public` marks what a layer below offers the
        // layers above (cross-module optimization inlines only that); everything else stays inside.
        .target(
            name: "WorkerSupport",
            dependencies: [
                "CWorkerSystem", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: essentialsOnly
        ),
        .target(
            name: "WorkerManifest",
            dependencies: ["WorkerSupport", "CYAML", "CWorkerSystem", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: essentialsOnly
        ),
        .target(
            name: "WorkerStore",
            dependencies: [
                "WorkerSupport", "WorkerManifest", "CSQLite", "CWorkerSystem",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: essentialsOnly
        ),
        .target(
            name: "WorkerFetch",
            dependencies: [
                "WorkerSupport", "WorkerManifest", "WorkerStore", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: essentialsOnly
        ),
        // The kinds of URL beyond http(s) and files (s3://, oci://), a folder each, registered in
        // Kinds.swift. Only the program (and the tests) import it: the layers reach a kind through
        // `URLKind` and `KindAccess`.
        .target(
            name: "WorkerKinds",
            dependencies: [
                "WorkerSupport", "WorkerManifest", "WorkerStore", "WorkerFetch", .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: essentialsOnly
        ),
        .target(
            name: "WorkerPlan",
            dependencies: ["WorkerSupport", "WorkerManifest", "WorkerStore", "WorkerFetch"],
            swiftSettings: essentialsOnly
        ),
        .target(
            name: "WorkerReport",
            dependencies: ["WorkerSupport", "WorkerStore", "WorkerFetch", "WorkerPlan"],
            swiftSettings: essentialsOnly
        ),
        .target(
            name: "WorkerSync",
            dependencies: [
                "WorkerSupport", "WorkerManifest", "WorkerStore", "WorkerFetch", "WorkerPlan", "WorkerReport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: essentialsOnly
        ),
        // The commands beside a sync: verify, status, path, rm, clear, gc, export, push.
        .target(
            name: "WorkerLifecycle",
            dependencies: [
                "WorkerSupport", "WorkerManifest", "WorkerStore", "WorkerFetch",
                "WorkerSync", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: essentialsOnly
        ),
        // The transport: libcurl's engines behind the fetch layer's `Transport` protocol.
        .target(
            name: "CurlTransport",
            dependencies: [
                "WorkerSupport", "WorkerManifest", "WorkerStore", "WorkerFetch", "CCurl", "CWorkerSystem",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: essentialsOnly
        ),
        .executableTarget(
            name: "worker",
            dependencies: [
                "WorkerSupport", "WorkerManifest", "WorkerStore", "WorkerFetch", "WorkerReport", "WorkerSync", "WorkerLifecycle",
                "WorkerKinds", "CurlTransport",
                "CWorkerSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: essentialsOnly
        ),
        .target(
            name: "WorkerTestSupport",
            path: "Tests/WorkerTestSupport"
        ),
        .testTarget(
            name: "UnitTests",
            dependencies: [
                "WorkerSupport", "WorkerManifest", "WorkerStore", "WorkerFetch", "WorkerKinds", "WorkerPlan", "WorkerReport", "WorkerSync",
                "WorkerLifecycle", "CurlTransport",
                "CCurl",
                "WorkerTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "WorkerSupport", "WorkerManifest", "WorkerStore", "WorkerFetch", "WorkerKinds", "WorkerPlan", "WorkerReport", "WorkerSync",
                "WorkerLifecycle", "CurlTransport",
                "CCurl",
                "WorkerTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
