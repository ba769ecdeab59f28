#!/usr/bin/python3
"""The one runner of the Python tests (meson registers each through it).

  pyrun.py FILE [ARGS...]

A unittest module (FILE imports unittest): its cases are loaded and run;
every skipped case is printed with its reason, and the exit status is 1
when a case failed, 77 (meson's SKIP) when any case skipped, 0 otherwise.
A skipped case is a check that did not run, so the test must not pass:
scripts/test.sh with CI=true fails on a skip that tests/skips-allowed does
not list (scripts/skips.py reads the "SKIP:" line printed here).

A test script (FILE does not import unittest, e.g. run-case.py or
test_compare.py): run as __main__ with ARGS; it exits 77 itself when it
skips.

Debian's python3 runs the tests, not the first on PATH: it is the one
scripts/deps.sh installs matplotlib for (python3-matplotlib).
"""

import importlib.util
import os
import re
import runpy
import sys
import unittest


def load(path):
    name = os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # dataclasses, pickle and mock.patch look the module up by name
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_cases(module, path):
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    if suite.countTestCases() == 0:
        print(f"pyrun: {path} imports unittest but has no test cases: name them "
              "test_* in a unittest.TestCase, or drop the import to run it as a script",
              file=sys.stderr)
        return 1
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if not result.wasSuccessful():
        return 1
    if result.skipped:
        whys = [f"{case.id().split('.', 1)[-1]}: {why}" for case, why in result.skipped]
        for why in whys:
            print(f"skipped: {why}")
        # one line, the last: what skips.py names as the reason
        print(f"SKIP: {len(whys)} case(s) skipped: " + "; ".join(whys))
        return 77
    return 0


def main(argv):
    if not argv:
        print("usage: pyrun.py FILE [ARGS...]", file=sys.stderr)
        return 2
    path = os.path.abspath(argv[0])
    if not os.path.isfile(path):
        print(f"pyrun: no test file {argv[0]}", file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.dirname(path))
    with open(path) as f:
        text = f.read()
    if not re.search(r"^import unittest\b", text, re.M):
        sys.argv = [path] + argv[1:]
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                return e.code or 0
            print(e.code, file=sys.stderr)
            return 1
        return 0
    if argv[1:]:
        print(f"pyrun: {argv[0]} is a unittest module and takes no arguments: {argv[1:]}",
              file=sys.stderr)
        return 2
    sys.argv = [path]
    return run_cases(load(path), path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
