import Foundation
import Glibc
import WorkerTestSupport

/// The WebDAV servers besides nginx that a shared tier may be: Debian's Apache with mod_dav, and
/// `rclone serve webdav`, on a free port of 127.0.0.1 with a folder of their own. Both refuse a
/// PUT into a collection that does not exist (Apache 409, rclone 404), which the tier then makes
/// with MKCOL. (scripts/test.sh installs apache2 and rclone.)
final class DAVServer {
    enum Kind: String, CaseIterable, Sendable {
        case apache, rclone
    }

    let directory = TemporaryDirectory()
    let port: Int
    private let process: ChildProcess

    /// The tier's base URL: a path two levels deep, no collection of it made beforehand.
    var url: String { "http://127.0.0.1:\(port)/teams/tier" }
    var data: String { directory.path + "/data" }

    /// The objects the tier holds, by hex name.
    var objects: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: data + "/teams/tier/cas"))?.sorted() ?? []
    }

    init(_ kind: Kind) throws {
        port = try NginxServer.freePort()
        try FileManager.default.createDirectory(atPath: directory.path + "/data", withIntermediateDirectories: true)
        switch kind {
        case .apache:
            // Started as root, Apache runs as www-data: its folders are opened to it.
            try FileManager.default.createDirectory(atPath: directory.path + "/lock", withIntermediateDirectories: true)
            for folder in [directory.path, directory.path + "/data", directory.path + "/lock"] {
                chmod(folder, folder == directory.path ? 0o755 : 0o777)
            }
            let root = directory.path
            let config = directory.write(
                "httpd.conf",
                """
                ServerName 127.0.0.1
                Listen 127.0.0.1:\(port)
                PidFile \(root)/apache.pid
                ErrorLog \(root)/error.log
                LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
                LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
                LoadModule dav_module /usr/lib/apache2/modules/mod_dav.so
                LoadModule dav_fs_module /usr/lib/apache2/modules/mod_dav_fs.so
                User www-data
                Group www-data
                DavLockDB \(root)/lock/DavLock
                DocumentRoot \(root)/data
                <Directory \(root)/data>
                  Dav On
                  Require all granted
                </Directory>

                """)
            process = try ChildProcess(
                "/usr/sbin/apache2", ["-f", config, "-DFOREGROUND"],
                stdout: .file(root + "/out.log"), stderr: .file(root + "/out.log"))
        case .rclone:
            process = try ChildProcess(
                "/usr/bin/rclone",
                [
                    "serve", "webdav", directory.path + "/data", "--addr", "127.0.0.1:\(port)",
                    "--config", "/dev/null",
                ],
                stdout: .file(directory.path + "/out.log"), stderr: .file(directory.path + "/out.log"))
        }
        guard NginxServer.waitForListener(port: port, while: process) else {
            process.terminate()
            process.waitUntilExit()
            let log = (try? String(contentsOfFile: directory.path + "/out.log", encoding: .utf8)) ?? ""
            throw TierProblem("\(kind.rawValue) did not start: \(log)")
        }
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
