import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerPlan
import WorkerSupport

/// A self-contained HTML page of a sync: the totals on top, then the entries that were added,
/// updated (old and new side by side) or failed (with the version still served), as thumbnails
/// embedded from the cache. No external resource, no script. Written as well-formed XHTML (void
/// elements closed), so XML tools can read it too.
public struct HTMLReportWriter: ReportFormat {
    public init() {}

    public var option: String { "--report-html" }

    public func recognizes(_ head: String) -> Bool {
        head.hasPrefix("<!DOCTYPE html>") && head.contains("<title>worker sync")
    }

    public var rows: ReportRowNeeds { .changed }

    public func data(_ report: SyncReport, success: Bool) throws -> Data {
        Data(Self.html(report).utf8)
    }

    /// Images larger than this are not embedded (a box with the size instead).
    static let embedLimit = 512 << 10
    /// Cards per section at most; the rest is counted.
    static let cardLimit = 300

    public static func html(_ report: SyncReport) -> String {
        let totals = report.totals
        let names = report.manifests.map(\.name).joined(separator: ", ")
        var body = """
            <header class="\(totals.failed == 0 ? "ok" : "bad")">
            <h1>worker sync — \(escape(names))</h1>
            <p>\(escape(report.finishedAt.formatted(Date.ISO8601FormatStyle()))) · \(Text.format("%.2f", report.duration)) s · \
            \(escape(Units.formatBytes(totals.bytesDownloaded))) downloaded · cache <code>\(escape(report.cacheDirectory))</code></p>
            <ul class="totals">
            """
        for (label, value) in [
            ("entries", totals.entries), ("unchanged", totals.unchanged), ("added", totals.added),
            ("updated", totals.updated), ("reused", totals.reused), ("failed", totals.failed),
            ("removed", totals.removed),
        ] {
            body += "<li class=\"\(label)\"><b>\(value)</b>\(label)</li>"
        }
        body += "</ul></header>\n"
        body += section("Updated", report.entries.with { $0 == .updated }) { entry in
            figure(entry.previousPath, caption: "before") + "<span class=\"arrow\">→</span>" + figure(entry.path, caption: "after")
        }
        body += section("Added", report.entries.with { $0 == .added }) { entry in figure(entry.path, caption: nil) }
        body += section("Failed", report.failedEntries) { entry in
            let served =
                entry.stale == true ? figure(entry.previousPath, caption: "still served") : "<div class=\"missing\">not cached</div>"
            return served + "<p class=\"reason\"><b>\(escape(entry.reason?.rawValue ?? "failed"))</b> \(escape(entry.error ?? ""))</p>"
        }
        return """
            <!DOCTYPE html>
            <html xmlns="http://www.w3.org/1999/xhtml" lang="en"><head><meta charset="utf-8"/>
            <meta name="viewport" content="width=device-width, initial-scale=1"/>
            <title>worker sync — \(escape(names))</title>
            <style>\(style)</style></head>
            <body>
            \(body)
            </body></html>

            """
    }

    private static func section(
        _ title: String, _ entries: some Collection<SyncReport.Entry>,
        card: (SyncReport.Entry) -> String
    ) -> String {
        guard !entries.isEmpty else { return "" }
        var out = "<section><h2>\(title) <small>\(entries.count)</small></h2><div class=\"grid\">\n"
        for entry in entries.prefix(cardLimit) {
            let url = URL(string: entry.url)
            let name = url?.lastPathComponent ?? entry.url
            let place = url?.host ?? (url?.isFileURL == true ? url?.deletingLastPathComponent().path : nil) ?? ""
            out +=
                "<article title=\"\(escape(entry.url))\"><div class=\"images\">\(card(entry))</div>"
                + "<p class=\"url\"><b>\(escape(name))</b><br/>\(escape(place))</p></article>\n"
        }
        out += "</div>"
        if entries.count > cardLimit { out += "<p class=\"more\">… and \(entries.count - cardLimit) more (see the JSON report)</p>" }
        return out + "</section>\n"
    }

    private static func figure(_ path: String?, caption: String?) -> String {
        let label = caption.map { "<figcaption>\($0)</figcaption>" } ?? ""
        guard let path, let data = FileManager.default.contents(atPath: path) else {
            return "<figure><div class=\"missing\">no file</div>\(label)</figure>"
        }
        guard data.count <= embedLimit, let type = imageType(data) else {
            return "<figure><div class=\"missing\">\(escape(Units.formatBytes(Int64(data.count))))</div>\(label)</figure>"
        }
        return "<figure><img alt=\"\" src=\"data:\(type);base64,\(data.base64EncodedString())\"/>\(label)</figure>"
    }

    /// The MIME type of an image by its first bytes, or nil for anything else.
    static func imageType(_ data: Data) -> String? {
        let head = [UInt8](data.prefix(16))
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if head.starts(with: Array("GIF8".utf8)) { return "image/gif" }
        if head.count >= 12, head.starts(with: Array("RIFF".utf8)), Array(head[8..<12]) == Array("WEBP".utf8) { return "image/webp" }
        return nil
    }

    static func escape(_ text: String) -> String {
        Sanitize.markup(text)
    }

    private static let style = """
        body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#222}
        header{padding:16px 24px;background:#fff;border-bottom:4px solid #2e9d5b}header.bad{border-color:#d64545}
        h1{font-size:20px;margin:0 0 4px}header p{margin:0;color:#555}
        .totals{display:flex;gap:8px;list-style:none;padding:0;margin:12px 0 0;flex-wrap:wrap}
        .totals li{background:#f0f1f4;border-radius:6px;padding:6px 12px;text-align:center;min-width:64px}
        .totals b{display:block;font-size:20px}.totals .failed b{color:#d64545}.totals .added b,.totals .updated b{color:#2e7d9d}
        section{padding:8px 24px}h2{font-size:16px}h2 small{color:#777;font-weight:normal}
        .grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(220px,1fr));gap:12px}
        article{background:#fff;border-radius:8px;padding:10px;box-shadow:0 1px 2px #0002}
        .images{display:flex;align-items:center;justify-content:center;gap:6px}
        figure,.images>.missing{margin:0;text-align:center;flex-shrink:0}figure img{max-width:96px;max-height:96px;image-rendering:auto;border:1px solid #ddd;background:#fff}
        figcaption{font-size:11px;color:#777}.arrow{font-size:18px;color:#999}
        .missing{width:96px;height:96px;display:flex;align-items:center;justify-content:center;background:#eee;color:#888;font-size:12px;border-radius:4px}
        .url{font:12px ui-monospace,monospace;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;margin:8px 0 0;color:#333}
        .reason{font-size:12px;color:#a33;margin:6px 0 0;word-break:break-word}.more{color:#777}
        """
}
