import Foundation
import Glibc
import WorkerTestSupport

/// Debian's openssh-server on a free port of 127.0.0.1, with a `sshd_config`, a host key and an
/// `authorized_keys` of its own (one user key, made for it), serving SFTP (`internal-sftp`).
/// `knownHosts` holds its host key as ssh writes it; `otherHostKeyLine` a line for the same host
/// with another key (a host key that changed). scripts/test.sh installs openssh-server.
final class SSHServer {
    let directory = TemporaryDirectory()
    let port: Int
    private let process: ChildProcess
    /// The user key the server accepts, and its known_hosts file.
    let userKey: String
    let knownHosts: String
    /// The host's key in ssh's known_hosts form and its fingerprint (`SHA256:…`).
    let hostKeyLine: String
    let fingerprint: String
    /// Files served below it (`sftp://127.0.0.1:PORT` + `root` + a path).
    var root: String { directory.path + "/root" }
    var address: String { "127.0.0.1:\(port)" }
    var log: String { (try? String(contentsOfFile: directory.path + "/sshd.log", encoding: .utf8)) ?? "" }

    static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: "/usr/sbin/sshd") }

    init() throws {
        guard Self.isInstalled else { throw TierProblem("openssh-server is not installed (scripts/test.sh installs it)") }
        // sshd's privilege separation folder.
        try? FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        let folder = directory.path
        try FileManager.default.createDirectory(atPath: folder + "/root", withIntermediateDirectories: true)
        for name in ["host_key", "user_key", "other_key"] {
            try Self.keygen(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", folder + "/" + name])
        }
        userKey = folder + "/user_key"
        try FileManager.default.copyItem(atPath: folder + "/user_key.pub", toPath: folder + "/authorized_keys")
        let log = folder + "/sshd.log"
        var started: (Int, ChildProcess)?
        for _ in 0..<3 where started == nil {
            let port = try NginxServer.freePort()
            let config = directory.write(
                "sshd_config",
                """
                Port \(port)
                ListenAddress 127.0.0.1
                HostKey \(folder)/host_key
                AuthorizedKeysFile \(folder)/authorized_keys
                PidFile \(folder)/sshd.pid
                UsePAM no
                StrictModes no
                PasswordAuthentication no
                KbdInteractiveAuthentication no
                MaxStartups 100
                MaxSessions 100
                Subsystem sftp internal-sftp
                """)
            let process = try ChildProcess("/usr/sbin/sshd", ["-D", "-e", "-f", config], stdout: .file(log), stderr: .file(log))
            if NginxServer.waitForListener(port: port, while: process) {
                started = (port, process)
            } else {
                process.terminate()
                process.waitUntilExit()
            }
        }
        guard let started else { throw TierProblem("sshd did not start: " + ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")) }
        (port, process) = started
        let hostKey = try String(contentsOfFile: folder + "/host_key.pub", encoding: .utf8).split(separator: " ").prefix(2).joined(
            separator: " ")
        let otherKey = try String(contentsOfFile: folder + "/other_key.pub", encoding: .utf8).split(separator: " ").prefix(2).joined(
            separator: " ")
        hostKeyLine = "[127.0.0.1]:\(port) \(hostKey)"
        otherHostKeyLine = "[127.0.0.1]:\(port) \(otherKey)"
        knownHosts = directory.write("known_hosts", hostKeyLine + "\n")
        let listed = try Self.keygen(["-l", "-E", "sha256", "-f", folder + "/host_key.pub"])
        fingerprint = String(listed.split(separator: " ")[1])
    }

    let otherHostKeyLine: String

    /// Writes `bytes` at `path` below the served root; its SHA-256 (hex).
    @discardableResult
    func serve(_ path: String, _ bytes: [UInt8]) throws -> String {
        let file = root + "/" + path
        try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: file, contents: Data(bytes)) else { throw TierProblem("cannot write \(file)") }
        return sha256(bytes)
    }

    /// The URL of `path` below the served root (`user@` when given).
    func url(_ path: String, user: String? = nil) -> String {
        "sftp://\(user.map { $0 + "@" } ?? "")\(address)\(root)/\(path)"
    }

    /// Cuts every connection (kills the listener's session processes); the listener stays.
    func cutConnections() {
        Self.cutConnections(of: process.processIdentifier)
    }

    /// Cuts the connections of the server `listener` (its session processes), on a thread of
    /// its own once `bytes` of bodies are in `cache`'s `tmp/` (or after 60 s): the moment does not
    /// wait for the test's tasks, which a busy machine may hold back for seconds.
    func cutConnections(onceBodiesIn cache: String, reach bytes: Int) {
        let listener = process.processIdentifier
        Thread.detachNewThread {
            let tmp = cache + "/tmp"
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? []
                let arrived = names.compactMap { try? FileManager.default.attributesOfItem(atPath: tmp + "/" + $0)[.size] as? Int }.reduce(
                    0, +)
                if arrived >= bytes { break }
                usleep(10_000)
            }
            Self.cutConnections(of: listener)
        }
    }

    private static func cutConnections(of listener: pid_t) {
        let killer = try? ChildProcess("/usr/bin/pkill", ["-KILL", "-P", String(listener)])
        killer?.waitUntilExit()
    }

    /// How many logins the server accepted so far.
    var logins: Int { log.components(separatedBy: "Accepted publickey").count - 1 }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }

    @discardableResult
    private static func keygen(_ arguments: [String]) throws -> String {
        let folder = TemporaryDirectory()
        let output = folder.path + "/out"
        let process = try ChildProcess("/usr/bin/ssh-keygen", arguments, stdout: .file(output), stderr: .file(output))
        process.waitUntilExit()
        let said = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        withExtendedLifetime(folder) {}
        guard process.terminationStatus == 0 else { throw TierProblem("ssh-keygen \(arguments.joined(separator: " ")): \(said)") }
        return said
    }
}
