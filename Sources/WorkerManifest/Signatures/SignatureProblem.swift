/// Why a manifest's signature was not accepted.
public enum SignatureProblem: Error, Equatable, Sendable {
    /// The file is not a signature of a known form.
    case malformed(String)
    /// Made by a key that is not trusted (named).
    case untrustedKey(String)
    /// Made by a trusted key (named), but not over these bytes.
    case invalid(String)

    public var message: String {
        switch self {
        case .malformed(let text): text
        case .untrustedKey(let key): "signed by \(key), which is not a trusted key"
        case .invalid(let key): "the signature by \(key) does not match the manifest's bytes (changed after it was signed?)"
        }
    }
}
