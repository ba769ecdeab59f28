#!/usr/bin/env python3
"""A test of the tests: apply one mutation (tests/meta/mutations.py) to a
scratch copy of the tree, build it, run the tests it names, and pass only
if each of them fails with the message the mutation expects.

  mutate.py --list        the mutations' names, one a line
  mutate.py NAME...       run these
  mutate.py --all         run every one (the meson test "mutations"), one
                          after the other, and say which were not caught

The scratch copy lives in $TORUS_BUILD/mutants (src/ and build/) and is
kept, so that only the first mutation of a build directory pays for a whole
build; the mutated file is restored before the next one. .deps (the
configured fio and tcmu-runner sources) is shared with the tree.
Exit 0: caught; 1: survived, or the mutant did not build, or a named test
could not decide (skipped); 2: the mutation no longer applies.
"""

import fcntl
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mutations  # noqa: E402

SRC = os.environ.get("TORUS_SRC") or os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("TORUS_BUILD") or os.path.join(SRC, "build")


class Stop(Exception):
    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


def source_files(src):
    """The tree's files: git's tracked and new ones, else a walk."""
    try:
        out = subprocess.run(["git", "-C", src, "ls-files", "-co", "--exclude-standard", "-z"],
                             check=True, capture_output=True).stdout
        files = [f for f in out.decode().split("\0") if f and os.path.isfile(os.path.join(src, f))]
        # other build directories (build-san, a developer's) are no source
        return [f for f in files if not f.split("/")[0].startswith(("build", ".deps"))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for root, dirs, names in os.walk(src):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(root, n), src) for n in names]
        return files


def sync_tree(src, dst):
    """Make dst a copy of src's files; unchanged files keep their times,
    so that ninja rebuilds only what differs."""
    os.makedirs(dst, exist_ok=True)
    for rel in source_files(src):
        a, b = os.path.join(src, rel), os.path.join(dst, rel)
        with open(a, "rb") as f:
            data = f.read()
        try:
            with open(b, "rb") as f:
                if f.read() == data:
                    continue
        except OSError:
            os.makedirs(os.path.dirname(b), exist_ok=True)
        with open(b, "wb") as f:
            f.write(data)
        shutil.copymode(a, b)
    deps = os.path.join(dst, ".deps")
    if not os.path.lexists(deps):
        os.symlink(os.path.join(src, ".deps"), deps)


def run(cmd, log, **kw):
    with open(log, "w") as f:
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, **kw).returncode


def tail(path, n=40):
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-n:])


def introspect(bdir, what):
    out = subprocess.run(["meson", "introspect", "--" + what, bdir], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def build(dst, bdir, tests, mutated, log):
    """Configure the scratch tree once (ninja regenerates it when a
    meson.build changes); build only what TESTS depend on. Tests that
    depend on nothing built (meta-layers, reading the sources) get only
    the targets compiling the MUTATED file, which must still build: ninja
    given no target would build the whole tree."""
    if not os.path.exists(os.path.join(bdir, "build.ninja")):
        if run(["meson", "setup", bdir, dst], log) != 0:
            raise Stop(1, f"meson setup of the scratch tree failed:\n{tail(log)}")
    ids = set()
    for t in introspect(bdir, "tests"):
        if t["name"] in tests:
            ids.update(t["depends"])
    targets = introspect(bdir, "targets")
    if not ids:
        path = os.path.join(dst, mutated)
        ids = {t["id"] for t in targets
               if any(path in s.get("sources", []) for s in t["target_sources"])}
    files = [os.path.relpath(f, bdir) for t in targets
             if t["id"] in ids for f in t["filename"]]
    if not files:
        return
    if run(["ninja", "-C", bdir] + files, log) != 0:
        raise Stop(1, f"the mutant does not build (a mutation must compile):\n{tail(log)}")


def apply(m, dst):
    """Write the mutant; return the original text."""
    path = os.path.join(dst, m.file)
    with open(path) as f:
        text = f.read()
    if text.count(m.old) != 1:
        raise Stop(2, f"mutation {m.name} no longer applies: its old text occurs "
                      f"{text.count(m.old)} times in {m.file} (want once); "
                      "update tests/meta/mutations.py to the code as it is now")
    with open(path, "w") as f:
        f.write(text.replace(m.old, m.new))
    return text


def results(bdir, logbase):
    """{test name: (result, output)} from a meson testlog."""
    out = {}
    with open(os.path.join(bdir, "meson-logs", logbase + ".json")) as f:
        for line in f:
            if line.strip():
                e = json.loads(line)
                out[e["name"].split(" / ")[-1]] = (e["result"],
                                                   (e.get("stdout") or "") + (e.get("stderr") or ""))
    return out


def judge(m, res):
    """Raise Stop unless every named test failed printing m.expect."""
    for t in m.tests:
        if t not in res:
            raise Stop(1, f"{t}: no such test ran (is it registered in this build?)")
        result, output = res[t]
        if result in ("OK", "EXPECTEDFAIL"):
            raise Stop(1, f"mutation {m.name} SURVIVED: {t} passed although {m.why}")
        if result == "SKIP":
            raise Stop(1, f"{t} skipped, so it cannot tell whether it catches {m.name}:\n"
                          f"{output[-2000:]}")
        expects = (m.expect,) if isinstance(m.expect, str) else m.expect
        said = [e for e in expects if e in output]
        if not said:
            raise Stop(1, f"{t} failed ({result}), but not with the expected message "
                          f"{' or '.join(map(repr, expects))}; its output ends:\n"
                          f"{output[-3000:]}")
        print(f"caught: {t} failed ({result}) with: {said[0]}")


def mutate(m, src=SRC, build_root=BUILD):
    root = os.path.join(build_root, "mutants")
    dst, bdir = os.path.join(root, "src"), os.path.join(root, "build")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sync_tree(src, dst)
        original = apply(m, dst)
        try:
            build(dst, bdir, m.tests, m.file, os.path.join(root, "build.log"))
            logbase = "mutant-" + m.name
            env = dict(os.environ, MESON_TESTTHREADS="1", **(m.env or {}))
            env.pop("TORUS_SRC", None)
            env.pop("TORUS_BUILD", None)
            run(["meson", "test", "-C", bdir, "--no-rebuild", "--logbase", logbase]
                + m.tests, os.path.join(root, logbase + ".out"), env=env)
            judge(m, results(bdir, logbase))
        finally:
            with open(os.path.join(dst, m.file), "w") as f:
                f.write(original)


def run_one(m):
    """0 when m was caught, else Stop's code (after saying why)."""
    print(f"mutation {m.name}: {m.why} ({m.file}); must fail: {', '.join(m.tests)}",
          flush=True)
    try:
        mutate(m)
    except Stop as e:
        print(f"{m.name}: " + ("FAIL: " if e.code == 1 else "") + str(e), flush=True)
        return e.code
    return 0


def main(argv):
    args = argv[1:]
    if args == ["--list"]:
        print("\n".join(m.name for m in mutations.MUTATIONS))
        return 0
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    if args == ["--all"]:
        chosen = mutations.MUTATIONS
    else:
        try:
            chosen = [mutations.by_name(a) for a in args]
        except KeyError as e:
            print(f"no mutation {e.args[0]!r}: see tests/meta/mutations.py", file=sys.stderr)
            return 2
    missed = [m.name for m in chosen if run_one(m)]
    if missed:
        print(f"FAIL: {len(missed)} of {len(chosen)} mutations not caught: {', '.join(missed)}")
        return 1
    print(f"PASS: all {len(chosen)} mutations caught")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
