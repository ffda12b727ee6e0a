#!/usr/bin/env python3
"""Mirrors and machines that start together, on loopback and tmpfs (issue 43's measurements).

mirrors   2,000 avatars of the corpus, each run in a fresh cache, rounds in turn:
            direct    the manifest names the mirror itself
            refused   the manifest names a primary whose port refuses; a `mirrors:` map names the mirror
            sick      the manifest names a primary answering 503 to everything; the same map
          Target: refused / direct <= 1.2 and sick / direct <= 1.2 (median wall); CPU printed too.
together  4 runs started at once, each with a cache of its own, on one empty tier (nginx WebDAV),
          the origin 20 ms away (nginx + Lua's ngx.sleep): origin requests counted in its log.
          Target: origin requests <= 1.3 x the entries. With --baseline, the same for that build.

  python3 Benchmarks/origins.py [--worker .build/release/worker] [--baseline OLD] [--rounds 11]
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
from tree import run as timed  # noqa: E402
from network import small_set  # noqa: E402

MIRROR_PORT, SICK_PORT, DEAD_PORT, SLOW_PORT, TIER_PORT = 18470, 18471, 18472, 18473, 18474


def start_nginx(www: str, scratch: str):
    prefix = os.path.join(scratch, "nginx")
    tier = os.path.join(scratch, "tier")
    os.makedirs(os.path.join(tier, "cas"), exist_ok=True)
    modules = "/usr/lib/nginx/modules"
    top = f"load_module {modules}/ndk_http_module.so;\nload_module {modules}/ngx_http_lua_module.so;"
    http = f"""    server {{ listen 127.0.0.1:{MIRROR_PORT} backlog=4096; root {www}; }}
    server {{ listen 127.0.0.1:{SICK_PORT} backlog=4096; location / {{ return 503; }} }}
    server {{ listen 127.0.0.1:{SLOW_PORT} backlog=4096; root {www};
        location / {{ access_log {prefix}/logs/origin.log; access_by_lua_block {{ ngx.sleep(0.02) }} }} }}
    server {{ listen 127.0.0.1:{TIER_PORT} backlog=4096; open_file_cache off;
        location /cas/ {{ root {tier}; dav_methods PUT; create_full_put_path on; client_max_body_size 0; }} }}"""
    process = launch_nginx(prefix, http, top, f"http://127.0.0.1:{MIRROR_PORT}/u/000001/avatar.png")
    return process, prefix, tier


def write_manifest(path, entries, primary, mirror=None):
    with open(path, "w") as out:
        out.write("version: 1\n")
        if mirror:
            out.write(f'mirrors:\n  "{primary}/": "{mirror}/"\n')
        out.write("entries:\n")
        for relative, digest in entries:
            out.write(f"  - url: {primary}/{relative}\n    hash: sha256:{digest}\n")


def mirrors(worker, entries, scratch, rounds):
    local = lambda port: f"http://127.0.0.1:{port}"
    manifests = {
        "direct": (local(MIRROR_PORT), None),
        "refused": (local(DEAD_PORT), local(MIRROR_PORT)),
        "sick": (local(SICK_PORT), local(MIRROR_PORT)),
    }
    store = {name: ([], []) for name in manifests}
    for name, (primary, mirror) in manifests.items():
        write_manifest(os.path.join(scratch, name + ".yaml"), entries, primary, mirror)
    cache = os.path.join(scratch, "cache")
    names = list(manifests)
    for round_ in range(rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            shutil.rmtree(cache, ignore_errors=True)
            wall, cpu = timed([worker, "sync", os.path.join(scratch, name + ".yaml"), "--cache-dir", cache, "-q"])
            store[name][0].append(wall)
            store[name][1].append(cpu)
    print(f"\nmirrors: {len(entries)} entries, {rounds} rounds, median of each (fresh cache every run)\n")
    print("| manifest names | wall s | min–max s | CPU s | wall ÷ direct | CPU ÷ direct |")
    print("|---|---|---|---|---|---|")
    base_wall, base_cpu = statistics.median(store["direct"][0]), statistics.median(store["direct"][1])
    for name in names:
        walls, cpus = store[name]
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        print(f"| {name} | {wall:.3f} | {min(walls):.3f}–{max(walls):.3f} | {cpu:.3f} | {wall / base_wall:.2f} | {cpu / base_cpu:.2f} |")
    return {name: statistics.median(store[name][0]) / base_wall for name in ("refused", "sick")}


def together(worker, entries, scratch, prefix, tier, rounds, machines=4, extra=()):
    manifest = os.path.join(scratch, "slow.yaml")
    write_manifest(manifest, entries, f"http://127.0.0.1:{SLOW_PORT}")
    log = os.path.join(prefix, "logs", "origin.log")
    ratios = []
    for _ in range(rounds):
        shutil.rmtree(os.path.join(tier, "cas"), ignore_errors=True)
        os.makedirs(os.path.join(tier, "cas"))
        caches = [os.path.join(scratch, f"machine{n}") for n in range(machines)]
        for cache in caches:
            shutil.rmtree(cache, ignore_errors=True)
        before = sum(1 for _ in open(log)) if os.path.exists(log) else 0
        started = time.perf_counter()
        runs = [subprocess.Popen([worker, "sync", manifest, "--cache-dir", cache, "-q", "--remote-cache",
                                  f"http://127.0.0.1:{TIER_PORT}", *extra], stdout=subprocess.DEVNULL) for cache in caches]
        codes = [run.wait() for run in runs]
        wall = time.perf_counter() - started
        if any(codes):
            raise SystemExit(f"a run failed: {codes}")
        requests = sum(1 for _ in open(log)) - before
        ratios.append(requests / len(entries))
        print(f"  {machines} runs at once: {requests} origin requests for {len(entries)} entries "
              f"({requests / len(entries):.2f}x), {wall:.2f} s", file=sys.stderr, flush=True)
    return ratios


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", default=os.path.join(HERE, "..", ".build", "release", "worker"))
    parser.add_argument("--baseline", help="another build to measure `together` with (before per-run orders)")
    parser.add_argument("--root", default=os.environ.get("WORKER_BENCH_DIR", "/tmp/worker-bench"))
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--only-together", action="store_true", help="skip the mirrors rows")
    parser.add_argument("--together-args", default="", help="more options for the together runs (worker only)")
    args = parser.parse_args()
    worker = os.path.abspath(args.worker)
    subprocess.run(f"python3 {HERE}/corpus.py {args.root} http://127.0.0.1:18181", shell=True, check=True,
                   stdout=subprocess.DEVNULL)
    entries = small_set(args.root)[: args.entries]
    scratch = os.path.join("/dev/shm" if os.path.isdir("/dev/shm") else args.root, f"worker-origins-bench-{os.getpid()}")
    os.makedirs(scratch, exist_ok=True)
    process, prefix, tier = start_nginx(os.path.join(args.root, "www"), scratch)
    try:
        ratios = None if args.only_together else mirrors(worker, entries, scratch, args.rounds)
        builds = [("worker", worker)] + ([("baseline", os.path.abspath(args.baseline))] if args.baseline else [])
        print(f"\ntogether: 4 runs at once on one empty tier, origin 20 ms away, {len(entries)} entries\n")
        print("| build | origin requests ÷ entries, each round | median |")
        print("|---|---|---|")
        shared = {}
        for name, binary in builds:
            print(f"{name}:", file=sys.stderr)
            extra = args.together_args.split() if name == "worker" else []
            found = together(binary, entries, scratch, prefix, tier, max(1, args.rounds // 2 + 1), extra=extra)
            shared[name] = statistics.median(found)
            print(f"| {name} | {', '.join(f'{r:.2f}' for r in found)} | {shared[name]:.2f} |")
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(scratch, ignore_errors=True)
    print("\nchecks:")
    if ratios:
        print(f"  refused primary ÷ direct {ratios['refused']:.2f} (<= 1.2): {'ok' if ratios['refused'] <= 1.2 else 'MISSED'}")
        print(f"  503 primary ÷ direct     {ratios['sick']:.2f} (<= 1.2): {'ok' if ratios['sick'] <= 1.2 else 'MISSED'}")
    print(f"  together: origin requests ÷ entries {shared['worker']:.2f} (<= 1.3): {'ok' if shared['worker'] <= 1.3 else 'MISSED'}")


if __name__ == "__main__":
    main()
