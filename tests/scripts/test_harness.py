#!/usr/bin/env python3
"""Unit tests of scripts/harness.py: its command line reaches each module's
subcommands (servers.py, fio_json.py, tls.py) under their own names,
and parse_size.
"""

import json
import unittest

from testlib import Tmp, main, script
import harness


class SmallPieces(Tmp):
    def test_parse_size(self):
        self.assertEqual(harness.parse_size("64M"), 64 << 20)
        self.assertEqual(harness.parse_size(" 2 GiB "), 2 << 30)
        self.assertEqual(harness.parse_size("4k"), 4096)
        with self.assertRaisesRegex(ValueError, "not a size: '1.5G'"):
            harness.parse_size("1.5G")


    def cli(self, *args):
        return script("harness.py", *args, timeout=30)

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
    main()
