import Crypto
import WorkerSupport

/// How a group-shared cache names URLs with user info (`https://user:password@host/…`) in its
/// index, which its group can read: the user info is replaced by `~` and a keyed digest of it
/// (HMAC-SHA256 with the cache's owner-only `credential-key`), so each URL keeps a row of its own
/// and nothing the group can read lets it test a guessed password. Such a row can be matched
/// (a sync of the same manifest, `get` and `rm` of the same URL, by the owner) but not fetched
/// from the index alone: `verify --repair` drops it and the next sync fetches it again.
public enum CredentialFreeURL {
    /// `url` with its user info replaced, or `url` when it has none (or is a key already).
    /// Without the cache's key (a reader of the group) the digest matches no row.
    static func key(_ url: String, secret: [UInt8]?) -> String {
        let bytes = Array(url.utf8)
        guard let userInfo = bytes.withUnsafeBytes({ URLBytes.userInfo(in: $0) }) else { return url }
        let info = bytes[userInfo]
        if isDigest(info) { return url }
        let digest: [UInt8] =
            secret.map { Array(HMAC<SHA256>.authenticationCode(for: info, using: SymmetricKey(data: $0)).prefix(16)) }
            ?? [UInt8](repeating: 0, count: 16)
        return String(decoding: bytes[..<userInfo.lowerBound], as: UTF8.self) + "~" + Hex.encode(digest)
            + String(decoding: bytes[userInfo.upperBound...], as: UTF8.self)
    }

    /// Whether `url` carries user info (a credential) in its authority.
    public static func hasUserInfo(_ url: String) -> Bool {
        var url = url
        return url.withUTF8 { hasUserInfo(UnsafeRawBufferPointer($0)) }
    }

    /// Whether a URL's UTF-8 bytes carry user info in its authority.
    public static func hasUserInfo(_ url: UnsafeRawBufferPointer) -> Bool {
        URLBytes.userInfo(in: url) != nil
    }

    /// Whether a row's URL is such a key (it cannot be fetched as it is).
    public static func isKey(_ url: String) -> Bool {
        let bytes = Array(url.utf8)
        return bytes.withUnsafeBytes { URLBytes.userInfo(in: $0) }.map { isDigest(bytes[$0]) } ?? false
    }

    private static func isDigest(_ info: ArraySlice<UInt8>) -> Bool {
        info.count == 33 && info.first == UInt8(ascii: "~")
            && Hex.isLowercaseHex(String(decoding: info.dropFirst(), as: UTF8.self), length: 32)
    }
}
