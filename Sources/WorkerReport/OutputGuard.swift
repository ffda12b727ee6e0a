import FoundationEssentials
import Glibc
import WorkerStore
import WorkerSupport

/// The files a run writes besides the cache (`--report`, `--junit`, …), and the rule that keeps
/// them from destroying anything: an output never replaces a manifest of the run, nor an existing
/// file that is not an earlier output of the same kind. `worker sync --report manifests/*.yaml`
/// (the shell hands the first manifest to `--report`) must fail, not overwrite it with JSON.
public enum OutputKind: String, Sendable, CaseIterable {
    case report = "--report"
    case verifyReport = "--report (verify)"
    case junit = "--junit"
    case summary = "--summary-md"
    case metrics = "--metrics"
    case html = "--report-html"

    /// The option that names it.
    public var option: String {
        self == .verifyReport ? "--report" : rawValue
    }

    /// Whether `head` (the first bytes of an existing file) is what this kind writes.
    func recognizes(_ head: String) -> Bool {
        switch self {
        case .report:
            // Keys are sorted: `cache_dir` leads.
            head.hasPrefix("{") && head.contains("\"cache_dir\"")
        case .verifyReport:
            head.hasPrefix("{") && head.contains("\"bytes_checked\"")
        case .junit:
            head.hasPrefix("<?xml") && head.contains("<testsuites")
        case .summary:
            head.hasPrefix("### ") && head.contains("worker sync")
        case .metrics:
            head.hasPrefix("# HELP worker_")
        case .html:
            head.hasPrefix("<!DOCTYPE html>") && head.contains("<title>worker sync")
        }
    }
}

/// Checks every output before the run does anything.
public enum OutputGuard {
    /// A message naming the option and the file when an output may not be written, else nil.
    public static func problem(outputs: [(kind: OutputKind, path: String)], manifests: [String]) -> String? {
        let inputs = manifests.compactMap(identity)
        var seen: [String: OutputKind] = [:]
        for (kind, path) in outputs {
            let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
            if let other = seen[absolute] {
                return "\(kind.option) and \(other.option) both name '\(path)'"
            }
            seen[absolute] = kind
            var info = stat()
            guard stat(path, &info) == 0 else {
                if let problem = folderProblem(path) { return "\(kind.option) '\(path)': \(problem)" }
                continue
            }
            if inputs.contains(where: { $0 == (info.st_dev, info.st_ino) }) {
                return "\(kind.option) '\(path)' is a manifest of this run; refusing to overwrite it"
            }
            guard (info.st_mode & S_IFMT) == S_IFREG else {
                return "\(kind.option) '\(path)' exists and is not a regular file"
            }
            guard info.st_size > 0 else { continue }
            guard let head = firstBytes(path), kind.recognizes(head) else {
                return "\(kind.option) '\(path)' exists and is not an earlier \(kind.option) output; "
                    + "refusing to overwrite it (remove it or choose another path)"
            }
        }
        return nil
    }

    /// Why a file cannot be created at `path` (its folder is missing, is not a folder, or is not
    /// writable), or nil. Checked before the run, so a sync does not do its work for nothing.
    public static func folderProblem(_ path: String) -> String? {
        let folder = PathName.parent(URL(fileURLWithPath: path).standardizedFileURL.path)
        var info = stat()
        guard stat(folder, &info) == 0 else {
            return "its folder \(folder) \(errno == ENOENT ? "does not exist" : "cannot be read: \(String(cString: strerror(errno)))")"
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { return "\(folder) is not a folder" }
        guard access(folder, W_OK | X_OK) == 0 else {
            return errno == EROFS ? "its folder \(folder) is on a read-only file system"
                : "its folder \(folder) is not writable (\(CacheAccess.owner(info)))"
        }
        return nil
    }

    private static func identity(_ path: String) -> (dev_t, ino_t)? {
        var info = stat()
        return stat(path, &info) == 0 ? (info.st_dev, info.st_ino) : nil
    }

    private static func firstBytes(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }
}
