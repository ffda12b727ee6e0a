"""Mounting lossyfs (Tests/tools/lossyfs.py) for a test or the power-cut harness: start it over a
backing folder, talk to its control socket, cut the power, unmount and mount again."""

import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


class Mount:
    def __init__(self, backing, mountpoint, seed=0, tear=0.0, keep_folders=0.0, python=sys.executable):
        self.backing, self.mountpoint = backing, mountpoint
        self.options = ["--seed", str(seed), "--tear", str(tear), "--keep-folders", str(keep_folders)]
        self.python = python
        self.control = mountpoint.rstrip("/") + ".control"
        self.process = None
        self.log = mountpoint.rstrip("/") + ".log"

    def __enter__(self):
        self.mount()
        return self

    def __exit__(self, *exc):
        self.unmount()

    def mount(self):
        os.makedirs(self.backing, exist_ok=True)
        os.makedirs(self.mountpoint, exist_ok=True)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [self.python, os.path.join(HERE, "lossyfs.py"), self.backing, self.mountpoint,
                 "--control", self.control] + self.options, stdout=log, stderr=log)
        deadline = time.monotonic() + 20
        while not (os.path.ismount(self.mountpoint) and os.path.exists(self.control)):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("lossyfs did not mount " + self.mountpoint + ": " + open(self.log).read()[-2000:])
            time.sleep(0.02)

    def command(self, line):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(self.control)
            connection.sendall((line + "\n").encode())
            answer = b""
            while not answer.endswith(b"\n"):
                piece = connection.recv(4096)
                if not piece:
                    break
                answer += piece
        result = json.loads(answer)
        if "error" in result:
            raise RuntimeError(result["error"])
        return result

    def unmount(self):
        """Unmounts (lazily, if a killed process still holds it) and waits for lossyfs to write
        what the disk kept when the power was cut."""
        if self.process is None:
            return
        for _ in range(100):
            if subprocess.run(["fusermount3", "-u", self.mountpoint], capture_output=True).returncode == 0:
                break
            time.sleep(0.05)
        else:
            subprocess.run(["fusermount3", "-u", "-z", self.mountpoint], capture_output=True)
        code = self.process.wait(timeout=120)
        self.process = None
        if code != 0:
            raise RuntimeError("lossyfs ended with %d: %s" % (code, open(self.log).read()[-2000:]))

    def cut_and_remount(self):
        """The power goes now; the machine starts again with what the disk kept."""
        self.command("cut")
        self.unmount()
        self.mount()
