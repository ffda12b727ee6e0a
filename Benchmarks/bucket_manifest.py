#!/usr/bin/env python3
"""A manifest from a bucket (issue 60): `worker manifest s3://bench/avatars/` against what a user
does without it — `aws s3 ls --recursive` and hashing what changed — from moto's S3 server on
loopback with its IAM authentication on (every request's Signature Version 4 checked).

N objects (default 2,000) are put with ChecksumAlgorithm=SHA256 (the bucket stores each SHA-256);
with --no-checksums they are put without (new SDKs default to CRC32, which cannot pin). Then:
  worker cold      worker manifest s3://bench/avatars/ -o M --cache-dir C   (empty cache)
  aws cold         aws s3 ls --recursive, then aws s3 sync of the prefix and sha256sum of every file
  five changes     3 objects modified (one keeping its size), 1 deleted, 1 added
  worker update    worker manifest s3://bench/avatars/ -o M --cache-dir C   (the same cache and M)
  aws update       aws s3 ls --recursive, then aws s3 cp and sha256sum of the objects whose size
                   or date changed (what a script comparing two listings would fetch)
Prints wall seconds and the requests moto logged for each (the peers' requests by the same log).

  python3 Benchmarks/bucket_manifest.py [--worker .build/release/worker] [--objects 2000]
moto comes from the test suite's virtual environment (scripts/test.sh makes it); the AWS CLI from
a virtual environment of its own (--aws; `python3 -m venv V && V/bin/pip install awscli`).
"""
import argparse
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

SETUP = """
import json, sys
import boto3
port, count, checksums, output = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
settings = dict(endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                aws_access_key_id="setup", aws_secret_access_key="setup")
iam = boto3.client("iam", **settings)
iam.create_user(UserName="bench")
key = iam.create_access_key(UserName="bench")["AccessKey"]
iam.put_user_policy(UserName="bench", PolicyName="all", PolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
s3 = boto3.client("s3", **settings)
s3.create_bucket(Bucket="bench")
extra = {"ChecksumAlgorithm": "SHA256"} if checksums else {}
for number in range(count):
    body = (f"avatar {number} " * (8 + number % 50)).encode()
    s3.put_object(Bucket="bench", Key=f"avatars/{number // 100}/{number}.png", Body=body, **extra)
json.dump({"id": key["AccessKeyId"], "secret": key["SecretAccessKey"]}, open(output, "w"))
"""

CHANGES = """
import boto3, sys
port, id, secret, checksums = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] == "1"
s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                  aws_access_key_id=id, aws_secret_access_key=secret)
extra = {"ChecksumAlgorithm": "SHA256"} if checksums else {}
old = s3.get_object(Bucket="bench", Key="avatars/0/7.png")["Body"].read()
same_size = bytes([old[0] ^ 1]) + old[1:]
s3.put_object(Bucket="bench", Key="avatars/0/7.png", Body=same_size, **extra)
s3.put_object(Bucket="bench", Key="avatars/3/300.png", Body=b"changed and longer " * 40, **extra)
s3.put_object(Bucket="bench", Key="avatars/9/999.png", Body=b"changed", **extra)
s3.delete_object(Bucket="bench", Key="avatars/5/500.png")
s3.put_object(Bucket="bench", Key="avatars/new/added.png", Body=b"a new avatar", **extra)
"""


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(port, seconds=20):
    end = time.time() + seconds
    while time.time() < end:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit("moto did not start")


def requests_logged(log):
    with open(log, errors="replace") as text:
        return sum(1 for line in text if '" 200 ' in line or '" 206 ' in line or '" 304 ' in line or '" 404 ' in line)


def timed(command, env, log):
    before = requests_logged(log)
    started = time.monotonic()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    time.sleep(0.3)  # the log's last lines
    return seconds, requests_logged(log) - before


def listing(aws, env):
    out = subprocess.run([aws, "s3", "ls", "--recursive", "s3://bench/avatars/"], env=env, capture_output=True, text=True,
                         check=True).stdout
    rows = {}
    for line in out.splitlines():
        date, clock, size, key = line.split(None, 3)
        rows[key] = (date + " " + clock, int(size))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--worker", default=os.path.join(here, "..", ".build", "release", "worker"))
    parser.add_argument("--venv", default=os.environ.get("WORKER_TEST_VENV", os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "worker-test-venv")))
    parser.add_argument("--aws", default="/tmp/awsvenv/bin/aws")
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--no-checksums", action="store_true")
    args = parser.parse_args()
    worker = os.path.abspath(args.worker)
    checksums = "0" if args.no_checksums else "1"
    root = tempfile.mkdtemp(prefix="worker-bucket-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    port = free_port()
    log = os.path.join(root, "moto.log")
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(5 + args.objects))
    moto = subprocess.Popen([os.path.join(args.venv, "bin", "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                            env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    try:
        wait_for(port)
        keys_path = os.path.join(root, "keys.json")
        subprocess.run([os.path.join(args.venv, "bin", "python"), "-c", SETUP, str(port), str(args.objects), checksums, keys_path],
                       check=True)
        keys = json.load(open(keys_path))
        run_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        run_env.update(AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_ACCESS_KEY_ID=keys["id"],
                       AWS_SECRET_ACCESS_KEY=keys["secret"], AWS_REGION="us-east-1", HOME=root)
        manifest, cache = os.path.join(root, "m.yaml"), os.path.join(root, "cache")
        command = [worker, "manifest", "s3://bench/avatars/", "-o", manifest, "--cache-dir", cache, "--progress", "never"]
        rows = [("worker cold",) + timed(command, run_env, log)]

        copy = os.path.join(root, "copy")

        def aws_cold():
            listing(args.aws, run_env)
            subprocess.run([args.aws, "s3", "sync", "s3://bench/avatars/", copy, "--only-show-errors"], env=run_env, check=True)
            for folder, _, files in os.walk(copy):
                for name in files:
                    hashlib.sha256(open(os.path.join(folder, name), "rb").read()).hexdigest()
        before, started = requests_logged(log), time.monotonic()
        earlier = listing(args.aws, run_env)
        aws_cold()
        seconds = time.monotonic() - started
        time.sleep(0.3)
        rows.append(("aws ls + sync + sha256 (cold)", seconds, requests_logged(log) - before - 1))

        subprocess.run([os.path.join(args.venv, "bin", "python"), "-c", CHANGES, str(port), keys["id"], keys["secret"], checksums],
                       check=True)
        rows.append(("worker update (5 changes)",) + timed(command, run_env, log))

        before, started = requests_logged(log), time.monotonic()
        now = listing(args.aws, run_env)
        changed = [key for key, row in now.items() if earlier.get(key) != row]
        for key in changed:
            target = os.path.join(root, "changed", key)
            subprocess.run([args.aws, "s3", "cp", f"s3://bench/{key}", target, "--only-show-errors"], env=run_env, check=True)
            hashlib.sha256(open(target, "rb").read()).hexdigest()
        seconds = time.monotonic() - started
        time.sleep(0.3)
        rows.append((f"aws ls + cp + sha256 of the {len(changed)} listed as changed", seconds, requests_logged(log) - before))

        print(f"{args.objects} objects, {'with' if checksums == '1' else 'without'} stored SHA-256 checksums, moto with signatures on")
        print("| run | wall s | requests |")
        print("|---|---|---|")
        for name, seconds, count in rows:
            print(f"| {name} | {seconds:.2f} | {count} |")
        pins = open(manifest).read()
        print(f"manifest: {pins.count('- url:')} entries")
    finally:
        moto.terminate()
        moto.wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
