#!/usr/bin/env python3
"""Origins like the real network, on loopback: HTTPS with HTTP/1.1 and HTTP/2 (a test CA passed
with --ca-cert / --cacert), +20 ms and +100 ms per response (nginx's Lua module: ngx.sleep), a plain
origin for a 300-file sync, and python's http.server (HTTP/1.0, accept backlog 5).

`worker sync` runs beside curl (at its defaults and at --parallel-max 16) and aria2c, in alternating
rounds, each run in a fresh directory; every timed figure is hyperfine's, CPU is the client's
user+sys. See Benchmarks/README.md ("Network profiles")."""
import argparse
import datetime
import hashlib
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import nginx_conf  # noqa: E402  (the configuration both suites' origins share)

# name, port, nginx listen flags, seconds of added latency (None: python's http.server)
ORIGINS = {
    "h2": (18443, "ssl http2", 0),
    "h1tls": (18444, "ssl", 0),
    "h2-20ms": (18445, "ssl http2", 0.02),
    "h1-20ms": (18446, "", 0.02),
    "h2-100ms": (18447, "ssl http2", 0.1),
    "plain": (18448, "", 0),
    "backlog5": (18449, None, 0),
    # nginx's limit_rate: each connection gets 2 MB/s (a slow server, or a far one)
    "slow2m": (18450, "", 0),
}
# nginx directives a server's location adds
LOCATION = {"slow2m": "limit_rate 2m;"}

# bench profile: origin, files, which peers (curl variants are curl arguments)
PROFILES = [
    ("https-h2-10k", "h2", 10_000, {"curl16": "--parallel-max 16 --http2"}),
    ("https-h1-10k", "h1tls", 10_000, {"curl16": "--parallel-max 16 --http1.1"}),
    ("https-h2-20ms-2k", "h2-20ms", 2_000, {"curl": "--http2", "curl16": "--parallel-max 16 --http2"}),
    ("http-h1-20ms-2k", "h1-20ms", 2_000, {"curl": "", "curl16": "--parallel-max 16"}),
    ("https-h2-100ms-500", "h2-100ms", 500, {"curl": "--http2", "curl16": "--parallel-max 16 --http2"}),
    ("http-10k", "plain", 10_000, {"curl16": "--parallel-max 16"}),
    ("http-300", "plain", 300, {"curl16": "--parallel-max 16"}),
    ("backlog5-300", "backlog5", 300, {"curl": "", "curl16": "--parallel-max 16"}),
    # 100,000 distinct avatars (the 10k corpus and 90k more, 1.3 GB): only with --only, it needs
    # ~3 GB of tmpfs per run and a minute a round.
    ("http-100k", "plain", 100_000, {"curl16": "--parallel-max 16"}),
    # Large files (generated under www/large/): a few from a server giving each connection
    # 2 MB/s, and one of 1 GiB from loopback without a limit. Only with --only.
    ("slow2m-3x10m", "slow2m", "3x10m", {"curl": "--parallel-immediate"}),
    ("slow2m-10x10m", "slow2m", "10x10m", {"curl": "--parallel-immediate"}),
    ("http-1g", "plain", "1x1g", {"curl": ""}),
]
OPT_IN = {"http-100k", "slow2m-3x10m", "slow2m-10x10m", "http-1g"}

# profile, peer, target ratio (worker ÷ peer), and of what: wall time or CPU (user+sys)
TARGETS = [
    ("https-h2-10k", "curl16", 1.0, "wall"),
    ("https-h1-10k", "curl16", 1.0, "wall"),
    ("https-h2-20ms-2k", "curl", 0.5, "wall"),
    ("http-h1-20ms-2k", "curl", 1.0, "wall"),
    ("http-300", "curl16", 1.2, "wall"),
    ("backlog5-300", "curl16", 1.5, "wall"),
    ("http-10k", "curl16", 1.3, "CPU"),
    ("http-100k", "curl16", 1.3, "CPU"),
    ("slow2m-3x10m", "fastest", 1.05, "wall"),
    ("slow2m-10x10m", "fastest", 1.05, "wall"),
    ("http-1g", "curl", 1.1, "wall"),
]


def sh(command: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, shell=True, check=True, **kwargs)


def small_set(root: str) -> list:
    """(relative path, sha256) of the 10k avatars, from the corpus manifest."""
    entries, url = [], None
    for line in open(os.path.join(root, "sets", "small.yaml")):
        line = line.strip()
        if line.startswith("- url: "):
            url = line[len("- url: "):]
        elif line.startswith("hash: sha256:") and url:
            entries.append((url.split("/", 3)[3], line[len("hash: sha256:"):]))
    return entries


def many_set(root: str, count: int) -> list:
    """(relative path, sha256) of `count` distinct avatars: the 10k corpus, then more of the same
    kind under u-more/ (written once, by corpus.py's recipe)."""
    import corpus
    entries = small_set(root)
    www = os.path.join(root, "www")
    for index in range(len(entries) + 1, count + 1):
        # Beside u/, not in it: bench.py copies u/ (the 10k set) with cp -r.
        relative = f"u-more/{index:06d}/avatar.png"
        data = corpus.content("small", index, corpus.small_size(index))
        path = os.path.join(www, relative)
        if not os.path.exists(path) or os.path.getsize(path) != len(data):
            corpus.write(path, data)
        entries.append((relative, hashlib.sha256(data).hexdigest()))
    return entries[:count]


def large_set(root: str, spec: str) -> list:
    """(relative path, sha256) of `spec` = COUNTxSIZE large files (`3x10m`, `1x1g`), made once
    under www/large/ from a seeded generator."""
    count, size = spec.split("x")
    size_bytes = int(size[:-1]) * {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[size[-1]]
    out = []
    for index in range(int(count)):
        relative = f"large/{size}-{index}.bin"
        path = os.path.join(root, "www", relative)
        marker = path + ".sha256"
        if not (os.path.exists(path) and os.path.exists(marker) and os.path.getsize(path) == size_bytes):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            digest = hashlib.sha256()
            block = hashlib.sha256(f"{spec}-{index}".encode()).digest() * 32768  # 1 MiB
            with open(path, "wb") as out_file:
                written = 0
                while written < size_bytes:
                    # Each MiB differs (its first bytes count it), so nothing compresses or dedups.
                    chunk = (written.to_bytes(8, "little") + block[8:])[: size_bytes - written]
                    out_file.write(chunk)
                    digest.update(chunk)
                    written += len(chunk)
            open(marker, "w").write(digest.hexdigest())
        out.append((relative, open(marker).read().strip()))
    return out


def make_tls(directory: str) -> dict:
    """A test CA and a certificate for 127.0.0.1 signed by it."""
    os.makedirs(directory, exist_ok=True)
    files = {name: os.path.join(directory, name) for name in ("ca.pem", "ca.key", "server.pem", "server.key")}
    if all(os.path.exists(path) for path in files.values()):
        return files
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    sh(f"openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj '/CN=worker bench CA' "
       f"-keyout {files['ca.key']} -out {files['ca.pem']}", **quiet)
    extensions = os.path.join(directory, "san.ext")
    open(extensions, "w").write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    request = os.path.join(directory, "server.csr")
    sh(f"openssl req -newkey rsa:2048 -nodes -subj '/CN=127.0.0.1' -keyout {files['server.key']} -out {request}", **quiet)
    sh(f"openssl x509 -req -in {request} -CA {files['ca.pem']} -CAkey {files['ca.key']} -CAcreateserial -days 30 "
       f"-extfile {extensions} -out {files['server.pem']}", **quiet)
    return files


class Origins:
    """One nginx with a server per profile (Lua for latency), and python's http.server."""

    def __init__(self, root: str, tls: dict):
        self.root, self.tls = root, tls
        self.prefix = os.path.join(root, "nginx-network")
        self.processes = []

    def start(self) -> None:
        os.makedirs(os.path.join(self.prefix, "logs"), exist_ok=True)
        os.makedirs(os.path.join(self.prefix, "tmp"), exist_ok=True)
        www = os.path.join(self.root, "www")
        servers = []
        for name, (port, flags, delay) in ORIGINS.items():
            if flags is None:
                continue
            sleep = f"access_by_lua_block {{ ngx.sleep({delay}) }}" if delay else ""
            servers.append(f"server {{ listen 127.0.0.1:{port} {flags} backlog=4096; root {www}; "
                           f"location / {{ {sleep} {LOCATION.get(name, '')} }} }}")
        modules = "/usr/lib/nginx/modules"
        top = f"load_module {modules}/ndk_http_module.so;\nload_module {modules}/ngx_http_lua_module.so;"
        servers_text = "\n".join("    " + server for server in servers)
        conf = nginx_conf(self.prefix, top=top, http=f"""    ssl_certificate {self.tls['server.pem']}; ssl_certificate_key {self.tls['server.key']};
    ssl_session_cache shared:SSL:10m;
{servers_text}""")
        open(os.path.join(self.prefix, "nginx.conf"), "w").write(conf)
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.processes.append(subprocess.Popen([nginx, "-p", self.prefix, "-c", "nginx.conf", "-g", "daemon off;"],
                                               start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        port = ORIGINS["backlog5"][0]
        self.processes.append(subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                                                "--directory", www], start_new_session=True,
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for name, (port, flags, _) in ORIGINS.items():
            scheme = "https" if flags and "ssl" in flags else "http"
            for _ in range(100):
                probe = subprocess.run(["curl", "-sS", "-o", "/dev/null", "--cacert", self.tls["ca.pem"],
                                        f"{scheme}://127.0.0.1:{port}/u/000001/avatar.png"], capture_output=True)
                if probe.returncode == 0:
                    break
                time.sleep(0.05)
            else:
                self.stop()
                raise SystemExit(f"origin {name} did not start; see {self.prefix}/logs/error.log")

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
            process.wait(timeout=10)


class Row:
    def __init__(self, profile: str, tool: str, command: str, prepare: str, runs: int):
        self.profile, self.tool, self.command, self.prepare, self.runs = profile, tool, command, prepare, runs
        self.times, self.cpu = [], []

    @property
    def name(self) -> str:
        return f"{self.profile}.{self.tool}"


def rows(args, root: str, tls: dict) -> list:
    entries = small_set(root)
    sets = os.path.join(root, "sets-network")
    # The runs write to tmpfs when it has room: these profiles measure the network, and a disk
    # still flushing an earlier run's deletions would add seconds of noise to every tool alike.
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") and shutil.disk_usage("/dev/shm").free > 8 << 30 else root
    on_tmpfs = scratch == "/dev/shm"
    runs_dir = os.path.join(scratch, "worker-runs-network", datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    args.runs_dir = runs_dir
    os.makedirs(sets, exist_ok=True)
    os.makedirs(runs_dir, exist_ok=True)
    worker = shlex.quote(os.path.abspath(args.worker))
    aria = ("aria2c -j 16 --max-connection-per-server=16 --console-log-level=warn --summary-interval=0 "
            "--allow-overwrite=true --auto-file-renaming=false --auto-save-interval=0 --file-allocation=none "
            f"--ca-certificate={tls['ca.pem']}")
    out = []
    for profile, origin, files, curls in PROFILES:
        port, flags, _ = ORIGINS[origin]
        base = f"{'https' if flags and 'ssl' in flags else 'http'}://127.0.0.1:{port}"
        if isinstance(files, str):
            chosen = large_set(root, files)
        else:
            chosen = entries[:files] if files <= len(entries) else many_set(root, files)
        with open(os.path.join(sets, profile + ".yaml"), "w") as manifest:
            manifest.write(f"version: 1\nname: {profile}\nbase_url: {base}/\nentries:\n")
            for relative, digest in chosen:
                manifest.write(f"  - url: {relative}\n    hash: sha256:{digest}\n")
        with open(os.path.join(sets, profile + ".curl"), "w") as config:
            for relative, _ in chosen:
                config.write(f'url = "{base}/{relative}"\noutput = "{relative}"\n')
        with open(os.path.join(sets, profile + ".aria2"), "w") as listing:
            for relative, digest in chosen:
                listing.write(f"{base}/{relative}\n  dir={os.path.dirname(relative)}\n  out={os.path.basename(relative)}\n"
                              f"  checksum=sha-256={digest}\n")

        def fresh(tool: str) -> tuple:
            current = os.path.join(runs_dir, f"{profile}.{tool}.cur")
            # On tmpfs the previous run's folder goes first (memory, and no freed-inode penalty
            # as on ext4): the 100k profile writes 1.3 GB a run.
            drop = f"{{ [ -L {current} ] && rm -rf \"$(readlink {current})\"; true; }} && " if on_tmpfs else ""
            return (f"{drop}d=$(mktemp -d {runs_dir}/{profile}.{tool}.XXXXXX) && ln -sfn $d {current} && sync", current)

        prepare, current = fresh("worker")
        # Large files: past the default --max-size of 256 MiB.
        size_limit = "--max-size 2GiB " if isinstance(files, str) else ""
        out.append(Row(profile, "worker", f"{worker} sync {sets}/{profile}.yaml --cache-dir {current}/cache "
                                          f"--ca-cert {tls['ca.pem']} -q {size_limit}{args.worker_args}", prepare, args.runs))
        if args.probe:
            # The libcurl prototype with worker's defaults: 100 streams on HTTP/2, else 16 at once.
            prepare, current = fresh("curlprobe")
            window = 100 if flags and "http2" in flags else 16
            out.append(Row(profile, "curlprobe", f"{shlex.quote(os.path.abspath(args.probe))} {sets}/{profile}.yaml "
                                                 f"{current}/cache --ca-cert {tls['ca.pem']} --window {window}",
                           prepare, args.runs))
        if args.baseline:
            prepare, current = fresh("base")
            out.append(Row(profile, "base", f"{shlex.quote(os.path.abspath(args.baseline))} sync {sets}/{profile}.yaml "
                                            f"--cache-dir {current}/cache --ca-cert {tls['ca.pem']} -q {size_limit}", prepare, args.runs))
        if args.shards:
            # N shards of the set on one cache: one after another, and all started together.
            count = args.shards
            binaries = [("worker", worker)] + ([("base", shlex.quote(os.path.abspath(args.baseline)))] if args.baseline else [])
            for name, binary in binaries:
                for how in ("serial", "together"):
                    prepare, current = fresh(f"{name}-{count}shards-{how}")
                    runs = [f"{binary} sync {sets}/{profile}.yaml --shard {i}/{count} --cache-dir {current}/cache "
                            f"--ca-cert {tls['ca.pem']} -q --wait-lock 10m" for i in range(count)]
                    command = (" && ".join(runs) if how == "serial" else
                               " ".join(f"{run} & p{i}=$!;" for i, run in enumerate(runs))
                               + " " + " && ".join(f"wait $p{i}" for i in range(count)))
                    out.append(Row(profile, f"{name}-{count}shards-{how}", command, prepare, args.runs))
        for tool, extra in curls.items():
            prepare, current = fresh(tool)
            out.append(Row(profile, tool, f"cd {current} && curl --parallel {extra} --create-dirs -sS --fail "
                                          f"--cacert {tls['ca.pem']} -K {sets}/{profile}.curl", prepare, args.runs))
        if shutil.which("aria2c") and not args.no_aria2c:
            prepare, current = fresh("aria2c")
            out.append(Row(profile, "aria2c", f"cd {current} && {aria} -i {sets}/{profile}.aria2", prepare, 1))
    return out


def peak_rss_kib(command: list) -> int:
    """The largest resident set of `command` (KiB), from a Python of its own whose only child it is."""
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    return int(subprocess.run([sys.executable, "-c", probe, *command], check=True, capture_output=True, text=True).stdout)


def limit_rates(args, root: str) -> str:
    """`--limit-rate` as delivered: each cap over about 6 s, on one connection and on three (the
    plain origin, no limit of its own), the rate achieved = bytes ÷ the whole run's wall time.
    Then the peak RSS of one 1 GiB body."""
    worker = os.path.abspath(args.worker)
    port = ORIGINS["plain"][0]
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") and shutil.disk_usage("/dev/shm").free > 4 << 30 else root
    lines = ["| --limit-rate | connections | bytes | seconds | achieved | ÷ cap |", "|---|---|---|---|---|---|"]
    caps = [("256K", 256 << 10), ("1M", 1 << 20), ("10M", 10 << 20), ("30M", 30 << 20)]
    for text, cap in caps:
        for count in (1, 3):
            each = cap * 6 // count
            spec = f"{count}x{each >> 10}k"
            chosen = large_set(root, spec)
            manifest = os.path.join(root, "sets-network", f"rate-{spec}.yaml")
            with open(manifest, "w") as out:
                out.write(f"version: 1\nname: rate\nbase_url: http://127.0.0.1:{port}/\nentries:\n")
                for relative, digest in chosen:
                    out.write(f"  - url: {relative}\n    hash: sha256:{digest}\n")
            cache = os.path.join(scratch, f"worker-rate-{os.getpid()}")
            shutil.rmtree(cache, ignore_errors=True)
            started = time.monotonic()
            subprocess.run([worker, "sync", manifest, "--cache-dir", cache, "-q", "--limit-rate", text], check=True)
            seconds = time.monotonic() - started
            shutil.rmtree(cache, ignore_errors=True)
            total = each * count
            achieved = total / seconds
            lines.append(f"| {text} | {count} | {total} | {seconds:.2f} | {achieved / (1 << 20):.3f} MiB/s | {achieved / cap:.3f} |")
    chosen = large_set(root, "1x1g")
    manifest = os.path.join(root, "sets-network", "rss-1g.yaml")
    with open(manifest, "w") as out:
        out.write(f"version: 1\nname: rss\nbase_url: http://127.0.0.1:{port}/\nentries:\n"
                  f"  - url: {chosen[0][0]}\n    hash: sha256:{chosen[0][1]}\n")
    cache = os.path.join(scratch, f"worker-rss-{os.getpid()}")
    shutil.rmtree(cache, ignore_errors=True)
    rss = peak_rss_kib([worker, "sync", manifest, "--cache-dir", cache, "-q", "--max-size", "2GiB"])
    shutil.rmtree(cache, ignore_errors=True)
    return "\n".join(["### --limit-rate as delivered", "", *lines, "",
                      f"Peak RSS of `worker sync` of one 1 GiB body (loopback, no limit): {rss / 1024:.1f} MiB (goal: under 64).", ""])


def hyperfine(row: Row, runs: int, results: str, warmup: int = 0) -> None:
    export = os.path.join(results, row.name + ".json")
    subprocess.run(["hyperfine", "--style", "none", "--runs", str(runs), "--warmup", str(warmup), "--export-json", export,
                    "--shell", "sh", "--prepare", row.prepare, row.command], check=True, stdout=subprocess.DEVNULL)
    result = json.load(open(export))["results"][0]
    row.times += result["times"]
    row.cpu.append(result["user"] + result["system"])


def report(rows_: list, args) -> str:
    by = {row.name: row for row in rows_ if row.times}
    med = lambda row: statistics.median(row.times)
    lines = ["| profile | tool | median s | min–max s | CPU s | worker ÷ this (wall) | worker ÷ this (CPU) |",
             "|---|---|---|---|---|---|---|"]
    for row in rows_:
        if not row.times:
            continue
        worker = by.get(f"{row.profile}.worker")
        ratio = f"{med(worker) / med(row):.2f}" if worker and row is not worker else ""
        cpu_ratio = (f"{statistics.mean(worker.cpu) / statistics.mean(row.cpu):.2f}"
                     if worker and row is not worker else "")
        lines.append(f"| {row.profile} | {row.tool} | {med(row):.3f} | {min(row.times):.3f}–{max(row.times):.3f} "
                     f"| {statistics.mean(row.cpu):.2f} | {ratio} | {cpu_ratio} |")
    targets = ["| work | measured | target | |", "|---|---|---|---|"]
    for profile, peer, goal, kind in TARGETS:
        worker, other = by.get(f"{profile}.worker"), by.get(f"{profile}.{peer}")
        if peer == "fastest":
            # The faster of the peers that ran (curl, aria2c).
            peers = [row for row in rows_ if row.profile == profile and row.times and row.tool in ("curl", "aria2c")]
            other = min(peers, key=med) if peers else None
            peer = other.tool if other else peer
        if worker and other:
            if kind == "CPU":
                ratio = statistics.mean(worker.cpu) / statistics.mean(other.cpu)
            else:
                ratio = med(worker) / med(other)
            targets.append(f"| {profile}: worker ÷ {peer} ({kind}) | {ratio:.2f} | ≤ {goal} | "
                           f"{'met' if ratio <= goal else '**missed**'} |")
    for name in ("worker", "base"):
        for profile in sorted({row.profile for row in rows_}):
            serial = by.get(f"{profile}.{name}-{args.shards}shards-serial")
            together = by.get(f"{profile}.{name}-{args.shards}shards-together")
            if serial and together:
                ratio = med(serial) / med(together)
                goal = "≥ 2.5" if name == "worker" else ""
                met = ("met" if ratio >= 2.5 else "**missed**") if name == "worker" else "(before: the lock held for a whole run)"
                targets.append(f"| {profile}: {name}, {args.shards} shards one after another ÷ started together (wall) "
                               f"| {ratio:.2f} | {goal} | {met} |")
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join([
        "## Network profiles", "",
        f"{stamp}; {os.cpu_count()} cores; {args.rounds} rounds × {args.runs} runs, alternating (aria2c once a round); "
        f"load average at the end: {load}. curl = curl's defaults (50 at once, HTTP/2 multiplexed on https); "
        "curl16 = `--parallel-max 16`. CPU is the client's user+sys (mean per run).", "",
        "### Targets", *targets, "", "### All rows", *lines, ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--worker", default=os.path.join(HERE, "..", ".build", "release", "worker"))
    parser.add_argument("--baseline", help="an earlier worker binary to run beside this one (rows named base)")
    parser.add_argument("--worker-args", default="", help="extra arguments for this worker's syncs")
    parser.add_argument("--probe", help="the libcurl prototype (Benchmarks/curlprobe) to run beside worker")
    parser.add_argument("--root", default=os.environ.get("WORKER_BENCH_DIR", "/tmp/worker-bench"))
    parser.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", 2)))
    parser.add_argument("--runs", type=int, default=int(os.environ.get("RUNS", 2)))
    parser.add_argument("--only", help="comma-separated profiles to run (default: all but http-100k)")
    parser.add_argument("--no-aria2c", action="store_true")
    parser.add_argument("--limit-rates", action="store_true",
                        help="also measure --limit-rate as delivered (256K to 30M) and a 1 GiB body's peak RSS")
    parser.add_argument("--shards", type=int, default=0,
                        help="also sync each set as N shards on one cache, one after another and started together")
    args = parser.parse_args()
    wanted = set(args.only.split(",")) if args.only else {profile[0] for profile in PROFILES} - OPT_IN
    PROFILES[:] = [profile for profile in PROFILES if profile[0] in wanted]
    sh(f"python3 {HERE}/corpus.py {args.root} http://127.0.0.1:18181")
    tls = make_tls(os.path.join(args.root, "tls"))
    origins = Origins(args.root, tls)
    origins.start()
    results = os.path.join(HERE, "results", "network-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    os.makedirs(results, exist_ok=True)
    try:
        all_rows = rows(args, args.root, tls)
        profiles = {}
        for row in all_rows:
            profiles.setdefault(row.profile, []).append(row)
        for round_ in range(args.rounds):
            for group in profiles.values():
                # The first row after a profile change would pay for the origin's cold caches
                # (the 100k set is read from disk again): it gets an untimed warm-up run, and
                # each round starts with another tool.
                shift = round_ % len(group)
                for position, row in enumerate(group[shift:] + group[:shift]):
                    print(f"round {round_ + 1}/{args.rounds}: {row.name}", file=sys.stderr, flush=True)
                    hyperfine(row, row.runs, results, warmup=1 if position == 0 else 0)
        extra = limit_rates(args, args.root) if args.limit_rates else ""
    finally:
        origins.stop()
    text = report(all_rows, args) + ("\n" + extra if extra else "")
    open(os.path.join(results, "summary.md"), "w").write(text)
    print(text)
    shutil.rmtree(os.path.dirname(args.runs_dir), ignore_errors=True)


if __name__ == "__main__":
    main()
