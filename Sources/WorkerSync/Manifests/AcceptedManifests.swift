import WorkerStore

/// What phase two accepted, to record once the run is past its plan.
public struct AcceptedManifests: Sendable {
    /// Each manifest, its row, and whether the same bytes were accepted before (their copy is kept).
    var records: [(OpenedManifests.Opened, AcceptedManifest, copyKept: Bool)] = []
    /// The serials accepted, per name and signing key.
    var serials: [AcceptedSerial] = []
    /// The URLs fetched for the manifests (manifests and signatures): documents, not entries.
    var documents: [String] = []
}
