import WorkerManifest
import WorkerSupport

/// `s3://BUCKET/KEY` URLs: keys literal, the bucket its origin, requests signed with the run's
/// AWS settings (the fetch stage's `S3Access`), a prefix listable into a manifest.
public struct S3Kind: URLKind {
    public var id: URLKindID { .s3 }
    public var schemes: [String] { Self.schemes }
    private static let schemes = ["s3"]
    public var roles: URLRoles { [.remote, .base, .manifest, .signed, .listable] }
    public var literalPaths: Bool { true }
    public var sentWithoutCredentials: String? { "unsigned: no AWS credentials were found" }

    /// `s3://BUCKET` (a bucket S3 accepts), and the key with its leading `/`.
    public func origin(of url: String) -> (origin: Origin, rest: Substring)? {
        guard S3URL.isS3(url) else { return nil }
        let after = url.dropFirst(5)
        let bucket = after.prefix { $0 != "/" }
        guard S3URL.bucketProblem(String(bucket)) == nil else { return nil }
        return (Origin(scheme: "s3", host: String(bucket), port: nil, written: String(bucket)), after[bucket.endIndex...])
    }

    public func problem(entry url: String) -> String? {
        if case .failure(let problem) = S3URL.parse(url) { return problem.description }
        return nil
    }

    public var listedForm: String? { "s3://BUCKET/PREFIX/" }

    /// Parsed with a key below it: the bucket checked as S3 checks it, the prefix as written.
    public func problem(folder: String) -> String? {
        guard case .success = S3URL.parse(folder + "x") else { return "a bucket S3 accepts, then the prefix" }
        return nil
    }

    public func problem(prefix: String) -> String? {
        S3URL.bucketProblem(String(prefix.dropFirst(5).prefix { $0 != "/" })).map { ": " + $0 }
    }

    /// The key, literal (`a%20b.png` and `x?y` are names): after the bucket of an absolute URL,
    /// else as written below an `s3://` base.
    public func treePath(written: String) -> Result<String, TreePathProblem> {
        guard S3URL.isS3(written) else { return TreePath.derived(fromLiteralPath: written) }
        return TreePath.derived(fromLiteralPath: String(written.dropFirst(5).drop { $0 != "/" }.dropFirst()))
    }
}

/// An `s3://BUCKET/KEY` URL: the bucket, checked against S3's naming rules, and the key as
/// written (S3 keys are taken literally, as the AWS CLI takes them: `%20` is three characters).
public struct S3URL: Sendable, Equatable {
    public let bucket: String
    public let key: String

    /// A bucket and a key already checked (an empty key: the bucket itself).
    public init(bucket: String, key: String) {
        self.bucket = bucket
        self.key = key
    }

    /// Whether `text` starts with `s3://` (any case). (The kind's own test: elsewhere,
    /// `URLKinds.kind(of:)`.)
    static func isS3(_ text: String) -> Bool {
        isS3(utf8: text.utf8)
    }

    /// Whether the URL whose UTF-8 bytes are `utf8` starts with `s3://` (any case).
    static func isS3(utf8: some Sequence<UInt8>) -> Bool {
        // Asked of every URL a run fetches: no allocation. (Each byte of "s3://" has 0x20 set,
        // so OR-ing it in folds the case of the letter and leaves the rest.)
        var bytes = utf8.makeIterator()
        for expected in "s3://".utf8 {
            guard let byte = bytes.next(), byte | 0x20 == expected else { return false }
        }
        return true
    }

    /// Parses an `s3://` URL; the error says what is wrong (no bucket, a bucket S3 refuses, no key).
    public static func parse(_ text: String) -> Result<S3URL, S3URLProblem> {
        guard isS3(text) else { return .failure(S3URLProblem("not an s3:// URL")) }
        let rest = text.dropFirst(5)
        guard let slash = rest.firstIndex(of: "/") else {
            return .failure(
                rest.isEmpty
                    ? S3URLProblem("'s3://' needs a bucket and a key (s3://BUCKET/KEY)")
                    : S3URLProblem("'\(Redact.short(text))' has no key (s3://BUCKET/KEY)"))
        }
        let bucket = String(rest[..<slash])
        let key = String(rest[rest.index(after: slash)...])
        if let problem = bucketProblem(bucket) { return .failure(S3URLProblem(problem)) }
        guard !key.isEmpty else { return .failure(S3URLProblem("'\(Redact.short(text))' has no key (s3://BUCKET/KEY)")) }
        guard key.utf8.count <= 1024 else { return .failure(S3URLProblem("an S3 key is at most 1,024 bytes")) }
        guard !key.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f }) else {
            return .failure(S3URLProblem("the S3 key contains a control character"))
        }
        return .success(S3URL(bucket: bucket, key: key))
    }

    /// Why S3 would refuse `bucket` as a bucket name (its rules for general purpose buckets), or nil.
    static func bucketProblem(_ bucket: String) -> String? {
        guard !bucket.isEmpty else { return "'s3://' needs a bucket (s3://BUCKET/KEY)" }
        let bytes = Array(bucket.utf8)
        let name = "bucket name '\(Redact.short(bucket, limit: 70))'"
        guard (3...63).contains(bytes.count) else { return "\(name) must be 3 to 63 characters long" }
        let allowed = bytes.allSatisfy { (97...122).contains($0) || (48...57).contains($0) || $0 == 45 || $0 == 46 }
        guard allowed else { return "\(name) may hold lowercase letters, digits, '.' and '-' only" }
        let alphanumeric = { (byte: UInt8) in (97...122).contains(byte) || (48...57).contains(byte) }
        guard alphanumeric(bytes[0]), alphanumeric(bytes[bytes.count - 1]) else {
            return "\(name) must begin and end with a letter or a digit"
        }
        guard !bucket.contains("..") else { return "\(name) may not hold two periods in a row" }
        let parts = bucket.split(separator: ".")
        if parts.count == 4, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isNumber) }) {
            return "\(name) may not look like an IP address"
        }
        if bucket.hasPrefix("xn--") || bucket.hasPrefix("sthree-") || bucket.hasSuffix("-s3alias") || bucket.hasSuffix("--ol-s3") {
            return "\(name) uses a prefix or suffix S3 reserves"
        }
        return nil
    }

    /// The key as a URL path: every byte but unreserved ones and `/` percent-encoded (what S3's
    /// canonical request expects once).
    var encodedKey: String { LiteralPath.encoded(key) }

}

/// What is wrong with an `s3://` URL.
public struct S3URLProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension URLKindID {
    public static let s3 = URLKindID("s3")
}
