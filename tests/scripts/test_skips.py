#!/usr/bin/env python3
"""Unit tests of scripts/skips.py: skips are named with their reasons, and
with --fatal only the allow-list's may pass."""

import io
import json
import os
import tempfile
import unittest

from testlib import main
import skips


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def testlog(tmp, entries):
    return write(tmp, "testlog.json", "".join(json.dumps(e) + "\n" for e in entries))


def entry(name, result, stdout=""):
    return {"name": name, "result": result, "stdout": stdout, "returncode": 0}


class Skips(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.allow = write(self.tmp.name, "allow",
                           "# comment\n"
                           "sanitized shim-valgrind valgrind cannot run ASan programs\n"
                           "* engine-multihost needs ip netns\n")

    def tearDown(self):
        self.tmp.cleanup()

    def run_check(self, entries, pass_name="normal", fatal=True):
        out = io.StringIO()
        bad = skips.check(testlog(self.tmp.name, entries), pass_name,
                          skips.read_allow(self.allow), fatal, out)
        return bad, out.getvalue()

    def test_reason_and_name(self):
        bad, out = self.run_check([
            entry("integration / engine-nbdkit", "SKIP",
                  "x\nSKIP: nbdkit is not installed (scripts/deps.sh installs it)\n"),
            entry("engine-ok", "OK")])
        self.assertEqual(bad, 1)
        self.assertIn("skips: normal: engine-nbdkit: SKIPPED: nbdkit is not installed "
                      "(scripts/deps.sh installs it)", out)
        self.assertNotIn("engine-ok", out)
        self.assertIn("tests/skips-allowed", out)

    def test_allowed_in_its_pass_only(self):
        e = [entry("shim-valgrind", "SKIP", "SKIP: a sanitized build\n")]
        self.assertEqual(self.run_check(e, "sanitized")[0], 0)
        self.assertEqual(self.run_check(e, "normal")[0], 1)

    def test_wildcard_pass(self):
        e = [entry("engine-multihost", "SKIP", "SKIP: no netns\n")]
        bad, out = self.run_check(e, "newer-fio")
        self.assertEqual(bad, 0)
        self.assertIn("allowed: needs ip netns", out)

    def test_no_reason_is_never_allowed(self):
        e = [entry("shim-valgrind", "SKIP", "nothing said\n")]
        bad, out = self.run_check(e, "sanitized")
        self.assertEqual(bad, 1)
        self.assertIn("no reason printed", out)

    def test_not_fatal_outside_ci(self):
        e = [entry("engine-nbdkit", "SKIP", "SKIP: why\n")]
        bad, out = self.run_check(e, fatal=False)
        self.assertEqual(bad, 0)
        self.assertIn("engine-nbdkit: SKIPPED: why", out)

    def test_bad_allow_line(self):
        path = write(self.tmp.name, "bad", "normal engine-x\n")
        with self.assertRaises(skips.AllowListError):
            skips.read_allow(path)

    def test_allowed_cli(self):
        self.assertEqual(skips.main(["allowed", "--pass", "sanitized", "--allow",
                                     self.allow, "shim-valgrind"]), 0)
        self.assertEqual(skips.main(["allowed", "--pass", "normal", "--allow",
                                     self.allow, "shim-valgrind"]), 1)

    def test_repo_allow_list_reads(self):
        allow = skips.read_allow(skips.DEFAULT_ALLOW)
        for (pass_name, _), why in allow.items():
            self.assertIn(pass_name, ("*", "normal", "sanitized", "fuzz", "newer-fio"))
            self.assertTrue(why.strip())


if __name__ == "__main__":
    main()
