import ArgumentParser
import FoundationEssentials
import Glibc
import WorkerReport

/// What a run prints and writes: reports, progress, logs.
struct OutputOptions: ParsableArguments {
    @Option(name: .customLong("report"), help: "Write the JSON report (schema 1) to this file.")
    var reportPath: String?

    @Flag(name: .customLong("report-all"), help: "List unchanged entries in the report too.")
    var reportAll = false

    @Option(name: .customLong("junit"), help: "Write JUnit XML: one test case per entry checked.")
    var junitPath: String?

    @Option(name: .customLong("summary-md"), help: "Write a Markdown summary (default in GitHub Actions: appended to $GITHUB_STEP_SUMMARY).")
    var summaryPath: String?

    @Option(name: .customLong("metrics"), help: "Write Prometheus text format (node_exporter textfile collector), atomically.")
    var metricsPath: String?

    @Option(name: .customLong("report-html"), help: "Write a self-contained HTML page with thumbnails of what changed or failed.")
    var htmlPath: String?

    @Flag(name: [.short, .customLong("quiet")], help: "Print nothing on stdout; failures still go to stderr.")
    var quiet = false

    @Option(help: "Progress on stderr: auto (unless --quiet), always, never. A live line on a terminal, a plain line every 5 s elsewhere.")
    var progress = ProgressPrinter.Mode.auto

    @Option(name: .customLong("log-format"), help: "Lines on stderr as text, or json (one object a line).")
    var logFormat = LogFormat.text

    @Flag(name: .shortAndLong, help: "Log each retry and failure as it happens (stderr).")
    var verbose = false

    /// The files, checked against the manifests (exit 2 when one would overwrite an input).
    func outputs(manifests: [String]) throws(CommandFailure) -> SyncOutputs {
        try checkOutputs([(.report, reportPath), (.junit, junitPath), (.summary, summaryPath),
                          (.metrics, metricsPath), (.html, htmlPath)], manifests: manifests)
        var outputs = SyncOutputs()
        outputs.report = reportPath
        outputs.reportAll = reportAll
        outputs.junit = junitPath
        outputs.metrics = metricsPath
        outputs.html = htmlPath
        outputs.summary = summaryPath
        if summaryPath == nil, let github = ProcessInfo.processInfo.environment["GITHUB_STEP_SUMMARY"], !github.isEmpty {
            outputs.appendedSummary = github
        }
        return outputs
    }
}
