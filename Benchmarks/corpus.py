#!/usr/bin/env python3
"""Deterministic benchmark corpus for worker: files served by nginx, manifests, peer input lists.

Everything is derived from SHAKE-256 of a fixed seed, so every machine gets the same bytes and the
same hashes. Layout under ROOT (default /tmp/worker-bench):

  www/u/<id6>/avatar.png      10,000 "avatars", 2-24 KiB (the small set)
  www/large/<nn>.bin          40 files of 4 MiB (the large set)
  flip/a.png, flip/b.png      two versions of one avatar (the 100k one-changed bench)
  sets/small.yaml             manifest of the small set (+ small.aria2, small.curl)
  sets/large.yaml             manifest of the large set (+ large.aria2, large.curl)
  sets/m100k-a.yaml, -b.yaml  100,000 entries (/m/<0-9>/u/<id6>/avatar.png); they differ in one hash
  sets/plan1m.yaml            1,000,000 entries (nothing behind them: for `worker plan`)
"""
import hashlib
import os
import sys

SEED = b"worker-bench-1"
SMALL = 10_000
LARGE = 40


def content(kind: str, index: int, size: int) -> bytes:
    data = hashlib.shake_256(SEED + f":{kind}:{index}".encode()).digest(size)
    return b"\x89PNG\r\n\x1a\n" + data[8:] if kind == "small" else data


def small_size(index: int) -> int:
    return 2048 + int.from_bytes(hashlib.sha256(SEED + f":size:{index}".encode()).digest()[:4], "big") % (22 * 1024)


def write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)


def generate(root: str, base: str) -> None:
    www, sets = os.path.join(root, "www"), os.path.join(root, "sets")
    os.makedirs(sets, exist_ok=True)
    small = []
    for index in range(1, SMALL + 1):
        relative = f"u/{index:06d}/avatar.png"
        data = content("small", index, small_size(index))
        path = os.path.join(www, relative)
        if not os.path.exists(path) or os.path.getsize(path) != len(data):
            write(path, data)
        small.append((relative, hashlib.sha256(data).hexdigest(), len(data)))
    large = []
    for index in range(LARGE):
        relative = f"large/{index:02d}.bin"
        data = content("large", index, 4 << 20)
        path = os.path.join(www, relative)
        if not os.path.exists(path):
            write(path, data)
        large.append((relative, hashlib.sha256(data).hexdigest(), len(data)))
    flip = {}
    for variant in "ab":
        data = content("flip-" + variant, 0, 9000)
        write(os.path.join(root, "flip", variant + ".png"), data)
        flip[variant] = hashlib.sha256(data).hexdigest()

    for name, files in (("small", small), ("large", large)):
        with open(os.path.join(sets, name + ".yaml"), "w") as out:
            out.write(f"version: 1\nname: {name}\nentries:\n")
            for relative, digest, _ in files:
                out.write(f"  - url: {base}/{relative}\n    hash: sha256:{digest}\n")
        with open(os.path.join(sets, name + ".aria2"), "w") as out:
            for relative, digest, _ in files:
                out.write(f"{base}/{relative}\n  dir={os.path.dirname(relative)}\n  out={os.path.basename(relative)}\n"
                          f"  checksum=sha-256={digest}\n")
        with open(os.path.join(sets, name + ".curl"), "w") as out:
            for relative, _, _ in files:
                out.write(f'url = "{base}/{relative}"\noutput = "{relative}"\n')

    # 100k URLs over the 10k avatars (nginx maps /m/<n>/ to the same files); the first URL is
    # served from flip/current.png, whose version the two manifests disagree on.
    for variant in "ab":
        with open(os.path.join(sets, f"m100k-{variant}.yaml"), "w") as out:
            out.write("version: 1\nname: m100k\nentries:\n")
            for copy in range(10):
                for position, (relative, digest, _) in enumerate(small):
                    if copy == 0 and position == 0:
                        digest = flip[variant]
                    out.write(f"  - url: {base}/m/{copy}/{relative}\n    hash: sha256:{digest}\n")

    path = os.path.join(sets, "plan1m.yaml")
    if not os.path.exists(path):
        with open(path, "w") as out:
            out.write("version: 1\nname: plan1m\nentries:\n")
            for index in range(1, 1_000_001):
                digest = hashlib.sha256(f"plan1m:{index}".encode()).hexdigest()
                out.write(f"  - url: {base}/p/{index:07d}/avatar.png\n    hash: sha256:{digest}\n")


if __name__ == "__main__":
    generate(sys.argv[1], sys.argv[2])
