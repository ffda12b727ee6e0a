#!/usr/bin/env python3
"""A shared tier (`--remote-cache`) measured as docs/REMOTE-CACHE.md describes it in use: the 10k
avatars (or the first --entries) from an origin 20 ms away (nginx + Lua's ngx.sleep, HTTP/1.1, as network.py's h1-20ms),
the tier nginx with its WebDAV module on loopback with no added latency, everything on tmpfs
(`--entries 2000`: the first 2,000, issue 63's bars).

Rows (hyperfine, alternating, each run in a fresh cache):
  plain     cold sync, no tier                     fill   cold sync filling an empty tier
  fromtier  cold sync, the tier already full       dead   cold sync, the tier's port refuses
  push      `worker push` of the same into an empty tier
  curl-put  `curl --parallel` PUTting the same files into an empty tier
Targets: fill ÷ plain ≤ 1.10, plain ÷ fromtier ≥ 2 with 0 origin requests, push ÷ curl-put ≤ 1.5,
dead ÷ plain ≤ 1.05. See Benchmarks/README.md."""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import launch_nginx  # noqa: E402
from network import small_set  # noqa: E402

ORIGIN_PORT, TIER_PORT, DEAD_PORT = 18460, 18461, 18462


def start_nginx(root: str, scratch: str) -> tuple:
    prefix = os.path.join(scratch, "nginx")
    tier = os.path.join(scratch, "tier")
    os.makedirs(os.path.join(tier, "cas"), exist_ok=True)
    modules = "/usr/lib/nginx/modules"
    top = f"load_module {modules}/ndk_http_module.so;\nload_module {modules}/ngx_http_lua_module.so;"
    www = os.path.join(root, "www")
    http = f"""    server {{ listen 127.0.0.1:{ORIGIN_PORT} backlog=4096; root {www};
        location / {{ access_log {prefix}/logs/origin.log; access_by_lua_block {{ ngx.sleep(0.02) }} }} }}
    server {{ listen 127.0.0.1:{TIER_PORT} backlog=4096;
        # No open_file_cache here: emptied between runs, the tier must not serve files it kept open.
        open_file_cache off;
        location /cas/ {{ root {tier}; dav_methods PUT; create_full_put_path on; client_max_body_size 0; }} }}"""
    process = launch_nginx(prefix, http, top, f"http://127.0.0.1:{ORIGIN_PORT}/u/000001/avatar.png")
    return process, prefix, tier


def hyperfine(name: str, command: str, prepare: str, runs: int, results: str, store: dict) -> None:
    export = os.path.join(results, name + ".json")
    subprocess.run(["hyperfine", "--style", "none", "--runs", str(runs), "--export-json", export, "--shell", "sh",
                    "--prepare", prepare, command], check=True, stdout=subprocess.DEVNULL)
    result = json.load(open(export))["results"][0]
    store.setdefault(name, {"times": [], "cpu": []})
    store[name]["times"] += result["times"]
    store[name]["cpu"].append(result["user"] + result["system"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--worker", default=os.path.join(HERE, "..", ".build", "release", "worker"))
    parser.add_argument("--root", default=os.environ.get("WORKER_BENCH_DIR", "/tmp/worker-bench"))
    parser.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", 3)))
    parser.add_argument("--runs", type=int, default=int(os.environ.get("RUNS", 2)))
    parser.add_argument("--entries", type=int, default=10_000, help="the first N avatars (issue 63's bars: 2000)")
    args = parser.parse_args()
    worker = os.path.abspath(args.worker)
    subprocess.run(f"python3 {HERE}/corpus.py {args.root} http://127.0.0.1:18181", shell=True, check=True)
    entries = small_set(args.root)[:args.entries]
    scratch = os.path.join("/dev/shm" if os.path.isdir("/dev/shm") else args.root, f"worker-remote-bench-{os.getpid()}")
    os.makedirs(scratch, exist_ok=True)
    process, prefix, tier = start_nginx(args.root, scratch)
    results = os.path.join(HERE, "results", "remote-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    os.makedirs(results, exist_ok=True)
    try:
        manifest = os.path.join(scratch, "avatars.yaml")
        with open(manifest, "w") as out:
            out.write(f"version: 1\nname: avatars\nbase_url: http://127.0.0.1:{ORIGIN_PORT}/\nentries:\n")
            for relative, digest in entries:
                out.write(f"  - url: {relative}\n    hash: sha256:{digest}\n")
        # A full cache for push, and the PUTs curl makes of the same objects.
        full = os.path.join(scratch, "full")
        subprocess.run([worker, "sync", manifest, "--cache-dir", full, "-q"], check=True)
        puts = os.path.join(scratch, "put.curl")
        with open(puts, "w") as out:
            for _, digest in entries:
                out.write(f'upload-file = "{full}/objects/sha256/{digest[:2]}/{digest}"\n'
                          f'url = "http://127.0.0.1:{TIER_PORT}/cas/{digest}"\n')
        runs = os.path.join(scratch, "runs")
        fresh = f"rm -rf {runs} && mkdir -p {runs}"
        empty_tier = f"rm -rf {tier}/cas && mkdir -p {tier}/cas"
        tier_url, dead_url = f"http://127.0.0.1:{TIER_PORT}", f"http://127.0.0.1:{DEAD_PORT}"
        sync = f"{worker} sync {manifest} --cache-dir {runs}/cache -q"
        rows = [
            ("plain", sync, fresh),
            ("fill", f"{sync} --remote-cache {tier_url}", f"{fresh} && {empty_tier}"),
            # The tier is full after `fill` (and each fill run): refilled by a push when not.
            ("fromtier", f"{sync} --remote-cache {tier_url} --remote-cache-read-only",
             f"{fresh} && {worker} push --cache-dir {full} --remote-cache {tier_url} -q --progress never"),
            ("dead", f"{sync} --remote-cache {dead_url}", fresh),
            ("push", f"{worker} push --cache-dir {full} --remote-cache {tier_url} -q --progress never", empty_tier),
            ("curl-put", f"curl --parallel -sS --fail -K {puts}", empty_tier),
        ]
        store: dict = {}
        for round_ in range(args.rounds):
            shift = round_ % len(rows)
            for name, command, prepare in rows[shift:] + rows[:shift]:
                print(f"round {round_ + 1}/{args.rounds}: {name}", file=sys.stderr, flush=True)
                hyperfine(name, command, prepare, args.runs, results, store)
        # Origin requests of one more run from the full tier (not timed).
        subprocess.run(f"{fresh} && {worker} push --cache-dir {full} --remote-cache {tier_url} -q --progress never",
                       shell=True, check=True)
        log = os.path.join(prefix, "logs", "origin.log")
        before = sum(1 for _ in open(log))
        report_path = os.path.join(scratch, "fromtier.json")
        subprocess.run(f"{sync} --remote-cache {tier_url} --report {report_path}", shell=True, check=True)
        origin_requests = sum(1 for _ in open(log)) - before
        remote = json.load(open(report_path))["remote_cache"]
    finally:
        process.terminate()
        process.wait(timeout=10)
    med = lambda name: statistics.median(store[name]["times"])
    cpu = lambda name: statistics.mean(store[name]["cpu"])
    lines = ["| row | median s | min–max s | CPU s (client) |", "|---|---|---|---|"]
    for name, _, _ in rows:
        times = store[name]["times"]
        lines.append(f"| {name} | {med(name):.3f} | {min(times):.3f}–{max(times):.3f} | {cpu(name):.2f} |")
    size = f"{len(entries) // 1000}k" if len(entries) % 1000 == 0 else str(len(entries))
    checks = [
        (f"runner A: cold {size} filling the tier ÷ plain cold {size} (wall)", med("fill") / med("plain"), "≤ 1.10", med("fill") / med("plain") <= 1.10),
        (f"runner B: plain cold {size} ÷ from the full tier (wall, speed-up)", med("plain") / med("fromtier"), "≥ 2", med("plain") / med("fromtier") >= 2),
        ("runner B: origin requests", origin_requests, "0", origin_requests == 0),
        ("worker push ÷ curl --parallel PUT (wall)", med("push") / med("curl-put"), "≤ 1.5", med("push") / med("curl-put") <= 1.5),
        (f"dead tier (refused) ÷ plain cold {size} (wall)", med("dead") / med("plain"), "≤ 1.05", med("dead") / med("plain") <= 1.05),
    ]
    targets = ["| measure | value | target | |", "|---|---|---|---|"]
    for label, value, goal, met in checks:
        shown = f"{value:.2f}" if isinstance(value, float) else str(value)
        targets.append(f"| {label} | {shown} | {goal} | {'met' if met else '**missed**'} |")
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = "\n".join([
        "## A shared tier (`Benchmarks/remote.py`)", "",
        f"{stamp}; {os.cpu_count()} cores; {args.rounds} rounds × {args.runs} runs, alternating; load average at the end: {load}. "
        "Origin: nginx, HTTP/1.1, +20 ms per response; tier: nginx WebDAV on loopback; tmpfs. "
        "`push` sends 32 at once (HEAD, then PUT); curl --parallel its default 50.", "",
        "### Targets", *targets, "", "### All rows", *lines, "",
        f"The extra run from the full tier: remote_cache = {json.dumps({k: remote[k] for k in ('hits', 'misses', 'errors', 'bytes_down')})}.", ""])
    open(os.path.join(results, "summary.md"), "w").write(text)
    print(text)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
