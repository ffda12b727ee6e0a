import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerManifest
import WorkerPlan
import WorkerReport
import WorkerStore
import WorkerSupport

/// `worker manifest URL/` of a listable kind (`s3://BUCKET/PREFIX/`): the manifest of what a
/// folder holds. The folder is listed (its kind's `FolderLister`); each file is pinned by the
/// SHA-256 its origin stores for it when the listing says it has one (a bucket's, asked by a
/// HEAD), else by hashing one download through the cache (which it warms, revalidating what it
/// holds). What the listing said of each file (ETag, size, date) is kept in the index with its
/// pin: a later run asks only about files whose listing changed, and new ones.
extension SyncEngine {
    /// A folder's manifest: each file's path relative to the folder with its SHA-256, and what
    /// it took.
    public struct FolderManifest: Sendable {
        public var items: [ManifestWriter.Item] = []
        /// Why the folder could not be listed (then nothing else was asked, and no manifest is due).
        public var listingFailure: String?
        /// Files that could not be pinned (each a report row), left out.
        public var failed: [SyncReport.Entry] = []
        /// URLs left out because they cannot be a file's path in a tree (`a//b`, `a/./b`, a folder marker).
        public var skipped: [String] = []
        public var listed = 0
        /// Pins kept from the last run (the listing said the same of them).
        public var unchanged = 0
        /// Pinned by the checksum the origin stores (a HEAD each).
        public var byChecksum = 0
        /// Pinned by hashing a download (through the cache).
        public var byDownload = 0
        /// What the kind calls its files ("objects"), and where a stored hash comes from.
        public var noun = "files"
        public var storedHashSource: String? = "the origin's SHA-256"
    }

    /// Lists `folder` (a URL of a listable kind, ending in `/`) and pins each file; `earlier`
    /// (an earlier manifest's pins, by absolute URL) must agree with what the index kept for a
    /// pin to be kept without asking.
    public func folderManifest(_ folder: String, earlier: [String: String]?) async throws(SyncFailure) -> FolderManifest {
        var options = options
        do throws(KindSettingsProblem) {
            let kinds = URLKinds.kind(of: folder).map { Set([$0.id]) } ?? []
            options.fetch.locator = try options.fetch.locator.configuring(kinds)
        } catch {
            throw .settings(error)
        }
        if let problem = CacheAccess.writeProblem(root: options.cacheDirectory) { throw .cache(.notWritable(problem)) }
        let prefixURL = folder
        let literalPaths = URLKinds.kind(of: folder)?.literalPaths ?? true
        var result = FolderManifest()
        let objects: [ListedFile]
        let known: [String: ListedObject]
        let width = min(16, max(1, options.fetch.jobs))
        // What listing or pinning failed with besides the cache (a rule refusing a request, engines
        // that could not start).
        var pinFailure: SyncFailure?
        listing: do throws(CacheError) {
            let store = try ContentStore(root: options.cacheDirectory)
            let index = try CacheIndex(path: CacheLayout.indexPath(options.cacheDirectory), create: true)
            known = try index.listedObjects(under: prefixURL)
            let lister: (any FolderLister)?
            do throws(EngineStartFailure) {
                lister = try options.fetch.locator.access(of: folder)?.lister(store: store, settings: options.fetch, width: width)
            } catch {
                pinFailure = .engines(error)
                break listing
            }
            guard let reader = lister else {
                result.listingFailure = "its kind of URL has no listing"
                return result
            }
            (result.noun, result.storedHashSource) = (reader.noun, reader.storedHashSource)
            let listing = await reader.list(folder)
            guard case .success(let all) = listing else {
                await reader.close()
                if case .failure(let failure) = listing { result.listingFailure = failure.message }
                return result
            }
            objects = all.filter { object in
                let relative = object.relative
                // The folder itself, and folder markers (a name ending in `/`, no bytes): no file.
                if relative.isEmpty || relative.hasSuffix("/") && object.size == 0 { return false }
                guard TreePath.problem(relative) == nil else {
                    result.skipped.append(object.url)
                    return false
                }
                return true
            }
            result.listed = objects.count
            // Kept, asked by HEAD, or downloaded.
            var pins: [String: String] = [:]
            var toHead: [ListedFile] = []
            var toDownload: [String] = []
            for object in objects {
                let url = object.url
                let seen = ListedObject(url: url, etag: object.etag, size: object.size, lastModified: object.lastModified, sha256: "")
                if !options.refresh, let kept = known[url], kept.isSameListing(as: seen), earlier.map({ $0[url] == kept.sha256 }) ?? true {
                    pins[url] = kept.sha256
                    result.unchanged += 1
                } else if object.storesSHA256, !options.offline {
                    toHead.append(object)
                } else {
                    toDownload.append(url)
                }
            }
            let asked = await Self.storedChecksums(toHead, reader: reader, width: width)
            await reader.close()
            for object in toHead {
                let url = object.url
                switch asked[url] {
                case .success(let sha256?)?:
                    pins[url] = sha256
                    result.byChecksum += 1
                case .success(nil)?, nil:
                    toDownload.append(url)
                case .failure(let failure)?:
                    result.failed.append(
                        SyncReport.Entry(
                            url: url, status: .failed, reason: failure.reason,
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
                    case .manifestUnavailable, .refused, .rewriteRefused, .settings, .engines:
                        pinFailure = error
                        break listing
                    }
                }
                for item in pinned.items { pins[item.url] = item.sha256 }
                result.byDownload += pinned.items.count
                result.failed += pinned.failed
            }
            var recorded: [ListedObject] = []
            for object in objects {
                let url = object.url
                guard let sha256 = pins[url] else { continue }
                recorded.append(
                    ListedObject(
                        url: url, etag: object.etag, size: object.size, lastModified: object.lastModified,
                        sha256: sha256))
                // Paths are literal under an s3:// base_url, percent-encoded under others (the
                // URL's own spelling); one whose first segment has a colon would read as a scheme,
                // and is written whole.
                let relative = literalPaths ? object.relative : String(url.dropFirst(prefixURL.count))
                let written = relative.prefix { $0 != "/" }.contains(":") ? url : relative
                result.items.append(ManifestWriter.Item(url: written, sha256: sha256))
            }
            let lock = try await CacheLock(directory: options.cacheDirectory, wait: options.waitLock, context: context)
            defer { lock.release() }
            try index.recordListing(under: prefixURL, recorded)
        } catch {
            throw .cache(error)
        }
        if let pinFailure { throw pinFailure }
        result.items.sort { FileName.precedes($0.url, $1.url) }
        return result
    }

    /// The SHA-256 the origin stores of each file, by URL, asked `width` at a time.
    private static func storedChecksums(
        _ objects: [ListedFile], reader: any FolderLister,
        width: Int
    ) async -> [String: Result<String?, FetchFailure>] {
        await withTaskGroup(of: (String, Result<String?, FetchFailure>).self) { group in
            var answers: [String: Result<String?, FetchFailure>] = [:]
            var next = 0
            func add() {
                guard next < objects.count else { return }
                let file = objects[next]
                next += 1
                group.addTask { (file.url, await reader.storedSHA256(of: file)) }
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
