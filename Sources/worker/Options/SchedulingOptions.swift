import ArgumentParser
import FoundationEssentials
import Glibc
import ManifestSync

/// When and how much a run does: its deadline, its lock wait, its failure budget, its shard.
struct SchedulingOptions: ParsableArguments {
    @Option(help: "Longest the whole run may take (e.g. 10m); unfinished entries fail as cancelled.")
    var deadline: String?

    @OptionGroup var lock: LockOptions

    @Option(name: .customLong("max-failures"), help: "Exit 0 while failures stay within N or N% of the entries.")
    var maxFailures = "0"

    @Option(help: "Handle only shard I of N (0-based; default from JOB_COMPLETION_INDEX / JOB_COMPLETION_COUNT).")
    var shard: String?

    func validate() throws {
        _ = try deadlineSeconds()
        _ = try failureBudget()
        _ = try resolvedShard()
    }

    func deadlineSeconds() throws -> Double? {
        try deadline.map { try positiveDuration($0, "--deadline") }
    }

    /// `--max-failures`: a count, or a share of the entries (`5%`).
    func failureBudget() throws -> FailureBudget {
        guard let budget = FailureBudget(maxFailures) else {
            throw ValidationError("--max-failures: '\(maxFailures)' is not a count or a percentage (e.g. 10 or 2%)")
        }
        return budget
    }

    /// `--shard I/N`, else Kubernetes Indexed Job variables, else everything.
    func resolvedShard() throws -> Shard {
        if let shard {
            guard let parsed = Shard(shard) else { throw ValidationError("--shard: '\(shard)' is not I/N with 0 ≤ I < N") }
            return parsed
        }
        let environment = ProcessInfo.processInfo.environment
        guard let index = environment["JOB_COMPLETION_INDEX"] else { return .all }
        guard let count = environment["JOB_COMPLETION_COUNT"] else {
            throw ValidationError("JOB_COMPLETION_INDEX is set: set JOB_COMPLETION_COUNT to the Job's completions too (or pass --shard I/N)")
        }
        guard let parsed = Shard("\(index)/\(count)") else {
            throw ValidationError("JOB_COMPLETION_INDEX/JOB_COMPLETION_COUNT '\(index)/\(count)' is not I/N with 0 ≤ I < N")
        }
        return parsed
    }
}
