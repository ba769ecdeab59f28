#!/usr/bin/env python3
"""scripts/guestlib.py's own logic, without booting: KVM or TCG from the
probe's outcome, NBD URIs, the command file, the boot-retry decision and
its message, waiting for a guest with a boot deadline (on real processes),
console marks split across reads, the test knob, and the initramfs's cache
key following /init's file."""

import os
import shlex
import subprocess
import time
import unittest

from testlib import main
import guestlib


class Accel(unittest.TestCase):
    def test_kvm_booted(self):
        self.assertEqual(guestlib.accel_from_probe(0, True, "", 1.25),
                         ("kvm", "KVM booted the probe in 1.2 s"))

    def test_killed_at_the_bound(self):
        self.assertEqual(guestlib.accel_from_probe(None, False, "", 8.0),
                         ("tcg", f"KVM did not boot the probe within {guestlib.PROBE_SECONDS} s "
                                 "(nested KVM?)"))

    def test_qemu_failed(self):
        err = "warning: x\nqemu-system-x86_64: kvm_init_vcpu failed: Operation not permitted\n"
        self.assertEqual(guestlib.accel_from_probe(1, False, err, 0.1),
                         ("tcg", "qemu -accel kvm failed, exit 1: kvm_init_vcpu failed: "
                                 "Operation not permitted"))
        accel, why = guestlib.accel_from_probe(-6, False, "x" * 300, 0.1)
        self.assertEqual(accel, "tcg")
        self.assertTrue(why.endswith("x" * 100 + "..."), why)
        # exit 0 without the probe's mark is not KVM
        self.assertEqual(guestlib.accel_from_probe(0, False, "", 1.0)[0], "tcg")


class NbdUri(unittest.TestCase):
    def test_unix(self):
        d = guestlib.parse_nbd_uri("nbd+unix:///vol%201?socket=/tmp/d.sock")
        self.assertEqual(d["server"], {"type": "unix", "path": "/tmp/d.sock"})
        self.assertEqual(d["export"], "vol 1")
        self.assertEqual(guestlib.parse_nbd_uri("nbd+unix:///?socket=/s")["export"], "")

    def test_inet(self):
        self.assertEqual(guestlib.parse_nbd_uri("nbd://h:1234/e")["server"],
                         {"type": "inet", "host": "h", "port": "1234"})
        self.assertEqual(guestlib.parse_nbd_uri("nbd://10.0.2.2/")["server"]["port"], "10809")

    def test_refused(self):
        for uri, why in (("nbds://h/e", "TLS"), ("nbd+unix://h/e?socket=/s", "takes no host"),
                         ("nbd+unix:///e", "socket=PATH"), ("nbd:///e", "nbd://HOST"),
                         ("nbd://h:port/e", "not a number"), ("http://h/", "expected nbd://")):
            with self.assertRaisesRegex(ValueError, why, msg=uri):
                guestlib.parse_nbd_uri(uri)


class CommandScript(unittest.TestCase):
    def test_quoting(self):
        argv = ["sh", "-c", "echo \"$0\" \"$TORUS_X\" 'x'", "a b"]
        text = guestlib.command_script(argv, [("TORUS_X", "it's"), ("FIO", "/usr/bin/fio")],
                                       cwd="/tmp/a dir")
        lines = text.splitlines()
        self.assertEqual(lines[0], "cd -- '/tmp/a dir' 2>/dev/null || cd /")
        self.assertEqual(lines[1], "export TORUS_X='it'\"'\"'s'")
        self.assertEqual(lines[2], "export FIO=/usr/bin/fio")
        self.assertEqual(shlex.split(lines[3]), ["exec"] + argv)
        # and a shell runs it as written (from /, as the guest lacks that directory)
        out = subprocess.run(["sh", "-c", text], capture_output=True, text=True)
        self.assertEqual(out.stdout, "a b it's x\n")


class BootRetry(unittest.TestCase):
    def test_decision(self):
        self.assertEqual(guestlib.BOOT_ATTEMPTS, 3)
        self.assertEqual(guestlib.after_hung_boot(1), "retry")
        self.assertEqual(guestlib.after_hung_boot(2), "retry")
        self.assertEqual(guestlib.after_hung_boot(3), "fail")
        self.assertEqual(guestlib.after_hung_boot(2, attempts=2), "fail")

    def test_message(self):
        head = ("the guest did not start the command within the boot time bound of 120 s "
                "(--boot-timeout, TORUS_GUEST_BOOT_TIMEOUT): killed qemu; ")
        self.assertEqual(guestlib.boot_hang_text(120, {}, True), head + "the console stayed empty")
        self.assertEqual(guestlib.boot_hang_text(120, {b"Linux version": 3.14}, False),
                         head + "the console showed 'Linux version' at 3.1 s, not 'Run /init'")
        self.assertEqual(
            guestlib.boot_hang_text(120, {b"Linux version": 1, b"Run /init": 9.96}, False),
            head + "the console showed 'Linux version' at 1.0 s, 'Run /init' at 10.0 s")
        self.assertEqual(guestlib.boot_hang_text(120, {}, False),
                         head + "the console showed none of 'Linux version', 'Run /init'")

    def test_knob(self):
        self.assertEqual(guestlib.parse_test_hang(""), (0, None))
        self.assertEqual(guestlib.parse_test_hang("1:2"), (1, 2.0))
        self.assertEqual(guestlib.parse_test_hang("2:0.5"), (2, 0.5))
        for bad in ("1", "x:2", "1:0", "-1:2"):
            with self.assertRaisesRegex(ValueError, "expected BOOTS:SECONDS", msg=bad):
                guestlib.parse_test_hang(bad)

    def test_default_bound(self):
        self.assertEqual(guestlib.BOOT_TIMEOUT, 120)
        os.environ.pop("TORUS_GUEST_BOOT_TIMEOUT", None)
        self.assertEqual(guestlib.env_seconds("TORUS_GUEST_BOOT_TIMEOUT", 120), 120)
        os.environ["TORUS_GUEST_BOOT_TIMEOUT"] = "90"
        self.assertEqual(guestlib.env_seconds("TORUS_GUEST_BOOT_TIMEOUT", 120), 90.0)
        os.environ["TORUS_GUEST_BOOT_TIMEOUT"] = "soon"
        self.assertIsNone(guestlib.env_seconds("TORUS_GUEST_BOOT_TIMEOUT", 120))
        del os.environ["TORUS_GUEST_BOOT_TIMEOUT"]


class Console:
    """What wait_guest reads of the console relay: the marks seen."""

    def __init__(self):
        self.seen = {}


class WaitGuest(unittest.TestCase):
    """wait_guest on real processes standing in for qemu."""

    def wait(self, argv, timeout, boot_timeout, mark_after=None):
        proc = subprocess.Popen(argv)
        console = Console()
        start = time.monotonic()
        if mark_after is not None:
            import threading
            threading.Timer(mark_after, lambda: console.seen.setdefault(
                guestlib.RUNNING, time.monotonic())).start()
        try:
            got = guestlib.wait_guest(proc, console, start, timeout, boot_timeout)
        finally:
            proc.kill()
            proc.wait()
        return got, time.monotonic() - start

    def test_exits_during_boot(self):
        (status, why), _ = self.wait(["sh", "-c", "exit 3"], 10, 5)
        self.assertEqual((status, why), (3, None))

    def test_boot_hangs(self):
        (status, why), took = self.wait(["sleep", "30"], 10, 0.3)
        self.assertEqual((status, why), (None, "boot"))
        self.assertLess(took, 2)

    def test_running_then_timeout(self):
        # the mark came in time: only the command's timeout applies
        (status, why), took = self.wait(["sleep", "30"], 0.8, 0.4, mark_after=0.1)
        self.assertEqual((status, why), (None, "timeout"))
        self.assertGreaterEqual(took, 0.8)

    def test_timeout_below_boot_bound(self):
        # --timeout 3 with the boot bound above it: a timeout (124), not a hang
        (status, why), _ = self.wait(["sleep", "30"], 0.3, 120)
        self.assertEqual((status, why), (None, "timeout"))


class Relay(unittest.TestCase):
    def test_mark_across_reads(self):
        r, w = os.pipe()
        relay = guestlib.Relay(r, None, keep=0, watch=[guestlib.RUNNING, b"Run /init"])
        relay.start()
        for part in (b"[ 1.0] x\r\ntorus-gu", b"est: runn", b"ing\r\n"):
            os.write(w, part)
            time.sleep(0.05)
        os.close(w)
        relay.finished.set()
        relay.join(5)
        self.assertFalse(relay.is_alive())
        self.assertIn(guestlib.RUNNING, relay.seen)
        self.assertNotIn(b"Run /init", relay.seen)

    def test_file_followed_to_its_end(self):
        # as qemu appends to the channel's file: read while it grows, and
        # everything once qemu has gone
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "out")
            w = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            r = os.open(path, os.O_RDONLY)
            dest = os.open(os.path.join(tmp, "copy"), os.O_WRONLY | os.O_CREAT)
            relay = guestlib.Relay(r, dest, keep=10)
            relay.start()
            blob = os.urandom(1 << 20)
            for i in range(0, len(blob), 100000):
                os.write(w, blob[i:i + 100000])
                if i == 0:
                    time.sleep(0.1)
            time.sleep(0.05)
            self.assertTrue(relay.is_alive(), "the relay stopped before qemu had gone")
            os.write(w, b"last")
            os.close(w)
            relay.finished.set()
            relay.join(5)
            os.close(dest)
            self.assertFalse(relay.is_alive())
            with open(os.path.join(tmp, "copy"), "rb") as f:
                self.assertEqual(f.read(), blob + b"last")
            self.assertEqual(relay.tail, (blob + b"last")[-10:])


class Initramfs(unittest.TestCase):
    def test_init_file(self):
        init = guestlib.INIT_FILE.read_bytes()
        self.assertTrue(init.startswith(b"#!/bin/busybox sh\n"))
        self.assertIn(b"log running\n", init)

    def test_key_follows_init(self):
        args = ("6.1.0-1-amd64", ["kernel/a.ko"], "/bin/busybox", 100, 5)
        a = guestlib.initramfs_key(b"#!/bin/sh\necho a\n", *args)
        self.assertEqual(a, guestlib.initramfs_key(b"#!/bin/sh\necho a\n", *args))
        self.assertNotEqual(a, guestlib.initramfs_key(b"#!/bin/sh\necho b\n", *args))
        self.assertNotEqual(a, guestlib.initramfs_key(b"#!/bin/sh\necho a\n", "6.1.0-2-amd64",
                                                      *args[1:]))


if __name__ == "__main__":
    main()
