#!/usr/bin/env python3
"""--help answers before anything is installed or built: scripts/run.sh,
test.sh, compare, rerun-documents, guest, bench, bench-builds and timeline print their usage
and exit 0 with every program they would install, build or start with
(apt-get, sudo, meson, ninja, fio, qemu, ...) replaced by one that records
its call and fails."""

import os
import subprocess
import tempfile
import unittest

from testlib import SRC, main


TRAPS = ("apt-get", "apt-cache", "apt", "dpkg", "dpkg-query", "sudo", "meson", "ninja", "cc",
         "gcc", "fio", "nbdkit", "qemu-system-x86_64", "git", "curl", "wget", "make")

# each command, and a line its help must hold
COMMANDS = (
    (["scripts/run.sh", "--help"], "scripts/run.sh jobs/X.fio"),
    (["scripts/test.sh", "--help"], "scripts/test.sh --quick"),
    (["scripts/test.sh", "-h"], "four passes"),
    (["scripts/compare", "--help"], "usage: compare"),
    (["scripts/rerun-documents", "--help"], "usage: rerun-documents"),
    (["scripts/guest", "--help"], "--boot-timeout S"),
    (["scripts/bench", "--help"], "usage: scripts/bench"),
    (["scripts/bench-builds", "--help"], "usage: bench-builds"),
    (["scripts/timeline", "--help"], "usage: timeline"),
)


class Help(unittest.TestCase):
    def test_help_first(self):
        with tempfile.TemporaryDirectory(prefix="torus-help.") as tmp:
            bin_dir = os.path.join(tmp, "bin")
            calls = os.path.join(tmp, "calls")
            os.mkdir(bin_dir)
            for name in TRAPS:
                path = os.path.join(bin_dir, name)
                with open(path, "w") as f:
                    f.write(f'#!/bin/sh\necho "{name} $*" >>"{calls}"\nexit 1\n')
                os.chmod(path, 0o755)
            env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
            for argv, expect in COMMANDS:
                with self.subTest(argv=" ".join(argv)):
                    r = subprocess.run(argv, cwd=SRC, env=env, capture_output=True, text=True,
                                       timeout=30)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn(expect, r.stdout)
                    self.assertEqual(r.stderr, "")
                    self.assertFalse(os.path.exists(calls),
                                     f"{' '.join(argv)} ran: " +
                                     (open(calls).read() if os.path.exists(calls) else ""))


if __name__ == "__main__":
    main()
