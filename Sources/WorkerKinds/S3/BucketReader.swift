import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerManifest
import WorkerStore
import WorkerSupport

/// What `worker manifest s3://BUCKET/PREFIX/` asks a bucket besides downloads, through the same
/// engine, endpoint and signing as the downloads: the listing (ListObjectsV2, page by page with
/// continuation tokens) and an object's stored SHA-256 (a HEAD in checksum mode). Each exchange is
/// retried as a download is (connection failures, timeouts, 5xx, 408, 429; `--retries`).
final class BucketReader: FolderLister {
    private let access: S3Access
    /// `--rewrite`: the bucket's endpoint may be reached through a proxy, as downloads are.
    private let rewrite: URLRewrite
    private let store: ContentStore
    private let settings: FetchSettings
    private let engine: SingleEngine

    /// Starts one engine of `settings`' transport with `width` connections.
    init(access: S3Access, store: ContentStore, settings: FetchSettings, width: Int) throws(EngineStartFailure) {
        self.access = access
        rewrite = settings.locator.rewrite
        self.store = store
        self.settings = settings
        engine = try SingleEngine(settings: settings, width: width)
    }

    var noun: String { "objects" }
    var storedHashSource: String? { "the bucket's SHA-256" }

    /// Stops the engine; call once, when done.
    func close() async {
        await engine.close()
    }

    /// Every object below `folder` (`s3://BUCKET/PREFIX/`), in the bucket's (key) order.
    func list(_ folder: String) async -> Result<[ListedFile], FetchFailure> {
        guard case .success(let location) = S3URL.parse(folder + "x") else {
            return .failure(FetchFailure(.httpStatus, "'\(folder)' is not s3://BUCKET/PREFIX/"))
        }
        let (bucket, prefix) = (location.bucket, String(location.key.dropLast()))
        return await list(bucket: bucket, prefix: prefix).map { objects in
            objects.map { object in
                ListedFile(
                    url: "s3://\(bucket)/\(object.key)", relative: String(object.key.dropFirst(prefix.count)), etag: object.etag,
                    size: object.size, lastModified: object.lastModified, storesSHA256: object.hasSHA256)
            }
        }
    }

    /// The SHA-256 the bucket stores for the object.
    func storedSHA256(of file: ListedFile) async -> Result<String?, FetchFailure> {
        guard case .success(let object) = S3URL.parse(file.url) else { return .success(nil) }
        return await storedSHA256(bucket: object.bucket, key: object.key)
    }

    /// Every object whose key starts with `prefix`, in the bucket's (key) order.
    func list(bucket: String, prefix: String) async -> Result<[S3ListingPage.Object], FetchFailure> {
        var objects: [S3ListingPage.Object] = []
        var token: String?
        repeat {
            // Query parameters in their canonical (sorted) order, each value encoded once.
            var query = token.map { "continuation-token=" + LiteralPath.percentEncoded($0, keepingSlashes: false) + "&" } ?? ""
            query += "list-type=2&prefix=" + LiteralPath.percentEncoded(prefix, keepingSlashes: false)
            let url = bucketURL(bucket) + "?" + query
            switch await body(url) {
            case .failure(let failure):
                return .failure(failure)
            case .success(let xml):
                guard let page = S3ListingPage.parse(xml) else {
                    return .failure(FetchFailure(.httpStatus, "the bucket's listing could not be read (not a ListBucketResult)"))
                }
                objects += page.objects
                token = page.nextToken
            }
        } while token != nil
        return .success(objects)
    }

    /// The SHA-256 the bucket stores for `key` (lowercase hex), or nil when it stores none.
    func storedSHA256(bucket: String, key: String) async -> Result<String?, FetchFailure> {
        let (located, signing) = access.location(of: S3URL(bucket: bucket, key: key))
        let url = rewrite.apply(located)
        var request = TransferRequest(url: url, headers: ["x-amz-checksum-mode: ENABLED"], deadline: 0)
        request.method = .head
        request.signing = signing
        let reply = await exchange(request) { deadline in .statusAndHeader("x-amz-checksum-sha256", url: url, deadline: deadline) }
        switch reply.result {
        case .success(.statusAndHeader(200, let base64)):
            guard let base64 else { return .success(nil) }
            guard let digest = Data(base64Encoded: base64), digest.count == 32 else {
                return .failure(FetchFailure(.httpStatus, "x-amz-checksum-sha256 is not a SHA-256 (\(Redact.short(base64)))"))
            }
            return .success(Hex.encode(digest))
        case .success(.statusAndHeader(let status, _)):
            return .failure(Self.refusal(status, signing: signing))
        case .success:
            return .failure(FetchFailure(.httpStatus, "an unexpected answer to a HEAD"))
        case .failure(let failure):
            return .failure(failure)
        }
    }

    // MARK: - Exchanges

    /// The bucket's own URL (`ENDPOINT/BUCKET/` path-style, or the virtual host).
    private func bucketURL(_ bucket: String) -> String {
        rewrite.apply(access.location(of: S3URL(bucket: bucket, key: "")).url)
    }

    /// A GET's body as text (a small XML document).
    private func body(_ url: String) async -> Result<String, FetchFailure> {
        var request = TransferRequest(url: url, headers: [], deadline: 0)
        request.signing = access.credentials.map { AWSSigning(credentials: $0, region: access.region) }
        let signing = request.signing
        return await engine.document(request, store: store, maxSize: 64 << 20).mapError { problem in
            switch problem {
            case .answered(.status(let status, _)), .answered(.statusAndHeader(let status, _)):
                Self.refusal(status, signing: signing)
            case .answered(.redirect(let status, _)):
                FetchFailure(.redirect, "HTTP \(status): the bucket is in another region or behind a redirect", httpStatus: status)
            case .answered:
                FetchFailure(.httpStatus, "an unasked 304", httpStatus: 304)
            case .failed(let failure):
                failure
            }
        }
    }

    private func exchange(_ request: TransferRequest, handler: @escaping @Sendable (Double) -> ResponseHandler) async -> ExchangeReply {
        await engine.exchange(request, handler: handler)
    }

    /// A refusal names what the request was signed with (the key id and region, never the secret).
    private static func refusal(_ status: Int, signing: AWSSigning?) -> FetchFailure {
        let signed =
            (status == 401 || status == 403)
            ? " (" + (signing.map { "signed with \($0)" } ?? "unsigned: no AWS credentials were found") + ")" : ""
        return FetchFailure(.httpStatus, "HTTP \(status)\(signed)", httpStatus: status)
    }
}
