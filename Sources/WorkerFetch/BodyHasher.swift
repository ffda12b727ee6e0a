import Crypto
import WorkerManifest

/// Hashes a body as it streams: always SHA-256 (the object's name) and, when the manifest named
/// another algorithm, that one too, in the same pass.
struct BodyHasher {
    private var sha256 = SHA256()
    private var extra: Extra?

    private enum Extra {
        case md5(Insecure.MD5)
        case sha1(Insecure.SHA1)
        case sha384(SHA384)
        case sha512(SHA512)
    }

    init(also algorithm: HashAlgorithm?) {
        switch algorithm {
        case .md5: extra = .md5(Insecure.MD5())
        case .sha1: extra = .sha1(Insecure.SHA1())
        case .sha384: extra = .sha384(SHA384())
        case .sha512: extra = .sha512(SHA512())
        case .sha256, nil: extra = nil
        }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        sha256.update(bufferPointer: bytes)
        switch extra {
        case .md5(var hasher): hasher.update(bufferPointer: bytes); extra = .md5(hasher)
        case .sha1(var hasher): hasher.update(bufferPointer: bytes); extra = .sha1(hasher)
        case .sha384(var hasher): hasher.update(bufferPointer: bytes); extra = .sha384(hasher)
        case .sha512(var hasher): hasher.update(bufferPointer: bytes); extra = .sha512(hasher)
        case nil: break
        }
    }

    /// The SHA-256 hex, and the digest in `algorithm` (the SHA-256 itself when that is the algorithm).
    func finalize(for algorithm: HashAlgorithm?) -> (sha256: String, expected: ContentHash?) {
        let sha = ContentHash(algorithm: .sha256, digest: sha256.finalize())
        switch extra {
        case .md5(let hasher): return (sha.hex, ContentHash(algorithm: .md5, digest: hasher.finalize()))
        case .sha1(let hasher): return (sha.hex, ContentHash(algorithm: .sha1, digest: hasher.finalize()))
        case .sha384(let hasher): return (sha.hex, ContentHash(algorithm: .sha384, digest: hasher.finalize()))
        case .sha512(let hasher): return (sha.hex, ContentHash(algorithm: .sha512, digest: hasher.finalize()))
        case nil: return (sha.hex, algorithm == nil ? nil : sha)
        }
    }
}
