#!/usr/bin/env python3
"""The skipped tests of a meson test run, with their reasons; in CI, a
skip that is not on the allow-list fails the run.

  skips.py check TESTLOG --pass NAME [--allow FILE] [--fatal]
      print one line per skipped test of TESTLOG (meson's
      meson-logs/testlog.json) with the reason it printed ("SKIP: ...");
      with --fatal exit 1 when a skip is not allowed for pass NAME

  skips.py allowed --pass NAME [--allow FILE] WHAT
      exit 0 when WHAT (a test, or a whole pass) may skip in pass NAME

The allow-list (default tests/skips-allowed) has one entry a line:
  PASS  TEST  REASON
PASS is a pass of scripts/test.sh (normal, sanitized, fuzz, newer-fio) or
*, TEST a test's name as meson prints it (without the suite) or "-" for
the pass itself. Everything after them is the reason, and must be there.
Lines starting with # are comments.

Why fatal: CI runs as root after the README's command installed every
tool, so a skip there means something broke, and a skipped check protects
nothing.
"""

import argparse
import json
import os
import re
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_ALLOW = os.path.join(SRC, "tests", "skips-allowed")
SKIP_LINE = re.compile(r"^\s*(?:\S+:\s+)?SKIP:\s*(.*\S)", re.M)


class AllowListError(Exception):
    pass


def read_allow(path):
    """{(pass, test): reason} from an allow-list file."""
    allow = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split(None, 2)
            if len(fields) < 3:
                raise AllowListError(f"{path}:{n}: want 'PASS TEST REASON', got {line!r}")
            allow[(fields[0], fields[1])] = fields[2]
    return allow


def is_allowed(allow, pass_name, what):
    return (pass_name, what) in allow or ("*", what) in allow


def reason(entry):
    """The last "SKIP: why" line a test printed, or None."""
    text = (entry.get("stdout") or "") + "\n" + (entry.get("stderr") or "")
    found = SKIP_LINE.findall(text)
    return found[-1] if found else None


def test_name(entry):
    # meson logs "suite / name" in some versions, "name" in others
    return entry["name"].split(" / ")[-1]


def skipped(testlog):
    """[(test, reason or None)] for every skipped test of a testlog.json."""
    out = []
    with open(testlog) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            entry = json.loads(line)
            if entry.get("result") == "SKIP":
                out.append((test_name(entry), reason(entry)))
    return out


def check(testlog, pass_name, allow, fatal, out=sys.stdout):
    """Print the skips; the number of them that fail the run."""
    bad = 0
    for name, why in skipped(testlog):
        if why is None:
            why = "(no reason printed: a skip must say why, as tests/lib.sh's skip does)"
            ok = False
        else:
            ok = is_allowed(allow, pass_name, name)
        if ok:
            tag = "SKIPPED (allowed: " + allow.get((pass_name, name), allow.get(("*", name))) + ")"
        else:
            tag = "SKIPPED"
            bad += 1
        print(f"skips: {pass_name}: {name}: {tag}: {why}", file=out)
    if fatal and bad:
        print(f"skips: {pass_name}: {bad} test(s) skipped that CI must run: install what "
              "they name (scripts/deps.sh), or add them with a reason to "
              f"{os.path.relpath(DEFAULT_ALLOW, SRC)}", file=out)
    return bad if fatal else 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("testlog")
    a = sub.add_parser("allowed")
    a.add_argument("what")
    for s in (c, a):
        s.add_argument("--pass", dest="pass_name", required=True)
        s.add_argument("--allow", default=DEFAULT_ALLOW)
    c.add_argument("--fatal", action="store_true")
    args = p.parse_args(argv)
    try:
        allow = read_allow(args.allow)
    except (OSError, AllowListError) as e:
        print(f"skips: {e}", file=sys.stderr)
        return 2
    if args.cmd == "allowed":
        return 0 if is_allowed(allow, args.pass_name, args.what) else 1
    try:
        return 1 if check(args.testlog, args.pass_name, allow, args.fatal) else 0
    except (OSError, ValueError, KeyError) as e:
        print(f"skips: cannot read {args.testlog}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
