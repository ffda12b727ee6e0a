import Testing
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerKinds
@testable import WorkerManifest

/// `sftp://` URLs as values: their origin, what an entry and a folder may be, where `--rewrite`
/// sends them with the login and user, and a folder's listing as OpenSSH writes it (no network).
@Suite(.hangLimit) struct SFTPPartsTests {
    init() { Kinds.install() }

    @Test func anSFTPURLsOriginIsItsHostAndPortWithoutItsUser() throws {
        let kind = SFTPKind()
        let origin = try #require(kind.origin(of: "sftp://deploy@Files.Example.NET/srv/a.txt"))
        #expect(origin.origin.scheme == "sftp" && origin.origin.host == "files.example.net" && origin.origin.port == 22)
        #expect(origin.rest == "/srv/a.txt")
        #expect(kind.origin(of: "sftp://127.0.0.1:2222/x")?.origin.port == 2222)
        #expect(kind.origin(of: "sftp://[::1]:2200/x")?.origin.port == 2200)
        #expect(kind.origin(of: "sftp://[::1]/x")?.origin.port == 22)
        #expect(kind.origin(of: "sftp://a.example/x")?.origin == kind.origin(of: "SFTP://u@A.example:22/y")?.origin)
        #expect(
            kind.origin(of: "sftp:///x") == nil && kind.origin(of: "sftp://host:99999/x") == nil && kind.origin(of: "https://a/x") == nil)
        #expect(URLKinds.kind(of: "sftp://a.example/x")?.id == .sftp)
    }

    @Test func anEntryNamesAFileAndAFolderEndsInASlash() {
        let kind = SFTPKind()
        #expect(kind.problem(entry: "sftp://a.example/srv/a.txt") == nil)
        #expect(kind.problem(entry: "sftp://a.example/srv/") != nil && kind.problem(entry: "sftp://a.example") != nil)
        #expect(kind.problem(entry: "sftp://a.example/a?x=1") != nil && kind.problem(entry: "sftp://:22/a") != nil)
        #expect(kind.problem(folder: "sftp://a.example/srv/") == nil && kind.problem(folder: "sftp://a.example") != nil)
        #expect((try? kind.treePath(written: "sftp://a.example/srv/with%20space.txt").get()) == "srv/with space.txt")
        #expect((try? kind.treePath(written: "sub/b.txt").get()) == "sub/b.txt")
    }

    /// The login rides with the location, the local user is added to a URL without one, and a
    /// rewrite to http(s) leaves the login behind.
    @Test func aLocationCarriesTheLoginAndTheUser() throws {
        let directory = TemporaryDirectory()
        let key = directory.write("key", "not read here\n")
        let known = directory.write("known_hosts", "")
        let access = try #require(SFTPAccess().with(options: ["ssh-key": key, "ssh-known-hosts": known]) as? SFTPAccess)
        let configured = try #require(try access.configured(environment: ["HOME": directory.path, "USER": "deploy"]) as? SFTPAccess)
        #expect(configured.login == SSHLogin(privateKey: key, usesAgent: false, knownHosts: known, acceptsNewHosts: false))
        var memo = OriginMemo()
        let plain = configured.location("sftp://a.example/srv/f", rewrite: URLRewrite(), origin: nil, expected: nil, memo: &memo)
        #expect(plain.url == "sftp://deploy@a.example/srv/f" && plain.ssh == configured.login && plain.listed == "sftp://a.example/srv/f")
        let own = configured.location("sftp://ops@a.example/srv/f", rewrite: URLRewrite(), origin: nil, expected: nil, memo: &memo)
        #expect(own.url == "sftp://ops@a.example/srv/f")
        let rewrite = try URLRewrite.parse(["sftp://a.example/srv/=http://127.0.0.1:8080/files/"]).get()
        let http = configured.location("sftp://a.example/srv/f", rewrite: rewrite, origin: nil, expected: nil, memo: &memo)
        #expect(http.url == "http://127.0.0.1:8080/files/f" && http.ssh == nil)
        #expect(throws: KindSettingsProblem.self) {
            _ = try SFTPAccess().configured(environment: ["HOME": directory.path + "/none", "SSH_AUTH_SOCK": ""])
        }
        #expect(throws: KindSettingsProblem.self) {
            _ = try SFTPAccess().with(options: ["ssh-key": directory.path + "/missing"]).configured(environment: ["HOME": directory.path])
        }
    }

    @Test func aFolderListingIsReadAsOpenSSHWritesIt() {
        let text = """
            drwxr-xr-x    3 root     root         4096 Dec  3 08:47 .
            drwxr-xr-x    4 root     root         4096 Dec  3 08:47 ..
            -rw-r--r--    1 root     root            6 Dec  3 08:47 a.txt
            -rw-r--r--    1 deploy   staff     3000000 Jan 14  2025 with  two spaces.bin
            drwxr-xr-x    2 root     root         4096 Dec  3 08:47 sub
            lrwxrwxrwx    1 root     root            5 Dec  3 08:47 link -> a.txt
            srwxr-xr-x    1 root     root            0 Dec  3 08:47 socket
            not a listing line

            """
        let items = SFTPListing.parse(text).items
        #expect(
            items == [
                SFTPListing.Item(name: "a.txt", kind: .file, size: 6),
                SFTPListing.Item(name: "with  two spaces.bin", kind: .file, size: 3_000_000),
                SFTPListing.Item(name: "sub", kind: .folder, size: 4096),
                SFTPListing.Item(name: "link", kind: .link, size: 5),
                SFTPListing.Item(name: "socket", kind: .other, size: 0),
            ])
    }
}
