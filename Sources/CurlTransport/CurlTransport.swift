import CCurl
import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerStore

/// libcurl as worker's transport: a run's fetch engines are `CurlEngine`s (libcurl's multi
/// interface, a thread each), set up with the run's timeouts, connection shares and trusted
/// authorities. libcurl is loaded the first time a run starts engines, or ahead of it on its own
/// thread when asked to `prepare`; the rest of the program never links it (this target is the
/// only one that imports `CCurl`).
public struct CurlTransport: Transport {
    public init() {}

    public func prepare() {
        Libcurl.loadAhead()
    }

    public func settle() {
        Libcurl.settle()
    }

    public func startEngines(shares: [Int], settings: FetchSettings) throws(EngineStartFailure) -> EngineSet {
        if let problem = Libcurl.loadProblem() { throw .library(name: "libcurl.so.4", reason: problem) }
        let trusted = CertificateBundle(files: settings.caCertificates)
        var started: [CurlEngine] = []
        for share in shares {
            do {
                started.append(
                    try CurlEngine(
                        options: CurlOptions(
                            connectTimeout: settings.connectTimeout, readTimeout: settings.readTimeout, connectionsPerHost: share,
                            streamsPerConnection: settings.maxStreams, trustedCertificates: trusted?.path)))
            } catch {
                for engine in started { Task { await engine.shutdown() } }
                trusted?.remove()
                throw error
            }
        }
        return EngineSet(engines: started, cleanup: { trusted?.remove() })
    }
}

/// `--ca-cert`'s authorities besides the system's, as one file for libcurl: the given file itself
/// when libcurl also looks in the system's folder of certificates (Debian's does), else a
/// temporary file of libcurl's default bundle followed by the given files, removed after the run.
/// (A file, not a blob in memory: libcurl caches a parsed store only for files;
/// docs/ARCHITECTURE.md, "Measurements behind the code".)
struct CertificateBundle: Sendable {
    let path: String
    let temporary: Bool

    init?(files: [String]) {
        guard !files.isEmpty else { return nil }
        if files.count == 1, worker_curl_default_ca_path() != nil {
            (path, temporary) = (files[0], false)
            return
        }
        var pem = Data()
        let system = worker_curl_default_ca_path() == nil ? worker_curl_default_ca_file().map { String(cString: $0) } : nil
        for file in (system.map { [$0] } ?? []) + files {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            pem += data
            pem.append(UInt8(ascii: "\n"))
        }
        let folder = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((folder + "/worker-ca-XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else {
            (path, temporary) = (files[0], false)
            return
        }
        let made = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let written = pem.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == pem.count else {
            unlink(made)
            (path, temporary) = (files[0], false)
            return
        }
        (path, temporary) = (made, true)
    }

    /// Removes the file if this run made it.
    func remove() {
        if temporary { unlink(path) }
    }
}
