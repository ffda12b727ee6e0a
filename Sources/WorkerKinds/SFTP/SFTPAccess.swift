import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerManifest
import WorkerStore

/// How `sftp://` URLs are reached: the login (a key as ssh finds it, or `--ssh-key`; the agent
/// when one runs), the known_hosts file host keys must be in (`--ssh-known-hosts`), and the user
/// a URL without one logs in as. Every request of the kind carries the login (`SSHLogin`).
public struct SFTPAccess: Sendable, Equatable {
    /// The command line's choices (`with(options:)`).
    var keyOption: String?
    var knownHostsOption: String?
    var acceptsNewHosts = false
    /// The login once the settings are read (`configured`).
    var login: SSHLogin?
    /// Who a URL without a user logs in as (the local user, as ssh does).
    var user: String?

    public init() {}

    /// The keys ssh tries, in its order (the first that exists is the one offered).
    static let defaultKeys = ["id_ed25519", "id_ecdsa", "id_rsa"]

    /// The login and user read from `environment` (HOME, USER, SSH_AUTH_SOCK) and the options.
    func resolved(environment: [String: String]) -> Result<SFTPAccess, KindSettingsProblem> {
        var access = self
        let account = getpwuid(getuid())
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? account.map { String(cString: $0.pointee.pw_dir) } ?? "/"
        let key: String?
        if let keyOption {
            guard Glibc.access(keyOption, R_OK) == 0 else {
                return .failure(KindSettingsProblem("--ssh-key \(keyOption): \(String(cString: strerror(errno)))"))
            }
            key = keyOption
        } else {
            key = Self.defaultKeys.map { home + "/.ssh/" + $0 }.first { Glibc.access($0, R_OK) == 0 }
        }
        let knownHosts = knownHostsOption ?? home + "/.ssh/known_hosts"
        if knownHostsOption != nil, !acceptsNewHosts, Glibc.access(knownHosts, R_OK) != 0 {
            return .failure(KindSettingsProblem("--ssh-known-hosts \(knownHosts): \(String(cString: strerror(errno)))"))
        }
        let agent = environment["SSH_AUTH_SOCK"].map { !$0.isEmpty } ?? false
        if key == nil, !agent {
            return .failure(
                KindSettingsProblem(
                    "no SSH key: none of ~/.ssh/\(Self.defaultKeys.joined(separator: ", ")) in \(home), no --ssh-key, and no ssh-agent (SSH_AUTH_SOCK)"
                ))
        }
        access.login = SSHLogin(privateKey: key, usesAgent: agent, knownHosts: knownHosts, acceptsNewHosts: acceptsNewHosts)
        access.user = environment["USER"].flatMap { $0.isEmpty ? nil : $0 } ?? account.map { String(cString: $0.pointee.pw_name) }
        return .success(access)
    }

    /// `url` with the login's user when it names none (libcurl would log in as nobody).
    func withUser(_ url: String) -> String {
        guard let user, user.utf8.allSatisfy(Self.isUserByte) else { return url }
        let after = url.dropFirst(7)
        let authority = after.prefix { $0 != "/" }
        guard !authority.contains("@") else { return url }
        return String(url.prefix(7)) + user + "@" + after
    }

    private static func isUserByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: ".")
    }
}

extension SFTPAccess: KindAccess {
    public var kind: any URLKind { SFTPKind() }

    /// `ssh-key`, `ssh-known-hosts`, `ssh-accept-new-hosts`.
    public func with(options: [String: String]) -> any KindAccess {
        var access = self
        access.keyOption = options["ssh-key"]
        access.knownHostsOption = options["ssh-known-hosts"]
        access.acceptsNewHosts = options["ssh-accept-new-hosts"] != nil
        return access
    }

    public func configured(environment: [String: String]) throws(KindSettingsProblem) -> any KindAccess {
        try resolved(environment: environment).get()
    }

    /// Where `--rewrite` sends it: still `sftp://` (another host, a mirror's path), with the
    /// login; else an http(s) URL, asked as any.
    public func location(
        _ listed: String, rewrite: URLRewrite, origin: Origin?, expected: ContentHash?,
        memo: inout OriginMemo
    ) -> FetchLocation {
        let target = rewrite.apply(listed)
        guard SFTPKind.matches(target) else {
            return FetchLocation(listed: listed, url: target, origin: origin ?? memo.origin(of: target))
        }
        // Unconfigured (a run that never read its settings): the process's own environment.
        let access = login == nil ? (try? resolved(environment: ProcessInfo.processInfo.environment).get()) ?? self : self
        let url = access.withUser(target)
        return FetchLocation(listed: listed, url: url, origin: origin ?? memo.origin(of: url), ssh: access.login)
    }

    public func lister(store: ContentStore, settings: FetchSettings, width: Int) throws(EngineStartFailure) -> (any FolderLister)? {
        try SFTPLister(access: self, store: store, settings: settings, width: width)
    }
}
