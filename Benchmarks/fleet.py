#!/usr/bin/env python3
"""The fleet job (issue 76): one publisher's signed manifest of N files (default 500) on nginx,
one reader following it — worker against the peers a fleet would otherwise script — cold, warm,
and after the publisher changed 10 files, on tmpfs, nginx on loopback.

  worker           worker sync URL/fleet.yaml --trusted-keys key.pub --tree T
  wget + minisign  wget the manifest and its .minisig, minisign -V, then wget -N -x -i (the URLs),
                   sha256sum -c of the files the manifest lists
  rclone + minisign  rclone copy of the published folder (its http backend), minisign -V, sha256sum -c
  python-tuf       ngclient's Updater over a TUF repository of the same files (Benchmarks/tuf_fleet.py;
                   with --tuf-python, an interpreter that has `tuf` and `cryptography` from PyPI)

Each run makes a fresh publisher and fresh destinations; per state it prints the median wall and
CPU (user+sys) seconds, the requests nginx logged and the body bytes it sent, and worker's ratios.

  python3 Benchmarks/fleet.py [--worker .build-release/release/worker] [--files 500] [--runs 3] [--tuf-python PY]
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

TUF_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tuf_fleet.py")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def timed(command, cwd=None):
    """(wall, cpu) seconds of one shell command; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, shell=True, capture_output=True, text=True, cwd=cwd)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{command} exited {result.returncode}: {result.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


class Publisher:
    def __init__(self, root, files, tuf_python=None):
        self.root, self.files, self.tuf_python = root, files, tuf_python
        self.www = os.path.join(root, "www")
        os.makedirs(os.path.join(self.www, "files"))
        self.key = os.path.join(root, "key")
        subprocess.run(["minisign", "-G", "-W", "-p", self.key + ".pub", "-s", self.key + ".sec"], check=True, capture_output=True)
        self.port = free_port()
        self.prefix = os.path.join(root, "nginx")
        os.makedirs(os.path.join(self.prefix, "logs"))
        user = "user root;" if os.geteuid() == 0 else ""
        open(os.path.join(self.prefix, "nginx.conf"), "w").write(f"""{user}
worker_processes 1;
pid {self.prefix}/nginx.pid;
error_log {self.prefix}/logs/error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format short '$request_method $uri $status $body_bytes_sent';
    access_log {self.prefix}/logs/access.log short;
    client_body_temp_path {self.prefix}/body; proxy_temp_path {self.prefix}/proxy; fastcgi_temp_path {self.prefix}/fastcgi;
    uwsgi_temp_path {self.prefix}/uwsgi; scgi_temp_path {self.prefix}/scgi;
    server {{ listen 127.0.0.1:{self.port}; root {self.www}; autoindex on; }}
}}
""")
        self.nginx = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-p", self.prefix, "-c", "nginx.conf",
                                       "-g", "daemon off;"], start_new_session=True)
        self.url = f"http://127.0.0.1:{self.port}/fleet.yaml"
        self.log = os.path.join(self.prefix, "logs", "access.log")
        self.serial = 0

    def publish(self, version_of):
        """Writes each file (its version from version_of(number)) and a signed manifest of them."""
        self.serial += 1
        lines = ["version: 1", "name: fleet", f"serial: {self.serial}", "entries:"]
        for number in range(self.files):
            body = f"file {number}, version {version_of(number)}\n".encode() * (20 + number % 40 + version_of(number))
            path = os.path.join(self.www, "files", f"{number}.txt")
            if not os.path.exists(path) or open(path, "rb").read() != body:
                open(path, "wb").write(body)
            lines += [f"  - url: files/{number}.txt", f"    hash: sha256:{hashlib.sha256(body).hexdigest()}"]
        manifest = os.path.join(self.root, "fleet.yaml")
        open(manifest, "w").write("\n".join(lines) + "\n")
        if os.path.exists(manifest + ".minisig"):
            os.remove(manifest + ".minisig")
        subprocess.run(["minisign", "-S", "-s", self.key + ".sec", "-m", manifest], check=True, capture_output=True)
        # The signature first, then the manifest (README, "Publishing a signed manifest").
        shutil.copy(manifest + ".minisig", os.path.join(self.www, "fleet.yaml.minisig"))
        shutil.copy(manifest, os.path.join(self.www, "fleet.yaml"))
        if self.tuf_python:
            subprocess.run([self.tuf_python, TUF_SCRIPT, "publish", self.www, os.path.join(self.root, "tuf-keys")], check=True)
        time.sleep(1.1)   # nginx's ETag is the size and the second of the mtime

    def logged(self):
        return open(self.log).read().splitlines()

    def stop(self):
        self.nginx.terminate()
        self.nginx.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", default=".build-release/release/worker")
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tuf-python")
    arguments = parser.parse_args()
    worker = os.path.abspath(arguments.worker)
    results = {}   # (tool, state) -> [(wall, cpu, requests, bytes)]
    for _ in range(arguments.runs):
        root = tempfile.mkdtemp(prefix="fleet-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        publisher = Publisher(root, arguments.files, arguments.tuf_python)
        try:
            for _ in range(100):
                if subprocess.run(["curl", "-sf", "-o", "/dev/null", f"http://127.0.0.1:{publisher.port}/"]).returncode == 0:
                    break
                time.sleep(0.05)
            base = f"http://127.0.0.1:{publisher.port}"
            check = (f"minisign -Vq -p {publisher.key}.pub -m fleet.yaml -x fleet.yaml.minisig && "
                     "awk '/url:/{u=$3} /hash:/{sub(\"sha256:\",\"\",$2); print $2\"  \"u}' fleet.yaml | sha256sum -c --quiet -")
            tools = {
                "worker": (os.path.join(root, "worker"),
                           f"{worker} sync {publisher.url} --cache-dir cache --trusted-keys {publisher.key}.pub --tree tree "
                           "--progress never --quiet"),
                "wget + minisign": (os.path.join(root, "wget"),
                                    f"wget -q -N {base}/fleet.yaml {base}/fleet.yaml.minisig && "
                                    f"minisign -Vq -p {publisher.key}.pub -m fleet.yaml -x fleet.yaml.minisig && "
                                    f"awk -v b={base}/ '/url:/{{print b $3}}' fleet.yaml > urls && "
                                    "wget -q -N -x -nH -i urls && "
                                    "awk '/url:/{u=$3} /hash:/{sub(\"sha256:\",\"\",$2); print $2\"  \"u}' fleet.yaml "
                                    "| sha256sum -c --quiet -"),
                "rclone + minisign": (os.path.join(root, "rclone"),
                                      f"rclone copy --http-url {base} :http: . --exclude 'tuf/**' --transfers 8 -q && {check}"),
            }
            if arguments.tuf_python:
                tools["python-tuf"] = (os.path.join(root, "tuf"),
                                       f"{arguments.tuf_python} {TUF_SCRIPT} fetch . {base} {arguments.files}")
            for folder, _ in tools.values():
                os.makedirs(folder)
            publisher.publish(lambda number: 1)
            if arguments.tuf_python:
                shutil.copy(os.path.join(publisher.www, "tuf", "metadata", "1.root.json"), os.path.join(root, "tuf", "root.json"))
            changed = set(range(0, arguments.files, max(1, arguments.files // 10)))
            for state in ("cold", "warm", "10 changed"):
                if state == "10 changed":
                    publisher.publish(lambda number: 2 if number in changed else 1)
                for tool, (folder, command) in tools.items():
                    seen = len(publisher.logged())
                    wall, cpu = timed(command, cwd=folder)
                    asked = publisher.logged()[seen:]
                    sent = sum(int(line.split()[3]) for line in asked)
                    results.setdefault((tool, state), []).append((wall, cpu, len(asked), sent))
        finally:
            publisher.stop()
            shutil.rmtree(root, ignore_errors=True)

    print(f"The fleet job: {arguments.files} files, medians of {arguments.runs} runs.\n")
    print("| state | tool | wall s | CPU s | requests | bytes sent | worker's wall ÷ | CPU ÷ | requests ÷ |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for state in ("cold", "warm", "10 changed"):
        ours = results[("worker", state)]
        ours_med = [statistics.median(run[i] for run in ours) for i in range(4)]
        for tool in ("worker", "wget + minisign", "rclone + minisign", "python-tuf"):
            runs = results.get((tool, state))
            if not runs:
                continue
            med = [statistics.median(run[i] for run in runs) for i in range(4)]
            ratio = lambda i: f"{ours_med[i] / med[i]:.2f}" if med[i] else "-"
            print(f"| {state} | {tool} | {med[0]:.3f} | {med[1]:.3f} | {med[2]:,.0f} | {med[3]:,.0f} | {ratio(0)} | {ratio(1)} | {ratio(2)} |")


if __name__ == "__main__":
    main()
