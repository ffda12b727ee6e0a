import CCurl
import Crypto
import FoundationEssentials
import Glibc
import Synchronization
import WorkerFetch
import WorkerManifest
import WorkerSupport

/// An `sftp://` exchange (libcurl's SFTP, over libssh2): its login and host key check set on the
/// handle, and its answer given to the `ResponseHandler` as an HTTP server would give it — 200
/// with the file's length and time, 206 for the rest of a kept part (`Range` becomes libcurl's
/// range), 416 when the file changed since that part was kept — so retries, resume, limits and
/// the hash check work on it as on any download. Such a handle is never reused (`isPlainGet`).
extension CurlTransfer {
    /// Sets the SSH options: public key (the login's file, then the agent), the known_hosts file
    /// with a check of our own (`hostKeyChecked`), the file's time, a range.
    func setSFTPOptions(_ handle: UnsafeMutableRawPointer, login: SSHLogin) -> FetchFailure? {
        var refused: [String] = []
        func check(_ code: CURLcode, _ option: String) { if code != CURLE_OK { refused.append(option) } }
        check(worker_curl_set_string(handle, CURLOPT_PROTOCOLS_STR, "sftp"), "CURLOPT_PROTOCOLS_STR")
        let types = CURLSSH_AUTH_PUBLICKEY | (login.usesAgent ? CURLSSH_AUTH_AGENT : 0)
        check(worker_curl_set_long(handle, CURLOPT_SSH_AUTH_TYPES, Int(types)), "CURLOPT_SSH_AUTH_TYPES")
        // Without a key of the login's, libcurl would look for ~/.ssh/id_rsa itself: a missing
        // file then, so that only the agent is asked.
        check(
            worker_curl_set_string(handle, CURLOPT_SSH_PRIVATE_KEYFILE, login.privateKey ?? "/nonexistent/worker-no-key"),
            "CURLOPT_SSH_PRIVATE_KEYFILE")
        check(worker_curl_set_string(handle, CURLOPT_SSH_KNOWNHOSTS, login.knownHosts), "CURLOPT_SSH_KNOWNHOSTS")
        check(
            worker_curl_set_ssh_key_callback(handle) { _, known, found, match, context in
                Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue().hostKeyChecked(known: known, found: found, match: match)
            }, "CURLOPT_SSH_KEYFUNCTION")
        check(worker_curl_set_long(handle, CURLOPT_FILETIME, 1), "CURLOPT_FILETIME")
        if let offset = sftpRange.offset {
            check(worker_curl_set_string(handle, CURLOPT_RANGE, "\(offset)-"), "CURLOPT_RANGE")
        }
        guard refused.isEmpty else {
            return FetchFailure(.connection, "this libcurl cannot reach sftp:// URLs (it refused \(refused.joined(separator: ", ")))")
        }
        return nil
    }

    /// The part of the file asked for (`Range: bytes=N-`), and the version it must still be
    /// (`If-Range`: the kept part's Last-Modified).
    var sftpRange: (offset: Int64?, ifRange: String?) {
        var range: (offset: Int64?, ifRange: String?) = (nil, nil)
        for line in requestHeaders {
            if line.hasPrefix("Range: bytes="), line.hasSuffix("-") {
                range.offset = Int64(line.dropFirst("Range: bytes=".count).dropLast())
            } else if line.hasPrefix("If-Range: ") {
                range.ifRange = String(line.dropFirst("If-Range: ".count))
            }
        }
        return range
    }

    /// libcurl's SSH_KEYFUNCTION: the host's key against the known_hosts file. A known key is
    /// fine; a missing one only when the login accepts new hosts (then added to the file); a
    /// changed one never. What was offered is kept for the refusal's words.
    private func hostKeyChecked(known: UnsafePointer<curl_khkey>?, found: UnsafePointer<curl_khkey>?, match: curl_khmatch) -> Int32 {
        let state = state.value
        state.activity &+= 1
        let offered = found.map(Self.hostKey)
        state.hostKey = (match, offered)
        switch match {
        case CURLKHMATCH_OK:
            return Int32(CURLKHSTAT_FINE.rawValue)
        case CURLKHMATCH_MISSING where ssh?.acceptsNewHosts == true:
            if let offered, let ssh, let origin {
                // Appended, not rewritten: libcurl's own writing would drop the file's comments.
                KnownHostsAppender.append(Self.knownHostsLine(origin, offered), to: ssh.knownHosts)
            }
            return Int32(CURLKHSTAT_FINE.rawValue)
        default:
            return Int32(CURLKHSTAT_REJECT.rawValue)
        }
    }

    /// A host key as the server sent it: its type (`ssh-ed25519`, `ecdsa-sha2-nistp256`) read
    /// from the key itself, its base64, and its fingerprint as ssh shows it (`SHA256:…`).
    private static func hostKey(_ key: UnsafePointer<curl_khkey>) -> OfferedHostKey {
        let raw: [UInt8]
        if key.pointee.len > 0, let bytes = key.pointee.key {
            raw = Array(UnsafeRawBufferPointer(start: bytes, count: key.pointee.len))
        } else if let text = key.pointee.key, let decoded = Data(base64Encoded: String(cString: text)) {
            raw = Array(decoded)
        } else {
            raw = []
        }
        var type = "unknown"
        if raw.count > 4 {
            let length = Int(raw[0]) << 24 | Int(raw[1]) << 16 | Int(raw[2]) << 8 | Int(raw[3])
            if length > 0, length < 64, raw.count >= 4 + length { type = String(decoding: raw[4..<(4 + length)], as: UTF8.self) }
        }
        var fingerprint = Data(SHA256.hash(data: raw)).base64EncodedString()
        while fingerprint.hasSuffix("=") { fingerprint.removeLast() }
        return OfferedHostKey(type: type, base64: Data(raw).base64EncodedString(), fingerprint: "SHA256:" + fingerprint)
    }

    /// The known_hosts line of `origin`'s key: `host` on port 22, else `[host]:port`.
    static func knownHostsLine(_ origin: Origin, _ key: OfferedHostKey) -> String {
        let host = origin.port == nil || origin.port == 22 ? origin.hostAsWritten : "[\(origin.hostAsWritten)]:\(origin.port!)"
        return "\(host) \(key.type) \(key.base64)"
    }

    /// The answer so far as an HTTP server would give it: called before the first part of the
    /// body, or at the end of one without a body. False when the handler ended the exchange.
    func sftpHeadArrived(rangeRefused: Bool = false) -> Bool {
        let state = state.value
        guard let handle = state.handle else { return false }
        let length = worker_curl_info_off_t(handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T)
        let time = worker_curl_info_off_t(handle, CURLINFO_FILETIME_T)
        let lastModified = time >= 0 ? HTTPDate.format(Int64(time)) : nil
        let range = sftpRange
        var lines: [String]
        if let offset = range.offset {
            // The kept part is of a version this file no longer is: a range of it is refused.
            if rangeRefused || lastModified == nil || range.ifRange != lastModified {
                lines = ["HTTP/1.1 416"]
            } else {
                lines = ["HTTP/1.1 206"]
                if length >= 0 { lines.append("content-range: bytes \(offset)-\(offset + Int64(length) - 1)/\(offset + Int64(length))") }
            }
        } else {
            lines = ["HTTP/1.1 200"]
        }
        if length >= 0 { lines.append("content-length: \(length)") }
        if let lastModified { lines.append("last-modified: " + lastModified) }
        lines.append("")
        for line in lines {
            var line = line
            let ended = line.withUTF8 { state.head.take(UnsafeRawBufferPointer($0)) }
            if ended { return headEnded() }
        }
        return false
    }

    /// A refusal in words that say which host, which key and which file (`failure` for the rest).
    func sftpFailure(_ code: CURLcode, otherwise failure: FetchFailure) -> FetchFailure {
        let state = state.value
        let host = origin.map { $0.port == nil || $0.port == 22 ? $0.hostAsWritten : "\($0.hostAsWritten):\($0.port!)" } ?? "the host"
        let knownHosts = ssh?.knownHosts ?? "the known_hosts file"
        switch code {
        case CURLE_PEER_FAILED_VERIFICATION:
            let offered = state.hostKey?.offered.map { "its \($0.type) key \($0.fingerprint)" } ?? "its key"
            if state.hostKey?.match == CURLKHMATCH_MISMATCH {
                return FetchFailure(
                    .connection,
                    "changed host key: \(host) offers \(offered), not the key \(knownHosts) has for it "
                        + "(refused: if the host was given a new key, remove the old one with ssh-keygen -R)",
                    detail: .denied(.changedHostKey))
            }
            return FetchFailure(
                .connection,
                "unknown host key: \(host) offers \(offered), which is not in \(knownHosts) "
                    + "(refused: add it after checking the fingerprint, or trust new hosts with --ssh-accept-new-hosts)",
                detail: .denied(.unknownHostKey))
        case CURLE_LOGIN_DENIED:
            let user = SFTPUser.of(url) ?? "the user"
            return FetchFailure(
                .connection, "login refused: \(host) did not accept \(ssh?.description ?? "no key") for \(user)",
                detail: .denied(.loginRefused))
        case CURLE_REMOTE_FILE_NOT_FOUND:
            return FetchFailure(
                .connection, "no such file on \(host): \(Redact.short(SFTPUser.path(of: url), limit: 240))", detail: .denied(.noSuchFile))
        case CURLE_REMOTE_ACCESS_DENIED:
            return FetchFailure(
                .connection, "permission denied on \(host): \(Redact.short(SFTPUser.path(of: url), limit: 240))",
                detail: .denied(.noSuchFile))
        default:
            return failure
        }
    }
}

/// A host key a server offered, in the forms a refusal and a known_hosts line use.
struct OfferedHostKey {
    let type: String
    let base64: String
    let fingerprint: String
}

/// The user and path of an `sftp://` URL, for words.
enum SFTPUser {
    static func of(_ url: String) -> String? {
        guard let start = url.firstRange(of: "://")?.upperBound else { return nil }
        let authority = url[start...].prefix { $0 != "/" }
        guard let at = authority.lastIndex(of: "@") else { return nil }
        return String(authority[..<at].prefix { $0 != ":" })
    }

    static func path(of url: String) -> String {
        guard let start = url.firstRange(of: "://")?.upperBound else { return url }
        return String(url[start...].drop { $0 != "/" })
    }
}

/// Lines added to known_hosts files (`--ssh-accept-new-hosts`), once a line each per run.
enum KnownHostsAppender {
    private static let added = Mutex<Set<String>>([])

    static func append(_ line: String, to path: String) {
        guard added.withLock({ $0.insert(path + "\n" + line).inserted }) else { return }
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var text = line + "\n"
        _ = text.withUTF8 { write(fd, $0.baseAddress, $0.count) }
    }
}

/// HTTP dates (RFC 9110's IMF-fixdate) of Unix times: the Last-Modified an SFTP file's time is
/// given as.
enum HTTPDate {
    static func format(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var fields = tm()
        gmtime_r(&time, &fields)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(fields.tm_wday)]), \(two(fields.tm_mday)) \(months[Int(fields.tm_mon)]) \(fields.tm_year + 1900) "
            + "\(two(fields.tm_hour)):\(two(fields.tm_min)):\(two(fields.tm_sec)) GMT"
    }
}
