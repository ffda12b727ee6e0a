#!/usr/bin/env python3
"""lossyfs: a FUSE file system over a backing folder that forgets, when its power is cut, what a
disk may forget: every byte written since the file's last fsync/fdatasync, and every name made,
renamed or removed in a folder since that folder's last fsync (each folder on its own, as ext4 may
order them). What was synced is never lost.

    lossyfs.py BACKING MOUNTPOINT --control SOCKET [--seed N] [--tear P] [--keep-folders P]

It runs in the foreground until MOUNTPOINT is unmounted. SOCKET (a Unix socket) takes one command
a line and answers each with a JSON line of the counters:

    status                         the counters only
    cut-at N                       the power goes at the Nth change since the mount (writes,
                                   truncations, names, fsyncs): that change and all after it fail
    cut                            the power goes now
    fail-fsync once|always|off [S] the next (or every) fsync of a path holding S fails with EIO; the
                                   writes it covered are lost for good, even if a later fsync
                                   succeeds (what Linux does: PostgreSQL's "fsyncgate")
    sync                           everything durable (syncfs on a disk; FUSE never forwards it)

After a cut every call fails with EIO; at the unmount the backing folder is rewritten to what the
disk kept. `--tear P` keeps each write that was not synced with probability P (a page that reached
the disk anyway); `--keep-folders P` keeps a folder's unsynced names with probability P. Both are
drawn from `--seed`. An unmount without a cut keeps everything (a clean shutdown).

Modelled: file data and sizes, names in folders, hard links, symbolic links. Not modelled:
permissions, owners and times (kept as they are), extended attributes (refused).
"""

import argparse
import ctypes
import errno
import json
import os
import random
import shutil
import socket
import stat
import sys
import threading

import mfusepy as fuse

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
_libc = ctypes.CDLL(None, use_errno=True)
_libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
AT_FDCWD = -100


def renameat2(old, new, flags):
    if _libc.renameat2(AT_FDCWD, os.fsencode(old), AT_FDCWD, os.fsencode(new), flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


class Node:
    """One file, folder or link, by identity (it keeps it across renames and links).

    A file's `durable` is None when everything written to it is synced (the disk holds what the
    backing file holds), else the bytes the disk holds and the changes since (`changes`: writes
    as (offset, length), truncations as (size, None)). A folder's `names` is None when its
    listing is synced, else the listing the disk holds: name -> Node."""

    __slots__ = ("kind", "durable", "changes", "lost", "names", "target", "mode")

    def __init__(self, kind, mode):
        self.kind = kind
        self.mode = mode
        self.durable = None
        self.changes = []
        self.lost = []
        self.names = None
        self.target = None


def subtract(ranges, offset, length):
    """The (offset, length) ranges without the bytes of [offset, offset + length)."""
    left = []
    for start, size in ranges:
        end = start + size
        if end <= offset or start >= offset + length:
            left.append((start, size))
            continue
        if start < offset:
            left.append((start, offset - start))
        if end > offset + length:
            left.append((offset + length, end - offset - length))
    return left


class LossyFS(fuse.Operations):
    use_ns = True

    def __init__(self, backing, seed, tear, keep_folders):
        self.backing = os.path.realpath(backing)
        self.random = random.Random(seed)
        self.tear = tear
        self.keep_folders = keep_folders
        self.mutex = threading.RLock()
        self.nodes = {}  # backing inode -> Node (only what was looked at)
        self.changes = 0
        self.fsyncs = 0
        self.failed_fsyncs = 0
        self.cut_at = None
        self.dead = False
        self.fail_fsync = None  # ("once" | "always", substring)

    # -- the model ---------------------------------------------------------------------------

    def real(self, path):
        return self.backing + path

    def node(self, real):
        info = os.lstat(real)
        node = self.nodes.get(info.st_ino)
        if node is None:
            kind = "d" if stat.S_ISDIR(info.st_mode) else "l" if stat.S_ISLNK(info.st_mode) else "f"
            node = Node(kind, stat.S_IMODE(info.st_mode))
            if kind == "l":
                node.target = os.readlink(real)
            self.nodes[info.st_ino] = node
        return node

    def change(self):
        """Counts a change; the one the power goes at, and every one after, fails."""
        if self.dead:
            raise fuse.FuseOSError(errno.EIO)
        self.changes += 1
        if self.cut_at is not None and self.changes >= self.cut_at:
            self.dead = True
            raise fuse.FuseOSError(errno.EIO)

    def listing(self, real):
        return {name: self.node(os.path.join(real, name)) for name in os.listdir(real)}

    def folder_changes(self, real_folder):
        """Before a name in the folder changes: what the disk holds of the listing, kept."""
        folder = self.node(real_folder)
        if folder.names is None:
            folder.names = self.listing(real_folder)

    def file_changes(self, node, real):
        """Before a file's bytes change: what the disk holds of them, kept."""
        if node.durable is None:
            with open(real, "rb") as file:
                node.durable = file.read()
            node.changes = []

    def forget_name(self, real):
        """Before the name `real` goes: a file whose last name it is keeps its durable bytes."""
        try:
            info = os.lstat(real)
        except FileNotFoundError:
            return
        node = self.node(real)
        if node.kind == "f" and info.st_nlink <= 1:
            self.file_changes(node, real)
            del self.nodes[info.st_ino]
        elif node.kind == "d":
            self.folder_changes(real)
            del self.nodes[info.st_ino]
        elif node.kind == "l":
            del self.nodes[info.st_ino]

    def synced(self, node, read):
        """After a successful fsync: the disk holds what `read()` returns, but for pages lost to
        an earlier failed write-back, which keep the bytes the disk had."""
        if node.kind == "f" and node.durable is not None:
            if node.lost:
                now = bytearray(read())
                for offset, length in node.lost:
                    old = node.durable[offset:offset + length]
                    end = min(offset + length, len(now))
                    if offset < end:
                        now[offset:end] = old[:end - offset].ljust(end - offset, b"\0")
                node.durable = bytes(now)
                node.changes = []
            else:
                node.durable = None
                node.changes = []
        elif node.kind == "d":
            node.names = None

    def sync_all(self):
        for top, folders, files in os.walk(self.backing):
            for name in folders + files + [""]:
                real = os.path.join(top, name) if name else top
                ino = os.lstat(real).st_ino
                if ino in self.nodes:
                    self.synced(self.nodes[ino], lambda real=real: open(real, "rb").read())

    def kept(self):
        """What the disk holds after a cut, written into a new folder that replaces the backing."""
        live = {}
        for top, folders, files in os.walk(self.backing):
            for name in folders + files:
                real = os.path.join(top, name)
                live.setdefault(os.lstat(real).st_ino, real)
        live.setdefault(os.lstat(self.backing).st_ino, self.backing)
        where = {id(node): real for ino, real in live.items() if (node := self.nodes.get(ino)) is not None}
        out = self.backing + ".kept"
        shutil.rmtree(out, ignore_errors=True)
        os.mkdir(out)
        written = {}
        self.write_folder(self.node(self.backing), self.backing, out, where, written, set())
        old = self.backing + ".gone"
        os.rename(self.backing, old)
        os.rename(out, self.backing)
        shutil.rmtree(old)

    def live_node(self, real):
        info = os.lstat(real)
        return self.nodes.get(info.st_ino) or self.node(real)

    def write_folder(self, folder, real, out, where, written, seen):
        seen.add(id(folder))
        names = folder.names
        live = names is None or bool(self.keep_folders and real and self.random.random() < self.keep_folders)
        if live:
            names = self.listing(real) if real else {}
        for name, child in sorted(names.items()):
            target = os.path.join(out, name)
            child_real = os.path.join(real, name) if live else where.get(id(child))
            if child.kind == "d":
                if id(child) in seen:
                    continue
                os.mkdir(target, child.mode or 0o755)
                self.write_folder(child, child_real, target, where, written, seen)
                os.chmod(target, child.mode or 0o755)
            elif child.kind == "l":
                os.symlink(child.target, target)
            elif id(child) in written:
                os.link(written[id(child)], target)
            else:
                data = child.durable
                if data is None:
                    with open(child_real, "rb") as file:
                        data = file.read()
                elif self.tear and child_real and child.changes:
                    data = self.torn(child, child_real)
                with open(target, "wb") as file:
                    file.write(data)
                os.chmod(target, child.mode)
                written[id(child)] = target

    def torn(self, node, real):
        """The durable bytes with each unsynced change kept or not, by the seed."""
        with open(real, "rb") as file:
            now = file.read()
        data = bytearray(node.durable)
        for offset, length in node.changes:
            if self.random.random() >= self.tear:
                continue
            if length is None:
                del data[offset:]
                data.extend(bytes(offset - len(data)))
            else:
                if len(data) < offset:
                    data.extend(bytes(offset - len(data)))
                data[offset:offset + length] = now[offset:offset + length]
        return bytes(data)

    # -- control -----------------------------------------------------------------------------

    def command(self, line):
        words = line.split()
        with self.mutex:
            if not words or words[0] == "status":
                pass
            elif words[0] == "cut-at" and len(words) == 2:
                self.cut_at = int(words[1])
                if self.changes >= self.cut_at:
                    self.dead = True
            elif words[0] == "cut":
                self.dead = True
            elif words[0] == "fail-fsync" and len(words) in (2, 3) and words[1] in ("once", "always", "off"):
                self.fail_fsync = None if words[1] == "off" else (words[1], words[2] if len(words) == 3 else "")
            elif words[0] == "sync":
                if self.dead:
                    return {"error": "the power is off"}
                self.sync_all()
            else:
                return {"error": "unknown command: " + line.strip()}
            return {"changes": self.changes, "fsyncs": self.fsyncs, "failed_fsyncs": self.failed_fsyncs,
                    "dead": self.dead, "cut_at": self.cut_at}

    # -- file system calls -------------------------------------------------------------------

    def call(self, work):
        with self.mutex:
            if self.dead:
                raise fuse.FuseOSError(errno.EIO)
            try:
                return work()
            except OSError as error:
                if isinstance(error, fuse.FuseOSError):
                    raise
                raise fuse.FuseOSError(error.errno or errno.EIO)

    def getattr(self, path, fh=None):
        def work():
            info = os.fstat(fh) if fh is not None else os.lstat(self.real(path))
            return {key: getattr(info, key) for key in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size",
                                                        "st_atime_ns", "st_mtime_ns", "st_ctime_ns", "st_ino")} | {
                "st_atime": info.st_atime_ns, "st_mtime": info.st_mtime_ns, "st_ctime": info.st_ctime_ns}
        if path == "/" and self.dead:
            info = os.lstat(self.backing)
            return {"st_mode": info.st_mode, "st_nlink": 2}
        return self.call(work)

    def readdir(self, path, fh):
        # Inode numbers, which glibc needs (it skips an entry numbered 0), but no types: a
        # reader must cope with DT_UNKNOWN, as on XFS without ftype and other FUSE servers.
        def work():
            real = self.real(path)
            return [(".", {"st_ino": os.lstat(real).st_ino}, 0), ("..", {"st_ino": 1}, 0)] + [
                (name, {"st_ino": os.lstat(os.path.join(real, name)).st_ino}, 0) for name in os.listdir(real)]
        return self.call(work)

    def readlink(self, path):
        return self.call(lambda: os.readlink(self.real(path)))

    def statfs(self, path):
        def work():
            info = os.statvfs(self.real(path))
            return {key: getattr(info, key) for key in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                                        "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}
        return self.call(work)

    def access(self, path, amode):
        return self.call(lambda: 0 if os.access(self.real(path), amode) else (_ for _ in ()).throw(
            fuse.FuseOSError(errno.EACCES)))

    def open(self, path, flags):
        def work():
            real = self.real(path)
            if flags & os.O_TRUNC and flags & (os.O_WRONLY | os.O_RDWR):
                self.change()
                node = self.node(real)
                self.file_changes(node, real)
                node.changes.append((0, None))
            # Read-write whatever was asked, so that a write can first keep the durable bytes;
            # offsets come with each write, so no O_APPEND.
            mode = flags & ~os.O_ACCMODE | os.O_RDWR if flags & os.O_ACCMODE == os.O_WRONLY else flags
            return os.open(real, mode & ~(os.O_CREAT | os.O_APPEND))
        return self.call(work)

    def create(self, path, mode, fi=None):
        def work():
            real = self.real(path)
            self.change()
            existed = os.path.lexists(real)
            if not existed:
                self.folder_changes(os.path.dirname(real))
            elif (fi or 0) & os.O_TRUNC:
                node = self.node(real)
                self.file_changes(node, real)
                node.changes.append((0, None))
            fd = os.open(real, os.O_RDWR | os.O_CREAT | (fi or 0) & (os.O_EXCL | os.O_TRUNC), mode)
            if not existed:
                node = self.node(real)
                node.durable = b""
                node.mode = stat.S_IMODE(mode)
            return fd
        return self.call(work)

    def read(self, path, size, offset, fh):
        return self.call(lambda: os.pread(fh, size, offset))

    def write(self, path, data, offset, fh):
        def work():
            self.change()
            info = os.fstat(fh)
            node = self.nodes.get(info.st_ino)
            if info.st_nlink > 0:
                if node is None:
                    node = self.nodes[info.st_ino] = Node("f", stat.S_IMODE(info.st_mode))
                if node.durable is None:
                    node.durable = os.pread(fh, info.st_size, 0) if info.st_size else b""
                    node.changes = []
                node.changes.append((offset, len(data)))
                if node.lost:
                    node.lost = subtract(node.lost, offset, len(data))
            return os.pwrite(fh, data, offset)
        return self.call(work)

    def truncate(self, path, length, fh=None):
        def work():
            self.change()
            real = self.real(path) if path else None
            if fh is not None:
                info = os.fstat(fh)
                node = self.nodes.get(info.st_ino)
                if node is None:
                    node = self.nodes[info.st_ino] = Node("f", stat.S_IMODE(info.st_mode))
                if node.durable is None:
                    node.durable = os.pread(fh, info.st_size, 0) if info.st_size else b""
                    node.changes = []
                node.changes.append((length, None))
                os.ftruncate(fh, length)
            else:
                node = self.node(real)
                self.file_changes(node, real)
                node.changes.append((length, None))
                os.truncate(real, length)
            return 0
        return self.call(work)

    def fsync(self, path, datasync, fh):
        def work():
            self.change()
            self.fsyncs += 1
            info = os.fstat(fh)
            node = self.nodes.get(info.st_ino)
            if self.fail_fsync and self.fail_fsync[1] in (path or ""):
                if self.fail_fsync[0] == "once":
                    self.fail_fsync = None
                self.failed_fsyncs += 1
                if node is not None and node.durable is not None:
                    # The pages were dropped and marked clean: lost for good.
                    node.lost += [(offset, length) for offset, length in node.changes if length is not None]
                    node.changes = []
                raise fuse.FuseOSError(errno.EIO)
            if node is not None:
                self.synced(node, lambda: os.pread(fh, os.fstat(fh).st_size, 0))
            return 0
        return self.call(work)

    def fsyncdir(self, path, datasync, fh):
        def work():
            self.change()
            self.fsyncs += 1
            real = self.real(path)
            if self.fail_fsync and self.fail_fsync[1] in path:
                if self.fail_fsync[0] == "once":
                    self.fail_fsync = None
                self.failed_fsyncs += 1
                raise fuse.FuseOSError(errno.EIO)
            self.synced(self.node(real), None)
            return 0
        return self.call(work)

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        with self.mutex:
            os.close(fh)
        return 0

    def mkdir(self, path, mode):
        def work():
            real = self.real(path)
            self.change()
            self.folder_changes(os.path.dirname(real))
            os.mkdir(real, mode)
            node = self.node(real)
            node.names = {}
            return 0
        return self.call(work)

    def rmdir(self, path):
        def work():
            real = self.real(path)
            self.change()
            self.folder_changes(os.path.dirname(real))
            self.forget_name(real)
            os.rmdir(real)
            return 0
        return self.call(work)

    def unlink(self, path):
        def work():
            real = self.real(path)
            self.change()
            self.folder_changes(os.path.dirname(real))
            self.forget_name(real)
            os.unlink(real)
            return 0
        return self.call(work)

    def symlink(self, target, source):
        def work():
            real = self.real(target)
            self.change()
            self.folder_changes(os.path.dirname(real))
            os.symlink(source, real)
            self.node(real)
            return 0
        return self.call(work)

    def link(self, target, source):
        def work():
            real = self.real(target)
            self.change()
            self.folder_changes(os.path.dirname(real))
            self.node(self.real(source))
            os.link(self.real(source), real)
            return 0
        return self.call(work)

    def rename(self, old, new, flags=0):
        def work():
            real_old, real_new = self.real(old), self.real(new)
            self.change()
            self.folder_changes(os.path.dirname(real_old))
            self.folder_changes(os.path.dirname(real_new))
            self.node(real_old)
            if flags & RENAME_EXCHANGE:
                self.node(real_new)
            elif os.path.lexists(real_new) and not flags & RENAME_NOREPLACE:
                if os.lstat(real_new).st_ino != os.lstat(real_old).st_ino:
                    self.forget_name(real_new)
            renameat2(real_old, real_new, flags)
            return 0
        return self.call(work)

    def chmod(self, path, mode):
        return self.call(lambda: os.chmod(self.real(path), mode) or 0)

    def chown(self, path, uid, gid):
        return self.call(lambda: os.lchown(self.real(path), uid, gid) or 0)

    def utimens(self, path, times=None):
        return self.call(lambda: os.utime(self.real(path), ns=times, follow_symlinks=False) or 0)


class LossyFUSE(fuse.FUSE):
    """mfusepy drops rename's flags (RENAME_NOREPLACE, RENAME_EXCHANGE): passed on here."""

    def rename_fuse_3(self, old, new, flags):
        return self.operations.rename(old.decode(self.encoding, self.errors), new.decode(self.encoding, self.errors), flags)


def serve_control(path, filesystem):
    if os.path.exists(path):
        os.unlink(path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)

    def answer(connection):
        with connection, connection.makefile("rw") as stream:
            for line in stream:
                stream.write(json.dumps(filesystem.command(line)) + "\n")
                stream.flush()

    def loop():
        while True:
            connection, _ = server.accept()
            threading.Thread(target=answer, args=(connection,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("backing")
    parser.add_argument("mountpoint")
    parser.add_argument("--control", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tear", type=float, default=0.0)
    parser.add_argument("--keep-folders", type=float, default=0.0)
    arguments = parser.parse_args()
    filesystem = LossyFS(arguments.backing, arguments.seed, arguments.tear, arguments.keep_folders)
    serve_control(arguments.control, filesystem)
    LossyFUSE(filesystem, arguments.mountpoint, foreground=True, fsname="lossyfs", use_ino=True, raw_fi=False)
    with filesystem.mutex:
        if filesystem.dead:
            filesystem.kept()
    print(json.dumps(filesystem.command("status")), file=sys.stderr)


if __name__ == "__main__":
    main()
