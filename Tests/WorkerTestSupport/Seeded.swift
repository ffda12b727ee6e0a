import Foundation

/// A small deterministic generator (SplitMix64), so a seed reproduces a failure.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476C_E5B9_1CE5
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The seed of a randomized test: the environment variable `name` when set (to repeat a run),
/// else `fixed` when given (a test that must be the same every run), else a new one. Tests name it
/// in their failure messages.
public enum TestSeed {
    public static func from(_ name: String, fixed: UInt64? = nil) -> UInt64 {
        if let text = ProcessInfo.processInfo.environment[name], let value = UInt64(text) { return value }
        if let fixed { return fixed }
        var system = SystemRandomNumberGenerator()
        return system.next()
    }

    /// A count from the environment variable `name`, else `fallback`.
    public static func count(_ name: String, _ fallback: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap(Int.init) ?? fallback
    }
}
