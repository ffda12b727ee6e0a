#!/usr/bin/env python3
"""Files on an SFTP server (issue 81): worker against `rclone copy` (its sftp backend) and curl with
sftp:// URLs, side by side, on tmpfs.

Debian's openssh-server runs on a free loopback port with a host key, a user key and an sshd_config
of the benchmark's own (internal-sftp). It serves --small files of 1-16 KiB and --large files of
--large-size bytes. Then, --runs times each (taking turns, so drift hits all alike):
  worker cold   worker sync M.yaml --cache-dir EMPTY --tree T   (M.yaml: every file, pinned)
  worker warm   the same into the filled cache (nothing asked: the pins are in the index)
  rclone cold   rclone copy :sftp:ROOT EMPTY (its defaults: 4 transfers, 8 checkers; disable_hashcheck:
                the server has no shell to run md5sum in, which rclone would try for every file)
  rclone warm   the same into the folder it filled (every file's size and time compared)
  curl          one curl with every URL (-K config; one SSH connection, one file at a time)
Prints the median wall and CPU (user+sys) seconds of each and worker's ratios against the peers.

  python3 Benchmarks/sftp.py [--worker .build-release/release/worker] [--small 2000] [--large 5]
    [--large-size 33554432] [--runs 3]
"""
import argparse
import hashlib
import os
import random
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


def timed(command, environment=None):
    """(wall, cpu) seconds of one run; the run must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=environment)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} … exited {result.returncode}: {result.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def start_sshd(folder):
    """sshd on a free loopback port; (process, port, user key, known_hosts)."""
    for name in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{folder}/{name}"], check=True)
    shutil.copy(f"{folder}/user_key.pub", f"{folder}/authorized_keys")
    os.makedirs("/run/sshd", exist_ok=True)
    port = free_port()
    config = f"{folder}/sshd_config"
    open(config, "w").write(f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder}/host_key\n"
                            f"AuthorizedKeysFile {folder}/authorized_keys\nPidFile {folder}/sshd.pid\nUsePAM no\n"
                            "StrictModes no\nPasswordAuthentication no\nMaxStartups 100\nMaxSessions 100\n"
                            "Subsystem sftp internal-sftp\n")
    process = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    host_key = " ".join(open(f"{folder}/host_key.pub").read().split()[:2])
    known_hosts = f"{folder}/known_hosts"
    open(known_hosts, "w").write(f"[127.0.0.1]:{port} {host_key}\n")
    return process, port, f"{folder}/user_key", known_hosts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", default=".build-release/release/worker")
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--large", type=int, default=5)
    parser.add_argument("--large-size", type=int, default=32 << 20)
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()
    worker = os.path.abspath(arguments.worker)
    base = tempfile.mkdtemp(prefix="worker-sftp-", dir="/dev/shm")
    sshd = None
    try:
        sshd, port, key, known_hosts = start_sshd(base)
        root = f"{base}/root"
        generator = random.Random(81)
        files = [(f"small/{index // 100:02d}/f{index:05d}.bin", generator.randrange(1024, 16385)) for index in range(arguments.small)]
        files += [(f"large/l{index}.bin", arguments.large_size) for index in range(arguments.large)]
        lines = ["version: 1", f"base_url: sftp://root@127.0.0.1:{port}{root}/", "entries:"]
        for path, size in files:
            os.makedirs(os.path.dirname(f"{root}/{path}"), exist_ok=True)
            data = generator.randbytes(size)
            open(f"{root}/{path}", "wb").write(data)
            lines += [f"  - url: {path}", f"    hash: sha256:{hashlib.sha256(data).hexdigest()}"]
        manifest = f"{base}/m.yaml"
        open(manifest, "w").write("\n".join(lines) + "\n")
        curl_config = f"{base}/curl.conf"
        with open(curl_config, "w") as out:
            for path, _ in files:
                out.write(f'url = "sftp://root@127.0.0.1:{port}{root}/{path}"\noutput = "{base}/curl-out/{path}"\n')
        total = sum(size for _, size in files)
        environment = dict(os.environ, HOME=base, SSH_AUTH_SOCK="")
        os.makedirs(f"{base}/.ssh", exist_ok=True)
        shutil.copy(known_hosts, f"{base}/.ssh/known_hosts")
        login = ["--ssh-key", key, "--ssh-known-hosts", known_hosts]
        remote = f":sftp,host=127.0.0.1,port={port},user=root,key_file={key},known_hosts_file={known_hosts},disable_hashcheck=true:{root}"
        samples = {name: [] for name in ("worker cold", "worker warm", "rclone cold", "rclone warm", "curl")}
        for _ in range(arguments.runs):
            for folder in ("cache", "tree", "rclone-out", "curl-out"):
                shutil.rmtree(f"{base}/{folder}", ignore_errors=True)
            sync = [worker, "sync", manifest, "--cache-dir", f"{base}/cache", "--tree", f"{base}/tree", "-q", "--progress", "never"]
            samples["worker cold"].append(timed(sync + login, environment))
            samples["worker warm"].append(timed(sync + login, environment))
            rclone = ["rclone", "copy", remote, f"{base}/rclone-out", "--config", "/dev/null"]
            samples["rclone cold"].append(timed(rclone, environment))
            samples["rclone warm"].append(timed(rclone, environment))
            samples["curl"].append(timed(["curl", "-sS", "--create-dirs", "--key", key, "-K", curl_config], environment))
        for output in ("tree", "rclone-out", "curl-out"):
            count = sum(len(names) for _, _, names in os.walk(f"{base}/{output}"))
            if count != len(files):
                raise SystemExit(f"{output} holds {count} files, not {len(files)}")
        median = {name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)) for name, runs in samples.items()}
        print(f"SFTP on loopback, tmpfs: {arguments.small} files of 1-16 KiB and {arguments.large} of {arguments.large_size >> 20} MiB"
              f" ({total / 1e6:.1f} MB), median of {arguments.runs}.\n")
        print("| run | wall s | CPU s |\n|---|---:|---:|")
        for name, (wall, cpu) in median.items():
            print(f"| {name} | {wall:.2f} | {cpu:.2f} |")
        print()
        for mine, theirs in (("worker cold", "rclone cold"), ("worker cold", "curl"), ("worker warm", "rclone warm")):
            (wall, cpu), (their_wall, their_cpu) = median[mine], median[theirs]
            print(f"- {mine} / {theirs}: wall {wall / their_wall:.2f}x, CPU {cpu / their_cpu:.2f}x")
    finally:
        if sshd:
            sshd.terminate()
            sshd.wait()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
