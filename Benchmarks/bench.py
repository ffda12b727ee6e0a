#!/usr/bin/env python3
"""The worker benchmark suite: `worker sync` side by side with aria2c, curl --parallel and cp -r,
in one run on one machine, against a local nginx origin. See Benchmarks/README.md.

Every timed figure is hyperfine's; benches run in alternating rounds (each round runs every bench),
and medians / min-max are over the pooled runs. Client CPU and peak RSS come from GNU time."""
import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(command: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, shell=True, check=True, **kwargs)


def output(command: str) -> str:
    try:
        return subprocess.run(command, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


# MARK: - Origin

def nginx_conf(prefix: str, http: str, top: str = "") -> str:
    """The configuration every bench origin shares: one worker, keep-alive, sendfile, no access
    log, temp paths under `prefix`; `http` adds to the http block, `top` before it (modules)."""
    user = "user root;" if os.geteuid() == 0 else ""
    temp = os.path.join(prefix, "tmp")
    return f"""{user}
{top}
worker_processes 1;
pid {prefix}/logs/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{
    default_type application/octet-stream;
    access_log off;
    sendfile on; tcp_nopush on; tcp_nodelay on;
    keepalive_timeout 65s; keepalive_requests 1000000;
    # Every file of the 10k set stays open; below the 20,000 descriptors a process may have here
    # (the 100k network profile cycles through it).
    open_file_cache max=15000 inactive=120s;
    client_body_temp_path {temp}/body; proxy_temp_path {temp}/proxy; fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi; scgi_temp_path {temp}/scgi;
{http}
}}
"""


def launch_nginx(prefix: str, http: str, top: str, probe: str):
    """nginx with `nginx_conf(prefix, http, top)`, in its own session; returns once `probe` (a
    URL it serves) answers."""
    for folder in ("logs", "tmp"):
        os.makedirs(os.path.join(prefix, folder), exist_ok=True)
    open(os.path.join(prefix, "nginx.conf"), "w").write(nginx_conf(prefix, http=http, top=top))
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    process = subprocess.Popen([nginx, "-p", prefix, "-c", "nginx.conf", "-g", "daemon off;"], start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if subprocess.run(["curl", "-sSf", "-o", "/dev/null", probe], capture_output=True).returncode == 0:
            return process
        time.sleep(0.05)
    process.terminate()
    raise SystemExit(f"nginx did not start; see {prefix}/logs/error.log")


class Origin:
    """A private nginx: one worker, keep-alive, sendfile, no access log; stopped by its PID."""

    def __init__(self, root: str, port: int):
        self.root, self.port = root, port
        self.prefix = os.path.join(root, "nginx")
        self.process = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        os.makedirs(os.path.join(self.prefix, "logs"), exist_ok=True)
        os.makedirs(os.path.join(self.prefix, "tmp"), exist_ok=True)
        www, flip = os.path.join(self.root, "www"), os.path.join(self.root, "flip")
        with open(os.path.join(self.prefix, "nginx.conf"), "w") as conf:
            conf.write(nginx_conf(self.prefix, http=f"""    open_file_cache_valid 120s;
    if_modified_since before;
    server {{
        listen 127.0.0.1:{self.port} backlog=4096;
        root {www};
        location = /m/0/u/000001/avatar.png {{ open_file_cache off; alias {flip}/current.png; }}
        location ~ ^/m/[0-9]/(?<rest>u/.*)$ {{ alias {www}/$rest; }}
        location = /__status {{ stub_status; }}
    }}"""))
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.process = subprocess.Popen([nginx, "-p", self.prefix, "-c", "nginx.conf", "-g", "daemon off;"],
                                        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                self.requests()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("nginx did not start; see " + self.prefix + "/logs/error.log")

    def requests(self) -> int:
        """Requests nginx has handled (the status request itself included)."""
        with urllib.request.urlopen(self.base + "/__status", timeout=2) as response:
            return int(response.read().decode().splitlines()[2].split()[2])

    def cpu_seconds(self) -> float:
        fields = open(f"/proc/{self.process.pid}/stat").read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        # The master forks one worker; count both (utime, stime, cutime, cstime of the master).
        children = [int(pid) for pid in output(f"pgrep -P {self.process.pid}").split()]
        total = sum(int(fields[i]) for i in (11, 12, 13, 14))
        for child in children:
            child_fields = open(f"/proc/{child}/stat").read().rsplit(")", 1)[1].split()
            total += int(child_fields[11]) + int(child_fields[12])
        return total / ticks

    def stop(self) -> None:
        if self.process:
            self.process.terminate()
            self.process.wait(timeout=10)


# MARK: - Benches

class Bench:
    def __init__(self, name, command, prepare=None, setup=None, files=0, bytes_=0, runs=2, cwd_dir=False, scale=1):
        self.name, self.command, self.prepare, self.setup = name, command, prepare, setup
        self.files, self.bytes, self.runs = files, bytes_, runs
        # Runs per round are multiplied by this: the large set takes 0.2 s a run and its medians
        # swing with the page cache; more samples steady them.
        self.scale = scale
        self.times, self.cpu, self.rss = [], [], []


class Suite:
    def __init__(self, args):
        self.args = args
        self.root = args.root
        self.sets = os.path.join(self.root, "sets")
        self.runs_dir = os.path.join(self.root, "runs", datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
        self.results = os.path.join(args.results, datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
        self.origin = Origin(self.root, args.port)
        self.worker = os.path.abspath(args.worker)
        # An earlier build of worker, run beside this one in the same rounds (before/after).
        self.baseline = os.path.abspath(args.baseline) if args.baseline else None
        self.notes = []
        os.makedirs(self.runs_dir, exist_ok=True)
        os.makedirs(self.results, exist_ok=True)

    def fresh(self, name: str, base: str | None = None) -> tuple[str, str]:
        """A prepare command giving each run a new directory (never reusing just-deleted inodes),
        reachable as <runs>/<name>.cur; and that path."""
        base = base or self.runs_dir
        current = os.path.join(base, name + ".cur")
        return (f"d=$(mktemp -d {base}/{name}.XXXXXX) && ln -sfn $d {current} && sync", current)

    def benches(self) -> list:
        s = self.sets
        small_files, small_bytes = 10_000, sum(os.path.getsize(os.path.join(dp, f))
                                               for dp, _, fs in os.walk(os.path.join(self.root, "www/u")) for f in fs)
        large_files, large_bytes = 40, 40 * (4 << 20)
        aria = ("aria2c -j 16 --max-connection-per-server=16 --console-log-level=warn --summary-interval=0 "
                "--allow-overwrite=true --auto-file-renaming=false --auto-save-interval=0 --file-allocation=none")
        curl = "curl --parallel --parallel-max 16 --create-dirs -sS --fail"
        self.aria = aria
        binaries = [("worker", self.worker)] + ([("base", self.baseline)] if self.baseline else [])
        out = []
        for set_, files, size in (("small", small_files, small_bytes), ("large", large_files, large_bytes)):
            scale = 3 if set_ == "large" else 1
            for tag, binary in binaries:
                prep, cur = self.fresh(f"{set_}.{tag}")
                out.append(Bench(f"{set_}.{tag}.cold", f"{shlex.quote(binary)} sync {s}/{set_}.yaml --cache-dir {cur}/cache -q",
                                 prep, files=files, bytes_=size, scale=scale))
            prep, cur = self.fresh(f"{set_}.curl")
            out.append(Bench(f"{set_}.curl.cold", f"cd {cur} && {curl} -K {s}/{set_}.curl", prep, files=files, bytes_=size,
                             scale=scale))
            if shutil.which("aria2c"):
                prep, cur = self.fresh(f"{set_}.aria2c")
                out.append(Bench(f"{set_}.aria2c.cold", f"cd {cur} && {aria} -i {s}/{set_}.aria2", prep,
                                 files=files, bytes_=size, runs=1 if set_ == "small" else 2))
            prep, cur = self.fresh(f"{set_}.cp")
            folder = "u" if set_ == "small" else "large"
            out.append(Bench(f"{set_}.cp.cold", f"cp -r {self.root}/www/{folder} {cur}/", prep, files=files, bytes_=size,
                             scale=scale))
        if os.path.isdir("/dev/shm") and shutil.disk_usage("/dev/shm").free > 4 << 30:
            shm = "/dev/shm/worker-bench-" + os.path.basename(self.runs_dir)
            os.makedirs(shm, exist_ok=True)
            for tag, binary in binaries:
                prep, cur = self.fresh(f"small.{tag}.tmpfs", shm)
                out.append(Bench(f"small.{tag}.cold-tmpfs", f"{shlex.quote(binary)} sync {s}/small.yaml --cache-dir {cur}/cache -q",
                                 prep, files=small_files, bytes_=small_bytes))
            prep, cur = self.fresh("small.cp.tmpfs", shm)
            out.append(Bench("small.cp.cold-tmpfs", f"cp -r {self.root}/www/u {cur}/", prep,
                             files=small_files, bytes_=small_bytes))
            self.shm = shm
        for tag, binary in binaries:
            w = shlex.quote(binary)
            warm = os.path.join(self.runs_dir, f"small.{tag}.warm")
            out.append(Bench(f"small.{tag}.warm", f"{w} sync {s}/small.yaml --cache-dir {warm} -q",
                             setup=f"{w} sync {s}/small.yaml --cache-dir {warm} -q", files=small_files))
        if shutil.which("aria2c"):
            ariawarm = os.path.join(self.runs_dir, "small.aria2c.warm")
            out.append(Bench("small.aria2c.warm-cond", f"cd {ariawarm} && {aria} --conditional-get=true -i {s}/small.aria2",
                             setup=f"mkdir -p {ariawarm} && cd {ariawarm} && {aria} -i {s}/small.aria2", files=small_files))
        flip = os.path.join(self.root, "flip")
        for tag, binary in binaries:
            w = shlex.quote(binary)
            cache100k = os.path.join(self.runs_dir, f"m100k.{tag}.cache")
            # Each binary's cache remembers the version it synced last (state.TAG): every run
            # serves the other one, so every run has exactly one changed entry.
            toggle = (f"if [ \"$(cat {flip}/state.{tag} 2>/dev/null)\" = a ]; then v=b; else v=a; fi; cp {flip}/$v.png {flip}/next.png && "
                      f"mv {flip}/next.png {flip}/current.png && echo $v > {flip}/state.{tag} && ln -sfn {s}/m100k-$v.yaml {s}/m100k-{tag}.yaml")
            out.append(Bench(f"m100k.{tag}.one-changed", f"{w} sync {s}/m100k-{tag}.yaml --cache-dir {cache100k} -q",
                             prepare=toggle, files=1,
                             setup=f"echo b > {flip}/state.{tag} && {toggle} && {w} sync {s}/m100k-{tag}.yaml --cache-dir {cache100k} -q"))
        # The floor for planning: libyaml's bare event scan of the same file (Benchmarks/yaml_scan.c).
        scan = os.path.join(self.root, "yaml_scan")
        if shutil.which("cc") and subprocess.run(["cc", "-O2", "-o", scan, os.path.join(HERE, "yaml_scan.c"), "-lyaml"],
                                                 capture_output=True).returncode == 0:
            out.append(Bench("plan1m.libyaml.scan", f"{scan} {s}/plan1m.yaml", files=1_000_000))
        for tag, binary in binaries:
            out.append(Bench(f"plan1m.{tag}.plan", f"{shlex.quote(binary)} plan {s}/plan1m.yaml --cache-dir {self.runs_dir}/empty -q",
                             files=1_000_000))
        return out

    # MARK: - Running

    def run(self) -> None:
        # Every cold run keeps its folder until the end (no reuse of just-freed inodes): about
        # 13 GB for the default rounds. Fail now rather than with a full disk halfway.
        rounds, runs = self.args.rounds, self.args.runs
        twins = 2 if self.baseline else 1
        needed = (rounds * ((3 * runs + twins) * 134 + (7 + 3 * twins) * runs * 168) + 1024) << 20
        free = shutil.disk_usage(self.runs_dir).free
        if free < needed:
            sys.exit(f"bench: {self.runs_dir} has {free >> 30} GiB free; the runs need about {needed >> 30} GiB")
        self.origin.start()
        try:
            benches = self.benches()
            for bench in benches:
                if bench.setup:
                    sh(bench.setup, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.requests = self.count_requests(benches)
            for round_ in range(self.args.rounds):
                for bench in benches:
                    print(f"round {round_ + 1}/{self.args.rounds}: {bench.name}", file=sys.stderr, flush=True)
                    self.hyperfine(bench, (self.args.runs if bench.runs > 1 else 1) * bench.scale)
            for bench in benches:
                self.measure_memory(bench)
            self.checks = self.check_results()
        finally:
            self.origin.stop()
        self.report(benches)

    def hyperfine(self, bench: Bench, runs: int) -> None:
        """Timed runs: hyperfine runs the command itself (its shell start is subtracted); CPU is
        hyperfine's user+sys of the command."""
        export = os.path.join(self.results, bench.name + ".json")
        args = ["hyperfine", "--style", "none", "--runs", str(runs), "--export-json", export, "--shell", "sh"]
        args += ["--prepare", bench.prepare or "sync", bench.command]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        result = json.load(open(export))["results"][0]
        bench.times += result["times"]
        bench.cpu.append(result["user"] + result["system"])

    def measure_memory(self, bench: Bench) -> None:
        """One more run under GNU time, untimed, for the peak RSS (kept out of the timed runs: the
        wrapper costs a few milliseconds, which matters for the no-op benches)."""
        timing = os.path.join(self.results, bench.name + ".time")
        if bench.prepare:
            sh(bench.prepare)
        sh(f"/usr/bin/time -f '%e %U %S %M' -o {timing} sh -c {shlex.quote(bench.command)}",
           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        fields = open(timing).read().split()
        bench.rss = [int(fields[-1]) / 1024]

    def count_requests(self, benches) -> dict:
        """HTTP requests one run of each no-op / one-change bench makes (nginx's counter)."""
        counts = {}
        for bench in benches:
            if bench.name in ("small.worker.warm", "m100k.worker.one-changed", "small.base.warm", "m100k.base.one-changed"):
                if bench.prepare:
                    sh(bench.prepare)
                before = self.origin.requests()
                sh(bench.command)
                counts[bench.name] = self.origin.requests() - before - 1
        return counts

    def check_results(self) -> list:
        """Untimed: the last cold worker cache verifies, and each tool wrote every file."""
        checks = []
        for set_, expected in (("small", 10_000), ("large", 40)):
            cache = os.path.join(self.runs_dir, f"{set_}.worker.cur", "cache")
            result = subprocess.run([self.worker, "verify", "--cache-dir", cache], capture_output=True, text=True)
            checks.append(f"{set_}.worker.cold: `worker verify` exit {result.returncode}: {result.stdout.splitlines()[0] if result.stdout else result.stderr.strip()}")
            for tool in ("curl", "aria2c", "cp"):
                folder = os.path.join(self.runs_dir, f"{set_}.{tool}.cur")
                if os.path.isdir(folder):
                    count = sum(len(files) for _, _, files in os.walk(folder))
                    checks.append(f"{set_}.{tool}.cold: {count} files (expected {expected})")
        return checks

    # MARK: - Report

    def report(self, benches) -> None:
        by = {b.name: b for b in benches if b.times}
        med = lambda b: statistics.median(b.times)
        rows = ["| bench | median s | min–max s | files/s | MB/s | CPU s | peak RSS MB | worker ÷ this |",
                "|---|---|---|---|---|---|---|---|"]
        for bench in benches:
            if not bench.times:
                continue
            m = med(bench)
            set_ = bench.name.split(".")[0]
            ref = by.get(f"{set_}.worker.cold")
            if bench.name.endswith("cold-tmpfs"):
                ref = by.get("small.worker.cold-tmpfs")
            ratio = f"{med(ref) / m:.2f}" if ref and ref is not bench and ".cold" in bench.name else ""
            files = f"{bench.files / m:,.0f}" if bench.files > 1 else ""
            rate = f"{bench.bytes / m / 1e6:.1f}" if bench.bytes else ""
            cpu = f"{statistics.mean(bench.cpu):.2f}" if bench.cpu else ""
            rss = f"{max(bench.rss):.0f}" if bench.rss else ""
            rows.append(f"| {bench.name} | {m:.3f} | {min(bench.times):.3f}–{max(bench.times):.3f} | {files} | {rate} "
                        f"| {cpu} | {rss} | {ratio} |")

        def ratio(a, b):
            return med(by[a]) / med(by[b]) if a in by and b in by else None

        targets = []

        def target(work, measured, goal, ok):
            targets.append(f"| {work} | {measured} | {goal} | {'met' if ok else '**missed**'} |")

        r = ratio("small.worker.cold", "small.curl.cold")
        if r is not None: target("cold 10k: worker ÷ curl --parallel", f"{r:.2f}", "≤ 1.0", r <= 1.0)
        r = ratio("small.worker.cold", "small.aria2c.cold")
        if r is not None: target("cold 10k: worker ÷ aria2c", f"{r:.2f}", "≤ 0.5", r <= 0.5)
        w, c = by.get("small.worker.cold"), by.get("small.curl.cold")
        if w and c:
            r = statistics.mean(w.cpu) / statistics.mean(c.cpu)
            target("cold 10k: worker CPU ÷ curl CPU (user+sys)", f"{r:.2f}", "≤ 1.3", r <= 1.3)
        r = ratio("small.worker.cold", "small.cp.cold")
        if r is not None: target("cold 10k: worker ÷ cp -r", f"{r:.2f}", "≤ 1.25", r <= 1.25)
        r = ratio("large.worker.cold", "large.curl.cold")
        if r is not None: target("cold 40 × 4 MiB: worker ÷ curl --parallel", f"{r:.2f}", "≤ 1.2", r <= 1.2)
        n = self.requests.get("small.worker.warm")
        target("warm 10k: HTTP requests", str(n), "0", n == 0)
        r = ratio("small.worker.warm", "small.aria2c.warm-cond")
        if r is not None: target("warm 10k: worker ÷ aria2c --conditional-get", f"{r:.3f}", "≤ 0.1", r <= 0.1)
        n = self.requests.get("m100k.worker.one-changed")
        target("100k, one changed: HTTP requests", str(n), "1", n == 1)
        b = by.get("m100k.worker.one-changed")
        if b: target("100k, one changed: wall", f"{med(b):.3f} s", "≤ 0.5 s", med(b) <= 0.5)
        b = by.get("plan1m.worker.plan")
        if b:
            target("plan 1M: wall", f"{med(b):.2f} s", "≤ 3 s", med(b) <= 3)
            r = ratio("plan1m.worker.plan", "plan1m.libyaml.scan")
            if r is not None: target("plan 1M: worker ÷ libyaml's bare event scan", f"{r:.2f}", "≤ 1.5", r <= 1.5)
            target("plan 1M: peak RSS", f"{max(b.rss):.0f} MB", "≤ 400 MB", max(b.rss) <= 400)
        b = by.get("small.worker.cold")
        if b: target("cold 10k: peak RSS", f"{max(b.rss):.0f} MB", "≤ 100 MB", max(b.rss) <= 100)

        compare = []
        for bench in benches:
            twin = by.get(bench.name.replace(".worker.", ".base."))
            if ".worker." not in bench.name or not twin or bench.name not in by:
                continue
            wall, cpu = med(bench) / med(twin), statistics.mean(bench.cpu) / statistics.mean(twin.cpu)
            worse = "**worse**" if wall > 1.05 or cpu > 1.05 else ""
            compare.append(f"| {bench.name.replace('.worker', '')} | {med(twin):.3f} | {med(bench):.3f} | {wall:.2f} "
                           f"| {statistics.mean(twin.cpu):.2f} | {statistics.mean(bench.cpu):.2f} | {cpu:.2f} | {worse} |")
        if compare:
            compare = ["## Before and after", f"`--baseline {self.baseline}` against this build, in the same rounds.", "",
                       "| bench | before s | after s | after ÷ before | CPU before s | CPU after s | CPU ratio | |",
                       "|---|---|---|---|---|---|---|---|", *compare, ""]

        cpu_model = output("grep -m1 'model name' /proc/cpuinfo").split(":")[-1].strip()
        memory = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)
        filesystem = output(f"stat -f -c %T {self.runs_dir}")
        nginx = output("nginx -v 2>&1").split("/")[-1]
        curl_version = output("curl --version").splitlines()[0].split(" (")[0] if shutil.which("curl") else "curl missing"
        aria_version = output("aria2c --version").splitlines()[0].split()[-1] if shutil.which("aria2c") else "not installed"
        load = " ".join(open("/proc/loadavg").read().split()[:3])
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        machine = [
            f"- {stamp}, host `{platform.node()}`",
            f"- {os.cpu_count()} cores ({cpu_model}), {memory} GiB, Linux {platform.release()}",
            f"- run folders under `{self.runs_dir}` (file system: {filesystem})",
            f"- nginx {nginx}, {curl_version}, aria2 {aria_version}, {output('hyperfine --version')}",
            f"- {self.args.rounds} rounds × {self.args.runs} runs (1 a round for the slow aria2c small set; 3× as many for worker, curl and cp on the short large set), "
            f"alternating; load average at the end: {load}",
        ]
        text = "\n".join([
            "## Machine", *machine, "",
            *compare,
            "## Targets", "| work | measured | target | |", "|---|---|---|---|", *targets, "",
            "## All rows", *rows, "",
            "files/s and MB/s are over the median. CPU is the client's user+sys (hyperfine's mean per run), RSS its peak "
            "in one extra run under GNU time. \"worker ÷ this\" is worker's median over this row's "
            "(below 1: worker is faster). tmpfs rows put the destination in /dev/shm: the program's own "
            "cost without the disk.", "",
            "## Checks (untimed)", *[f"- {c}" for c in self.checks],
            f"- HTTP requests made by one run: {json.dumps(self.requests)}", "",
        ])
        open(os.path.join(self.results, "summary.md"), "w").write(text)
        print(text)
        print(f"results: {self.results}", file=sys.stderr)
        if not self.args.keep:
            print("removing run folders (slow on ext4)…", file=sys.stderr)
            shutil.rmtree(self.runs_dir, ignore_errors=True)
            if getattr(self, "shm", None):
                shutil.rmtree(self.shm, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--worker", default=os.path.join(HERE, "..", ".build", "release", "worker"))
    parser.add_argument("--root", default=os.environ.get("WORKER_BENCH_DIR", "/tmp/worker-bench"))
    parser.add_argument("--results", default=os.path.join(HERE, "results"))
    parser.add_argument("--port", type=int, default=18181)
    parser.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", 3)))
    parser.add_argument("--runs", type=int, default=int(os.environ.get("RUNS", 2)))
    parser.add_argument("--baseline", help="another worker binary (an earlier build) to run beside this one: "
                        "its rows are named *.base.* and a before/after table compares the two")
    parser.add_argument("--keep", action="store_true", help="keep the run folders")
    args = parser.parse_args()
    origin = Origin(args.root, args.port)
    sh(f"python3 {HERE}/corpus.py {args.root} {origin.base}")
    Suite(args).run()


if __name__ == "__main__":
    main()
