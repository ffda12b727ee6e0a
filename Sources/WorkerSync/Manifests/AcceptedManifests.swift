import WorkerStore

/// What phase two accepted, to record once the run is past its plan.
public struct AcceptedManifests: Sendable {
    /// Each manifest, its row, and whether the same bytes were accepted before (their copy is kept).
    var records: [(OpenedManifests.Opened, AcceptedManifest, copyKept: Bool)] = []
}
