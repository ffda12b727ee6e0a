#!/usr/bin/env python3
"""A signed remote manifest that did not change (issue 64): a warm `worker sync URL --trusted-keys`
against the same warm sync of the manifest as a local file, on tmpfs, nginx on loopback.

N entries (default 10,000) of small files are served by nginx with the manifest and its minisign
signature (made by `minisign -S`); the manifest's `base_url` is the server, so the local file and
the remote one name the same http entries (without it the local file's relative URLs would be
files beside it). Each cache is filled once, then each variant
runs --runs times (alternating, so drift hits all alike):
  local            worker sync M.yaml --cache-dir C1
  local signed     worker sync M.yaml --cache-dir C1 --trusted-keys key.pub   (M.yaml.minisig beside it)
  remote           worker sync http://127.0.0.1:PORT/M.yaml --cache-dir C2
  remote signed    worker sync http://127.0.0.1:PORT/M.yaml --cache-dir C2 --trusted-keys key.pub
Prints the median and fastest wall and the median CPU (user+sys) seconds of each, their ratios to
`local` and to `local signed` (the same signed sync, of the local file), and the
requests nginx logged during the remote runs (the target: one conditional request, a 304).

  python3 Benchmarks/signed_manifest.py [--worker .build-release/release/worker] [--entries 10000] [--runs 7]
"""
import argparse
import hashlib
import os
import resource
import shutil
import socket
import statistics
import subprocess
import tempfile
import time


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def timed(command):
    """(wall, cpu) seconds of one run; the run must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {result.returncode}: {result.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", default=".build-release/release/worker")
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    arguments = parser.parse_args()
    worker = os.path.abspath(arguments.worker)
    root = tempfile.mkdtemp(prefix="signed-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    nginx = None
    try:
        www = os.path.join(root, "www")
        os.makedirs(os.path.join(www, "f"))
        port = free_port()
        lines = ["version: 1", "name: bench", f"base_url: http://127.0.0.1:{port}/", "serial: 1",
                 'expires: "2099-01-01T00:00:00Z"', "entries:"]
        for number in range(arguments.entries):
            body = f"file {number}\n".encode() * (1 + number % 20)
            name = f"f/{number}.txt"
            with open(os.path.join(www, name), "wb") as file:
                file.write(body)
            lines += [f"  - url: {name}", f"    hash: sha256:{hashlib.sha256(body).hexdigest()}"]
        manifest = os.path.join(www, "bench.yaml")
        open(manifest, "w").write("\n".join(lines) + "\n")
        key = os.path.join(root, "key")
        subprocess.run(["minisign", "-G", "-W", "-p", key + ".pub", "-s", key + ".sec"], check=True, capture_output=True)
        subprocess.run(["minisign", "-S", "-s", key + ".sec", "-m", manifest], check=True, capture_output=True)

        prefix = os.path.join(root, "nginx")
        os.makedirs(os.path.join(prefix, "logs"))
        user = "user root;" if os.geteuid() == 0 else ""
        open(os.path.join(prefix, "nginx.conf"), "w").write(f"""{user}
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format short '$request_method $uri $status';
    access_log {prefix}/logs/access.log short;
    client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy; fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;
    server {{ listen 127.0.0.1:{port}; root {www}; }}
}}
""")
        nginx = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-p", prefix, "-c", "nginx.conf",
                                  "-g", "daemon off;"], start_new_session=True)
        url = f"http://127.0.0.1:{port}/bench.yaml"
        for _ in range(100):
            if subprocess.run(["curl", "-sf", "-o", "/dev/null", url]).returncode == 0:
                break
            time.sleep(0.05)
        log = os.path.join(prefix, "logs", "access.log")

        local_cache, remote_cache = os.path.join(root, "c1"), os.path.join(root, "c2")
        trusted = ["--trusted-keys", key + ".pub"]
        common = ["--progress", "never", "--quiet"]
        variants = {
            "local": [worker, "sync", manifest, "--cache-dir", local_cache] + common,
            "local signed": [worker, "sync", manifest, "--cache-dir", local_cache] + trusted + common,
            "remote": [worker, "sync", url, "--cache-dir", remote_cache] + common,
            "remote signed": [worker, "sync", url, "--cache-dir", remote_cache] + trusted + common,
        }
        timed(variants["local"])
        timed(variants["remote signed"])
        results = {name: [] for name in variants}
        remote_requests = []
        for _ in range(arguments.runs):
            for name, command in variants.items():
                seen = len(open(log).read().splitlines())
                results[name].append(timed(command))
                if name == "remote signed":
                    remote_requests.append(open(log).read().splitlines()[seen:])
        def figures(name):
            runs = results[name]
            return (statistics.median(w for w, _ in runs), min(w for w, _ in runs), statistics.median(c for _, c in runs))
        base, signed = figures("local"), figures("local signed")
        print(f"{arguments.entries} entries, warm, {arguments.runs} runs each.\n")
        print("| variant | wall median s | wall min s | CPU median s | ÷ local (median, min, CPU) | ÷ local signed |")
        print("|---|---:|---:|---:|---|---|")
        for name in results:
            wall, fastest, cpu = figures(name)
            print(f"| {name} | {wall:.3f} | {fastest:.3f} | {cpu:.3f} | {wall / base[0]:.2f}, {fastest / base[1]:.2f}, {cpu / base[2]:.2f}"
                  f" | {wall / signed[0]:.2f}, {fastest / signed[1]:.2f}, {cpu / signed[2]:.2f} |")
        shapes = sorted({" · ".join(requests) for requests in remote_requests})
        print(f"\nRequests of a remote warm run: {'; '.join(f'`{shape}`' for shape in shapes)}")
    finally:
        if nginx:
            nginx.terminate()
            nginx.wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
