#!/usr/bin/env python3
"""python-tuf's side of Benchmarks/fleet.py: a TUF repository of the publisher's files and its
ngclient reader. Needs `tuf` from PyPI (fleet.py's --tuf-python names the interpreter that has it).

  tuf_fleet.py publish WWW KEYS            (re)writes WWW/tuf/metadata for WWW/files/*.txt, versions bumped
  tuf_fleet.py fetch STATE BASE_URL N      refresh, then every files/I.txt (I < N) downloaded or found cached
                                           (STATE/root.json: the trusted root, handed over once)
"""
import os
import sys
from datetime import datetime, timedelta, timezone


def publish(www, keys_dir):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from securesystemslib.signer import CryptoSigner, SSlibKey
    from tuf.api.metadata import Metadata, MetaFile, Root, Snapshot, TargetFile, Targets, Timestamp
    from tuf.api.serialization.json import JSONSerializer

    metadata = os.path.join(www, "tuf", "metadata")
    os.makedirs(metadata, exist_ok=True)
    roles = ["root", "targets", "snapshot", "timestamp"]
    os.makedirs(keys_dir, exist_ok=True)
    signers = {}
    for role in roles:
        path = os.path.join(keys_dir, role + ".pem")
        if not os.path.exists(path):
            open(path, "wb").write(Ed25519PrivateKey.generate().private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        private = serialization.load_pem_private_key(open(path, "rb").read(), password=None)
        signers[role] = CryptoSigner(private, SSlibKey.from_crypto(private.public_key()))
    state_path = os.path.join(keys_dir, "version")
    version = int(open(state_path).read()) + 1 if os.path.exists(state_path) else 1
    expires = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=30)
    serializer = JSONSerializer(compact=True)

    def write(role, signed, name):
        document = Metadata(signed)
        document.sign(signers[role])
        document.to_file(os.path.join(metadata, name), serializer)

    if version == 1:
        root = Root(expires=expires, consistent_snapshot=False)
        for role in roles:
            root.add_key(signers[role].public_key, role)
        write("root", root, "1.root.json")
        write("root", root, "root.json")
    targets = Targets(version=version, expires=expires)
    files = os.path.join(www, "files")
    for name in sorted(os.listdir(files)):
        targets.targets["files/" + name] = TargetFile.from_file("files/" + name, os.path.join(files, name))
    write("targets", targets, "targets.json")
    write("snapshot", Snapshot(version=version, expires=expires, meta={"targets.json": MetaFile(version=version)}), "snapshot.json")
    write("timestamp", Timestamp(version=version, expires=expires, snapshot_meta=MetaFile(version=version)), "timestamp.json")
    open(state_path, "w").write(str(version))


def fetch(state, base_url, count):
    from tuf.ngclient import Updater

    metadata_dir = os.path.join(state, "metadata")
    targets_dir = os.path.join(state, "targets")
    os.makedirs(targets_dir, exist_ok=True)
    # The trusted root (state/root.json, handed over once) bootstraps a reader that has none yet.
    bootstrap = None if os.path.exists(os.path.join(metadata_dir, "root.json")) else open(os.path.join(state, "root.json"), "rb").read()
    os.makedirs(metadata_dir, exist_ok=True)
    updater = Updater(metadata_dir=metadata_dir, metadata_base_url=base_url + "/tuf/metadata/",
                      target_dir=targets_dir, target_base_url=base_url + "/", bootstrap=bootstrap)
    updater.refresh()
    for number in range(count):
        info = updater.get_targetinfo(f"files/{number}.txt")
        if info is None:
            raise SystemExit(f"files/{number}.txt is not a target")
        path = os.path.join(targets_dir, f"{number}.txt")
        if updater.find_cached_target(info, path) is None:
            updater.download_target(info, path)


if __name__ == "__main__":
    if sys.argv[1] == "publish":
        publish(sys.argv[2], sys.argv[3])
    else:
        fetch(sys.argv[2], sys.argv[3], int(sys.argv[4]))
