// swift-tools-version:5.9
// A measuring prototype, not part of worker: libcurl's multi interface driven from Swift, doing
// worker's per-file work (hash while writing to a temporary file, verify, rename into the object
// store). It answers one question of issue 14 with figures: how much of worker's CPU per file is
// the HTTP client. Built and run by Benchmarks/curlprobe.sh; needs libcurl4-openssl-dev and libssl-dev.
import PackageDescription

let package = Package(
    name: "curlprobe",
    targets: [
        .systemLibrary(name: "CCurlProbe", pkgConfig: "libcurl"),
        .executableTarget(name: "curlprobe", dependencies: ["CCurlProbe"],
                          swiftSettings: [.unsafeFlags(["-Ounchecked"])]),
    ]
)
