#!/usr/bin/env python3
"""The GitHub Action's job (action.yml) against what a workflow does without it: actions/cache plus a
curl loop. N pinned files (default 500, 1–64 KiB) on nginx on loopback; both run step by step by
Tests/tools/run-action.py (the same runner, the same played actions/cache), on tmpfs.

  worker      the action with the build restored (its binary: --worker)
  curl loop   a composite action of actions/cache/restore keyed by the manifest's SHA-256, a loop of
              one `curl -fsS -o` per file missing, one `sha256sum --check` of every file, and
              actions/cache/save when the restore was not an exact hit

States: cold (empty cache store), warm (the cache the cold run saved); per state the median wall
and CPU (user+sys) seconds of the whole job over --runs, the requests nginx logged, worker's ratios;
then the saves each makes over 10 runs with nothing changed.

  python3 Benchmarks/action.py [--worker .build-release/release/worker] [--files 500] [--runs 3]
"""
import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "Tests", "tools", "run-action.py")
CACHE_PIN = "actions/cache/restore@27d5ce7f107fe9357f9df03efb73ab90386fccae"
SAVE_PIN = "actions/cache/save@27d5ce7f107fe9357f9df03efb73ab90386fccae"

CURL_ACTION = f"""name: curl loop
description: actions/cache and a curl loop over the manifest's URLs
inputs:
  manifests:
    default: manifests/*.yaml
runs:
  using: composite
  steps:
    - name: Key
      id: key
      shell: bash
      run: echo "key=curl-$(cat manifests/*.yaml | sha256sum | cut -c1-32)" >>"$GITHUB_OUTPUT"
    - name: Restore
      id: restore
      uses: {CACHE_PIN}
      with:
        path: files
        key: ${{{{ steps.key.outputs.key }}}}
    - name: Download
      shell: bash
      run: |
        mkdir -p files
        : >sums
        url=""
        while read -r word value; do
          case "$word" in
            -) url=$value ;;
            hash:) name=${{url##*/}}; echo "${{value#sha256:}}  files/$name" >>sums
                   [ -f "files/$name" ] || curl -fsS -o "files/$name" "$url" ;;
          esac
        done < <(sed -n 's/^ *\\(- \\)url: /- /p; s/^ *hash: /hash: /p' manifests/*.yaml)
        sha256sum --check --quiet --strict sums
    - name: Save
      if: steps.restore.outputs.cache-hit != 'true'
      uses: {SAVE_PIN}
      with:
        path: files
        key: ${{{{ steps.key.outputs.key }}}}
"""


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Origin:
    def __init__(self, root, files):
        self.www = os.path.join(root, "www")
        os.makedirs(os.path.join(self.www, "f"))
        generator = random.Random(7)
        self.files = []
        for number in range(files):
            body = generator.randbytes(generator.randint(1024, 65536))
            name = f"file-{number:05}.bin"
            open(os.path.join(self.www, "f", name), "wb").write(body)
            self.files.append((name, hashlib.sha256(body).hexdigest()))
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
    log_format short '$request_method $uri $status';
    access_log {self.prefix}/logs/access.log short;
    client_body_temp_path {self.prefix}/body; proxy_temp_path {self.prefix}/proxy; fastcgi_temp_path {self.prefix}/fastcgi;
    uwsgi_temp_path {self.prefix}/uwsgi; scgi_temp_path {self.prefix}/scgi;
    server {{ listen 127.0.0.1:{self.port}; root {self.www}; }}
}}
""")
        self.nginx = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-p", self.prefix, "-c", "nginx.conf",
                                       "-g", "daemon off;"], start_new_session=True)
        self.log = os.path.join(self.prefix, "logs", "access.log")
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)

    def manifest(self):
        return "version: 1\nname: assets\nentries:\n" + "".join(
            f"  - url: http://127.0.0.1:{self.port}/f/{name}\n    hash: sha256:{digest}\n" for name, digest in self.files)

    def requests(self):
        return sum(1 for _ in open(self.log)) if os.path.exists(self.log) else 0

    def stop(self):
        self.nginx.terminate()
        self.nginx.wait()


class Job:
    """One tool's job: its action folder, its workspace, and the cache store its runs share."""

    def __init__(self, root, name, action, seed=None):
        self.root, self.name, self.action, self.seed = root, name, action, seed
        self.store = os.path.join(root, name, "caches")
        self.number = 0

    def run(self, manifest):
        self.number += 1
        # One workspace (the played cache restores to the paths it saved), emptied as a new runner's.
        workspace = os.path.join(self.root, self.name, "workspace")
        temp = os.path.join(self.root, self.name, f"temp-{self.number}")
        shutil.rmtree(workspace, ignore_errors=True)
        os.makedirs(os.path.join(workspace, "manifests"))
        os.makedirs(temp)
        open(os.path.join(workspace, "manifests", "assets.yaml"), "w").write(manifest)
        command = [sys.executable, RUNNER, self.action, "--workspace", workspace, "--runner-temp", temp,
                   "--cache-store", self.store, "--summary", os.path.join(temp, "summary.md"), "--run-id", str(self.number)]
        if self.seed:
            command += ["--seed", f"build-cache={self.seed}"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, cwd=workspace)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        outcome = json.loads(result.stdout.strip().splitlines()[-1]) if result.stdout.strip() else {"failed": True}
        if outcome.get("failed"):
            raise SystemExit(f"{self.name} run {self.number} failed:\n{result.stderr[-3000:]}")
        shutil.rmtree(temp)
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    def saves(self):
        return len([name for name in os.listdir(self.store) if name.endswith(".tar")]) if os.path.isdir(self.store) else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", default=os.path.join(ROOT, ".build-release", "release", "worker"))
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    root = tempfile.mkdtemp(prefix="worker-action-bench-", dir=base)
    origin = Origin(root, arguments.files)
    manifest = origin.manifest()
    seed = os.path.join(root, "build")
    os.makedirs(seed)
    shutil.copy(arguments.worker, os.path.join(seed, "worker"))
    curl_action = os.path.join(root, "curl-action")
    os.makedirs(curl_action)
    open(os.path.join(curl_action, "action.yml"), "w").write(CURL_ACTION)
    version = subprocess.run([arguments.worker, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"{arguments.files} files ({sum(os.path.getsize(os.path.join(origin.www, 'f', n)) for n, _ in origin.files) / 1e6:.1f} MB)"
          f" on nginx, {version}, {os.cpu_count()} cores, tmpfs; median of {arguments.runs} runs.\n")
    tools = {"worker": (ROOT, seed), "curl loop": (curl_action, None)}
    figures = {}
    try:
        for tool, (action, tool_seed) in tools.items():
            for state in ("cold", "warm"):
                walls, cpus, requests = [], [], []
                for run in range(arguments.runs):
                    job = Job(root, f"{tool.replace(' ', '-')}-{state}-{run}", action, tool_seed)
                    if state == "warm":
                        job.run(manifest)
                    asked = origin.requests()
                    wall, cpu = job.run(manifest)
                    walls.append(wall)
                    cpus.append(cpu)
                    requests.append(origin.requests() - asked)
                figures[(tool, state)] = (statistics.median(walls), statistics.median(cpus), statistics.median(requests))
        print("| job | state | wall s | CPU s | requests |\n|---|---|---:|---:|---:|")
        for (tool, state), (wall, cpu, asked) in figures.items():
            print(f"| {tool} | {state} | {wall:.2f} | {cpu:.2f} | {asked:.0f} |")
        print()
        for state in ("cold", "warm"):
            worker, curl = figures[("worker", state)], figures[("curl loop", state)]
            print(f"- {state}: worker / curl loop wall {worker[0] / curl[0]:.2f}x, CPU {worker[1] / curl[1]:.2f}x")
        for tool, (action, tool_seed) in tools.items():
            job = Job(root, f"{tool.replace(' ', '-')}-ten", action, tool_seed)
            for _ in range(10):
                job.run(manifest)
            print(f"- saves over 10 runs with nothing changed: {tool} {job.saves()}")
    finally:
        origin.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
