#!/usr/bin/env python3
"""s3:// entries against `rclone copy`, both from moto's S3 server on loopback with its IAM
authentication on (every request's Signature Version 4 checked), caches and copies on tmpfs.

1,000 avatars of the corpus are put in a bucket once; then, in rounds (each run into an empty
folder, the two in turn):
  worker   worker sync M --cache-dir C          (M lists s3://bench/u/…/avatar.png with hashes)
  rclone   rclone copy :s3:bench/u D --transfers 50 --checkers 50   (its S3 backend, same endpoint;
                                                            50 at once, as worker's --jobs)
Prints the median wall and CPU (user+sys) of each: worker ÷ rclone wall <= 1.1 is the target;
both are bound by the server (moto is Python), so the CPU of each client is the other figure.

  python3 Benchmarks/s3.py [--worker .build/release/worker] [--rounds 5] [--objects 1000]
moto comes from the test suite's virtual environment (scripts/test.sh makes it).
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from network import small_set  # noqa: E402
from tree import run as timed  # noqa: E402

PORT = 18480
SETUP = """
import json, sys
import boto3
port, listing, output = int(sys.argv[1]), sys.argv[2], sys.argv[3]
settings = dict(endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                aws_access_key_id="setup", aws_secret_access_key="setup")
iam = boto3.client("iam", **settings)
iam.create_user(UserName="bench")
key = iam.create_access_key(UserName="bench")["AccessKey"]
iam.put_user_policy(UserName="bench", PolicyName="all", PolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
s3 = boto3.client("s3", **settings)
s3.create_bucket(Bucket="bench")
for key_name, path in json.load(open(listing)):
    s3.put_object(Bucket="bench", Key=key_name, Body=open(path, "rb").read())
json.dump({"id": key["AccessKeyId"], "secret": key["SecretAccessKey"]}, open(output, "w"))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", default=os.path.join(HERE, "..", ".build", "release", "worker"))
    parser.add_argument("--root", default=os.environ.get("WORKER_BENCH_DIR", "/tmp/worker-bench"))
    parser.add_argument("--venv", default=os.environ.get("WORKER_TEST_VENV", os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "worker-test-venv")))
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    worker = os.path.abspath(args.worker)
    subprocess.run(f"python3 {HERE}/corpus.py {args.root} http://127.0.0.1:18181", shell=True, check=True,
                   stdout=subprocess.DEVNULL)
    entries = small_set(args.root)[: args.objects]
    scratch = os.path.join("/dev/shm" if os.path.isdir("/dev/shm") else args.root, f"worker-s3-bench-{os.getpid()}")
    os.makedirs(scratch)
    listing = os.path.join(scratch, "listing.json")
    json.dump([(relative, os.path.join(args.root, "www", relative)) for relative, _ in entries], open(listing, "w"))
    environment = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(4 + len(entries)))
    log = open(os.path.join(scratch, "moto.log"), "w")
    moto = subprocess.Popen([os.path.join(args.venv, "bin", "moto_server"), "-H", "127.0.0.1", "-p", str(PORT)],
                            env=environment, stdout=log, stderr=log, start_new_session=True)
    try:
        # A connect, not a request: moto counts requests towards INITIAL_NO_AUTH_ACTION_COUNT.
        for _ in range(100):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", PORT)) == 0:
                    break
            time.sleep(0.1)
        keys_path = os.path.join(scratch, "keys.json")
        script = os.path.join(scratch, "setup.py")
        open(script, "w").write(SETUP)
        subprocess.run([os.path.join(args.venv, "bin", "python"), script, str(PORT), listing, keys_path], check=True)
        keys = json.load(open(keys_path))
        manifest = os.path.join(scratch, "bench.yaml")
        with open(manifest, "w") as out:
            out.write("version: 1\nbase_url: s3://bench/\nentries:\n")
            for relative, digest in entries:
                out.write(f"  - url: {relative}\n    hash: sha256:{digest}\n")
        endpoint = f"http://127.0.0.1:{PORT}"
        env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID=keys["id"], AWS_SECRET_ACCESS_KEY=keys["secret"],
                   AWS_REGION="us-east-1", RCLONE_S3_PROVIDER="Other", RCLONE_S3_ENDPOINT=endpoint,
                   RCLONE_S3_ACCESS_KEY_ID=keys["id"], RCLONE_S3_SECRET_ACCESS_KEY=keys["secret"], RCLONE_S3_REGION="us-east-1",
                   RCLONE_CONFIG="/dev/null")
        # A CA bundle of the machine's (AWS_CA_BUNDLE) makes rclone refuse its plain-http transport.
        env.pop("AWS_CA_BUNDLE", None)
        os.environ.clear()
        os.environ.update(env)
        target = os.path.join(scratch, "out")
        rows = {
            "worker": [worker, "sync", manifest, "--cache-dir", target, "-q"],
            "rclone": ["rclone", "copy", ":s3:bench/u", target, "--transfers", "50", "--checkers", "50"],
        }
        store = {name: ([], []) for name in rows}
        names = list(rows)
        for round_ in range(args.rounds):
            for name in names[round_ % 2:] + names[: round_ % 2]:
                shutil.rmtree(target, ignore_errors=True)
                wall, cpu = timed(rows[name])
                store[name][0].append(wall)
                store[name][1].append(cpu)
                print(f"round {round_ + 1}: {name} {wall:.2f} s, CPU {cpu:.2f} s", file=sys.stderr, flush=True)
        subprocess.run(["rclone", "copy", ":s3:bench/u", target], check=True)
        copied = sum(len(files) for _, _, files in os.walk(target))
        if copied != len(entries):
            raise SystemExit(f"rclone copied {copied} files of {len(entries)}")
    finally:
        moto.terminate()
        moto.wait(timeout=10)
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{len(entries)} objects from moto (signatures checked), {args.rounds} rounds, medians\n")
    print("| client | wall s | min–max s | CPU s (user+sys) |")
    print("|---|---|---|---|")
    for name in names:
        walls, cpus = store[name]
        print(f"| {name} | {statistics.median(walls):.2f} | {min(walls):.2f}–{max(walls):.2f} | {statistics.median(cpus):.2f} |")
    ratio = statistics.median(store["worker"][0]) / statistics.median(store["rclone"][0])
    cpu = statistics.median(store["worker"][1]) / statistics.median(store["rclone"][1])
    print(f"\nworker ÷ rclone: wall {ratio:.2f} (<= 1.1: {'ok' if ratio <= 1.1 else 'MISSED'}), CPU {cpu:.2f}")


if __name__ == "__main__":
    main()
