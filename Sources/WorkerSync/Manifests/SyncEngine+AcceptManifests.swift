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
    public func acceptManifests(_ set: ManifestSet, _ opened: OpenedManifests) throws(SyncFailure) -> AcceptedManifests {
        let now = Date().timeIntervalSince1970
        var diagnostics: [ManifestDiagnostic] = []
        var accepted = AcceptedManifests()
        // Only remote and signed manifests have a record (local ones without keys are not read twice).
        let index = opened.manifests.contains { !$0.object.isEmpty } ? try? acceptedIndex() : nil
        for (manifest, opening) in zip(set.manifests, opened.manifests) {
            if let expires = manifest.expires, expires <= now {
                diagnostics.append(ManifestDiagnostic(path: manifest.path, line: manifest.expiresPosition.line,
                                                      column: manifest.expiresPosition.column, message: "expired at \(RFC3339.format(expires)): the publisher has not signed a newer one (a stale manifest is refused)"))
                continue
            }
            guard !opening.object.isEmpty else { continue }
            let previous = try? index?.acceptedManifest(opening.source)
            if let last = previous?.serial {
                guard let serial = manifest.serial else {
                    diagnostics.append(ManifestDiagnostic(path: manifest.path, line: 0, column: 0,
                                                          message: "has no serial, but serial \(last) was accepted before (a rollback is refused)"))
                    continue
                }
                if serial < last {
                    diagnostics.append(ManifestDiagnostic(path: manifest.path, line: manifest.serialPosition.line,
                                                          column: manifest.serialPosition.column, message: "serial \(serial) is lower than \(last), accepted before (a rollback is refused)"))
                    continue
                }
            }
            guard !opening.fromCopy else { continue }
            let same = previous?.object == opening.object
            accepted.records.append((opening, AcceptedManifest(
                source: opening.source, serial: manifest.serial ?? previous?.serial, object: opening.object,
                acceptedAt: same ? previous?.acceptedAt ?? now : now, checkedAt: now), same))
        }
        guard diagnostics.isEmpty else { throw .manifest(ManifestErrors(diagnostics: diagnostics, truncated: false)) }
        return accepted
    }

    /// Records what was accepted: the copy and its signature beside the index (unless the same
    /// copy is there), and the row. Nothing when the cache cannot be written (a reader's `plan`).
    public func record(_ accepted: AcceptedManifests) {
        guard !accepted.records.isEmpty, let index = try? acceptedIndex() else { return }
        for (opening, row, kept) in accepted.records {
            let copy = Self.acceptedCopyPath(options.cacheDirectory, source: opening.source)
            if !(kept && access(copy, R_OK) == 0) {
                guard (try? keepCopy(of: opening, at: copy)) != nil else { continue }
            }
            try? index.recordAccepted(row)
        }
    }

    /// The accepted copy of `source`'s manifest (its signature beside it, `.sig`).
    static func acceptedCopyPath(_ cacheDirectory: String, source: String) -> String {
        cacheDirectory + "/manifests/" + Hex.encode(SHA256.hash(data: Array(source.utf8))).prefix(32) + ".yaml"
    }

    private func keepCopy(of opening: OpenedManifests.Opened, at copy: String) throws {
        guard opening.path != copy else { return }
        try FileManager.default.createDirectory(atPath: options.cacheDirectory + "/manifests", withIntermediateDirectories: true)
        if let bytes = FileManager.default.contents(atPath: opening.path) { try AtomicFile.write(bytes, to: copy) }
        if let signature = opening.signature { try AtomicFile.write(Data(signature), to: copy + ".sig") }
    }
}

