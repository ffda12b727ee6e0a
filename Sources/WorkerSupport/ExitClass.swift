/// How a run that did not succeed ends, in the classes the exit codes name (docs/EXIT-CODES.md).
/// Each layer's errors declare theirs (`ExitClassified`); the command line maps a class to its code
/// in one place.
public enum ExitClass: Int32, Sendable {
    /// Some entries, URLs or objects failed (exit 1).
    case failures = 1
    /// Input or settings that cannot be used: a manifest, an option, a refused rule (exit 2).
    case usage = 2
    /// Another run holds the cache, or a remote manifest cannot be had (exit 3).
    case busy = 3
    /// The cache or an output cannot be read or written (exit 4).
    case unusable = 4
}

/// An error that says which way the run ends, and the words stderr gets.
public protocol ExitClassified: Error {
    var exitClass: ExitClass { get }
    /// What stderr says (with `worker: ` where the error names no command line of its own).
    var exitMessage: String { get }
}
