import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerManifest
import WorkerPlan
import WorkerReport
import WorkerStore
import WorkerSupport

/// `worker manifest s3://BUCKET/PREFIX/`: the manifest of what a bucket holds under a prefix. The
/// bucket is listed (ListObjectsV2); each object is pinned by the SHA-256 the bucket stores for it
/// when the listing says it has one (a HEAD in checksum mode, no body), else by hashing one
/// download through the cache (which it warms, revalidating what it holds). What the listing said
/// of each object (ETag, size, date) is kept in the index with its pin: a later run asks only about
/// objects whose listing changed, and new ones.
extension SyncEngine {
    /// A bucket's manifest: each object's key relative to the prefix with its SHA-256, and what
    /// it took.
    package struct BucketManifest: Sendable {
        package var items: [ManifestWriter.Item] = []
        /// Why the bucket could not be listed (then nothing else was asked, and no manifest is due).
        package var listingFailure: String?
        /// Objects that could not be pinned (each a report row), left out.
        package var failed: [SyncReport.Entry] = []
        /// Keys left out because they cannot be a file's path in a tree (`a//b`, `a/./b`, a folder marker).
        package var skipped: [String] = []
        package var listed = 0
        /// Pins kept from the last run (the listing said the same of them).
        package var unchanged = 0
        /// Pinned by the checksum the bucket stores (a HEAD each).
        package var byChecksum = 0
        /// Pinned by hashing a download (through the cache).
        package var byDownload = 0
    }

    /// Lists `s3://bucket/prefix` and pins each object; `earlier` (an earlier manifest's pins, by
    /// absolute URL) must agree with what the index kept for a pin to be kept without asking.
    package func bucketManifest(bucket: String, prefix: String, earlier: [String: String]?) async throws(SyncFailure) -> BucketManifest {
        var options = options
        do throws(CacheError) {
            options.fetch.locator = try options.fetch.locator.resolvingS3(if: true)
        } catch {
            throw .cache(error)
        }
        if let problem = CacheAccess.writeProblem(root: options.cacheDirectory) { throw .cache(.notWritable(problem)) }
        let prefixURL = "s3://\(bucket)/\(prefix)"
        var result = BucketManifest()
        let objects: [S3ListingPage.Object]
        let known: [String: ListedObject]
        let width = min(16, max(1, options.fetch.jobs))
        do throws(CacheError) {
            let store = try ContentStore(root: options.cacheDirectory)
            let index = try CacheIndex(path: CacheLayout.indexPath(options.cacheDirectory), create: true)
            known = try index.listedObjects(under: prefixURL)
            let reader = try BucketReader(store: store, settings: options.fetch, width: width)
            let listing = await reader.list(bucket: bucket, prefix: prefix)
            guard case .success(let all) = listing else {
                await reader.close()
                if case .failure(let failure) = listing { result.listingFailure = failure.message }
                return result
            }
            objects = all.filter { object in
                let relative = object.key.dropFirst(prefix.count)
                // The prefix itself, and folder markers (a key ending in `/`, no bytes): no file.
                if relative.isEmpty || relative.hasSuffix("/") && object.size == 0 { return false }
                guard TreePath.problem(String(relative)) == nil else {
                    result.skipped.append(object.key)
                    return false
                }
                return true
            }
            result.listed = objects.count
            // Kept, asked by HEAD, or downloaded.
            var pins: [String: String] = [:]
            var toHead: [S3ListingPage.Object] = []
            var toDownload: [String] = []
            let objectURL = { (object: S3ListingPage.Object) in "s3://\(bucket)/\(object.key)" }
            for object in objects {
                let url = objectURL(object)
                let seen = ListedObject(url: url, etag: object.etag, size: object.size, lastModified: object.lastModified, sha256: "")
                if !options.refresh, let kept = known[url], kept.isSameListing(as: seen), earlier.map({ $0[url] == kept.sha256 }) ?? true {
                    pins[url] = kept.sha256
                    result.unchanged += 1
                } else if object.hasSHA256, !options.offline {
                    toHead.append(object)
                } else {
                    toDownload.append(url)
                }
            }
            let asked = await Self.storedChecksums(toHead, bucket: bucket, reader: reader, width: width)
            await reader.close()
            for object in toHead {
                let url = objectURL(object)
                switch asked[object.key] {
                case .success(let sha256?)?:
                    pins[url] = sha256
                    result.byChecksum += 1
                case .success(nil)?, nil:
                    toDownload.append(url)
                case .failure(let failure)?:
                    result.failed.append(SyncReport.Entry(url: url, status: .failed, reason: failure.reason,
                                                          error: failure.message, httpStatus: failure.httpStatus,
                                                          manifest: prefixURL))
                }
            }
            if !toDownload.isEmpty {
                let pinned: (items: [ManifestWriter.Item], failed: [SyncReport.Entry])
                do {
                    pinned = try await SyncEngine(options: options, context: context).pin(urls: toDownload, source: prefixURL)
                } catch {
                    switch error {
                    case .cache(let cause): throw cause
                    case .manifest(let errors): throw CacheError.unusable(path: prefixURL, reason: errors.description)
                    }
                }
                for item in pinned.items { pins[item.url] = item.sha256 }
                result.byDownload += pinned.items.count
                result.failed += pinned.failed
            }
            var recorded: [ListedObject] = []
            for object in objects {
                let url = objectURL(object)
                guard let sha256 = pins[url] else { continue }
                recorded.append(ListedObject(url: url, etag: object.etag, size: object.size, lastModified: object.lastModified,
                                             sha256: sha256))
                // Keys are literal under an s3:// base_url; one whose first segment has a colon
                // would read as a scheme, and is written whole.
                let relative = String(object.key.dropFirst(prefix.count))
                let written = relative.prefix { $0 != "/" }.contains(":") ? url : relative
                result.items.append(ManifestWriter.Item(url: written, sha256: sha256))
            }
            let lock = try await CacheLock(directory: options.cacheDirectory, wait: options.waitLock, context: context)
            defer { lock.release() }
            try index.recordListing(under: prefixURL, recorded)
        } catch {
            throw .cache(error)
        }
        result.items.sort { FileName.precedes($0.url, $1.url) }
        return result
    }

    /// The SHA-256 each object's bucket stores, asked `width` at a time.
    private static func storedChecksums(_ objects: [S3ListingPage.Object], bucket: String, reader: BucketReader,
                                        width: Int) async -> [String: Result<String?, FetchFailure>] {
        await withTaskGroup(of: (String, Result<String?, FetchFailure>).self) { group in
            var answers: [String: Result<String?, FetchFailure>] = [:]
            var next = 0
            func add() {
                guard next < objects.count else { return }
                let key = objects[next].key
                next += 1
                group.addTask { (key, await reader.storedSHA256(bucket: bucket, key: key)) }
            }
            for _ in 0..<width { add() }
            for await (key, answer) in group {
                answers[key] = answer
                add()
            }
            return answers
        }
    }
}
