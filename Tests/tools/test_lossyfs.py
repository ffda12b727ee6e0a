"""lossyfs's own tests: after a cut it holds exactly what a disk may hold — everything synced,
nothing that was not (unless --tear or --keep-folders say a page or a folder reached the disk).

    python3 Tests/tools/test_lossyfs.py   (as root, or a user who may mount FUSE)
"""

import errno
import os
import shutil
import tempfile
import unittest

from lossyfs_mount import Mount


def write(path, data, sync=True):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def sync_folder(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read(path):
    with open(path, "rb") as file:
        return file.read()


class LossyFSTests(unittest.TestCase):
    def setUp(self):
        self.top = tempfile.mkdtemp(prefix="lossyfs-test-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        self.disk = Mount(os.path.join(self.top, "backing"), os.path.join(self.top, "mnt"), seed=1)
        self.disk.mount()
        self.root = self.disk.mountpoint

    def tearDown(self):
        self.disk.unmount()
        shutil.rmtree(self.top)

    def path(self, *names):
        return os.path.join(self.root, *names)

    def test_synced_bytes_and_names_survive(self):
        os.mkdir(self.path("a"))
        sync_folder(self.root)
        write(self.path("a", "kept"), b"synced")
        sync_folder(self.path("a"))
        self.disk.cut_and_remount()
        self.assertEqual(read(self.path("a", "kept")), b"synced")

    def test_unsynced_bytes_are_lost_but_not_the_synced_ones(self):
        write(self.path("file"), b"first")
        sync_folder(self.root)
        write(self.path("file"), b"second, never synced", sync=False)
        self.assertEqual(read(self.path("file")), b"second, never synced")
        self.disk.cut_and_remount()
        self.assertEqual(read(self.path("file")), b"first")

    def test_a_new_file_never_synced_is_empty_or_gone(self):
        write(self.path("named"), b"bytes", sync=False)
        sync_folder(self.root)
        write(self.path("unnamed"), b"bytes")
        self.disk.cut_and_remount()
        self.assertEqual(read(self.path("named")), b"")
        self.assertFalse(os.path.exists(self.path("unnamed")), "its folder was never synced after it was made")

    def test_names_come_back_until_their_folder_is_synced(self):
        write(self.path("removed"), b"old")
        write(self.path("moved"), b"moving")
        sync_folder(self.root)
        os.unlink(self.path("removed"))
        os.mkdir(self.path("d"))
        os.rename(self.path("moved"), self.path("d", "moved"))
        self.assertFalse(os.path.exists(self.path("removed")))
        self.assertEqual(sorted(os.listdir(self.root)), ["d"])
        self.disk.cut_and_remount()
        self.assertEqual(sorted(os.listdir(self.root)), ["moved", "removed"])
        self.assertEqual(read(self.path("removed")), b"old")
        self.assertEqual(read(self.path("moved")), b"moving")
        self.assertFalse(os.path.exists(self.path("d")))

    def test_a_rename_is_kept_once_both_folders_are_synced(self):
        os.mkdir(self.path("from"))
        os.mkdir(self.path("to"))
        write(self.path("from", "x"), b"x")
        for folder in ("", "from", "to"):
            sync_folder(self.path(folder))
        os.rename(self.path("from", "x"), self.path("to", "x"))
        sync_folder(self.path("to"))
        self.disk.cut_and_remount()
        # The source folder was not synced: the file is under both names (one file, two links).
        self.assertEqual(read(self.path("to", "x")), b"x")
        self.assertEqual(os.stat(self.path("to", "x")).st_ino, os.stat(self.path("from", "x")).st_ino)

    def test_a_rename_over_a_file_keeps_the_old_one_until_synced(self):
        write(self.path("target"), b"old bytes")
        sync_folder(self.root)
        write(self.path("new"), b"new bytes")
        os.rename(self.path("new"), self.path("target"))
        self.disk.cut_and_remount()
        self.assertEqual(read(self.path("target")), b"old bytes")
        self.assertFalse(os.path.exists(self.path("new")))

    def test_rename_noreplace_refuses_and_keeps_both(self):
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        write(self.path("a"), b"a")
        write(self.path("b"), b"b")
        result = libc.renameat2(-100, self.path("a").encode(), -100, self.path("b").encode(), 1)
        self.assertEqual((result, ctypes.get_errno()), (-1, errno.EEXIST))
        self.assertEqual(read(self.path("b")), b"b")

    def test_hard_links_stay_one_file(self):
        write(self.path("one"), b"shared")
        os.link(self.path("one"), self.path("two"))
        sync_folder(self.root)
        self.disk.cut_and_remount()
        self.assertEqual(os.stat(self.path("one")).st_ino, os.stat(self.path("two")).st_ino)
        self.assertEqual(read(self.path("two")), b"shared")

    def test_a_failed_fsync_loses_its_writes_even_when_a_retry_succeeds(self):
        write(self.path("f"), b"AAAA")
        sync_folder(self.root)
        self.disk.command("fail-fsync once f")
        fd = os.open(self.path("f"), os.O_WRONLY)
        try:
            os.pwrite(fd, b"BB", 0)
            with self.assertRaises(OSError) as failure:
                os.fsync(fd)
            self.assertEqual(failure.exception.errno, errno.EIO)
            os.fsync(fd)  # succeeds, as Linux's does: the pages were marked clean
            os.pwrite(fd, b"C", 3)
            os.fsync(fd)
        finally:
            os.close(fd)
        self.assertEqual(read(self.path("f")), b"BBAC")
        self.disk.cut_and_remount()
        self.assertEqual(read(self.path("f")), b"AAAC")

    def test_fail_fsync_always_fails_every_one(self):
        write(self.path("f"), b"x")
        self.disk.command("fail-fsync always")
        for _ in range(3):
            with self.assertRaises(OSError):
                write(self.path("f"), b"y")
        self.assertEqual(self.disk.command("status")["failed_fsyncs"], 3)

    def test_cut_at_fails_that_change_and_all_after(self):
        start = self.disk.command("status")["changes"]
        self.disk.command("cut-at %d" % (start + 3))
        os.mkdir(self.path("one"))
        os.mkdir(self.path("two"))
        with self.assertRaises(OSError) as failure:
            os.mkdir(self.path("three"))
        self.assertEqual(failure.exception.errno, errno.EIO)
        with self.assertRaises(OSError):
            os.listdir(self.root)
        self.assertTrue(self.disk.command("status")["dead"])
        self.disk.unmount()
        self.disk.mount()
        self.assertEqual(os.listdir(self.root), [], "the folders were made after the root's last fsync")

    def test_sync_makes_everything_durable(self):
        os.mkdir(self.path("d"))
        write(self.path("d", "f"), b"bytes", sync=False)
        self.disk.command("sync")
        write(self.path("d", "f"), b"later", sync=False)
        self.disk.cut_and_remount()
        self.assertEqual(read(self.path("d", "f")), b"bytes")

    def test_a_clean_unmount_keeps_everything(self):
        write(self.path("f"), b"never synced", sync=False)
        os.mkdir(self.path("d"))
        self.disk.unmount()
        self.disk.mount()
        self.assertEqual(sorted(os.listdir(self.root)), ["d", "f"])
        self.assertEqual(read(self.path("f")), b"never synced")

    def test_tear_keeps_unsynced_pages_by_the_seed(self):
        self.disk.unmount()
        self.disk.options = ["--seed", "3", "--tear", "1"]
        self.disk.mount()
        write(self.path("f"), b"old")
        sync_folder(self.root)
        write(self.path("f"), b"newer bytes", sync=False)
        self.disk.cut_and_remount()
        self.assertEqual(read(self.path("f")), b"newer bytes", "--tear 1 keeps every page")


if __name__ == "__main__":
    unittest.main()
