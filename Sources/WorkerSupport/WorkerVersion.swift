/// The version of this build: `worker --version`, the JSON report and the metrics say it.
package enum WorkerVersion {
    package static let current = "0.5.0"
}
