import WorkerSupport

/// How fast the shared tier delivers bodies, against how fast the origin delivers what the tier
/// missed, as a plain value: a tier is there to be faster than the origin, and one that delivers
/// at under a quarter of the origin's pace (over enough bodies on both sides to tell) costs the
/// run more than it saves, so it is given up.
struct RemoteTierPace: Equatable {
    enum Side { case tier, origin }

    /// Bodies on each side before the two are compared, and the least time the tier's took.
    static let samples = 4
    static let minimumSeconds = 1.0
    /// How many times slower than the origin the tier may be.
    static let slowest = 4.0

    private(set) var tierBytes: Int64 = 0
    private(set) var tierSeconds = 0.0
    private(set) var tierBodies = 0
    private(set) var originBytes: Int64 = 0
    private(set) var originSeconds = 0.0
    private(set) var originBodies = 0

    /// Adds one body; returns why the tier should be given up, once it is clearly slower.
    mutating func add(_ side: Side, bytes: Int64, seconds: Double) -> String? {
        guard bytes > 0, seconds.isFinite, seconds > 0 else { return nil }
        switch side {
        case .tier:
            tierBytes += bytes
            tierSeconds += seconds
            tierBodies += 1
        case .origin:
            originBytes += bytes
            originSeconds += seconds
            originBodies += 1
        }
        guard tierBodies >= Self.samples, originBodies >= Self.samples, tierSeconds >= Self.minimumSeconds,
            originSeconds > 0
        else { return nil }
        let tierRate = Double(tierBytes) / tierSeconds
        let originRate = Double(originBytes) / originSeconds
        guard tierRate * Self.slowest < originRate else { return nil }
        return "it delivers \(Units.formatBytes(Int64(tierRate)))/s, the origin \(Units.formatBytes(Int64(originRate)))/s"
    }
}
