import FoundationEssentials
import Glibc
import WorkerSupport

/// Writes manifests: for the files under folders (pooch's `make_registry`: every file, SHA-256,
/// relative URLs in a stable order), or for URLs whose hashes a sync pinned. What it writes the
/// reader reads back.
public enum ManifestWriter {
    /// One file found under a folder: its URL relative to `base_url`, and its SHA-256.
    public struct Item: Sendable, Equatable {
        public let url: String
        public let sha256: String

        public init(url: String, sha256: String) {
            self.url = url
            self.sha256 = sha256
        }
    }

    /// A problem with the folders: the path and what is wrong.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "\(path): \(reason)" }
    }

    /// Every regular file under `folders` (hidden ones and symlinks skipped), hashed as a stream,
    /// sorted by relative path. The same relative path under two folders is an error. Each URL is
    /// the path percent-encoded, or with `literal` (keys under an s3:// base) the path as it is.
    public static func scan(_ folders: [String], literal: Bool = false) throws(Failure) -> [Item] {
        var byPath: [String: (folder: String, sha256: String)] = [:]
        for folder in folders {
            var isDirectory = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory else {
                throw Failure(path: folder, reason: "is not a directory")
            }
            let root = URL(fileURLWithPath: folder).standardizedFileURL.path
            for relative in try files(under: root) {
                let path = root + "/" + relative
                guard case .success(let (sha256, _)) = FileDigest.sha256(path) else {
                    throw Failure(path: path, reason: "cannot be read")
                }
                if let other = byPath[relative] {
                    throw Failure(
                        path: path, reason: "'\(relative)' is also under \(other.folder); give folders whose files do not overlap")
                }
                byPath[relative] = (folder, sha256)
            }
        }
        return byPath.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }.map { relative in
            Item(url: literal ? relative : encode(relative), sha256: byPath[relative]!.sha256)
        }
    }

    /// Relative paths of the regular files below `root`, not following links; hidden names
    /// (and what is below a hidden folder) are skipped.
    private static func files(under root: String) throws(Failure) -> [String] {
        guard let top = opendir(root) else { throw Failure(path: root, reason: "cannot be listed") }
        closedir(top)
        var found: [String] = []
        var folders = [""]
        while let relative = folders.popLast() {
            guard let folder = opendir(relative.isEmpty ? root : root + "/" + relative) else { continue }
            defer { closedir(folder) }
            while let entry = readdir(folder) {
                let name = DirectoryEntry.withName(entry) { String(decoding: $0, as: UTF8.self) }
                guard !name.hasPrefix(".") else { continue }
                let path = relative.isEmpty ? name : relative + "/" + name
                var info = stat()
                guard lstat(root + "/" + path, &info) == 0 else { continue }
                switch info.st_mode & S_IFMT {
                case S_IFDIR: folders.append(path)
                case S_IFREG: found.append(path)
                default: continue
                }
            }
        }
        return found
    }

    /// A relative path as a relative URL: each segment percent-encoded, and a first segment with
    /// a colon prefixed with `./` so it is not read as a scheme.
    static func encode(_ relative: String) -> String {
        let encoded = relative.split(separator: "/").map(percentEncoded).joined(separator: "/")
        return encoded.split(separator: "/").first?.contains(":") == true ? "./" + encoded : encoded
    }

    /// A path segment with every byte outside RFC 3986's `pchar` (less `;`) as `%XX`, UTF-8.
    private static func percentEncoded(_ segment: Substring) -> String {
        let kept = Set("-._~!$&'()*+,=:@".utf8)
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in segment.utf8 {
            let isAlphanumeric = (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
            if isAlphanumeric || kept.contains(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The manifest's YAML: `base_url` (with a trailing slash, so the relative URLs resolve below
    /// it) when given, then one entry per item, URLs quoted.
    public static func yaml(name: String?, baseURL: String?, items: [Item]) -> String {
        var lines = ["# Written by worker manifest \(WorkerVersion.current); hashes are SHA-256 of the content.", "version: 1"]
        if let name { lines.append("name: \(quote(name))") }
        if let baseURL { lines.append("base_url: \(quote(baseURL.hasSuffix("/") ? baseURL : baseURL + "/"))") }
        lines.append(items.isEmpty ? "entries: []" : "entries:")
        for item in items {
            lines.append("  - url: \(quote(item.url))")
            lines.append("    hash: sha256:\(item.sha256)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `yaml` (as `yaml(…)` wrote it) with the signed header fields after `version`: `serial`, the
    /// publisher's number that only grows, and `expires`, after which readers refuse it.
    public static func stamped(_ yaml: String, serial: Int64?, expires: Double?) -> String {
        var fields = ""
        if let serial { fields += "serial: \(serial)\n" }
        if let expires { fields += "expires: \(quote(RFC3339.format(expires)))\n" }
        let marker = "\nversion: 1\n"
        let parts = yaml.split(separator: marker, maxSplits: 1, omittingEmptySubsequences: false)
        guard !fields.isEmpty, parts.count == 2 else { return yaml }
        return parts[0] + marker + fields + parts[1]
    }

    /// A YAML double-quoted scalar.
    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value) {
                    out += "\\x" + Hex.encode([UInt8(scalar.value)])
                } else if scalar.value == 0xFFFE || scalar.value == 0xFFFF || scalar.value == 0xFEFF {
                    // Not printable in YAML (a reader refuses the file): escaped.
                    out += "\\u" + String(scalar.value, radix: 16, uppercase: true)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
