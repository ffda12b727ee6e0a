import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerPlan
import WorkerSupport

/// JUnit XML (GitLab, Jenkins and GitHub test reporters read it): one test suite per manifest,
/// one test case per entry checked, a `<failure>` with the reason and message per failed entry.
public struct JUnitReportWriter: ReportFormat {
    public init() {}

    public var option: String { "--junit" }

    public func recognizes(_ head: String) -> Bool {
        head.hasPrefix("<?xml") && head.contains("<testsuites")
    }

    /// A case per entry checked, unchanged ones too.
    public var rows: ReportRowNeeds { [.changed, .unchanged] }

    public func data(_ report: SyncReport, success: Bool) throws -> Data {
        Data(Self.xml(report).utf8)
    }

    public static func xml(_ report: SyncReport) -> String {
        let byManifest = Dictionary(grouping: report.entries.with { $0 != .removed }) { $0.manifest ?? "manifest" }
        let failures = report.entries.with { $0 == .failed }.count + (report.error == nil ? 0 : 1)
        var out = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        out +=
            #"<testsuites name="worker sync" tests="\#(report.totals.entries + (report.error == nil ? 0 : 1))" failures="\#(failures)" time="\#(format(report.duration))">"#
            + "\n"
        if let error = report.error {
            // The run stopped before its entries: one case says why.
            out += #"  <testsuite name="manifests" tests="1" failures="1">"# + "\n"
            out += #"    <testcase classname="manifests" name="read the manifests">"# + "\n"
            out += #"      <failure type="manifest" message="\#(escape(error))">\#(escape(error))</failure>"# + "\n"
            out += "    </testcase>\n  </testsuite>\n"
        }
        for manifest in report.manifests {
            let cases = byManifest[manifest.name] ?? []
            let failed = cases.filter { $0.status == .failed }.count
            out +=
                #"  <testsuite name="\#(escape(manifest.name))" tests="\#(cases.count)" failures="\#(failed)" file="\#(escape(manifest.path))">"#
                + "\n"
            for entry in cases {
                out += #"    <testcase classname="\#(escape(manifest.name))" name="\#(escape(entry.url))""#
                guard entry.status == .failed else {
                    out += "><system-out>\(entry.status.rawValue)</system-out></testcase>\n"
                    continue
                }
                let reason = entry.reason?.rawValue ?? "failed"
                let message = entry.error ?? reason
                out += ">\n"
                out += #"      <failure type="\#(reason)" message="\#(escape(message))">"#
                out += escape(
                    "\(reason): \(message)\(entry.attempts.map { " (attempts: \($0))" } ?? "")\(entry.stale == true ? "; " + TextReportWriter.staleNote(entry) : "")"
                )
                out += "</failure>\n    </testcase>\n"
            }
            out += "  </testsuite>\n"
        }
        return out + "</testsuites>\n"
    }

    static func escape(_ text: String) -> String {
        Sanitize.markup(text)
    }

    static func format(_ seconds: Double) -> String { Text.format("%.3f", seconds) }
}
