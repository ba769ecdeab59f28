"""The shell examples of README.md, CONTRIBUTING.md and docs/*.md, run as written where they can
run here.

Every fenced block with no language or `sh`/`bash` is an example, named by its file and its first
line (a picture or sample output is fenced as `text`). Each is in RUN (run here) or in CANNOT
(why not, and what runs it instead); one in neither fails the test, so a new example is
classified when it is written. Examples written inline in the
text are in INLINE, checked to be in their doc and run.

How an example runs: `bash -e` in a scratch directory laid out as the checkout after
`scripts/run.sh` (links to jobs/, scripts/, tests/, man/, the build tree as build/, and
./libtorus.so), with these changes, the same for every example:
- TORUS_RUNTIME=1 in the environment, so that the job files stop after 1 s (jobs/README.md: they
  scale by it) instead of running jobs/randrw.fio's 4 GiB; an example's own `TORUS_RUNTIME=N` and
  fio's `--runtime=N` become 1 as well. TORUS_SIZE is left alone: a server too small for the job
  must show.
- /tmp/ and /run/ in an example become the scratch directory, so that runs share no socket.
- Whatever the example leaves running (a server started with `&`, nbdkit, which daemonizes) is
  killed after it: every process whose environment carries this run's marker.
The scripts' --help is run by tests/scripts/test_help.py, the man pages by tests/man.
"""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

SRC = os.environ.get("TORUS_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BUILD = os.environ.get("TORUS_BUILD") or os.path.join(SRC, "build")
DOCS = ["README.md", "CONTRIBUTING.md"] + sorted(
    os.path.relpath(p, SRC) for p in glob.glob(os.path.join(SRC, "docs", "*.md")))
TIMEOUT = 90

# (doc, first line) -> what this test does with it, and why where it changes the example.
RUN = {
    ("README.md", "fio --ioengine=external:./libtorus.so --uri=nbd://10.0.0.5:10809/disk jobs/randrw.fio"): dict(
        drop=("10.0.0.5", "a server on another host"),
        before="nbdkit -U /run/nbd.sock -P /run/nbdkit.pid memory 4G",
        why="the second line against an nbdkit the test starts at the example's socket"),
    ("README.md", "qemu-img create -f qcow2 /tmp/disk.qcow2 1G"): {},
    ("docs/tcmu.md", "fio --ioengine=external:./libtorus.so --transport=tcmu jobs/randrw.fio"): {},
    ("docs/tcmu.md", "build/shims/tcmu/tcmu-shim --listen unix:/tmp/tcmu.sock --store memory --size 4G &"): {},
    ("docs/timeline.md", "build/shims/nbd/nbd-shim --profile standard --store memory --size 1G --listen unix:/tmp/s.sock --timeline /tmp/tl &"): {},
    ("docs/libnbd.md", "mkdir -p pki/server pki/client && cd pki"): {},
    ("docs/libnbd.md", "psktool -u alice -p keys.psk"): {},
}

TIME = "minutes of run time; the suite runs it in pieces"
CANNOT = {
    ("README.md", "scripts/run.sh      # install what is missing, build, run jobs/randrw.fio through the engine"):
        "installs packages and builds: CI's set-up runs it",
    ("README.md", "scripts/compare jobs/randrw.fio --size 4G --seconds 5 --paths engine-nbd,engine-tcmu,kernel-loop"):
        "three paths and kernel-loop's set-up (root, loop, nbdfuse): tests/compare runs compare",
    ("CONTRIBUTING.md", "scripts/build.sh                 # or: meson setup build && ninja -C build"):
        "builds and runs the suite: this test runs inside it",
    ("docs/building.md", "FIO_SRC=/path/to/fio scripts/build.sh          # or: meson setup build -Dfio_src=/path/to/fio"):
        "a fio tree of your own (a placeholder path)",
    ("docs/building.md", "meson install -C build          # or: meson install -C build --destdir /tmp/stage"):
        "installs into the system: tests/install runs it into a DESTDIR",
    ("docs/compare.md", "TORUS_SIZE=200M scripts/compare jobs/randrw.fio --seconds 10       # default server, all paths"):
        "placeholders (my.fio, storage1) and guest paths: tests/compare runs compare",
    ("docs/compare.md", "TORUS_SIZE=200M scripts/compare jobs/randrw.fio --sweep             # the default grid"):
        "a sweep of minutes, placeholders (my.fio, a results folder): tests/compare/test_sweep.py "
        "runs a 2 x 2 sweep, interrupts and resumes it",
    ("docs/documents.md", "nbd-shim --profile coreos --export torus --store memory --replicas 2 --bandwidth 1gbit \\"):
        "placeholders (<port>, <largest scaled test>): scripts/rerun-documents runs it (jobs-rerun-documents)",
    ("docs/documents.md", "tcmu-shim --socket <dir>/tcmu-torus.sock --store nbd:nbd://127.0.0.1:<port>/torus"):
        "placeholders (<dir>, <port>, <job>): scripts/rerun-documents runs it",
    ("docs/documents.md", "nbd-shim --profile zeroos --export default --size <largest scaled test> \\"):
        "placeholders (<p1>...<p9>, <port>): scripts/rerun-documents runs it",
    ("docs/fio-nbd-engine.md", "tests/hostile/fio-nbd-engine.py                       # every case, the installed fio"):
        "a placeholder fio (~/fio/fio) and minutes of cases: hostile-fio-nbd-engine runs it",
    ("docs/fio-nbd-engine.md", "scripts/fio-patched.sh                     # Debian 12's fio 3.33 + the series -> /tmp/torus-fio-patched-debian/fio"):
        "builds fio twice or more (minutes at -j2 each) and runs the table: hostile-fio-nbd-so "
        "runs the table on the series' engine built alone",
    ("docs/fio-nbd-engine.md", "scripts/fio-patched.sh --engine-only       # the series' nbd engine for the installed fio -> /tmp/torus-fio-nbd-so-debian/engines/fio-nbd.so"):
        "needs the checkout's .deps/fio and half a minute of cases: hostile-fio-nbd-so runs it",
    ("docs/fio-nbd-engine.md", "scripts/fio-patched.sh --base upstream --syncs &&"):
        "fetches and builds fio 3.41 (minutes) and runs the table: the full build's proof, not in "
        "the suite (hostile-fio-nbd-so runs the series' table)",
    ("docs/fuzzing.md", "scripts/fuzz.sh                       # every target, 60 s (string parsers 24 s)"):
        "a clang fuzzing build and minutes: scripts/test.sh's fuzz pass runs it",
    ("docs/fuzzing.md", "scripts/fuzz.sh --seconds 36000 replies            # ten hours, one process"):
        "hours by design",
    ("docs/fuzzing.md", "mkdir /tmp/min && build-fuzz/fuzz/fuzz_replies -merge=1 /tmp/min build-fuzz/fuzz-work/replies/corpus"):
        "needs the fuzzing build and a corpus scripts/fuzz.sh made",
    ("docs/guest.md", "scripts/guest [-v] [--mem MB] [--cpus N] [--timeout S] [--boot-timeout S] [--share DIR]..."):
        "a synopsis, not a command",
    ("docs/guest.md", "uio=$(scripts/tcmu-kernel setup --name disk0 --size 64M)   # prints /dev/uioN"):
        "inside the guest (LIO, UIO): kernel-tcmu runs it",
    ("docs/guest.md", "nbdkit -U /tmp/nbd.sock memory 64M                  # a server in the same guest"):
        "inside the guest (nbd.ko): kernel-nbd runs it",
    ("docs/guest.md", "nbdkit -U /tmp/d.sock memory 64M"):
        "boots the guest (a placeholder fio line in it): guest-helper runs --nbd-disk",
    ("docs/multi-host.md", "fio --server                       # all addresses, port 8765"):
        "alternatives, each a server in the foreground on a load generator: engine-multihost runs them",
    ("docs/libnbd.md", "fio --ioengine=external:./libtorus.so --transport=libnbd \\"):
        "a server on another host (nbd.example.com)",
    ("docs/libnbd.md", "TORUS_BUILD=$PWD/build tests/hostile/run-case.py --transport libnbd --table --md table.md"):
        "minutes of hostile cases: the hostile-libnbd suite runs them",
    ("docs/multi-host.md", "fio --client=h1 h1.fio --client=h2 h2.fio"):
        "load generators on other hosts (h1, h2): engine-multihost runs the arrangement in namespaces",
    ("docs/performance-history.md", "scripts/bench.sh --rounds 5 --runtime 4 --sections randread4k_qd16,randread4k_qd16_tcp,randread4k_qd1,randread4k_qd1_tcp,ceiling_qd64,read256k_qd64"):
        TIME + " (scripts-bench-report runs the bench)",
    ("docs/shims.md", "nbd-shim --profile coreos    --size 30G --replicas 2 --bandwidth 1gbit --shape-at storage"):
        "alternatives, each a server in the foreground: tests/shims runs each profile",
    ("docs/shims.md", "nbd-shim --profile coreos --size 30G --replicas 2 --bandwidth 1gbit --shape-at storage"):
        "a server in the foreground: tests/shims runs the coreos profile",
    ("docs/shims.md", "for p in 6380 6381 6382 6383 6384 6385 6386 6387 6388; do"):
        "fixed Redis ports and daemonized redis-servers: tests/shims runs the zeroos profile on private ones",
}


# Commands written in the text: (doc, command).
INLINE = [
    ("README.md", "fio --enghelp=./libtorus.so"),
    ("README.md", "fio --ioengine=external:./libtorus.so jobs/randrw.fio"),
    ("README.md", "man -l man/libtorus.7"),
]

FENCE = re.compile(r"^([ \t]*)```(\w*)[ \t]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)


def examples(doc):
    """(first line, block text) of every fenced shell or plain block of doc."""
    with open(os.path.join(SRC, doc)) as f:
        text = f.read()
    for m in FENCE.finditer(text):
        indent, lang, body = m.groups()
        if lang not in ("", "sh", "bash"):
            continue
        lines = [ln[len(indent):] if ln.startswith(indent) else ln for ln in body.splitlines()]
        first = next((ln.strip() for ln in lines if ln.strip()), "")
        if first:
            yield first, "\n".join(lines) + "\n"


def scratch_tree(d):
    """d laid out as the checkout after scripts/run.sh."""
    for name in ("jobs", "scripts", "tests", "man"):
        os.symlink(os.path.join(SRC, name), os.path.join(d, name))
    os.symlink(BUILD, os.path.join(d, "build"))
    os.symlink(os.path.join(BUILD, "engines", "libtorus.so"), os.path.join(d, "libtorus.so"))


def as_run_here(script, d, how):
    """The example with this test's changes (the module's docstring)."""
    drop = how.get("drop")
    if drop:
        kept, skip = [], False
        for ln in script.splitlines():
            if skip or drop[0] in ln:
                skip = ln.rstrip().endswith("\\")
                continue
            kept.append(ln)
        script = "\n".join(kept) + "\n"
    if how.get("before"):
        script = how["before"] + "\n" + script
    script = re.sub(r"\bTORUS_RUNTIME=\d+", "TORUS_RUNTIME=1", script)
    script = re.sub(r"--runtime=\d+", "--runtime=1", script)
    script = script.replace("/tmp/", d + "/").replace("/run/", d + "/")
    return script


def ours(marker):
    """Pids of the processes whose environment carries marker."""
    found = []
    needle = ("TORUS_DOC_EXAMPLE=" + marker).encode()
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(p))
        except OSError:
            pass
    return found


def run_script(script, how=None):
    """Runs one example as the module's docstring says: (exit status, output)."""
    d = tempfile.mkdtemp(prefix="torus-doc-")
    marker = uuid.uuid4().hex
    try:
        scratch_tree(d)
        env = dict(os.environ, TORUS_RUNTIME="1", TORUS_DOC_EXAMPLE=marker, HOME=d)
        body = as_run_here(script, d, how or {})
        # A file, not a pipe: a server left in the background holds its copy open.
        with open(os.path.join(d, ".output"), "w+") as out:
            try:
                rc = subprocess.run(["bash", "-e", "-c", body], cwd=d, env=env, timeout=TIMEOUT,
                                    stdout=out, stderr=subprocess.STDOUT).returncode
                how_it_ended = "\n---\n"
            except subprocess.TimeoutExpired:
                rc, how_it_ended = -1, f"\n--- timed out after {TIMEOUT} s\n"
            out.seek(0)
            return rc, body + how_it_ended + out.read()
    finally:
        for _ in range(50):
            pids = ours(marker)
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGTERM if _ < 20 else signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        shutil.rmtree(d, ignore_errors=True)


class Classified(unittest.TestCase):
    def test_every_example_is_classified(self):
        unknown, found = [], set()
        for doc in DOCS:
            for first, _ in examples(doc):
                key = (doc, first)
                found.add(key)
                if key not in RUN and key not in CANNOT:
                    unknown.append(f"{doc}: {first}")
        self.assertEqual(unknown, [], "examples neither run nor listed as unable to run: add each "
                         "to RUN or CANNOT (with the reason) in " + __file__)
        stale = [f"{d}: {f}" for d, f in list(RUN) + list(CANNOT)
                 if (d, f) not in found]
        self.assertEqual(stale, [], "listed here but no longer in the docs: remove or update")

    def test_reasons_given(self):
        for key, why in CANNOT.items():
            self.assertTrue(why.strip(), key)


class Examples(unittest.TestCase):
    def setUp(self):
        for tool in ("fio", "nbdkit", "qemu-img", "certtool", "psktool"):
            if not shutil.which(tool):
                self.skipTest(f"{tool} is not installed (scripts/deps.sh installs it)")
        if not os.path.exists(os.path.join(BUILD, "engines", "libtorus.so")):
            self.skipTest(f"no engine in {BUILD} (scripts/build.sh)")


def _add_block_test(doc, first, how):
    def test(self):
        body = dict(examples(doc))[first]
        rc, out = run_script(body, how)
        self.assertEqual(rc, 0, f"{doc}: the example starting {first!r} failed:\n{out[-4000:]}")
    name = "test_" + re.sub(r"\W+", "_", f"{doc}_{first}")[:90]
    setattr(Examples, name, test)


def _add_inline_test(doc, cmd):
    def test(self):
        with open(os.path.join(SRC, doc)) as f:
            self.assertTrue(cmd in f.read(), f"{doc} no longer says `{cmd}`: update INLINE")
        rc, out = run_script(cmd + " >/dev/null\n")
        self.assertEqual(rc, 0, f"{doc}: `{cmd}` failed:\n{out[-4000:]}")
    setattr(Examples, "test_inline_" + re.sub(r"\W+", "_", f"{doc}_{cmd}")[:90], test)


for (_doc, _first), _how in RUN.items():
    _add_block_test(_doc, _first, _how)
for _doc, _cmd in INLINE:
    _add_inline_test(_doc, _cmd)


if __name__ == "__main__":
    # by hand, as meson runs it: through tests/pyrun.py (a skipped case exits 77)
    sys.path.insert(0, os.path.join(SRC, "tests"))
    import pyrun
    sys.exit(pyrun.run_cases(sys.modules[__name__], __file__))
