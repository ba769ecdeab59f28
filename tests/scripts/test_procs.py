#!/usr/bin/env python3
"""Unit tests of scripts/procs.py: exit statuses and command lines in
words, a process's parent and its end watched from outside, letting a
process end (let_end), and the command-line frame the scripts share
(cli_main, exit_with).
"""

import argparse
import contextlib
import io
import os
import signal
import subprocess
import sys
import types
import unittest

from testlib import main
import procs


class Words(unittest.TestCase):
    def test_status_text(self):
        self.assertEqual(procs.status_text(1), "exit status 1")
        self.assertEqual(procs.status_text(-9), "killed by signal 9 (SIGKILL)")
        self.assertEqual(procs.status_text(None), "exit status unknown")

    def test_cmdline(self):
        self.assertEqual(procs.cmdline(["nbdkit", "-U", "/tmp/a b.sock"]),
                         "nbdkit -U '/tmp/a b.sock'")
        self.assertEqual(procs.cmdline(b"fio x"), "fio x")


class Watching(unittest.TestCase):
    def test_ppid_and_pidwatch(self):
        child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                                 stdin=subprocess.PIPE)
        self.addCleanup(child.wait)
        self.assertEqual(procs.ppid(child.pid), os.getpid())
        watch = procs.watched(child.pid)
        self.assertIsInstance(watch, procs.PidWatch)
        self.assertFalse(procs.ended(watch))
        child.stdin.close()
        child.wait()
        self.assertTrue(procs.ended(watch))
        self.assertIsNone(procs.ppid(child.pid))


class LetEnd(unittest.TestCase):
    def run_child(self, code):
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
        self.addCleanup(p.stdout.close)
        return p

    def test_ends_by_itself(self):
        p = self.run_child("pass")
        procs.let_end(p, 5)
        self.assertEqual(p.returncode, 0)

    def test_terminated(self):
        p = self.run_child("import time; time.sleep(60)")
        procs.let_end(p, 0.2)
        self.assertEqual(p.returncode, -signal.SIGTERM)

    def test_killed(self):
        p = self.run_child("import signal, sys, time\n"
                           "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                           "print('ready', flush=True)\n"
                           "time.sleep(60)\n")
        p.stdout.readline()                 # SIGTERM is ignored from here on
        procs.let_end(p, 0.2)
        self.assertEqual(p.returncode, -signal.SIGKILL)


def module(*names):
    """A module offering the subcommands NAMES; run_cli() returns the
    position of the one run, plus 10."""
    def add_cli(sub):
        for n in names:
            sub.add_parser(n).add_argument("--x")

    def run_cli(args):
        return 10 + names.index(args.cmd)
    return types.SimpleNamespace(add_cli=add_cli, run_cli=run_cli)


class Cli(unittest.TestCase):
    def test_each_module_runs_its_own(self):
        mods = (module("a", "b"), module("c"))
        self.assertEqual(procs.cli_main("t.py", "T.\n\nmore", mods, ["b"]), 11)
        self.assertEqual(procs.cli_main("t.py", "T.\n\nmore", mods, ["c", "--x", "1"]), 10)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
            procs.cli_main("t.py", "T.", mods, ["d"])
        self.assertEqual(e.exception.code, 2)
        self.assertIn("t.py: error: argument cmd: invalid choice: 'd'", err.getvalue())

    def exit_with(self, exc):
        def main():
            raise exc
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
            procs.exit_with(main, "tool")
        return e.exception.code, err.getvalue()

    def test_exit_with(self):
        with self.assertRaises(SystemExit) as e:
            procs.exit_with(lambda: 3, "tool")
        self.assertEqual(e.exception.code, 3)
        self.assertEqual(self.exit_with(procs.HarnessError("no fio")), (1, "tool: no fio\n"))
        self.assertEqual(self.exit_with(OSError("gone")), (1, "tool: gone\n"))

        class Whole(procs.HarnessError):
            prefixed = False
        self.assertEqual(self.exit_with(Whole("nbdkit exited")), (1, "nbdkit exited\n"))
        with self.assertRaises(argparse.ArgumentTypeError):     # not one of ours: raised
            self.exit_with(argparse.ArgumentTypeError("x"))


if __name__ == "__main__":
    main()
