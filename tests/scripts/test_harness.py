#!/usr/bin/env python3
"""Unit tests of scripts/harness.py: its command line reaches each module's
subcommands (servers.py, fio_json.py, tls.py) under their own names,
and parse_size.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("TORUS_SRC") or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "..", "..")
BUILD = os.environ.get("TORUS_BUILD", os.path.join(SRC, "build"))
HARNESS = os.path.join(SRC, "scripts", "harness.py")
sys.path.insert(0, os.path.join(SRC, "scripts"))
import harness  # noqa: E402


class Tmp(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test-harness.")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def path(self, name):
        return os.path.join(self.tmp, name)


class SmallPieces(Tmp):
    def test_parse_size(self):
        self.assertEqual(harness.parse_size("64M"), 64 << 20)
        self.assertEqual(harness.parse_size(" 2 GiB "), 2 << 30)
        self.assertEqual(harness.parse_size("4k"), 4096)
        with self.assertRaisesRegex(ValueError, "not a size: '1.5G'"):
            harness.parse_size("1.5G")


    def cli(self, *args):
        return subprocess.run([sys.executable, HARNESS] + list(args), capture_output=True,
                              text=True, timeout=30)

    def test_cli_reaches_each_module(self):
        r = self.cli("free-port")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.strip().isdigit())
        r = self.cli("wait-port", r.stdout.strip(), "0.2")
        self.assertEqual(r.returncode, 1)
        self.assertIn("nothing listens on 127.0.0.1:", r.stderr)
        p = self.path("out.json")
        with open(p, "w") as f:
            f.write("fio: a message\n" + json.dumps({"jobs": [{
                "jobname": "j", "job_runtime": 1000, "usr_cpu": 1.0, "sys_cpu": 1.0,
                "read": {"total_ios": 10, "iops": 10.0, "bw_bytes": 40960,
                         "clat_ns": {"mean": 1000.0}, "lat_ns": {"mean": 1100.0}}}]}))
        r = self.cli("fio-summary", p)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ios 10\n", r.stdout)
        r = self.cli("fio-messages", p)
        self.assertEqual(r.stdout, "fio: a message\n")
        r = self.cli("libnbd-home", self.path("home"), self.path("none"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("has no ca-cert.pem", r.stderr)
        r = self.cli("no-such-command")
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    # meson runs it through tests/pyrun.py, which exits 77 on a skipped case
    unittest.main(verbosity=2)
