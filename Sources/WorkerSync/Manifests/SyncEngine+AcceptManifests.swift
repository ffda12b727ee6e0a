import Crypto
import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerManifest
import WorkerReport
import WorkerStore
import WorkerSupport

/// Phase two of remote and signed manifests, after the load: `serial` and `expires` checked against
/// what the cache accepted last, and what is accepted now recorded (the row in the index, the copy
/// and its signature in `manifests/` beside it).
extension SyncEngine {
    /// Phase two, after the load: `expires` and `serial` checked (reads only). What is accepted
    /// is recorded by `record` — after the sync's plan, so that no write lands between the index
    /// read ahead and its use.
    func acceptManifests(_ set: ManifestSet, _ opened: OpenedManifests) throws(SyncFailure) -> AcceptedManifests {
        let now = Date().timeIntervalSince1970
        var diagnostics: [ManifestDiagnostic] = []
        var accepted = AcceptedManifests()
        accepted.documents = opened.fetchedURLs
        // Only remote and signed manifests have a record (local ones without keys are not read twice).
        let index = opened.manifests.contains { !$0.object.isEmpty } ? try? acceptedIndex() : nil
        for (manifest, opening) in zip(set.manifests, opened.manifests) {
            func refuse(_ position: (line: Int, column: Int), _ message: String) {
                diagnostics.append(ManifestDiagnostic(path: manifest.path, line: position.line, column: position.column, message: message))
            }
            if let expires = manifest.expires, expires <= now {
                refuse(
                    manifest.expiresPosition,
                    "expired at \(RFC3339.format(expires)): the publisher has not signed a newer one (a stale manifest is refused)")
                continue
            }
            guard !opening.object.isEmpty else { continue }
            if opening.signer != nil, let problem = Self.bindingProblem(manifest, opening) {
                refuse(manifest.namePosition ?? (0, 0), problem)
                continue
            }
            let previous = try? index?.acceptedManifest(opening.source)
            let signer = opening.signer ?? ""
            let kept = try? index?.acceptedSerial(identity: manifest.name, signer: signer)
            if let last = [previous?.serial, kept?.serial].compactMap({ $0 }).max() {
                guard let serial = manifest.serial else {
                    refuse((0, 0), "has no serial, but serial \(last) was accepted before (a rollback is refused)")
                    continue
                }
                if serial < last {
                    refuse(manifest.serialPosition, "serial \(serial) is lower than \(last), accepted before (a rollback is refused)")
                    continue
                }
                if let kept, serial == kept.serial, kept.object != opening.object {
                    refuse(
                        manifest.serialPosition,
                        "serial \(serial) was accepted before with other bytes (a changed manifest "
                            + "has a higher serial; the same serial with other bytes is refused)")
                    continue
                }
            }
            guard !opening.fromCopy else { continue }
            let same = previous?.object == opening.object
            accepted.records.append(
                (
                    opening,
                    AcceptedManifest(
                        source: opening.source, serial: manifest.serial ?? previous?.serial, object: opening.object,
                        acceptedAt: same ? previous?.acceptedAt ?? now : now, checkedAt: now), same
                ))
            if let serial = manifest.serial {
                accepted.serials.append(AcceptedSerial(identity: manifest.name, signer: signer, serial: serial, object: opening.object))
            }
        }
        guard diagnostics.isEmpty else { throw .manifest(ManifestErrors(diagnostics: diagnostics, truncated: false)) }
        return accepted
    }

    /// Why a signed manifest is not the one its name says (TUF's mix-and-match: another validly
    /// signed manifest served in its place): the file name its signature names, and its `name:`,
    /// must be the name it is read as. nil when they agree.
    static func bindingProblem(_ manifest: Manifest, _ opening: OpenedManifests.Opened) -> String? {
        if let signed = opening.signedFile, signed != opening.readAs {
            return
                "signed as '\(Sanitize.terminal(signed))' (its signature's trusted comment) but read as '\(Sanitize.terminal(opening.readAs))': "
                + "a signed manifest is bound to its name"
        }
        let stem = ManifestLoader.defaultName(opening.readAs)
        if manifest.namePosition != nil, manifest.name != stem {
            return "name '\(Sanitize.terminal(manifest.name))' is not the name it is read as ('\(Sanitize.terminal(opening.readAs))'): "
                + "a signed manifest is bound to its name"
        }
        return nil
    }

    /// Records what was accepted: the copy and its signature beside the index (unless the same
    /// copy is there), then the row, then the copies it replaces. Each copy is named by its
    /// bytes' SHA-256, so a power cut between the copy and the row leaves the copy the row names.
    /// Nothing when the cache cannot be written (a reader's `plan`); a write that fails there
    /// (the cache's disk) throws: what was accepted is not recorded, and the run says so.
    public func record(_ accepted: AcceptedManifests) throws(CacheError) {
        guard !accepted.records.isEmpty || !accepted.documents.isEmpty, let index = try? acceptedIndex() else { return }
        try index.recordDocuments(accepted.documents)
        for (opening, row, kept) in accepted.records {
            let copy = Self.acceptedCopyPath(options.cacheDirectory, source: opening.source, object: row.object)
            if !(kept && access(copy, R_OK) == 0) {
                do {
                    try keepCopy(of: opening, at: copy)
                } catch let error as CacheError {
                    throw error
                } catch {
                    throw .unusable(path: copy, reason: "\(error)")
                }
            }
            try index.recordAccepted(row)
            Self.removeCopies(options.cacheDirectory, source: opening.source, except: copy)
        }
        for serial in accepted.serials { try index.recordSerial(serial) }
    }

    /// Where the accepted copy of `source`'s manifest with these bytes (`object`, their SHA-256)
    /// is kept; its signature beside it (`.sig`).
    static func acceptedCopyPath(_ cacheDirectory: String, source: String, object: String) -> String {
        cacheDirectory + "/manifests/" + sourceName(source) + "-" + object.prefix(32) + ".yaml"
    }

    /// The accepted copy of `source` whose bytes are `object` (a copy kept by an older worker,
    /// named by its source alone, too): its path and bytes, or nil.
    static func readAcceptedCopy(_ cacheDirectory: String, source: String, object: String) -> (path: String, bytes: [UInt8])? {
        let paths = [
            acceptedCopyPath(cacheDirectory, source: source, object: object),
            cacheDirectory + "/manifests/" + sourceName(source) + ".yaml",
        ]
        for path in paths {
            if let bytes = KeptFile.read(path), Hex.encode(SHA256.hash(data: bytes)) == object { return (path, bytes) }
        }
        return nil
    }

    private static func sourceName(_ source: String) -> String {
        String(Hex.encode(SHA256.hash(data: Array(source.utf8))).prefix(32))
    }

    /// Removes the copies of `source` (and their signatures) but `kept`: those a newer acceptance replaced.
    private static func removeCopies(_ cacheDirectory: String, source: String, except kept: String) {
        let folder = cacheDirectory + "/manifests"
        let prefix = sourceName(source)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        let keptName = PathName.lastComponent(kept)
        for name in names where name.hasPrefix(prefix) && name != keptName && name != keptName + ".sig" {
            unlink(folder + "/" + name)
        }
    }

    /// The copy and its signature, under the cache's ownership rule whatever the umask: the
    /// folder the owner's alone to write (a group may read it, as it may read the cache).
    private func keepCopy(of opening: OpenedManifests.Opened, at copy: String) throws {
        guard opening.path != copy else { return }
        let folder = options.cacheDirectory + "/manifests"
        if mkdir(folder, 0o750) != 0, errno != EEXIST { throw CacheError.unusable(path: folder, reason: String(cString: strerror(errno))) }
        var info = stat()
        guard lstat(folder, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == geteuid() else {
            throw CacheError.unusable(path: folder, reason: "not a folder of this user's")
        }
        if info.st_mode & 0o7777 != 0o750 { chmod(folder, 0o750) }
        guard let bytes = KeptFile.read(opening.path) else { return }
        try AtomicFile.write(Data(bytes), to: copy, mode: 0o640)
        if let signature = opening.signature { try AtomicFile.write(Data(signature), to: copy + ".sig", mode: 0o640) }
    }
}
