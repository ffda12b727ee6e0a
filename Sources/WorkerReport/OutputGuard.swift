import FoundationEssentials
import Glibc
import WorkerStore
import WorkerSupport

/// `worker verify --report`'s JSON, as the guard knows it.
public struct VerifyReportFormat: OutputFormat {
    public init() {}

    public var option: String { "--report" }

    public func recognizes(_ head: String) -> Bool {
        head.hasPrefix("{") && head.contains("\"bytes_checked\"")
    }
}

/// The files a run writes besides the cache (`--report`, `--junit`, …), checked before it does
/// anything: an output never replaces a manifest of the run, nor an existing file that is not an
/// earlier output of the same format (`OutputFormat.recognizes`). `worker sync --report
/// manifests/*.yaml` (the shell hands the first manifest to `--report`) must fail, not overwrite
/// it with JSON.
public enum OutputGuard {
    /// A message naming the option and the file when an output may not be written, else nil.
    public static func problem(outputs: [(format: any OutputFormat, path: String)], manifests: [String]) -> String? {
        let inputs = manifests.compactMap(identity)
        var seen: [String: any OutputFormat] = [:]
        for (format, path) in outputs {
            let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
            if let other = seen[absolute] {
                return "\(format.option) and \(other.option) both name '\(path)'"
            }
            seen[absolute] = format
            var info = stat()
            guard stat(path, &info) == 0 else {
                if let problem = folderProblem(path) { return "\(format.option) '\(path)': \(problem)" }
                continue
            }
            if inputs.contains(where: { $0 == (info.st_dev, info.st_ino) }) {
                return "\(format.option) '\(path)' is a manifest of this run; refusing to overwrite it"
            }
            guard (info.st_mode & S_IFMT) == S_IFREG else {
                return "\(format.option) '\(path)' exists and is not a regular file"
            }
            guard info.st_size > 0 else { continue }
            guard let head = firstBytes(path), format.recognizes(head) else {
                return "\(format.option) '\(path)' exists and is not an earlier \(format.option) output; "
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
            return errno == EROFS
                ? "its folder \(folder) is on a read-only file system"
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
