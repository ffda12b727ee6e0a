import Foundation

/// Reads and validates manifests completely (a streaming pass each) before anything else happens:
/// URL resolution, `${VAR}` expansion, and the same URL listed with two hashes.
public struct ManifestLoader {
    public var environment: [String: String]
    public var maxDiagnostics = 50

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// Loads every manifest; throws `ManifestErrors` listing each problem as `path:line:column`.
    public func load(paths: [String]) throws(ManifestErrors) -> ManifestSet {
        var diagnostics: [ManifestDiagnostic] = []
        var manifests: [Manifest] = []
        var entries: [ManifestEntry] = []
        /// URL → index into `entries`, to merge repeats and catch conflicting hashes.
        var byURL: [String: Int] = [:]

        for path in paths {
            guard diagnostics.count < maxDiagnostics else { break }
            var raw: [RawEntry] = []
            var reader = ManifestReader(path: path)
            reader.maxDiagnostics = maxDiagnostics - diagnostics.count
            var fileDiagnostics: [ManifestDiagnostic] = []
            let header = reader.read(diagnostics: &fileDiagnostics) { raw.append($0) }
            let syntaxBroken = fileDiagnostics.contains { $0.message.hasPrefix("YAML syntax error") || $0.line == 0 }
            diagnostics += fileDiagnostics
            if syntaxBroken { continue }

            var report: (Int, Int, String) -> Void = { line, column, message in
                diagnostics.append(ManifestDiagnostic(path: path, line: line, column: column, message: message))
            }
            let headers = expand(header.headers, report: &report)
            var resolver = URLResolver(manifestPath: path)
            if let base = header.baseURL {
                if let problem = resolver.setBase(base) {
                    report(header.baseURLPosition.line, header.baseURLPosition.column, problem)
                    continue
                }
            }
            let index = manifests.count
            manifests.append(Manifest(
                path: path,
                name: header.name ?? Self.defaultName(path),
                baseURL: resolver.base,
                headers: headers,
                localRoot: resolver.folder,
                entryCount: raw.count
            ))
            for item in raw {
                guard diagnostics.count < maxDiagnostics else { break }
                let url: String
                switch resolver.resolve(item.url) {
                case .success(let resolved): url = resolved
                case .failure(let problem):
                    report(item.line, item.column, problem.message)
                    continue
                }
                if let existing = byURL[url] {
                    let first = entries[existing]
                    if let a = first.hash, let b = item.hash, a != b {
                        let where_ = first.manifest == index ? "line \(first.line)" : "\(manifests[first.manifest].path):\(first.line)"
                        report(item.line, item.column,
                               "URL \(Redact.short(Redact.url(url), limit: 80)) is listed with two hashes: \(Self.abbreviate(b)) here, \(Self.abbreviate(a)) at \(where_)")
                    } else if first.hash == nil, let hash = item.hash {
                        entries[existing] = ManifestEntry(url: url, hash: hash, manifest: first.manifest,
                                                          line: first.line, column: first.column)
                    }
                    continue
                }
                byURL[url] = entries.count
                entries.append(ManifestEntry(url: url, hash: item.hash, manifest: index,
                                             line: item.line, column: item.column))
            }
        }
        if !diagnostics.isEmpty {
            throw ManifestErrors(diagnostics: Array(diagnostics.prefix(maxDiagnostics)),
                                 truncated: diagnostics.count >= maxDiagnostics)
        }
        return ManifestSet(manifests: manifests, entries: entries)
    }

    static func defaultName(_ path: String) -> String {
        let file = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        return file.isEmpty ? "manifest" : file
    }

    static func abbreviate(_ hash: ContentHash) -> String {
        "\(hash.algorithm.rawValue):\(hash.hex.prefix(12))…"
    }

    /// Expands `${VAR}` in header values; a missing variable is reported by name, never by value.
    private func expand(
        _ headers: [(name: String, value: String, line: Int, column: Int)],
        report: inout (Int, Int, String) -> Void
    ) -> [RequestHeader] {
        var out: [RequestHeader] = []
        for header in headers {
            var value = ""
            var rest = Substring(header.value)
            var ok = true
            while let open = rest.range(of: "${") {
                value += rest[..<open.lowerBound]
                guard let close = rest[open.upperBound...].firstIndex(of: "}") else {
                    report(header.line, header.column, "header '\(header.name)': '${' without a closing '}'")
                    ok = false
                    break
                }
                let variable = String(rest[open.upperBound..<close])
                if let replacement = environment[variable] {
                    value += replacement
                } else {
                    report(header.line, header.column,
                           "header '\(header.name)': environment variable '\(Redact.short(variable))' is not set")
                    ok = false
                }
                rest = rest[rest.index(after: close)...]
            }
            value += rest
            if value.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) {
                report(header.line, header.column, "header '\(header.name)': the value contains a line break or NUL")
                ok = false
            }
            if ok { out.append(RequestHeader(name: header.name, value: value)) }
        }
        return out
    }
}
