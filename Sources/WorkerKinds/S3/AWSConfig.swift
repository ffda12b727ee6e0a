import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerManifest
import WorkerSupport

/// Credentials and region the AWS way, resolved once for a run that has `s3://` URLs: the
/// environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), else the
/// profile (`AWS_PROFILE`, else `default`) in the shared credentials and config files
/// (`AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`, default `~/.aws/credentials` and
/// `~/.aws/config`); the region from `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile, else
/// `us-east-1`. Without credentials requests go unsigned (public buckets).
enum AWSConfig {
    /// Resolves what `environment` says; a file that cannot be read, a profile that is in
    /// neither file, or half a key pair is an error naming it (never a secret).
    static func access(environment: [String: String]) -> Result<S3Access, S3ConfigError> {
        let value = { (name: String) in environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let home = value("HOME") ?? "/"
        let expand = { (path: String) in path.hasPrefix("~/") ? home + path.dropFirst(1) : path }
        let explicitProfile = value("AWS_PROFILE")
        let profile = explicitProfile ?? "default"
        var credentials: AWSCredentials?
        var source = "none: requests are unsigned"
        switch (value("AWS_ACCESS_KEY_ID"), value("AWS_SECRET_ACCESS_KEY")) {
        case (let id?, let secret?):
            credentials = AWSCredentials(accessKeyID: id, secret: secret, sessionToken: value("AWS_SESSION_TOKEN"))
            source = "the environment"
        case (.some, nil):
            return .failure(S3ConfigError("AWS_ACCESS_KEY_ID is set without AWS_SECRET_ACCESS_KEY"))
        case (nil, .some):
            return .failure(S3ConfigError("AWS_SECRET_ACCESS_KEY is set without AWS_ACCESS_KEY_ID"))
        case (nil, nil):
            break
        }
        let credentialsFile = value("AWS_SHARED_CREDENTIALS_FILE").map(expand)
        let configFile = value("AWS_CONFIG_FILE").map(expand)
        let files: [(path: String, explicit: Bool, section: String)] = [
            (credentialsFile ?? home + "/.aws/credentials", credentialsFile != nil, profile),
            (configFile ?? home + "/.aws/config", configFile != nil, profile == "default" ? "default" : "profile " + profile),
        ]
        var sections: [[String: String]?] = []
        // The files are read only when the environment leaves something to them.
        let needsFiles = credentials == nil || (value("AWS_REGION") ?? value("AWS_DEFAULT_REGION")) == nil
        if needsFiles {
            for file in files {
                switch read(file.path, explicit: file.explicit) {
                case .failure(let error): return .failure(error)
                case .success(let text): sections.append(text.flatMap { section(file.section, in: $0) })
                }
            }
            if let explicitProfile, credentials == nil, sections.allSatisfy({ $0 == nil }) {
                return .failure(
                    S3ConfigError(
                        "the AWS profile '\(Redact.short(explicitProfile))' (AWS_PROFILE) is in neither "
                            + "\(files[0].path) nor \(files[1].path)"))
            }
        }
        if credentials == nil {
            for (number, found) in sections.enumerated() {
                guard let found, let id = found["aws_access_key_id"], let secret = found["aws_secret_access_key"] else { continue }
                credentials = AWSCredentials(accessKeyID: id, secret: secret, sessionToken: found["aws_session_token"])
                source = "profile '\(profile)' in \(files[number].path)"
                break
            }
        }
        let region = value("AWS_REGION") ?? value("AWS_DEFAULT_REGION") ?? sections.last.flatMap { $0?["region"] } ?? "us-east-1"
        // A region names a host (`BUCKET.s3.REGION.amazonaws.com`) and the signing scope: AWS's
        // are lowercase letters, digits and dashes, and nothing else may steer the request.
        guard !region.isEmpty, region.utf8.count <= 64,
            region.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == UInt8(ascii: "-") })
        else {
            return .failure(
                S3ConfigError(
                    "the AWS region '\(Sanitize.terminal(Redact.short(region)))' is not a region "
                        + "(lowercase letters, digits and '-', such as eu-west-3)"))
        }
        let endpoint = value("AWS_ENDPOINT_URL_S3") ?? value("AWS_ENDPOINT_URL")
        if let endpoint {
            let what = "the S3 endpoint (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL)"
            if let problem = URLKinds.kind(of: endpoint)?.id == .http
                ? URLKinds.problem(prefix: endpoint, what: what)
                : "\(what) must be an absolute http or https URL"
            {
                return .failure(S3ConfigError(problem))
            }
        }
        return .success(S3Access(region: region, endpoint: endpoint, credentials: credentials, credentialSource: source))
    }

    /// A file's text; nil when it does not exist and was not named explicitly.
    private static func read(_ path: String, explicit: Bool) -> Result<String?, S3ConfigError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            if errno == ENOENT, !explicit { return .success(nil) }
            return .failure(S3ConfigError("cannot read the AWS file \(Sanitize.terminal(path)): \(String(cString: strerror(errno)))"))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            return .failure(S3ConfigError("cannot read the AWS file \(Sanitize.terminal(path)): not a regular file"))
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count == 0 { break }
            guard count > 0 else {
                return .failure(S3ConfigError("cannot read the AWS file \(Sanitize.terminal(path)): \(String(cString: strerror(errno)))"))
            }
            bytes += buffer[0..<count]
            guard bytes.count <= 1 << 20 else {
                return .failure(S3ConfigError("cannot read the AWS file \(Sanitize.terminal(path)): larger than 1 MiB"))
            }
        }
        return .success(String(decoding: bytes, as: UTF8.self))
    }

    /// The `key = value` pairs of `[name]` in an INI text (the AWS files' format); nil when the
    /// section is not there. Indented lines (nested settings) and comments are skipped.
    static func section(_ name: String, in text: String) -> [String: String]? {
        var found: [String: String]?
        var inside = false
        for raw in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            if raw.first == " " || raw.first == "\t" { continue }
            let line = Text.trimmingWhitespace(raw)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                let title = line.dropFirst().dropLast().split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
                inside = title == name
                if inside, found == nil { found = [:] }
                continue
            }
            guard inside, let equals = line.firstIndex(of: "=") else { continue }
            let key = Text.trimmingWhitespace(line[..<equals]).lowercased()
            let value = Text.trimmingWhitespace(line[line.index(after: equals)...])
            found?[key] = value
        }
        return found
    }
}

/// An S3 setting or file that cannot be used (exit 2).
public struct S3ConfigError: Error, Sendable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension S3Access {
    /// Resolves the AWS settings of `environment` (`AWSConfig`).
    public static func resolve(environment: [String: String]) -> Result<S3Access, S3ConfigError> {
        AWSConfig.access(environment: environment)
    }
}
