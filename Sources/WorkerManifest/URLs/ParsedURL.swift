/// A URL parsed once into its kind, where it connects and the rest: what every comparison of two
/// URLs (`--rewrite`, the mirrors map) works on, never their text.
public struct ParsedURL: Sendable {
    /// As written.
    public let text: String
    public let kind: any URLKind
    public let origin: Origin
    /// After the authority: path, query and fragment (an S3 key, with its leading `/`).
    public let rest: Substring

    /// Whether this URL is under `prefix`: the same origin, and the prefix's rest a start of this
    /// one's at a path-segment boundary (`http://cdn.test` is no prefix of
    /// `http://cdn.test.elsewhere.test/…`, nor `…/a` of `…/ab`; `http://USER@Cdn.Test:80/a/` is one
    /// of `http://cdn.test/a/b`).
    public func isUnder(_ prefix: ParsedURL) -> Bool {
        origin == prefix.origin && Self.isUnder(rest, prefix.rest)
    }

    /// What follows `prefix`'s rest in this URL (`isUnder(prefix)` must hold).
    public func rest(after prefix: ParsedURL) -> Substring {
        rest.dropFirst(prefix.rest.count)
    }

    /// `prefix`'s text followed by `tail`, the rest of a URL of kind `from` below a prefix: S3
    /// keys are literal and URL paths percent-encoded, so a key is encoded for a URL path and a
    /// path decoded for a key. Nil when a path does not decode.
    public static func joining(_ prefix: String, of kind: any URLKind, _ tail: Substring, from: any URLKind) -> String? {
        switch (from.literalPaths, kind.literalPaths) {
        case (true, false): return prefix + LiteralPath.encoded(tail)
        case (false, true): return URLResolver.percentDecoded(tail).map { prefix + $0 }
        default: return prefix + tail
        }
    }

    /// Whether `text` starts with `prefix` at a path-segment boundary: the prefix ends with `/`, or
    /// the text goes on with `/`, `?`, `#` or not at all.
    public static func isUnder(_ text: some StringProtocol, _ prefix: some StringProtocol) -> Bool {
        guard text.hasPrefix(prefix) else { return false }
        if prefix.hasSuffix("/") || prefix.isEmpty { return true }
        guard let next = text.utf8.dropFirst(prefix.utf8.count).first else { return true }
        return next == UInt8(ascii: "/") || next == UInt8(ascii: "?") || next == UInt8(ascii: "#")
    }
}
