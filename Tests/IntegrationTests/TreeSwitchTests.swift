import Foundation
import Glibc
import Testing
import WorkerTestSupport

/// When a tree is switched (issue 60): only complete trees with `--tree-complete`, a partial
/// first publish said in the summary, and the README's recipe for moving a live folder to a tree
/// with no request answered 404 on the way.
@Suite(.hangLimit) struct TreeSwitchTests {
    private func read(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    @Test func onlyACompleteTreeIsSwitchedWhenAskedAndAPartialOneIsSaid() async throws {
        let directory = TemporaryDirectory()
        directory.write("site/a.txt", "a\n")
        let manifest = directory.write("site/m.yaml", "version: 1\nentries:\n  - url: a.txt\n  - url: b.txt\n")
        let tree = directory.path + "/tree"
        let held = try await WorkerBinary.run(["sync", manifest, "--cache-dir", directory.path + "/c", "--tree", tree, "--tree-complete"])
        #expect(held.code == 1, "b.txt is missing: \(held.code) \(held.stderr)")
        #expect(
            held.stdout.contains("not switched: 1 of 2 entries are not in the cache (--tree-complete); nothing is published yet"),
            "\(held.stdout)")
        var info = stat()
        #expect(lstat(tree, &info) != 0, "no partial tree was published")

        let partial = try await WorkerBinary.run(["sync", manifest, "--cache-dir", directory.path + "/c", "--tree", tree])
        #expect(partial.code == 1)
        #expect(partial.stdout.contains("a partial tree: 1 entries missing"), "\(partial.stdout)")
        #expect(read(tree + "/a.txt") == "a\n")

        // Complete now: switched.
        directory.write("site/b.txt", "b\n")
        let complete = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", directory.path + "/c", "--tree", tree, "--tree-complete",
        ])
        #expect(complete.code == 0, "\(complete.stderr)")
        #expect(read(tree + "/b.txt") == "b\n")
        #expect(try await WorkerBinary.run(["sync", manifest, "--tree-complete"]).code == 2, "--tree-complete needs --tree")
    }

    /// README, "Move a live folder to a tree": nginx serves a real folder; the tree is published
    /// beside it, nginx's root is pointed at the link and reloaded; a client polling all along sees
    /// only 200s.
    @Test func aLiveFolderMovesToATreeWithoutA404() async throws {
        let directory = TemporaryDirectory()
        var manifest = "version: 1\nentries:\n"
        for number in 0..<20 {
            directory.write("source/f\(number).txt", "file \(number)\n")
            manifest += "  - url: f\(number).txt\n"
        }
        let manifestPath = directory.write("source/avatars.yaml", manifest)
        let www = directory.path + "/www"
        for number in 0..<20 { directory.write("www/avatars/f\(number).txt", "file \(number)\n") }
        let nginx = try NginxServer(server: { port, _ in "listen 127.0.0.1:\(port);\nroot \(www)/avatars;" })
        defer { nginx.stop() }
        let statuses = directory.path + "/statuses"
        // The recipe's commands as the README gives them, with this test's paths and nginx.
        let script = """
            set -e
            # The poller stops however the script ends, and holds none of the script's outputs.
            trap "touch '\(directory.path)/stop'" EXIT
            ( while [ ! -e '\(directory.path)/stop' ]; do
                for n in 0 7 19; do curl -s -m 5 -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:\(nginx.port)/f$n.txt; done
              done > '\(statuses)' 2>/dev/null < /dev/null ) &
            poller=$!
            sleep 0.5
            '\(WorkerBinary.path)' sync '\(manifestPath)' --cache-dir '\(directory.path)/cache' --tree '\(www)/avatars-tree' --tree-complete -q
            sed -i 's#root \(www)/avatars;#root \(www)/avatars-tree;#' '\(nginx.directory.path)/nginx.conf'
            kill -HUP "$(cat '\(nginx.directory.path)/nginx.pid')"
            sleep 1
            rm -rf '\(www)/avatars'
            sleep 0.5
            touch '\(directory.path)/stop'
            wait "$poller"
            """
        let run = try await WorkerBinary.run(["-c", script], executable: "/bin/bash", seconds: 120)
        #expect(run.code == 0, "\(run.stdout) \(run.stderr)")
        let codes = (read(statuses) ?? "").split(separator: "\n")
        #expect(codes.count > 20, "the client polled throughout: \(codes.count)")
        #expect(codes.allSatisfy { $0 == "200" }, "\(Dictionary(grouping: codes, by: { $0 }).mapValues(\.count))")
        let served = try await WorkerBinary.run(["-s", "http://127.0.0.1:\(nginx.port)/f7.txt"], executable: "/usr/bin/curl")
        #expect(served.stdout == "file 7\n")
        #expect(
            (try? FileManager.default.destinationOfSymbolicLink(atPath: www + "/avatars-tree"))?.hasPrefix(".avatars-tree.worker/") == true)
    }
}
