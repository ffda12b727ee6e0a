import Crypto
import FoundationEssentials
import Glibc
import Logging
import WorkerFetch
import WorkerManifest
import WorkerStore
import WorkerSupport

/// What `worker verify` found, and what `--repair` did about it.
public struct VerifyReport: Sendable, Codable {
    public var objectsChecked = 0
    public var bytesChecked: Int64 = 0
    /// Object files whose bytes do not hash to their name.
    public var corruptObjects: [String] = []
    /// Index rows whose object file is missing (or was corrupt), by URL.
    public var missingObjects: [String] = []
    /// Object files no index row names: left by a run that stopped between installing an object
    /// and indexing it. Not a problem (the next sync or `gc` removes them); `--repair` does too.
    public var unreferencedObjects: [String] = []
    /// Index rows that cannot be trusted (an object name that is not one, a hash that does not
    /// parse), by URL. Never used as paths; `--repair` drops them.
    public var damagedRows: [String] = []
    /// Index rows whose size column is not their object's size (`gc` and `status` count by it),
    /// by URL. `--repair` sets the object's size.
    public var sizeMismatches: [String] = []
    /// Anything else under `objects/`: symlinks, wrongly named files, folders where files belong.
    public var strayFiles: [String] = []
    /// Files a crashed run left in `tmp/` (removed by `--repair`).
    public var temporaryFiles = 0
    public var repaired = false
    public var redownloaded: [String] = []
    /// Rows dropped because their URL could not be fetched again.
    public var droppedEntries: [String] = []
    public var deletedFiles = 0
    /// What SQLite found wrong with the index file itself: no repair helps, `clear` starts over.
    public var indexDamage: String?

    /// True when nothing is wrong: every object hashes to its name, every row has its object
    /// and can be trusted, and nothing foreign lies under `objects/`.
    public var isClean: Bool {
        corruptObjects.isEmpty && missingObjects.isEmpty && strayFiles.isEmpty && damagedRows.isEmpty && sizeMismatches.isEmpty
            && indexDamage == nil
    }

    enum CodingKeys: String, CodingKey {
        case objectsChecked = "objects_checked"
        case bytesChecked = "bytes_checked"
        case corruptObjects = "corrupt_objects"
        case missingObjects = "missing_objects"
        case unreferencedObjects = "unreferenced_objects"
        case damagedRows = "damaged_rows"
        case sizeMismatches = "size_mismatches"
        case strayFiles = "stray_files"
        case temporaryFiles = "temporary_files"
        case repaired, redownloaded
        case droppedEntries = "dropped_entries"
        case deletedFiles = "deleted_files"
        case indexDamage = "index_damage"
    }
}

/// Re-hashes every object and cross-checks the index both ways; with `repair`, deletes what is
/// wrong, re-downloads what the index still names (verified against its hash), and drops rows
/// that cannot be fetched again. Without `--repair` it only reads, while syncs write; with it,
/// it holds the cache's lock.
public struct CacheVerifier: Sendable {
    public let cacheDirectory: String
    public var fetch = FetchSettings()
    public var waitLock: Double?
    /// The manifests `--repair` may read local entries again from (their folders), given on the
    /// command line: never taken from the index, which only its owner should write but which
    /// names folders a planted row could point anywhere.
    public var manifestPaths: [String] = []
    /// The command's logger, lock notices and stop request.
    public let context: RunContext
    var logger: Logger { context.logger }

    public init(cacheDirectory: String, context: RunContext = RunContext()) {
        self.cacheDirectory = cacheDirectory
        self.context = context
    }

    public func verify(repair: Bool) async throws(VerifyFailure) -> VerifyReport {
        if repair {
            if let problem = CacheAccess.writeProblem(root: cacheDirectory) { throw .cache(.notWritable(problem)) }
            let store: ContentStore, slot: WriterSlot, lock: CacheLock
            do throws(CacheError) {
                store = try ContentStore(root: cacheDirectory)
                slot = try await WriterSlot(directory: cacheDirectory, wait: waitLock, stop: context.stop)
            } catch {
                throw .cache(error)
            }
            defer { slot.release() }
            do throws(CacheError) {
                lock = try await CacheLock(directory: cacheDirectory, wait: waitLock, context: context)
            } catch {
                throw .cache(error)
            }
            defer { lock.release() }
            var report = VerifyReport()
            // `tmp/` holds the bodies of other runs in flight unless this one is alone.
            if slot.alone { report.temporaryFiles = store.removeStaleTemporaryFiles() }
            let index: CacheIndex, findings: Findings
            do throws(CacheError) {
                index = try CacheIndex(path: CacheLayout.indexPath(cacheDirectory), create: true)
                if let damage = try index.damage() {
                    throw .index(path: index.path, cause: SQLiteError(code: 11, message: damage))  // SQLITE_CORRUPT
                }
                findings = try await check(index: index, report: &report, settled: true)
            } catch {
                throw .cache(error)
            }
            // The settings of the kinds the rows to fetch again are of (AWS's for s3://).
            let kinds = Set(findings.broken.compactMap { URLKinds.kind(of: $0.url) }.filter { $0.roles.contains(.signed) }.map(\.id))
            let locator: Locator
            do throws(KindSettingsProblem) {
                locator = try fetch.locator.configuring(kinds)
            } catch {
                throw .settings(error)
            }
            try await self.repair(findings, index: index, store: store, locator: locator, report: &report)
            return report
        }
        // Without --repair it only reads: no lock, a read-only index, while syncs write.
        var report = VerifyReport()
        guard access(CacheLayout.indexPath(cacheDirectory), F_OK) == 0 else { return report }
        let index: CacheIndex
        do throws(CacheError) {
            index = try CacheIndex(path: CacheLayout.indexPath(cacheDirectory), create: false, readOnly: true)
            report.indexDamage = try index.damage()
            if report.indexDamage == nil { _ = try await check(index: index, report: &report, settled: false) }
        } catch .index(_, let cause) where cause.isCorrupt {
            report.indexDamage = cause.message
        } catch {
            throw .cache(error)
        }
        // What dead runs left in `tmp/` (counted, not removed); while a sync runs, its own are there.
        if !WriterSlot.anyRunning(directory: cacheDirectory) {
            report.temporaryFiles = (try? FileManager.default.contentsOfDirectory(atPath: cacheDirectory + "/tmp"))?.count ?? 0
        }
        return report
    }

    /// Hashes every object and cross-checks the index both ways. Unless `settled` (the lock is
    /// held), other runs may commit and delete meanwhile: what looks wrong is read again once the
    /// commit in progress (if any) is done, and only what is still wrong is reported.
    private func check(index: CacheIndex, report: inout VerifyReport, settled: Bool) async throws(CacheError) -> Findings {
        let objectsDirectory = CacheLayout.objectsDirectory(cacheDirectory)
        var records = try index.allRecords()
        let damaged = try index.damagedRows()
        report.damagedRows = damaged.map { Redact.url($0.url) }.sorted()

        let (files, stray) = listObjects(objectsDirectory)
        report.strayFiles = stray
        let results = await hashAll(files.map { (name: $0, path: CacheLayout.objectPath(cacheDirectory, $0)) })
        var good = Set<String>()
        var sizes: [String: Int64] = [:]
        var corrupt: [String] = []
        for (name, result) in results {
            switch result {
            case .success(let (digest, size)):
                report.objectsChecked += 1
                report.bytesChecked += size
                sizes[name] = size
                if digest == name { good.insert(name) } else { corrupt.append(name) }
            case .failure(let failure):
                // Deleted since the listing (another run replaced or evicted it): not a finding.
                if !settled, failure.message == String(cString: strerror(ENOENT)) { continue }
                report.objectsChecked += 1
                corrupt.append(name)
            }
        }
        report.corruptObjects = corrupt.sorted()
        var unreferenced = good.subtracting(records.map(\.object))
        var broken = records.filter { !good.contains($0.object) }
        if !settled, !unreferenced.isEmpty || !broken.isEmpty {
            // A commit in progress installs objects before it names them; another run may have
            // replaced a row's object since the rows were read. Read again, once it is done.
            CacheLock.waitForCommit(directory: cacheDirectory, upTo: 5)
            records = try index.allRecords()
            let named = Set(records.map(\.object))
            unreferenced = unreferenced.filter { !named.contains($0) }
            let current = Dictionary(records.map { ($0.url, $0) }, uniquingKeysWith: { first, _ in first })
            broken = broken.compactMap { old in
                guard let now = current[old.url], now.object == old.object else { return nil }
                return good.contains(now.object) ? nil : now
            }
        }
        report.unreferencedObjects = unreferenced.sorted()
        report.missingObjects = broken.map { Redact.url($0.url) }.sorted()
        let damagedURLs = Set(damaged.map(\.url))
        let misSized = records.filter { record in
            good.contains(record.object) && sizes[record.object] != record.size && !damagedURLs.contains(record.url)
        }
        report.sizeMismatches = misSized.map { Redact.url($0.url) }.sorted()
        return Findings(broken: broken, misSized: misSized, sizes: sizes, damaged: damaged, stray: stray)
    }

    /// What `check` found that `--repair` acts on.
    private struct Findings {
        let broken: [IndexRecord]
        let misSized: [IndexRecord]
        let sizes: [String: Int64]
        let damaged: [CacheIndex.DamagedRow]
        let stray: [String]
    }

    /// Deletes what is wrong, sets sizes, re-downloads what the index still names and drops rows
    /// that cannot be fetched again. Holding the lock.
    private func repair(
        _ findings: Findings, index: CacheIndex, store: ContentStore, locator: Locator,
        report: inout VerifyReport
    ) async throws(VerifyFailure) {
        report.repaired = true
        // Bad files go first (their rows are broken already); then each broken row is fetched
        // again or dropped, so no row is left pointing at a missing or corrupt object.
        for name in report.corruptObjects + report.unreferencedObjects {
            store.remove(name)
            report.deletedFiles += 1
        }
        for path in findings.stray
        where unlink(store.objectsDirectory + "/" + path) == 0
            || rmdir(store.objectsDirectory + "/" + path) == 0
        {
            report.deletedFiles += 1
        }
        do throws(CacheError) {
            if !findings.damaged.isEmpty {
                try index.removeDamaged(findings.damaged)
                report.droppedEntries += report.damagedRows
            }
            if !findings.misSized.isEmpty {
                let fixed = findings.misSized.map { record in
                    var record = record
                    record.size = findings.sizes[record.object] ?? record.size
                    return record
                }
                try index.apply(upserts: fixed, touches: [], removals: [], at: Date().timeIntervalSince1970)
            }
        } catch {
            throw .cache(error)
        }
        let droppedURLs = Set(findings.damaged.map(\.url))
        try await refetch(
            findings.broken.filter { !droppedURLs.contains($0.url) }, store: store, index: index, locator: locator,
            report: &report)
    }

    /// Object names in the fan-out folders, and everything there that is not a well-named file.
    private func listObjects(_ objectsDirectory: String) -> (files: [String], stray: [String]) {
        var files: [String] = []
        var stray: [String] = []
        let manager = FileManager.default
        for byte in 0..<256 {
            let prefix = Hex.encode([UInt8(byte)])
            let folder = objectsDirectory + "/" + prefix
            guard let names = try? manager.contentsOfDirectory(atPath: folder) else { continue }
            for name in names {
                var info = stat()
                // Gone since the listing (a writer replaced or evicted it): not stray.
                if lstat(folder + "/" + name, &info) != 0, errno == ENOENT { continue }
                let isFile = (info.st_mode & S_IFMT) == S_IFREG
                if isFile, Hex.isLowercaseHex(name, length: 64), name.hasPrefix(prefix) {
                    files.append(name)
                } else {
                    stray.append(prefix + "/" + name)
                }
            }
        }
        return (files, stray.sorted())
    }

    /// SHA-256 of each file, a few at a time.
    private func hashAll(_ files: [(name: String, path: String)]) async -> [(String, Result<(String, Int64), FileDigest.Unreadable>)] {
        await FileDigest.hashAll(files, width: min(fetch.jobs, ProcessInfo.processInfo.activeProcessorCount))
    }

}

/// Why `verify` did not run to its report: the cache cannot be used or is locked, the settings
/// of a kind its rows to fetch again are of cannot be read (exit 2), or the engines to fetch them
/// with cannot start.
public enum VerifyFailure: Error, Sendable, ExitClassified {
    case cache(CacheError)
    case settings(KindSettingsProblem)
    case engines(EngineStartFailure)

    public var exitClass: ExitClass {
        switch self {
        case .cache(let error): error.exitClass
        case .settings(let problem): problem.exitClass
        case .engines(let failure): failure.exitClass
        }
    }

    public var exitMessage: String {
        switch self {
        case .cache(let error): error.exitMessage
        case .settings(let problem): problem.exitMessage
        case .engines(let failure): failure.exitMessage
        }
    }
}
