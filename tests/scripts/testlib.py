"""What the tests of scripts/ share: where the source and build trees are
(TORUS_SRC and TORUS_BUILD as meson sets them, else this checkout and its
build/), scripts/ first on sys.path (importing this module is what lets a
test import the module it tests), a case with a scratch directory (Tmp), a
script run as the shell runs it (script()), and main(): a test file run by
hand runs as meson runs it, through tests/pyrun.py (a skipped case exits
77)."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("TORUS_SRC") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("TORUS_BUILD") or os.path.join(SRC, "build")
SCRIPTS = os.path.join(SRC, "scripts")
if SCRIPTS not in sys.path:
    sys.path.insert(0, SCRIPTS)


class Tmp(unittest.TestCase):
    """Each case gets a scratch directory, self.tmp, removed after it."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix=f"{type(self).__module__}.")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def path(self, name):
        return os.path.join(self.tmp, name)


def script(name, *args, **kw):
    """scripts/NAME run with ARGS by this Python, its output and errors
    captured as text (KW goes to subprocess.run: timeout, check, env...)."""
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, name)] + [str(a) for a in args],
                          capture_output=True, text=True, **kw)


def main():
    """The test file run by hand (python3 tests/scripts/test_X.py): its
    cases run as tests/pyrun.py runs them for meson."""
    sys.path.insert(0, os.path.join(SRC, "tests"))
    import pyrun
    sys.exit(pyrun.run_cases(sys.modules["__main__"], sys.argv[0]))
