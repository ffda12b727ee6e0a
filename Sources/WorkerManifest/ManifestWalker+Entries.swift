import FoundationEssentials
import WorkerSupport

/// `entries`: a list of mappings with `url` and the optional `hash`, `path` and `mirrors`.
extension ManifestWalker {
    mutating func readEntries(_ start: YAMLEvent, onEntry: (RawEntry) -> Void) {
        guard start.kind == .sequenceStart else {
            report(start, "'entries' must be a list, found \(Self.describe(start))")
            skip(after: start)
            return
        }
        while let item = next(), item.kind != .sequenceEnd {
            guard item.kind == .mappingStart else {
                report(
                    item,
                    "each entry must be a mapping with 'url' (and optional 'hash', 'path' and 'mirrors'), found \(Self.describe(item))")
                skip(after: item)
                continue
            }
            if let entry = readEntry(start: item) {
                onEntry(entry)
            }
        }
    }

    mutating func readEntry(start: YAMLEvent) -> RawEntry? {
        var url: String?
        var urlPosition = (line: start.line, column: start.column)
        var hash: ContentHash?
        var hashSeen: Int?
        var urlSeen: Int?
        var path: (text: String, line: Int, column: Int)?
        var pathSeen: Int?
        var mirrors: [String] = []
        var mirrorsKey: YAMLEvent?
        var valid = true
        while let key = next(), key.kind != .mappingEnd {
            guard let value = next() else { return nil }
            guard key.kind == .scalar else {
                report(key, "mapping keys must be plain strings")
                skip(after: key)
                skip(after: value)
                valid = false
                continue
            }
            switch key.value {
            case "url":
                if let first = urlSeen { report(key, "duplicate key 'url' (first at line \(first))"); valid = false }
                urlSeen = key.line
                if let text = string(value, key: "url") {
                    if text.isEmpty { report(value, "'url' is empty"); valid = false }
                    url = text
                    urlPosition = (value.line, value.column)
                } else {
                    valid = false
                }
            case "hash":
                if let first = hashSeen { report(key, "duplicate key 'hash' (first at line \(first))"); valid = false }
                hashSeen = key.line
                guard let text = string(value, key: "hash") else { valid = false; continue }
                switch ContentHash.parse(text) {
                case .success(let parsed): hash = parsed
                case .failure(let error):
                    report(value, "bad hash: \(error.message)")
                    valid = false
                }
            case "path":
                if let first = pathSeen { report(key, "duplicate key 'path' (first at line \(first))"); valid = false }
                pathSeen = key.line
                guard let text = string(value, key: "path") else { valid = false; continue }
                if let problem = TreePath.problem(text) {
                    report(value, problem)
                    valid = false
                }
                path = (text, value.line, value.column)
            case "mirrors":
                if let first = mirrorsKey { report(key, "duplicate key 'mirrors' (first at line \(first.line))"); valid = false }
                mirrorsKey = key
                guard let list = readMirrorList(value, oneAllowed: true) else { valid = false; continue }
                mirrors = list
            default:
                report(key, "unknown key '\(Redact.short(key.value))' in entry (expected url, hash, path, mirrors)")
                skip(after: value)
                valid = false
            }
        }
        guard let url else {
            if urlSeen == nil { report(start, "entry has no 'url'") }
            return nil
        }
        if let mirrorsKey, hash == nil, hashSeen == nil {
            // Only a hash proves that another server's bytes are the entry's.
            report(mirrorsKey, "'mirrors' needs a 'hash': only bytes checked against the entry's hash may come from another URL")
            valid = false
        }
        guard valid else { return nil }
        return RawEntry(
            url: url, hash: hash, line: urlPosition.line, column: urlPosition.column,
            path: path?.text, pathLine: path?.line ?? 0, pathColumn: path?.column ?? 0, mirrors: mirrors)
    }
}
