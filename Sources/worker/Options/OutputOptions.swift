import ArgumentParser
import FoundationEssentials
import Glibc
import ManifestSync

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
    var progress = "auto"

    @Option(name: .customLong("log-format"), help: "Lines on stderr as text, or json (one object a line).")
    var logFormat = "text"

    @Flag(name: .shortAndLong, help: "Log each retry and failure as it happens (stderr).")
    var verbose = false

    func validate() throws {
        guard ProgressPrinter.Mode(rawValue: progress) != nil else { throw ValidationError("--progress: auto, always or never") }
        guard ["text", "json"].contains(logFormat) else { throw ValidationError("--log-format: text or json") }
    }

    /// The files, checked against the manifests (exit 2 when one would overwrite an input).
    func outputs(manifests: [String]) throws -> SyncOutputs {
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

/// When and how much a run does: its deadline, its lock wait, its failure budget, its shard.
struct SchedulingOptions: ParsableArguments {
    @Option(help: "Longest the whole run may take (e.g. 10m); unfinished entries fail as cancelled.")
    var deadline: String?

    @OptionGroup var lock: LockOptions

    @Option(name: .customLong("max-failures"), help: "Exit 0 while failures stay within N or N% of the entries.")
    var maxFailures = "0"

    @Option(help: "Handle only shard I of N (0-based; default from JOB_COMPLETION_INDEX / JOB_COMPLETION_COUNT).")
    var shard: String?

    func validate() throws {
        _ = try deadlineSeconds()
        _ = try failureBudget()
        _ = try resolvedShard()
    }

    func deadlineSeconds() throws -> Double? {
        try deadline.map { try positiveDuration($0, "--deadline") }
    }

    /// `--max-failures`: a count, or a share of the entries (`5%`).
    func failureBudget() throws -> FailureBudget {
        guard let budget = FailureBudget(maxFailures) else {
            throw ValidationError("--max-failures: '\(maxFailures)' is not a count or a percentage (e.g. 10 or 2%)")
        }
        return budget
    }

    /// `--shard I/N`, else Kubernetes Indexed Job variables, else everything.
    func resolvedShard() throws -> Shard {
        if let shard {
            guard let parsed = Shard(shard) else { throw ValidationError("--shard: '\(shard)' is not I/N with 0 ≤ I < N") }
            return parsed
        }
        let environment = ProcessInfo.processInfo.environment
        guard let index = environment["JOB_COMPLETION_INDEX"] else { return .all }
        guard let count = environment["JOB_COMPLETION_COUNT"] else {
            throw ValidationError("JOB_COMPLETION_INDEX is set: set JOB_COMPLETION_COUNT to the Job's completions too (or pass --shard I/N)")
        }
        guard let parsed = Shard("\(index)/\(count)") else {
            throw ValidationError("JOB_COMPLETION_INDEX/JOB_COMPLETION_COUNT '\(index)/\(count)' is not I/N with 0 ≤ I < N")
        }
        return parsed
    }
}
