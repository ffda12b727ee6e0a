import Crypto
import Foundation
import Glibc
import Testing
import WorkerTestSupport

/// A seeded random mix of processes on one cache: syncs of overlapping manifests (some pruning),
/// `get`, `gc`, `rm`, `clear` and `verify --repair`, up to three at once, and `kill -9` at random
/// moments. Whatever the mix, no process may end by a signal it was not sent or with exit 4, and
/// afterwards (once `gc` has swept what kills left unindexed) every object hashes to its name,
/// every row has its object, no object is unindexed and `verify` exits 0.
///
/// `WORKER_CHAOS_OPERATIONS` (default 40) and `WORKER_CHAOS_SEED` (a new one each run unless set;
/// a failure names it) choose how many and which; `scripts/chaos.sh N SEED` runs long ones.
@Suite(.hangLimit) struct ChaosTests {
    static let operations = TestSeed.count("WORKER_CHAOS_OPERATIONS", 40)
    static let seed = TestSeed.from("WORKER_CHAOS_SEED")

    private struct Running {
        let process: ChildProcess
        let kind: String
        let log: String
        var killed = false
    }

    struct Tally: CustomStringConvertible {
        var started: [String: Int] = [:]
        var kills = 0
        var codes: [String: Int] = [:]
        var description: String {
            "operations \(started.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")); "
                + "kill -9 \(kills); exits \(codes.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))"
        }
    }

    @Test func aRandomMixOfProcessesAndKillsLeavesTheCacheConsistent() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let context = "seed \(Self.seed) (WORKER_CHAOS_SEED), \(Self.operations) operations"
        var random = SplitMix64(seed: Self.seed)
        // Four manifests over 200 keys, overlapping by half; some answers slow, so kills land mid-run.
        var manifests: [String] = []
        var urls: [(url: String, hash: String)] = []
        for number in 0..<4 {
            let keys = (number * 50..<number * 50 + 100).map { "c\($0 % 200)" }
            let entries = keys.map { key in
                (key.hasSuffix("7") ? "/slow/200/gen/" + key : "/gen/" + key, Optional(TestOrigin.generated(key)))
            }
            manifests.append(harness.manifest(entries, name: "m\(number).yaml"))
        }
        for key in (0..<200).map({ "c\($0)" }) { urls.append((harness.origin.url("/gen/" + key), sha256(TestOrigin.generated(key)))) }
        let cache = ["--cache-dir", harness.cache]
        var running: [Running] = []
        var tally = Tally()
        var unexpected: [String] = []

        func reap() async {
            var left: [Running] = []
            for item in running {
                guard !item.process.isRunning else {
                    left.append(item)
                    continue
                }
                await item.process.exited()
                let signalled = item.process.terminationReason == .uncaughtSignal
                let code = signalled ? "signal \(item.process.terminationStatus)" : "\(item.process.terminationStatus)"
                tally.codes["\(item.kind) \(code)", default: 0] += 1
                let allowed: Set<String> = item.killed ? ["signal 9", "0", "1", "3"] : ["0", "1", "3"]
                let log = (try? String(contentsOfFile: item.log, encoding: .utf8)) ?? ""
                // A command that never creates a cache, before the first sync made one: exit 4, said.
                let noCacheYet = code == "4" && log.contains("no cache at")
                if !allowed.contains(code), !noCacheYet {
                    unexpected.append("\(item.kind) ended with \(code): \(log.suffix(800))")
                }
            }
            running = left
        }

        for step in 0..<Self.operations {
            await reap()
            while running.count >= 3 {
                try await Task.sleep(nanoseconds: 20_000_000)
                await reap()
            }
            let log = harness.directory.path + "/op-\(step).log"
            let pick = Int.random(in: 0..<100, using: &random)
            let arguments: [String]
            let kind: String
            switch pick {
            case 0..<45:
                let manifest = manifests[Int.random(in: 0..<4, using: &random)]
                let prune = Bool.random(using: &random)
                arguments = ["sync", manifest, "-q", "--wait-lock", "30", "-j", "4"] + (prune ? ["--prune", "--force"] : [])
                kind = prune ? "sync --prune" : "sync"
            case 45..<60:
                let entry = urls[Int.random(in: 0..<urls.count, using: &random)]
                arguments = ["get", entry.url, "--hash", "sha256:" + entry.hash, "--wait-lock", "30"]
                kind = "get"
            case 60..<72:
                arguments = ["gc", "--max-size", "\(Int.random(in: 50...400, using: &random))KB", "--wait-lock", "30"]
                kind = "gc"
            case 72..<84:
                let entry = urls[Int.random(in: 0..<urls.count, using: &random)]
                arguments = ["rm", entry.url, "--wait-lock", "30"]
                kind = "rm"
            case 84..<90:
                arguments = ["clear", "--wait-lock", "30"]
                kind = "clear"
            default:
                arguments = ["verify", "--repair", "--wait-lock", "30", "-q"]
                kind = "verify --repair"
            }
            tally.started[kind, default: 0] += 1
            running.append(Running(process: try WorkerBinary.spawn(arguments + cache, log: log), kind: kind, log: log))
            // Now and then a kill -9 of one that runs, after a random moment.
            if Int.random(in: 0..<3, using: &random) == 0 {
                try await Task.sleep(nanoseconds: UInt64.random(in: 0...300_000_000, using: &random))
                let victim = Int.random(in: 0..<running.count, using: &random)
                if running[victim].process.isRunning {
                    kill(running[victim].process.processIdentifier, SIGKILL)
                    running[victim].killed = true
                    tally.kills += 1
                }
            } else {
                try await Task.sleep(nanoseconds: UInt64.random(in: 0...100_000_000, using: &random))
            }
        }
        while !running.isEmpty {
            try await Task.sleep(nanoseconds: 20_000_000)
            await reap()
        }
        print("chaos (\(context)): \(tally)")
        #expect(unexpected.isEmpty, "\(context): \(unexpected.prefix(3))")

        // What kills left is cleared by the next runs: a sync alone removes what dead runs left in
        // tmp/, a gc sweeps objects no row names. Then the cache is whole.
        let final = try await WorkerBinary.run(["sync", manifests[0], "-q"] + cache)
        #expect(final.code == 0, "\(context): \(final.stderr)")
        #expect(harness.temporaryFiles().isEmpty, "\(context): \(harness.temporaryFiles())")
        let gc = try await WorkerBinary.run(["gc"] + cache)
        #expect(gc.code == 0, "\(context): \(gc.stderr)")
        let report = harness.directory.path + "/verify.json"
        let verify = try await WorkerBinary.run(["verify", "--report", report] + cache)
        #expect(verify.code == 0, "\(context): \(verify.stdout) \(verify.stderr)")
        let found = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        #expect((found["unreferenced_objects"] as? [String])?.isEmpty == true, "\(context): \(found)")
        // And by hand: every object hashes to its name, every row names an object that is there.
        let objects = harness.objects()
        for name in objects {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: harness.objectPath(name)))
            #expect(sha256(Array(bytes)) == name, "\(context): \(name) does not hash to its name")
        }
        let records = try harness.records()
        #expect(Set(records.map(\.object)).isSubset(of: Set(objects)), "\(context): a row without its object")
        #expect(Set(objects) == Set(records.map(\.object)), "\(context): an object no row names")
    }
}
