import FoundationEssentials
import Glibc
import WorkerSupport

/// The `headers` mapping: names checked as HTTP tokens, values as strings without control bytes.
extension ManifestWalker {
    mutating func readHeaders(_ start: YAMLEvent, into header: inout ManifestHeader) {
        guard start.kind == .mappingStart else {
            report(start, "'headers' must be a mapping of header names to values, found \(Self.describe(start))")
            skip(after: start)
            return
        }
        var seen: [String: Int] = [:]
        while let key = next(), key.kind != .mappingEnd {
            guard let value = next() else { return }
            guard key.kind == .scalar, !key.isNull else {
                report(key, "header names must be strings")
                skip(after: key)
                skip(after: value)
                continue
            }
            let name = key.value
            if let first = seen[name.lowercased()] {
                report(key, "duplicate header '\(Redact.short(name))' (first at line \(first))")
            }
            seen[name.lowercased()] = key.line
            if !HTTPToken.isValidName(name) {
                report(key, "'\(Redact.short(name))' is not a valid HTTP header name")
            } else if let why = HTTPToken.refusal(forName: name) {
                report(key, "header '\(name)' is not allowed in a manifest: \(why)")
            }
            // Header values may be secrets: never echo them.
            guard value.kind == .scalar, !value.isNull else {
                report(value, "the value of header '\(Redact.short(name))' must be a string")
                skip(after: value)
                continue
            }
            if value.value.utf8.contains(where: HTTPToken.isForbiddenInValue) {
                report(value, "header '\(Redact.short(name))': the value contains a control character (CR, LF, NUL or another)")
                continue
            }
            header.headers.append((name: name, value: value.value, line: value.line, column: value.column))
        }
    }
}
