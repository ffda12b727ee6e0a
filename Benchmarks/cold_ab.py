#!/usr/bin/env python3
"""Builds side by side on one cost: a cold `worker sync` of N avatar-like files (scale.py's
corpus, 100 B to 2 KB) from nginx on loopback into tmpfs, the builds taking turns round by round,
so that a slower minute of the machine falls on each alike. Prints each run's wall and CPU
(user+sys of the process) and each build's median CPU, with its ratio to the first build's.

  python3 Benchmarks/cold_ab.py [--entries 100000] [--rounds 4] BUILD [BUILD …]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import launch_nginx  # noqa: E402
from scale import tiny_set, write_manifest  # noqa: E402

PORT = 18496


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("builds", nargs="+")
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--root", default=os.environ.get("WORKER_BENCH_DIR", "/tmp/worker-bench"))
    args = parser.parse_args()
    entries = tiny_set(args.root, args.entries)
    scratch = f"/dev/shm/worker-cold-ab-{os.getpid()}"
    os.makedirs(scratch)
    base = f"http://127.0.0.1:{PORT}"
    nginx = launch_nginx(os.path.join(scratch, "nginx"), f"    server {{ listen 127.0.0.1:{PORT}; root {os.path.join(args.root, 'www')}; }}",
                         "", f"{base}/{entries[0][0]}")
    cpu = {build: [] for build in args.builds}
    try:
        manifest = os.path.join(scratch, "m.yaml")
        write_manifest(manifest, entries, base)
        for round_number in range(args.rounds):
            for build in args.builds:
                cache = os.path.join(scratch, "cache")
                shutil.rmtree(cache, ignore_errors=True)
                started = time.monotonic()
                process = subprocess.Popen([build, "sync", manifest, "--cache-dir", cache, "-q", "--progress", "never"])
                _, status, usage = os.wait4(process.pid, 0)
                if status != 0:
                    raise SystemExit(f"{build}: exit status {status}")
                cpu[build].append(usage.ru_utime + usage.ru_stime)
                print(f"round {round_number + 1}: {build}: {time.monotonic() - started:.2f} s wall, {cpu[build][-1]:.2f} s CPU",
                      flush=True)
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    first = statistics.median(cpu[args.builds[0]])
    print(f"\n{args.entries} files cold, median CPU of {args.rounds} rounds\n")
    print("| build | CPU s | ÷ first |\n|---|---:|---:|")
    for build in args.builds:
        median = statistics.median(cpu[build])
        print(f"| {build} | {median:.2f} | {median / first:.3f} |")


if __name__ == "__main__":
    main()
