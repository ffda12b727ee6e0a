#!/usr/bin/env python3
"""Power cuts under worker's writing commands (scripts/power-cut.sh CUTS SEED).

Each command runs on a cache inside lossyfs (Tests/tools/lossyfs.py); the power is cut at a
seeded change of the file system (or just after the command ended), the disk keeps only what was
synced, and the machine starts again. Then every promise of "A power cut loses nothing it said it
kept" (PRODUCT.md) is checked:

- every row of the index names an object with its bytes (`lost`: an object missing; `torn`: other
  bytes), and so does every kept manifest copy;
- every entry the command's report (written outside the disk, as a terminal would keep it) says
  is stored is stored (`lost` otherwise), and the report or metrics inside the cache's disk are
  whole or absent (`torn` otherwise);
- the published tree (`sync --tree`, `export --atomic`) is one complete version, the old or the
  new (`trees incomplete` otherwise);
- `worker verify` is clean, or `worker verify --repair` makes it clean, and the next sync
  succeeds (`needs a person` otherwise);
- the next sync fetches only what the cut took (`fetched again` counts the rest).

Its last line: `power cuts: N, lost 0, torn 0, trees incomplete 0, needs a person 0`.
"""

import argparse
import hashlib
import http.server
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

from lossyfs_mount import Mount


# -- the origin ------------------------------------------------------------------------------

class Origin:
    """Files, a remote manifest and a shared tier (HEAD/PUT under /tier/cas/), on loopback,
    counting the GETs of files."""

    def __init__(self):
        self.files = {}
        self.manifest = b""
        self.tier = {}
        self.gets = []
        origin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def send(self, code, body=b"", head=False):
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def do_HEAD(self):
                self.do_GET(head=True)

            def do_GET(self, head=False):
                if self.path == "/manifest.yaml":
                    return self.send(200, origin.manifest, head)
                if self.path.startswith("/tier/"):
                    body = origin.tier.get(self.path)
                    return self.send(404, head=head) if body is None else self.send(200, body, head)
                body = origin.files.get(self.path)
                if not head:
                    origin.gets.append(self.path)
                return self.send(404, head=head) if body is None else self.send(200, body, head)

            def do_PUT(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path.startswith("/tier/"):
                    origin.tier[self.path] = body
                    return self.send(201)
                return self.send(405)

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a client killed by a cut drops its connections

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port


def corpus(rng, count, prefix):
    """count files of 0 to 48 KiB (one of 1 MiB) under /files/PREFIX…."""
    files = {}
    for number in range(count):
        size = 1 << 20 if number == 0 else rng.randrange(0, 48 << 10)
        files["/files/%s/%02d.bin" % (prefix, number)] = rng.randbytes(size)
    return files


def manifest_text(origin, files, name):
    lines = ["version: 1", "name: " + name, "entries:"]
    for path, body in sorted(files.items()):
        lines += ["  - url: " + origin.base + path, "    hash: sha256:" + hashlib.sha256(body).hexdigest()]
    return ("\n".join(lines) + "\n").encode()


# -- the commands ----------------------------------------------------------------------------

class Lab:
    def __init__(self, worker, work, seed):
        self.worker = worker
        self.work = work
        self.rng = random.Random(seed)
        self.origin = Origin()
        # lossyfs is FUSE, which worker takes for a network file system (a rollback journal);
        # WORKER_NETWORK_FS=0 gives the index its local-disk form (WAL) instead.
        self.environment = dict(os.environ)
        one = corpus(self.rng, 16, "a")
        two = dict(list(one.items())[:10])
        two.update(corpus(self.rng, 8, "b"))
        for path in list(two)[3:6]:
            two[path] = self.rng.randbytes(len(two[path]) + 1)
        self.versions = {"v1": one, "v2": two}
        self.origin.files = {}
        for files in self.versions.values():
            self.origin.files.update(files)
        self.manifests = {}
        for version, files in self.versions.items():
            path = os.path.join(work, version + ".yaml")
            with open(path, "wb") as file:
                file.write(manifest_text(self.origin, files, "pc"))
            self.manifests[version] = path
        self.damaged = set()
        self.remote = {version: manifest_text(self.origin, files, "remote") for version, files in self.versions.items()}

    def serve(self, version):
        """The origin as it is for `version`: its files, and its remote manifest."""
        self.origin.files = dict(self.versions[version])
        self.origin.manifest = self.remote[version]

    def run(self, root, *arguments, check=True, out=None):
        command = [self.worker, arguments[0], "--cache-dir", os.path.join(root, "cache")] + list(arguments[1:])
        result = subprocess.run(command, capture_output=True, timeout=120, cwd=self.work, env=self.environment)
        if check and result.returncode not in (0,):
            raise RuntimeError("%s: exit %d\n%s" % (" ".join(command), result.returncode, result.stderr.decode()[-3000:]))
        return result

    # Each command: how its cache is before (made on a plain folder), what runs, and the sync
    # that comes after the machine starts again.
    def scenarios(self):
        v1, v2 = self.manifests["v1"], self.manifests["v2"]
        remote = self.origin.base + "/manifest.yaml"

        def synced(version, tree=False):
            def before(root):
                self.serve(version)
                self.run(root, "sync", self.manifests[version], *(["--tree", os.path.join(root, "tree")] if tree else []))
            return before

        def both(root):
            synced("v1")(root)
            synced("v2")(root)

        def damaged(root):
            synced("v2")(root)
            objects = os.path.join(root, "cache", "objects", "sha256")
            names = sorted(os.path.join(top, name) for top, _, files in os.walk(objects) for name in files)
            for path in names[:3]:
                os.chmod(path, 0o644)
                with open(path, "r+b") as file:
                    file.write(b"\xff")
            for path in names[3:5]:
                os.unlink(path)
            self.damaged.update(os.path.basename(path) for path in names[:5])

        def remote_v1(root):
            self.serve("v1")
            self.run(root, "sync", remote)

        tree = lambda root: ["--tree", os.path.join(root, "tree")]
        return {
            "sync (cold)": dict(before=None, version="v2", run=lambda root: ["sync", v2], after=lambda root: ["sync", v2]),
            "sync (changed)": dict(before=synced("v1"), version="v2", run=lambda root: ["sync", v2],
                                   after=lambda root: ["sync", v2]),
            "sync --tree": dict(before=synced("v1", tree=True), version="v2", tree=("tree", ["v1", "v2"]),
                                run=lambda root: ["sync", v2] + tree(root), after=lambda root: ["sync", v2] + tree(root)),
            "sync with a report": dict(before=synced("v1"), version="v2", inside=["report.json", "metrics.prom"],
                                       run=lambda root: ["sync", v2, "--report", os.path.join(root, "report.json"),
                                                         "--metrics", os.path.join(root, "metrics.prom")],
                                       after=lambda root: ["sync", v2]),
            "export --atomic": dict(before=synced("v2"), version="v2", tree=("export", [None, "v2"]),
                                    run=lambda root: ["export", "--layout", "tree", "--atomic", os.path.join(root, "export"), v2],
                                    after=lambda root: ["sync", v2], report=False),
            "gc": dict(before=both, version="v2", run=lambda root: ["gc", "--max-size", "600KB"],
                       after=lambda root: ["sync", v2], report=False),
            "verify --repair": dict(before=damaged, version="v2", damaged=self.damaged,
                                    run=lambda root: ["verify", "--repair", v2],
                                    after=lambda root: ["sync", v2], report=False),
            "push": dict(before=synced("v2"), version="v2",
                         run=lambda root: ["push", "--remote-cache", self.origin.base + "/tier"],
                         after=lambda root: ["sync", v2], report=False),
            "a remote manifest's acceptance": dict(before=remote_v1, version="v2", manifest="remote",
                                                   run=lambda root: ["sync", remote], after=lambda root: ["sync", remote]),
        }


# -- one cut ---------------------------------------------------------------------------------

def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def object_path(cache, name):
    return os.path.join(cache, "objects", "sha256", name[:2], name)


def index_rows(cache, scratch):
    """The index's entries and kept manifests, read from a copy (a journal left by the cut is
    rolled back there, as worker's next open would)."""
    copy = os.path.join(scratch, "index-copy")
    shutil.rmtree(copy, ignore_errors=True)
    os.mkdir(copy)
    for suffix in ("", "-journal", "-wal"):
        if os.path.exists(os.path.join(cache, "index.sqlite" + suffix)):
            shutil.copy(os.path.join(cache, "index.sqlite" + suffix), os.path.join(copy, "index.sqlite" + suffix))
    if not os.path.exists(os.path.join(copy, "index.sqlite")):
        return [], []
    database = sqlite3.connect(os.path.join(copy, "index.sqlite"))
    try:
        tables = {row[0] for row in database.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        entries = list(database.execute("SELECT url, object FROM entries")) if "entries" in tables else []
        kept = list(database.execute("SELECT source, object FROM accepted_manifests")) if "accepted_manifests" in tables else []
        return entries, kept
    finally:
        database.close()


def tree_files(top):
    files = {}
    for folder, _, names in os.walk(top):
        for name in names:
            path = os.path.join(folder, name)
            if name.startswith(".worker"):
                continue
            files[os.path.relpath(path, top)] = sha256_file(path)
    return files


class Tally:
    def __init__(self):
        self.cuts = 0
        self.lost = self.torn = self.trees = self.person = self.fetched_again = 0
        self.by_command = {}
        self.findings = []

    def add(self, command, kind, count, detail):
        if count:
            setattr(self, kind, getattr(self, kind) + count)
            self.findings.append("%s: %s %d: %s" % (command, kind, count, detail))


def cut_once(lab, name, scenario, disk, snapshot, where, tally, expected_trees, fsync_failure=None):
    """Restores the command's cache, runs it, cuts the power at `where` (a change number, or
    None: after it ends), starts again and checks. `fsync_failure`: a `fail-fsync` argument."""
    root = disk.mountpoint
    shutil.rmtree(disk.backing, ignore_errors=True)
    subprocess.run(["cp", "-a", snapshot, disk.backing], check=True)
    report = os.path.join(lab.work, "report.json")
    if os.path.exists(report):
        os.unlink(report)
    lab.serve(scenario["version"])
    disk.mount()
    base = disk.command("status")["changes"]
    if where is not None:
        disk.command("cut-at %d" % (base + where))
    if fsync_failure:
        disk.command("fail-fsync " + fsync_failure)
    arguments = scenario["run"](root)
    if scenario.get("report", True):
        arguments += ["--report", report] if "--report" not in arguments else []
    command = [lab.worker, arguments[0], "--cache-dir", os.path.join(root, "cache")] + arguments[1:]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=lab.work, env=lab.environment)
    deadline = time.monotonic() + 120
    while process.poll() is None:
        if disk.command("status")["dead"]:
            process.send_signal(signal.SIGKILL)
            break
        if time.monotonic() > deadline:
            process.send_signal(signal.SIGKILL)
            tally.add(name, "person", 1, "the command did not end in 120 s")
            break
        time.sleep(0.005)
    _, stderr = process.communicate()
    code = process.returncode
    status = disk.command("status")
    if fsync_failure and not status["failed_fsyncs"]:
        fsync_failure = None  # armed, but the run never got to an fsync
    if where is None or not status["dead"]:
        disk.command("cut")
    disk.unmount()
    disk.mount()
    try:
        check(lab, name, scenario, disk, tally, expected_trees, report, code, stderr, fsync_failure)
    finally:
        disk.unmount()
    return code


def check(lab, name, scenario, disk, tally, expected_trees, report, code, stderr, fsync_failure):
    root = disk.mountpoint
    cache = os.path.join(root, "cache")
    entries, kept = index_rows(cache, lab.work)
    intact = set()
    damaged = scenario.get("damaged", set())
    for url, object_name in entries:
        path = object_path(cache, object_name)
        if object_name in damaged:
            continue  # damaged before the command ran, for `verify --repair` to mend
        if not os.path.exists(path):
            tally.add(name, "lost", 1, "a row names a missing object: " + url)
        elif sha256_file(path) != object_name:
            tally.add(name, "torn", 1, "a row's object has other bytes: " + url)
        else:
            intact.add((url, object_name))
    for source, object_name in kept:
        # The copy a row names, beside the index (named by the source and the bytes' SHA-256).
        path = os.path.join(cache, "manifests", "%s-%s.yaml" % (hashlib.sha256(source.encode()).hexdigest()[:32], object_name[:32]))
        if not os.path.exists(path) or sha256_file(path) != object_name:
            tally.add(name, "torn", 1, "the kept copy of %s is not the one its row names" % source)
    # What the command said it stored.
    if os.path.exists(report):
        with open(report) as file:
            text = file.read()
        try:
            said = json.loads(text)
        except ValueError:
            said = None  # the run was killed while its report was being written (outside the disk)
        for entry in (said or {}).get("entries", []):
            stored = (entry["url"], entry.get("hash", "").removeprefix("sha256:"))
            if entry.get("status") in ("added", "updated", "reused", "unchanged") and stored not in intact:
                tally.add(name, "lost", 1, "reported %s, not stored: %s" % (entry["status"], entry["url"]))
    for inside in scenario.get("inside", []):
        path = os.path.join(root, inside)
        if os.path.exists(path):
            with open(path, "rb") as file:
                body = file.read()
            whole = valid_json(body) if inside.endswith(".json") else body.endswith(b"\n")
            if not whole:
                tally.add(name, "torn", 1, "%s is not whole (%d bytes)" % (inside, len(body)))
    if fsync_failure and code >= 0 and code != 4:
        # Ended by itself after an fsync failed: exit 4 (the cache's disk failed), never success.
        tally.add(name, "person", 1, "an fsync failed and the command exited %d: %s" % (code, stderr.decode()[-300:]))
    # The tree: one complete version.
    if "tree" in scenario:
        folder, versions = scenario["tree"]
        top = os.path.join(root, folder)
        if os.path.lexists(top):
            files = tree_files(top) if os.path.exists(top) else None
            if files not in [expected_trees.get(version) for version in versions if version]:
                tally.add(name, "trees", 1, "%s holds %s files, not a complete version" % (folder, "no" if files is None else len(files)))
        elif None not in versions:
            tally.add(name, "trees", 1, folder + " is gone")
    # Nothing needs a person: verify is clean or repairs; the next sync succeeds and fetches only
    # what the cut took.
    manifest = lab.manifests[scenario["version"]] if scenario.get("manifest") != "remote" else None
    verify = lab.run(root, "verify", check=False)
    if verify.returncode != 0 and os.path.exists(os.path.join(cache, "index.sqlite")):
        repair = lab.run(root, "verify", "--repair", *( [manifest] if manifest else []), check=False)
        again = lab.run(root, "verify", check=False)
        if again.returncode != 0:
            tally.add(name, "person", 1, "verify --repair exit %d, verify then exit %d: %s" % (
                repair.returncode, again.returncode, again.stdout.decode()[-300:] + again.stderr.decode()[-300:]))
        entries, _ = index_rows(cache, lab.work)
        intact &= set(entries)
    lab.serve(scenario["version"])
    wanted = {(lab.origin.base + path, hashlib.sha256(body).hexdigest()) for path, body in lab.versions[scenario["version"]].items()}
    before = len(lab.origin.gets)
    arguments = scenario["after"](root)
    after = lab.run(root, *arguments, check=False)
    if after.returncode != 0:
        tally.add(name, "person", 1, "the next sync exit %d: %s" % (after.returncode, after.stderr.decode()[-400:]))
    fetched = {lab.origin.base + path for path in lab.origin.gets[before:]}
    again = fetched & {url for url, _ in intact & wanted}
    tally.add(name, "fetched_again", len(again), "fetched again though stored: %s" % sorted(again)[:3])
    if "tree" in scenario and scenario["tree"][0] == "tree":
        top = os.path.join(root, "tree")
        if tree_files(top) != expected_trees["v2"]:
            tally.add(name, "trees", 1, "the next sync's tree is not v2")


def valid_json(body):
    try:
        json.loads(body)
        return True
    except ValueError:
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cuts", type=int)
    parser.add_argument("seed", type=int)
    parser.add_argument("--worker", required=True)
    parser.add_argument("--only", help="one command's name")
    parser.add_argument("--journal", choices=["wal", "rollback", "both"], default="both",
                        help="the index's journal: WAL (as on a local disk), rollback (as on a network file system), "
                             "or each cut the other (the default)")
    parser.add_argument("--at-end", action="store_true", help="every cut just after the command ends")
    parser.add_argument("--every", type=int, metavar="K",
                        help="cut at every Kth change of the run (K, 2K, …; CUTS of them at most), not at seeded ones")
    parser.add_argument("--keep-folders", type=float, help="lossyfs's --keep-folders for every cut (default: seeded)")
    parser.add_argument("--tear", type=float, help="lossyfs's --tear for every cut (default: seeded)")
    parser.add_argument("--fsync-failures", type=int, default=None,
                        help="of the cuts, how many run with one fsync failing (default: a tenth)")
    arguments = parser.parse_args()
    top = tempfile.mkdtemp(prefix="power-cut-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    lab = Lab(os.path.abspath(arguments.worker), top, arguments.seed)
    journals = {"wal": ["0"], "rollback": ["1"], "both": ["0", "1"]}[arguments.journal]
    lab.environment["WORKER_NETWORK_FS"] = journals[0]
    scenarios = lab.scenarios()
    if arguments.only:
        scenarios = {arguments.only: scenarios[arguments.only]}
    rng = random.Random(arguments.seed)
    tally = Tally()
    snapshots, sizes, trees = {}, {}, {}
    # The versions' trees, as a sync publishes them.
    for version in ("v1", "v2"):
        plain = os.path.join(top, "tree-" + version)
        os.makedirs(plain)
        lab.serve(version)
        lab.run(plain, "sync", lab.manifests[version], "--tree", os.path.join(plain, "tree"))
        trees[version] = tree_files(os.path.join(plain, "tree"))

    def prepared(name, journal):
        """The command's cache as it is before it runs, made on the disk with this journal (a
        clean unmount keeps everything) and kept as a copy of the backing folder; and how many
        changes the command makes when nothing cuts it."""
        key = (name, journal)
        if key in snapshots:
            return snapshots[key]
        scenario = scenarios[name]
        lab.environment["WORKER_NETWORK_FS"] = journal
        index = len(snapshots)
        disk = Mount(os.path.join(top, "disk-%d" % index), os.path.join(top, "mnt-%d" % index), seed=rng.randrange(1 << 30))
        snapshot = os.path.join(top, "snapshot-%d" % index)
        os.makedirs(disk.backing)
        disk.mount()
        if scenario["before"]:
            scenario["before"](disk.mountpoint)
        disk.unmount()
        subprocess.run(["cp", "-a", disk.backing, snapshot], check=True)
        lab.serve(scenario["version"])
        disk.mount()
        start = disk.command("status")["changes"]
        lab.run(disk.mountpoint, *scenario["run"](disk.mountpoint))
        sizes[key] = disk.command("status")["changes"] - start
        disk.unmount()
        snapshots[key] = (disk, snapshot)
        return snapshots[key]

    names = list(scenarios)
    failures = arguments.fsync_failures if arguments.fsync_failures is not None else arguments.cuts // 10
    print("cuts asked: %d over %d commands, seed %d, %d with an fsync failing, journals %s" % (
        arguments.cuts, len(names), arguments.seed, failures, arguments.journal), flush=True)
    for number in range(arguments.cuts):
        name = names[number % len(names)]
        journal = journals[(number // len(names)) % len(journals)]
        disk, snapshot = prepared(name, journal)
        lab.environment["WORKER_NETWORK_FS"] = journal
        size = sizes[(name, journal)]
        # The cuts with an fsync failing, spread evenly over the commands.
        failing = number * failures // arguments.cuts != (number + 1) * failures // arguments.cuts
        # A seeded change of the run, or (one in eight) just after it ended.
        where = None if arguments.at_end or rng.random() < 0.125 else rng.randint(1, max(1, size))
        if arguments.every:
            where = arguments.every * (number // len(names) + 1)
            if where > size:
                break
        fsync_failure = ("once" if rng.random() < 0.5 else "always") if failing else None
        tear, keep = rng.choice([0, 0, 0.5, 1]), rng.choice([0, 0, 0.5])
        disk.options = ["--seed", str(rng.randrange(1 << 30)),
                        "--tear", str(tear if arguments.tear is None else arguments.tear),
                        "--keep-folders", str(keep if arguments.keep_folders is None else arguments.keep_folders)]
        before = len(tally.findings)
        cut_once(lab, name, scenarios[name], disk, snapshot, where, tally, trees, fsync_failure)
        tally.cuts += 1
        counts = tally.by_command.setdefault(name, [0, 0])
        counts[0] += 1
        counts[1] += len(tally.findings) > before
        if (number + 1) % 100 == 0:
            print("%d cuts, lost %d, torn %d, trees incomplete %d, needs a person %d" % (
                tally.cuts, tally.lost, tally.torn, tally.trees, tally.person), flush=True)
        for finding in tally.findings[before:]:
            print("cut %d (%s, at %s%s, %s): %s" % (
                number + 1, name, "the end" if where is None else "change %d of %d" % (where, size),
                ", fsync failing " + fsync_failure if fsync_failure else "",
                "WAL" if lab.environment["WORKER_NETWORK_FS"] == "0" else "rollback journal", finding), flush=True)
    for name, (count, bad) in tally.by_command.items():
        changes = "/".join(str(sizes[key]) for key in sorted(sizes) if key[0] == name)
        print("%s: %d cuts (of a run's %s changes), %d with a finding" % (name, count, changes, bad))
    shutil.rmtree(top, ignore_errors=True)
    print("power cuts: %d, lost %d, torn %d, trees incomplete %d, needs a person %d (fetched again: %d)" % (
        tally.cuts, tally.lost, tally.torn, tally.trees, tally.person, tally.fetched_again))
    sys.exit(0 if not (tally.lost or tally.torn or tally.trees or tally.person) else 1)


if __name__ == "__main__":
    main()
