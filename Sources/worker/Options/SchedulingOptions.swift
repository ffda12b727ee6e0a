import ArgumentParser
import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerReport

/// When and how much a run does: its deadline, its lock wait, its failure budget, its shard.
struct SchedulingOptions: ParsableArguments {
    @Option(help: "Longest the whole run may take, above 0 (e.g. 90s, 10m); unfinished entries fail as cancelled.")
    var deadline: PositiveSeconds?

    @OptionGroup var lock: LockOptions

    @Option(name: .customLong("max-failures"), help: "Exit 0 while failures stay within N or N% of the entries (e.g. 10 or 2%).")
    var maxFailures = FailureBudget.none

    @Flag(
        name: .customLong("fail-on-failover"), help: "Exit 1 when mirrors served because an entry's own URL failed (said aloud either way)."
    )
    var failOnFailover = false

    @Option(help: "Handle only shard I of N, 0 ≤ I < N (default from JOB_COMPLETION_INDEX / JOB_COMPLETION_COUNT).")
    var shard: Shard?

    /// `--shard I/N`, else Kubernetes Indexed Job variables, else everything.
    func resolvedShard() throws -> Shard {
        if let shard { return shard }
        let environment = ProcessInfo.processInfo.environment
        guard let index = environment["JOB_COMPLETION_INDEX"] else { return .all }
        guard let count = environment["JOB_COMPLETION_COUNT"] else {
            throw ValidationError(
                "JOB_COMPLETION_INDEX is set: set JOB_COMPLETION_COUNT to the Job's completions too (or pass --shard I/N)")
        }
        guard let parsed = Shard("\(index)/\(count)") else {
            throw ValidationError("JOB_COMPLETION_INDEX/JOB_COMPLETION_COUNT '\(index)/\(count)' is not I/N with 0 ≤ I < N")
        }
        return parsed
    }
}
