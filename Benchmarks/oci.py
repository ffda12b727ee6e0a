#!/usr/bin/env python3
"""An OCI artifact from a local registry (issue 62): worker against `skopeo copy` to a `dir:` and
ORAS's Python client, side by side, on tmpfs.

Debian's docker-registry (distribution 2.8) runs anonymously on loopback; an artifact of --files
files of --size bytes each is pushed with ORAS's Python client (`oras` from PyPI, as
scripts/lib/venvs.sh pins it) as `bench/files:v1`. Then, --runs times each (alternating, so drift
hits all alike):
  worker cold    worker sync M.yaml --cache-dir EMPTY --tree T   (M.yaml: the tag; resolved, every layer fetched)
  worker warm    the same into the filled cache (the tag read again; nothing fetched)
  skopeo         skopeo copy --src-tls-verify=false docker://REG/bench/files:v1 dir:EMPTY
  oras cold      OrasClient.pull(target, outdir=EMPTY)
  oras warm      the same into the folder it filled
  mirror cold    worker cold through a pull-through mirror (a second docker-registry with
                 `proxy: remoteurl`, started empty for the run: it fetches from the registry),
                 `--rewrite oci://REG/=oci://MIRROR/ --rewrite-strict`
  mirror warm    worker warm through the mirror (filled)
  oras mirror    ORAS's client pulling the tag from the filled mirror, into an empty folder
Prints the median wall and CPU (user+sys) seconds of each and worker's ratios against the peers.

  python3 Benchmarks/oci.py [--worker .build-release/release/worker] [--files 1000] [--size 10240] [--runs 5]
    [--python ~/.cache/worker-test-venv/bin/python]
"""
import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_registry(root, name, extra=""):
    """A docker-registry on a free loopback port with storage ROOT/NAME (emptied first), and its address."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    storage = os.path.join(root, name)
    shutil.rmtree(storage, ignore_errors=True)
    config = os.path.join(root, name + ".yml")
    open(config, "w").write(f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {storage}\n"
                            f"http:\n  addr: {address}\n{extra}")
    process = subprocess.Popen(["docker-registry", "serve", config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if subprocess.run(["curl", "-sf", "-o", "/dev/null", f"http://{address}/v2/"]).returncode == 0:
            break
        time.sleep(0.05)
    return process, address


def stop(process):
    if process:
        process.terminate()
        process.wait()


def timed(command, cwd=None):
    """(wall, cpu) seconds of one run; the run must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {result.returncode}: {result.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", default=".build-release/release/worker")
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--size", type=int, default=10240)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", default=os.path.expanduser("~/.cache/worker-test-venv/bin/python"))
    arguments = parser.parse_args()
    worker = os.path.abspath(arguments.worker)
    root = tempfile.mkdtemp(prefix="oci-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    registry = mirror = None
    try:
        registry, address = start_registry(root, "storage")
        files = os.path.join(root, "files")
        os.makedirs(files)
        names = []
        for number in range(arguments.files):
            name = f"f{number:05d}.bin"
            with open(os.path.join(files, name), "wb") as handle:
                handle.write(os.urandom(arguments.size))
            names.append(name)
        target = f"{address}/bench/files:v1"
        started = time.perf_counter()
        subprocess.run([arguments.python, "-c", "import sys, oras.client\n"
                        "client = oras.client.OrasClient(hostname=sys.argv[1], insecure=True)\n"
                        "sys.exit(0 if client.push(target=sys.argv[2], files=sys.argv[3:]).status_code in (200, 201) else 1)",
                        address, target] + names, cwd=files, check=True, capture_output=True)
        print(f"pushed {arguments.files} files of {arguments.size} B with ORAS in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        manifest = os.path.join(root, "m.yaml")
        open(manifest, "w").write(f"version: 1\nentries:\n  - url: oci://{target}\n    path: files\n")
        pull = ("import sys, oras.client\nclient = oras.client.OrasClient(hostname=sys.argv[1], insecure=True)\n"
                "client.pull(target=sys.argv[2], outdir=sys.argv[3])")

        def fresh(name):
            path = os.path.join(root, name)
            shutil.rmtree(path, ignore_errors=True)
            return path

        warm_cache, warm_tree, oras_warm = os.path.join(root, "wc"), os.path.join(root, "wt"), os.path.join(root, "ow")
        quiet = ["--progress", "never", "--quiet"]
        proxy = f"proxy:\n  remoteurl: http://{address}\n"
        mirror, mirror_address = start_registry(root, "mirror", proxy)

        def empty_mirror():
            """A mirror that holds nothing yet (for `mirror cold`); its address."""
            nonlocal mirror, mirror_address
            stop(mirror)
            mirror, mirror_address = start_registry(root, "mirror", proxy)
            return mirror_address

        def through(address_of_mirror):
            return ["--rewrite", f"oci://{address}/=oci://{address_of_mirror}/", "--rewrite-strict"]

        mirror_cache, mirror_tree = os.path.join(root, "mc"), os.path.join(root, "mt")
        variants = {
            "worker cold": lambda: [worker, "sync", manifest, "--cache-dir", fresh("cc"), "--tree", fresh("ct")] + quiet,
            "worker warm": lambda: [worker, "sync", manifest, "--cache-dir", warm_cache, "--tree", warm_tree] + quiet,
            "skopeo": lambda: ["skopeo", "copy", "-q", "--src-tls-verify=false", f"docker://{target}", "dir:" + fresh("sk")],
            "oras cold": lambda: [arguments.python, "-c", pull, address, target, fresh("oc")],
            "oras warm": lambda: [arguments.python, "-c", pull, address, target, oras_warm],
            "mirror cold": lambda: [worker, "sync", manifest, "--cache-dir", fresh("xc"), "--tree", fresh("xt")] + quiet
            + through(empty_mirror()),
            "mirror warm": lambda: [worker, "sync", manifest, "--cache-dir", mirror_cache, "--tree", mirror_tree] + quiet
            + through(mirror_address),
            "oras mirror": lambda: [arguments.python, "-c", pull, mirror_address, target.replace(address, mirror_address), fresh("om")],
        }
        timed(variants["worker warm"]())
        timed(variants["oras warm"]())
        timed(variants["mirror warm"]())
        assert len(os.listdir(os.path.join(mirror_tree, "files"))) == arguments.files, "the mirror served every file"
        assert len(os.listdir(os.path.join(warm_tree, "files"))) == arguments.files, "the tree holds every file"
        results = {name: [] for name in variants}
        for _ in range(arguments.runs):
            for name, make in variants.items():
                results[name].append(timed(make()))
        medians = {name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)) for name, runs in results.items()}
        print(f"{arguments.files} files of {arguments.size} B, medians of {arguments.runs} runs each.\n")
        print("| run | wall s | CPU s |\n|---|---:|---:|")
        for name, (wall, cpu) in medians.items():
            print(f"| {name} | {wall:.3f} | {cpu:.3f} |")
        print()
        for peer in ("skopeo", "oras cold"):
            wall, cpu = medians[peer]
            print(f"- worker cold ÷ {peer}: wall {medians['worker cold'][0] / wall:.2f}, CPU {medians['worker cold'][1] / cpu:.2f}")
        wall, cpu = medians["oras warm"]
        print(f"- worker warm ÷ oras warm: wall {medians['worker warm'][0] / wall:.2f}, CPU {medians['worker warm'][1] / cpu:.2f}")
        wall, cpu = medians["oras mirror"]
        print(f"- mirror warm ÷ oras mirror: wall {medians['mirror warm'][0] / wall:.2f}, CPU {medians['mirror warm'][1] / cpu:.2f}")
    finally:
        stop(registry)
        stop(mirror)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
