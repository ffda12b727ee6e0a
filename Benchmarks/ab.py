#!/usr/bin/env python3
"""Two or more builds of worker run alternately on one command, each in a fresh cache on tmpfs:
the median wall and CPU (user + sys) of each. For a change whose cost is a few per cent, where
this machine's speed moves more than that between batches of runs.

  python3 Benchmarks/ab.py OLD,NEW ROUNDS sync M.yaml [more arguments]

Each run gets `--cache-dir /dev/shm/worker-ab-cache --quiet --progress never` after the arguments.
"""
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    builds, rounds, arguments = sys.argv[1].split(","), int(sys.argv[2]), sys.argv[3:]
    cache = "/dev/shm/worker-ab-cache"
    runs = {build: [] for build in builds}
    for _ in range(rounds):
        for build in builds:
            shutil.rmtree(cache, ignore_errors=True)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            code = subprocess.run([build, *arguments, "--cache-dir", cache, "--quiet", "--progress", "never"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
            wall = time.perf_counter() - start
            if code not in (0, 1):
                sys.exit(f"{build} exited {code}")
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            runs[build].append((wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime))
    shutil.rmtree(cache, ignore_errors=True)
    for build in builds:
        wall = statistics.median(run[0] for run in runs[build])
        cpu = statistics.median(run[1] for run in runs[build])
        print(f"{os.path.basename(build) or build}: wall {wall * 1000:.1f} ms, CPU {cpu * 1000:.1f} ms ({rounds} runs)")


if __name__ == "__main__":
    main()
