#!/usr/bin/env python3
"""`sync --tree` against `cp -al` and a plain warm sync, on tmpfs (the program's own cost).

10,000 local files of 2 KiB, synced once into a cache. Then, in rounds (plain and unchanged three
times each, in turn):
  plain      worker sync M --cache-dir C                 (warm: nothing to download)
  unchanged  worker sync M --cache-dir C --tree T        (the tree published already: no switch)
  changed    worker sync Mk --cache-dir C --tree T       (every file at a new path: a new version of
                                                          10,000 hard links, then the switch)
  cp -al     cp -al T/. Dk                              (the same 10,000 links, by coreutils)
Prints the median wall and CPU (user+sys) of each and the ratios the issue sets:
  changed publish (changed - plain) / cp -al  <= 2
  unchanged / plain                           <= 1.1

  python3 Benchmarks/tree.py [--worker .build/release/worker] [--rounds 7] [--files 10000]
"""
import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(command):
    """Wall seconds and user+sys CPU seconds of one run of `command` (must exit 0)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{process.stderr.read().decode()}")
    return wall, usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", default=os.path.join(HERE, "..", ".build", "release", "worker"))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--root", default="/dev/shm/worker-tree-bench")
    args = parser.parse_args()
    worker = os.path.abspath(args.worker)
    shutil.rmtree(args.root, ignore_errors=True)
    site = os.path.join(args.root, "site")
    os.makedirs(os.path.join(site, "f"))
    hashes = []
    for index in range(args.files):
        body = hashlib.sha256(str(index).encode()).digest() * 64
        with open(os.path.join(site, "f", f"{index}.bin"), "wb") as out:
            out.write(body)
        hashes.append(hashlib.sha256(body).hexdigest())

    def manifest(name, prefix):
        path = os.path.join(site, name)
        with open(path, "w") as out:
            out.write("version: 1\nentries:\n")
            for index, digest in enumerate(hashes):
                out.write(f"  - url: f/{index}.bin\n    hash: sha256:{digest}\n")
                if prefix:
                    out.write(f"    path: {prefix}/{index}.bin\n")
        return path

    cache = os.path.join(args.root, "cache")
    tree = os.path.join(args.root, "tree")
    plain_manifest = manifest("plain.yaml", None)
    run([worker, "sync", plain_manifest, "--cache-dir", cache, "-q"])
    run([worker, "sync", plain_manifest, "--cache-dir", cache, "-q", "--tree", tree])
    changed = [manifest(f"r{round}.yaml", f"r{round}") for round in range(args.rounds)]
    rows = {"plain": [], "unchanged": [], "changed": [], "cp -al": []}
    for round in range(args.rounds):
        # Back at the plain tree (built in an earlier round or at the start, so no build here),
        # then plain and unchanged runs in turn, three of each.
        run([worker, "sync", plain_manifest, "--cache-dir", cache, "-q", "--tree", tree])
        for _ in range(3):
            rows["plain"].append(run([worker, "sync", plain_manifest, "--cache-dir", cache, "-q"]))
            rows["unchanged"].append(run([worker, "sync", plain_manifest, "--cache-dir", cache, "-q", "--tree", tree]))
        rows["changed"].append(run([worker, "sync", changed[round], "--cache-dir", cache, "-q", "--tree", tree]))
        copy = os.path.join(args.root, f"copy{round}")
        rows["cp -al"].append(run(["cp", "-al", os.path.realpath(tree) + "/.", copy]))
        shutil.rmtree(copy)

    median = {name: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
              for name, values in rows.items()}
    print(f"{args.files} files of 2 KiB, tmpfs ({args.root}), {args.rounds} rounds, medians")
    print("| run | wall s | CPU s (user+sys) |")
    print("|---|---|---|")
    for name, (wall, cpu) in median.items():
        print(f"| {name} | {wall:.3f} | {cpu:.3f} |")
    publish_wall = median["changed"][0] - median["plain"][0]
    publish_cpu = median["changed"][1] - median["plain"][1]
    print(f"publish of a changed tree (changed - plain): {publish_wall:.3f} s wall, {publish_cpu:.3f} s CPU")
    print(f"publish ÷ cp -al: wall {publish_wall / median['cp -al'][0]:.2f}, CPU {publish_cpu / median['cp -al'][1]:.2f} (target <= 2)")
    print(f"changed sync --tree ÷ (plain sync + cp -al): wall "
          f"{median['changed'][0] / (median['plain'][0] + median['cp -al'][0]):.2f}")
    print(f"unchanged sync --tree ÷ plain sync: wall {median['unchanged'][0] / median['plain'][0]:.2f}, "
          f"CPU {median['unchanged'][1] / median['plain'][1]:.2f} (target <= 1.1)")
    shutil.rmtree(args.root, ignore_errors=True)


if __name__ == "__main__":
    main()
