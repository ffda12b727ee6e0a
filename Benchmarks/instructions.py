#!/usr/bin/env python3
"""Instructions counted with callgrind (issue 63, item 4): worker builds side by side with
`curl --parallel --parallel-max 16` on the same N avatar-like files (scale.py's corpus, 100 B to
2 KB) from a private nginx on loopback, the cache on tmpfs. Instruction counts do not move between
runs as times do (two runs of one binary agree within about 0.3 %).

  python3 Benchmarks/instructions.py --worker NEW [--worker OLD …] [--entries 2000] [--runs 2] [--report]

Give builds linked with `--static-swift-stdlib` (as Benchmarks/results.sh builds worker): under
valgrind a build linked to the toolchain's libdispatch faults in its signal thread. Each build is
copied with `strip -g` (valgrind 3.19 cannot read the release binary's debug information). Prints each run's total, the SHA-256 rounds in it, and the ratio to curl's — also
with the hash counted as this machine runs it: valgrind's CPU has no SHA extensions (`cpuid` leaf
7, EBX bit 29, reads 0 under valgrind), so BoringSSL hashes with its AVX code there, 2,094
instructions a 64-byte block, where the machine runs its SHA-NI loop of 170 (`objdump -d`;
BENCHMARKS.md as of 278b2e0, "the coordinator as a value").
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import launch_nginx  # noqa: E402
from scale import tiny_set, write_manifest  # noqa: E402

PORT = 18491
AVX_BLOCK, HW_BLOCK = 2094, 170


def callgrind(command, out):
    """The instructions a run executed, and those in BoringSSL's AVX SHA-256 rounds."""
    process = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if process.returncode not in (0, 1):
        raise SystemExit(f"failed ({process.returncode}): {' '.join(command)}\n{process.stderr[-2000:]}")
    total = int(re.search(r"Collected : (\d+)", process.stderr).group(1))
    annotated = subprocess.run(["callgrind_annotate", "--threshold=100", out], capture_output=True, text=True).stdout
    sha = sum(int(match.group(1).replace(",", ""))
              for match in re.finditer(r"^\s*([\d,]+) .*sha256_block_data_order_avx", annotated, re.MULTILINE))
    return total, sha


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", action="append", required=True, help="a build; give several to compare them")
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--report", action="store_true", help="also each build with --report R.json")
    parser.add_argument("--root", default=os.environ.get("WORKER_BENCH_DIR", "/tmp/worker-bench"))
    args = parser.parse_args()
    if not shutil.which("valgrind"):
        raise SystemExit("needs valgrind (apt-get install -y valgrind)")
    entries = tiny_set(args.root, args.entries)
    scratch = f"/dev/shm/worker-instructions-{os.getpid()}"
    os.makedirs(scratch)
    www = os.path.join(args.root, "www")
    base = f"http://127.0.0.1:{PORT}"
    nginx = launch_nginx(os.path.join(scratch, "nginx"), f"    server {{ listen 127.0.0.1:{PORT}; root {www}; }}", "",
                         f"{base}/{entries[0][0]}")
    try:
        manifest = os.path.join(scratch, "m.yaml")
        write_manifest(manifest, entries, base)
        curl_config = os.path.join(scratch, "curl.txt")
        with open(curl_config, "w") as out:
            for relative, _ in entries:
                out.write(f'url = "{base}/{relative}"\noutput = "{scratch}/curl/{relative}"\n')
        builds = []
        for number, worker in enumerate(args.worker):
            stripped = os.path.join(scratch, f"worker{number}")
            subprocess.run(["strip", "-g", "-o", stripped, worker], check=True)
            builds.append((worker, stripped))
        rows = []
        for run in range(args.runs):
            for worker, stripped in builds:
                for report in ([False, True] if args.report else [False]):
                    cache = os.path.join(scratch, "cache")
                    shutil.rmtree(cache, ignore_errors=True)
                    command = [stripped, "sync", manifest, "--cache-dir", cache, "--quiet", "--progress", "never"]
                    if report:
                        command += ["--report", os.path.join(scratch, "r.json")]
                    total, sha = callgrind(command, os.path.join(scratch, "cg.out"))
                    rows.append((f"{worker}{' --report' if report else ''}", total, sha))
                    print(f"{rows[-1][0]} (run {run + 1}): {total / 1e6:.1f} M", file=sys.stderr, flush=True)
        shutil.rmtree(os.path.join(scratch, "curl"), ignore_errors=True)
        curl, _ = callgrind(["curl", "--parallel", "--parallel-max", "16", "--create-dirs", "-sS", "-K", curl_config],
                            os.path.join(scratch, "cg.out"))
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{args.entries} files ({sum(os.path.getsize(os.path.join(www, r)) for r, _ in entries):,} bytes); "
          f"curl --parallel-max 16: {curl / 1e6:.1f} M instructions\n")
    print("| build | run | M instructions | SHA-256 (AVX) M | ÷ curl | ÷ curl, the hash as SHA-NI |")
    print("|---|---|---|---|---|---|")
    seen = {}
    for name, total, sha in rows:
        seen[name] = seen.get(name, 0) + 1
        hw = total - sha + sha * HW_BLOCK / AVX_BLOCK
        print(f"| {name} | {seen[name]} | {total / 1e6:.1f} | {sha / 1e6:.1f} | {total / curl:.3f} | {hw / curl:.3f} |")


if __name__ == "__main__":
    main()
