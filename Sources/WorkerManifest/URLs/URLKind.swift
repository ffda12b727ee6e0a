/// The kinds of URL worker reads. A kind is one type (`HTTPKind`, `FileKind`, and the registered
/// ones in Sources/WorkerKinds): how its URLs parse and are checked, where they connect, what an
/// entry's tree path is; its access (`KindAccess`, in the fetch stage) says how it is reached.
/// Nothing outside the kinds tells a URL's kind by its text: it asks `URLKinds`.
public protocol URLKind: Sendable {
    /// Which kind this is.
    var id: URLKindID { get }
    /// The schemes it reads, lowercase.
    var schemes: [String] { get }
    /// What it may be written as besides an entry of a local manifest.
    var roles: URLRoles { get }
    /// Its paths are keys taken literally (S3): never percent-decoded, dot segments names.
    var literalPaths: Bool { get }
    /// Where `url` (of this kind) connects, and the rest after the authority (path, query,
    /// fragment; an S3 key with its leading `/`); nil when it cannot be parsed.
    func origin(of url: String) -> (origin: Origin, rest: Substring)?
    /// Why `url` cannot be an entry's URL, or nil.
    func problem(entry url: String) -> String?
    /// Why `prefix` cannot be a prefix of such URLs (`base_url`, a mirror or mirrored prefix,
    /// `--rewrite`'s FROM and TO), or nil.
    func problem(prefix: String) -> String?
    /// The tree path of an entry written as `written`: absolute, or relative to a `base_url` of
    /// this kind.
    func treePath(written: String) -> Result<String, TreePathProblem>
    /// What a refusal (400, 401, 403) of a request sent without credentials adds, for a kind
    /// whose requests carry the run's (`s3`: "unsigned: no AWS credentials were found"); nil for
    /// the rest.
    var sentWithoutCredentials: String? { get }
    /// The hash a URL of this kind names itself (an OCI blob's digest): it pins an entry without
    /// `hash:`, and one with `hash:` must agree. Nil for most kinds.
    func impliedHash(of url: String) -> ContentHash?
    /// Whether an entry written as `url` (`pinned`: with a `hash:`) stands for several files its
    /// origin names as a run starts (an OCI tag for its titled layers): the run asks the fetch
    /// stage for its parts (`Locator.parts`) before it plans. False for most kinds.
    func expands(_ url: String, pinned: Bool) -> Bool
    /// How a URL that stands for several files is written (`worker manifest URL` lists its
    /// parts); nil for a kind whose URLs never do.
    var expandedForm: String? { get }
    /// How a folder of it is written for `worker manifest URL/` to list (`s3://BUCKET/PREFIX/`);
    /// nil for a kind without listings.
    var listedForm: String? { get }
    /// Why `folder` (ending in `/`) cannot be listed, in words after the form; nil when it can.
    func problem(folder: String) -> String?
}

extension URLKind {
    public func impliedHash(of url: String) -> ContentHash? { nil }
    public func expands(_ url: String, pinned: Bool) -> Bool { false }
    public var expandedForm: String? { nil }
    public var listedForm: String? { nil }
    public func problem(folder: String) -> String? { "not a folder that can be listed" }
    public var sentWithoutCredentials: String? { nil }
}

/// A kind by name (its first scheme: `http`, `s3`, `oci`). The two kinds every run knows are
/// named here; the rest are registered (`URLKinds.install`).
public struct URLKindID: Sendable, Hashable, CustomStringConvertible {
    public let name: String

    public init(_ name: String) { self.name = name }

    public static let http = URLKindID("http")
    public static let file = URLKindID("file")

    public var description: String { name }
}

/// Where a kind of URL may be written.
public struct URLRoles: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// An entry's URL, a mirror, a mirrored prefix, `--rewrite`'s FROM and TO.
    public static let remote = URLRoles(rawValue: 1)
    /// A `base_url`.
    public static let base = URLRoles(rawValue: 2)
    /// A remote manifest (`worker sync URL`).
    public static let manifest = URLRoles(rawValue: 4)
    /// Signed with the run's credentials: its settings are read when a run has one.
    public static let signed = URLRoles(rawValue: 8)
    /// A folder of it can be listed into a manifest (`worker manifest URL`).
    public static let listable = URLRoles(rawValue: 16)
}
