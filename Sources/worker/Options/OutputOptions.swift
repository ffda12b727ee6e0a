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

    @Option(
        name: .customLong("summary-md"), help: "Write a Markdown summary (default in GitHub Actions: appended to $GITHUB_STEP_SUMMARY).")
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

    /// The report's formats a sync offers, each with the path its option gave, in the order they
    /// are written: the one list the outputs are made from.
    private var formats: [(format: any ReportFormat, path: String?)] {
        [
            (JSONReportWriter(all: reportAll), reportPath), (JUnitReportWriter(), junitPath), (PrometheusMetricsWriter(), metricsPath),
            (HTMLReportWriter(), htmlPath), (MarkdownSummaryWriter(), summaryPath),
        ]
    }

    /// The files, checked against the manifests (exit 2 when one would overwrite an input). In
    /// GitHub Actions, without `--summary-md`, the Markdown summary is appended to the step's.
    func outputs(manifests: [String]) throws(CommandFailure) -> SyncOutputs {
        let given = formats.compactMap { format, path in path.map { (format: format, path: $0) } }
        try checkOutputs(given, manifests: manifests)
        var outputs = SyncOutputs(given.map { SyncOutputs.File($0.format, $0.path) })
        if summaryPath == nil, let github = ProcessInfo.processInfo.environment["GITHUB_STEP_SUMMARY"], !github.isEmpty {
            outputs.files.append(SyncOutputs.File(MarkdownSummaryWriter(), github, appends: true))
        }
        return outputs
    }
}
