#!/usr/bin/env python3
"""Cost against the number of entries (issue 44): 10k, 100k and (with --sizes) 1M avatar-like
files (0.1–2 KB) from nginx on loopback into tmpfs, beside `curl --parallel --parallel-max 16`.

For each size N (each run in a fresh folder on tmpfs unless it is a warm one):
  cold          worker sync M --cache-dir C
  cold+report   the same with --report R (what CI and schedules use)
  warm          worker sync M on the cache cold left (nothing to download)
  warm, stamps due   the same a day later: every row's "last used" is due for its hourly refresh
  warm+report   the same with --report R
  one changed   worker sync M1 on that cache: one entry's URL and hash changed (one download)
  plan, no cache   worker plan M with an empty cache folder (what a warm run is held to)
  curl          curl --parallel --parallel-max 16 --create-dirs -K (the same files, url + output lines)
  base cold, base warm, base cold+report   with --baseline: an earlier build, the same way
Each round runs this build's rows, the baseline's, then curl, so one round's ratios compare runs
made minutes apart.
Prints wall, CPU (user+sys) and peak RSS of each, a Markdown table, and writes an SVG of wall time
and peak memory against N (--svg, default docs/scale.svg).

  python3 Benchmarks/scale.py [--sizes 10000,100000,1000000] [--rounds 3] [--baseline OLD] [--svg docs/scale.svg]
The corpus is its own: N files of 100 B to 2 KB (the issue's avatars; 1M: ~1 GB of content) written
once under WORKER_BENCH_DIR/www/scale/ (1,000 a folder), and read once before each size's runs, so
that every run finds it in the page cache.
"""
import argparse
import hashlib
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import launch_nginx  # noqa: E402
import corpus  # noqa: E402

PORT = 18490


def measure(command):
    """Wall seconds, user+sys CPU seconds and peak RSS (MB) of one run (exit 0 or 1 accepted:
    a sync whose entries failed still says what it cost; anything else stops the benchmark).
    Through GNU time: a child of this Python would start with the Python's peak as its own (exec
    keeps the old address space's high-water mark), hiding anything smaller."""
    record = f"/dev/shm/worker-scale-time-{os.getpid()}"
    start = time.perf_counter()
    process = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", record, *command],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if process.returncode not in (0, 1):
        raise SystemExit(f"failed ({process.returncode}): {' '.join(command)}\n{process.stderr.decode()[-2000:]}")
    user, system, kib = open(record).read().split()[-3:]
    os.remove(record)
    return wall, float(user) + float(system), int(kib) / 1024


def tiny_set(root, count):
    """(relative path, sha256) of `count` avatar-like files of 100 B to 2 KB, written once."""
    www = os.path.join(root, "www")
    entries = []
    for index in range(count):
        relative = f"scale/{index // 1000:04d}/{index:07d}.png"
        size = 100 + int.from_bytes(hashlib.sha256(f"scale-size:{index}".encode()).digest()[:4], "big") % 1949
        data = corpus.content("small", 10_000_000 + index, size)
        path = os.path.join(www, relative)
        try:
            present = os.path.getsize(path) == size
        except OSError:
            present = False
        if not present:
            corpus.write(path, data)
        entries.append((relative, hashlib.sha256(data).hexdigest()))
    return entries


def write_manifest(path, entries, base, changed=None):
    with open(path, "w") as out:
        out.write(f"version: 1\nbase_url: {base}/\nentries:\n")
        for index, (relative, digest) in enumerate(entries):
            if changed is not None and index == changed[0]:
                relative, digest = changed[1]
            out.write(f"  - url: {relative}\n    hash: sha256:{digest}\n")


def svg(path, table, sizes):
    """Wall time (s) and peak RSS (MB) of worker cold, warm and curl against N, log-log."""
    import math
    series = [("worker cold", "cold", "#1f77b4"), ("worker cold+report", "cold+report", "#aec7e8"),
              ("worker warm", "warm", "#2ca02c"), ("curl --parallel-max 16", "curl", "#d62728")]
    width, height, left, top, plot_w, plot_h = 900, 380, 70, 40, 340, 280
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>']
    for panel, (metric, label) in enumerate([(0, "wall time (s)"), (2, "peak RSS (MB)")]):
        x0 = left + panel * (plot_w + 110)
        values = [table[(n, key)][metric] for n in sizes for _, key, _ in series if (n, key) in table]
        low, high = math.log10(max(min(values), 0.01)), math.log10(max(values))
        high = high if high > low else low + 1
        nx = lambda n: x0 + (0 if len(sizes) == 1 else (math.log10(n) - math.log10(sizes[0])) /
                              (math.log10(sizes[-1]) - math.log10(sizes[0])) * plot_w)
        ny = lambda v: top + plot_h - (math.log10(max(v, 0.01)) - low) / (high - low) * plot_h
        parts.append(f'<rect x="{x0}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>')
        parts.append(f'<text x="{x0 + plot_w / 2}" y="{top - 12}" text-anchor="middle">{label}, log scale</text>')
        for n in sizes:
            parts.append(f'<text x="{nx(n):.1f}" y="{top + plot_h + 18}" text-anchor="middle">{n:,}</text>')
        for exponent in range(math.floor(low), math.ceil(high) + 1):
            y = ny(10 ** exponent)
            if top <= y <= top + plot_h:
                parts.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{10 ** exponent:g}</text>')
                parts.append(f'<line x1="{x0}" x2="{x0 + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        for name, key, colour in series:
            points = [(nx(n), ny(table[(n, key)][metric])) for n in sizes if (n, key) in table]
            if points:
                parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
                             + " ".join(f"{x:.1f},{y:.1f}" for x, y in points) + '"/>')
                parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in points]
    for index, (name, _, colour) in enumerate(series):
        parts.append(f'<rect x="{left + index * 200}" y="{height - 22}" width="12" height="12" fill="{colour}"/>')
        parts.append(f'<text x="{left + index * 200 + 16}" y="{height - 12}">{name}</text>')
    parts.append(f'<text x="{width / 2}" y="{top + plot_h + 36}" text-anchor="middle">entries</text></svg>')
    open(path, "w").write("\n".join(parts) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", default=os.path.join(HERE, "..", ".build", "release", "worker"))
    parser.add_argument("--baseline", help="an earlier build, run cold and warm beside this one")
    parser.add_argument("--root", default=os.environ.get("WORKER_BENCH_DIR", "/tmp/worker-bench"))
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--rounds", type=int, default=1, help="each row this many times (medians)")
    parser.add_argument("--svg", default=os.path.join(HERE, "..", "docs", "scale.svg"))
    args = parser.parse_args()
    worker = os.path.abspath(args.worker)
    sizes = sorted(int(size) for size in args.sizes.split(","))
    everything = tiny_set(args.root, max(sizes) + 1)
    print(f"corpus: {max(sizes) + 1} files (written once)", file=sys.stderr, flush=True)
    scratch = f"/dev/shm/worker-scale-bench-{os.getpid()}"
    prefix = os.path.join(scratch, "nginx")
    www = os.path.join(args.root, "www")
    http = f"""    server {{ listen 127.0.0.1:{PORT} backlog=4096; root {www}; }}"""
    nginx = launch_nginx(prefix, http, "", f"http://127.0.0.1:{PORT}/{everything[0][0]}")
    base = f"http://127.0.0.1:{PORT}"
    runs = {}
    try:
        for n in sizes:
            entries = everything[:n]
            # Every client reads the files through nginx from the page cache: the first run of a
            # size would otherwise also pay for the disk (at 100k: 20 s instead of 7).
            for relative, _ in entries:
                with open(os.path.join(www, relative), "rb") as corpus_file:
                    corpus_file.read()
            manifest, changed = os.path.join(scratch, f"m{n}.yaml"), os.path.join(scratch, f"m{n}-1.yaml")
            write_manifest(manifest, entries, base)
            write_manifest(changed, entries, base, changed=(n // 2, everything[n]))
            curl_config = os.path.join(scratch, f"curl{n}.txt")
            with open(curl_config, "w") as out:
                for relative, _ in entries:
                    out.write(f'url = "{base}/{relative}"\noutput = "{scratch}/curl/{relative}"\n')
            cache, report = os.path.join(scratch, "cache"), os.path.join(scratch, "report.json")
            empty = os.path.join(scratch, "empty-cache")
            sync = lambda binary, m: [binary, "sync", m, "--cache-dir", cache, "-q", "--progress", "never"]
            builds = [("", worker)] + ([("base ", os.path.abspath(args.baseline))] if args.baseline else [])
            curl_command = ["curl", "--parallel", "--parallel-max", "16", "--create-dirs", "-sS", "-K", curl_config]
            # Each round runs every build's rows and then curl, so that the ratios of one round
            # compare runs made minutes apart, not a whole size's worth of runs apart.
            for _ in range(args.rounds):
                for label, binary in builds:
                    rows = [(f"{label}cold", sync(binary, manifest), True), (f"{label}warm", sync(binary, manifest), False),
                            (f"{label}warm, stamps due", sync(binary, manifest), "age"),
                            (f"{label}cold+report", sync(binary, manifest) + ["--report", report], True)]
                    if not label:
                        rows += [("warm+report", sync(binary, manifest) + ["--report", report], False),
                                 ("one changed", sync(binary, changed), False),
                                 # What the warm run is held to: the plan of the same manifest
                                 # with no cache at all (issue 44: warm <= 1.5x this).
                                 ("plan, no cache", [binary, "plan", manifest, "--cache-dir", empty, "-q"], "empty")]
                    for name, command, fresh in rows:
                        if fresh == "age":
                            # As a run a day later finds them: every row's "last used" over an hour old.
                            index = sqlite3.connect(os.path.join(cache, "index.sqlite"))
                            with index:
                                index.execute("UPDATE entries SET last_used = last_used - 86400")
                            index.close()
                        elif fresh == "empty":
                            shutil.rmtree(empty, ignore_errors=True)
                        elif fresh:
                            shutil.rmtree(cache, ignore_errors=True)
                        runs.setdefault((n, name), []).append(measure(command))
                        print(f"{n}: {name} {runs[(n, name)][-1][0]:.2f} s", file=sys.stderr, flush=True)
                    shutil.rmtree(cache, ignore_errors=True)
                    shutil.rmtree(empty, ignore_errors=True)
                shutil.rmtree(os.path.join(scratch, "curl"), ignore_errors=True)
                runs.setdefault((n, "curl"), []).append(measure(curl_command))
                print(f"{n}: curl {runs[(n, 'curl')][-1][0]:.2f} s", file=sys.stderr, flush=True)
            shutil.rmtree(os.path.join(scratch, "curl"), ignore_errors=True)
            if os.path.exists(report):
                os.remove(report)
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)
        shutil.rmtree(scratch, ignore_errors=True)
    table = {key: tuple(statistics.median(run[i] for run in measured) for i in range(3)) for key, measured in runs.items()}
    names = ["cold", "cold+report", "warm", "warm, stamps due", "warm+report", "one changed", "plan, no cache", "curl"]
    names += ["base cold", "base warm", "base warm, stamps due", "base cold+report"] if args.baseline else []
    print("\n| entries | run | wall s | CPU s | peak RSS MB | wall ÷ curl | CPU ÷ curl |")
    print("|---|---|---|---|---|---|---|")
    for n in sizes:
        curl = table[(n, "curl")]
        for name in names:
            wall, cpu, rss = table[(n, name)]
            print(f"| {n:,} | {name} | {wall:.2f} | {cpu:.2f} | {rss:.0f} | {wall / curl[0]:.2f} | {cpu / curl[1]:.2f} |")
    print("\nIssue 44's targets (medians): peak RSS <= 300 MB at 1M; warm <= 1.5x the plan of an empty cache"
          " (and <= 2 s at 1M); cold with a report <= 1.0x curl's wall and <= 1.3x its CPU.")
    for n in sizes:
        curl, cold, warm, plan = (table[(n, key)] for key in ("curl", "cold+report", "warm", "plan, no cache"))
        peak = max(rss for (size, name), (_, _, rss) in table.items() if size == n and not name.startswith(("base", "curl")))
        print(f"{n:,}: cold+report {cold[0] / curl[0]:.2f}x curl's wall, {cold[1] / curl[1]:.2f}x its CPU;"
              f" warm {warm[0]:.2f} s = {warm[0] / plan[0]:.2f}x the empty plan's {plan[0]:.2f} s; peak RSS {peak:.0f} MB")
    svg(args.svg, table, sizes)
    print(f"\ngraph: {os.path.relpath(args.svg)}")


if __name__ == "__main__":
    main()
