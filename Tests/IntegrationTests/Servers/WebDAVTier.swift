import Foundation
import Glibc
import WorkerTestSupport

/// A shared tier for tests: Debian's nginx with its WebDAV module (`dav_methods PUT;
/// create_full_put_path on;`) on 127.0.0.1, serving and storing `{url}/cas/{hex}` under
/// `storage` — the server docs/REMOTE-CACHE.md names. Started and stopped by the test, like the
/// other local servers (scripts/test.sh installs nginx).
final class WebDAVTier {
    private let server: NginxServer
    var directory: TemporaryDirectory { server.directory }
    var port: Int { server.port }

    var url: String { "http://127.0.0.1:\(port)" }
    /// Where the tier keeps `cas/{hex}`.
    var storage: String { directory.path + "/data" }

    init() throws {
        server = try NginxServer(
            prepare: { root in
                try FileManager.default.createDirectory(atPath: root + "/data/cas", withIntermediateDirectories: true)
            },
            server: { port, root in
                """
                listen 127.0.0.1:\(port);
                location /cas/ {
                  root \(root)/data;
                  dav_methods PUT;
                  create_full_put_path on;
                  client_max_body_size 0;
                }
                """
            })
    }

    func stop() { server.stop() }

    /// The objects the tier holds, by hex name.
    var objects: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: storage + "/cas"))?.sorted() ?? []
    }

    func object(_ hex: String) -> Data? {
        FileManager.default.contents(atPath: storage + "/cas/" + hex)
    }

    /// Puts bytes at `cas/{hex}` as another runner would have.
    func store(_ hex: String, _ bytes: [UInt8]) {
        _ = FileManager.default.createFile(atPath: storage + "/cas/" + hex, contents: Data(bytes))
    }

    /// Requests in the access log, as "METHOD /path STATUS".
    var requests: [String] { server.requests.map { "\($0.method) \($0.path) \($0.status)" } }
}

/// Debian's nginx on a free port of 127.0.0.1, in a folder of its own, with the `server` block's
/// contents given (its `listen` line included); started and stopped by a test (scripts/test.sh
/// installs nginx). Its access log records each request with its protocol.
final class NginxServer {
    let directory = TemporaryDirectory()
    let port: Int
    private let process: ChildProcess

    /// One request of the access log.
    struct Request: Equatable {
        let method: String
        let path: String
        let protocolName: String
        let status: Int
    }

    init(prepare: (String) throws -> Void = { _ in }, http: String = "", server: (Int, String) -> String) throws {
        let nginx = ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let nginx else { throw TierProblem("nginx is not installed (scripts/test.sh installs it)") }
        let root = directory.path
        try prepare(root)
        try FileManager.default.createDirectory(atPath: root + "/logs", withIntermediateDirectories: true)
        var lastError = "nginx did not start"
        for _ in 0..<5 {
            let port = try Self.freePort()
            // As root, nginx's workers would drop to `nobody`, who cannot write the folder.
            let user = geteuid() == 0 ? "user root root;\n" : ""
            let config = """
                \(user)worker_processes 1;
                daemon off;
                pid \(root)/nginx.pid;
                error_log \(root)/logs/error.log;
                events { worker_connections 512; }
                http {
                  log_format worker '"$request_method $uri $server_protocol" $status';
                  access_log \(root)/logs/access.log worker;
                  client_body_temp_path \(root)/body;
                  proxy_temp_path \(root)/proxy;
                  fastcgi_temp_path \(root)/fastcgi;
                  uwsgi_temp_path \(root)/uwsgi;
                  scgi_temp_path \(root)/scgi;
                  \(http)
                  server {
                    \(server(port, root))
                  }
                }
                """
            let configPath = directory.write("nginx.conf", config)
            let process = try ChildProcess(nginx, ["-p", root, "-c", configPath, "-e", root + "/logs/error.log"])
            if Self.waitForListener(port: port, while: process) {
                self.port = port
                self.process = process
                return
            }
            process.terminate()
            process.waitUntilExit()
            lastError = (try? String(contentsOfFile: root + "/logs/error.log", encoding: .utf8)) ?? lastError
        }
        throw TierProblem("nginx did not start: \(lastError)")
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }

    /// nginx serving `files` (path → bytes) over https with a certificate made for the test,
    /// trusted with the returned `certificate` (`--ca-cert`); `extra` adds to the server block.
    static func https(
        _ files: [String: [UInt8]], in directory: TemporaryDirectory, http2: Bool = false,
        extra: String = ""
    ) throws -> (server: NginxServer, certificate: String) {
        let (certificate, key) = try TLSTests.makeCertificate(in: directory)
        let server = try NginxServer(
            prepare: { root in
                for (name, bytes) in files {
                    let path = root + "/www/" + name
                    try FileManager.default.createDirectory(
                        atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                    try Data(bytes).write(to: URL(fileURLWithPath: path))
                }
            },
            server: { port, root in
                """
                listen 127.0.0.1:\(port) ssl\(http2 ? " http2" : "");
                ssl_certificate \(certificate);
                ssl_certificate_key \(key);
                root \(root)/www;
                \(extra)
                """
            })
        return (server, certificate)
    }

    func url(_ path: String) -> String { "https://127.0.0.1:\(port)\(path)" }

    /// The access log, in order.
    var requests: [Request] {
        let log = (try? String(contentsOfFile: directory.path + "/logs/access.log", encoding: .utf8)) ?? ""
        return log.split(separator: "\n").compactMap { line in
            guard let open = line.firstIndex(of: "\""), let close = line[line.index(after: open)...].firstIndex(of: "\"") else {
                return nil
            }
            let request = line[line.index(after: open)..<close].split(separator: " ")
            let status = Int(line[line.index(after: close)...].split(separator: " ").first ?? "") ?? 0
            guard request.count >= 3 else { return nil }
            return Request(method: String(request[0]), path: String(request[1]), protocolName: String(request[2]), status: status)
        }
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TierProblem("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { throw TierProblem("bind: \(errno)") }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts connections on `port` within five seconds (while nginx runs).
    static func waitForListener(port: Int, while process: ChildProcess) -> Bool {
        for _ in 0..<100 {
            guard process.isRunning else { return false }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            close(fd)
            if connected == 0 { return true }
            usleep(50_000)
        }
        return false
    }
}

struct TierProblem: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
