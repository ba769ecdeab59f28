# SPDX-License-Identifier: GPL-2.0-only
"""Running fio against nbd-hostile.py for one case, whatever the engine:
the server started on a private socket, fio under `timeout -s KILL` in its
own session (signalled once the misbehaviour fired, for the signal cases),
and every process left below this one killed and reported at the end.
run() returns what happened; the callers judge it; classify() names it as
the reports do (OUTCOMES).
"""

import atexit
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# What a run did, in the order classify() judges them.
OUTCOMES = ('crash', 'hang', 'fake data', 'accepted', 'strays', 'failed', 'passed',
            'wrong fail', 'not fired')
# Misbehaviours that leave part of a read's data unsent.
DATA_CASES = ('done-no-data', 'half-data', 'overlap', 'overlap-hole')


class Outcome:
    """What one run did: fio's status RC (negative: the signal that ended
    it; 124 or 137: killed by the time limit), OUTPUT, ELAPSED seconds
    (from the signal for signal cases), FIRED (the server misbehaved),
    TRIGGER (the server's note), STRAYS (processes left behind), SAN
    (sanitizer reports), CMD, KILL_AFTER, PROBLEMS (the run's own) and
    SERVER_LOG (its tail)."""

    def __init__(self):
        self.rc, self.output, self.elapsed = None, '', 0.0
        self.fired, self.trigger, self.strays, self.san = False, '', [], []
        self.cmd, self.kill_after, self.problems, self.server_log = [], 0, [], ''

    @property
    def killed(self):
        return self.rc in (137, -9, 124)


def run(c, fio, engine_args, kill_after):
    """Runs case C (a hostile_cases.case()) with the fio binary FIO and
    ENGINE_ARGS (--ioengine=... and its options; the job's own follow),
    killing fio KILL_AFTER seconds after it started. An Outcome."""
    o = Outcome()
    tmp = tempfile.mkdtemp(prefix='torus-hostile.')
    # Removed however the caller ends (even if printing the report fails).
    atexit.register(shutil.rmtree, tmp, True)
    sock = os.path.join(tmp, 'nbd.sock')
    trig = os.path.join(tmp, 'trigger')
    portf = os.path.join(tmp, 'port')
    slog = os.path.join(tmp, 'server.log')
    fout = os.path.join(tmp, 'fio.out')
    srv = proc = None
    o.kill_after = kill_after
    try:
        argv = [sys.executable, os.path.join(HERE, 'nbd-hostile.py'), sock,
                '--case', c['server'], '--trigger', trig, '--after', str(c['after'])]
        if c['tcp']:
            argv += ['--tcp-port-file', portf]
        with open(slog, 'w') as log:
            srv = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: os.path.exists(sock) or srv.poll() is not None, 10) \
                or srv.poll() is not None:
            o.problems.append('the hostile server did not start')
            o.server_log = tail(slog)
            return o
        if c['tcp']:
            if not wait_for(lambda: os.path.exists(portf), 10):
                o.problems.append('the hostile server did not write its TCP port')
                o.server_log = tail(slog)
                return o
            uri = f'nbd://127.0.0.1:{open(portf).read().strip()}/'
        else:
            uri = f'nbd+unix:///?socket={sock}'

        # Engine options follow --ioengine (fio learns them once it is loaded).
        fio_args = list(engine_args) + [f'--uri={uri}', '--name=x', '--bs=4k', '--size=1m']
        fio_args += c['fio']
        o.cmd = ['timeout', '-s', 'KILL', str(kill_after), fio] + fio_args
        with open(fout, 'w') as out:
            start = time.monotonic()
            # Own session: the process group we kill at the end is fio's alone.
            proc = subprocess.Popen(o.cmd, stdout=out, stderr=subprocess.STDOUT, cwd=tmp,
                                    start_new_session=True, env=fio_env(tmp))
        if c['signal']:
            # Signal fio's main process once the server is stalling it.
            if not wait_for(lambda: os.path.exists(trig) or proc.poll() is not None, 20) \
                    or proc.poll() is not None:
                o.problems.append('the server never stalled fio, so no signal was sent')
            else:
                time.sleep(0.5)
                kids = children(proc.pid)
                if not kids:
                    o.problems.append('cannot find fio under timeout')
                else:
                    os.kill(kids[0], c['signal'])
                    start = time.monotonic()
        o.rc = proc.wait()
        o.elapsed = time.monotonic() - start
    finally:
        if proc is not None:
            killpg(proc.pid)
        if srv is not None:
            srv.kill()
            srv.wait()
        # Whatever is left is a stray fio job process (or worse).
        o.strays = kill_descendants()

    with open(fout, errors='replace') as f:
        o.output = f.read()
    o.fired = os.path.exists(trig)
    if o.fired:
        with open(trig, errors='replace') as f:
            o.trigger = f.read()
    o.san = san_reports(tmp)
    o.server_log = tail(slog)
    return o


def classify(c, o):
    """The outcome of Outcome O for case C (its status is the protocol's:
    what a correct client does): one of OUTCOMES."""
    sent = c['signal']
    if o.killed or o.rc is None:
        return 'hang'
    if o.rc < 0 and -o.rc != (sent or 0):
        return 'crash'
    # A job process's death is reported by fio's main process.
    m = re.search(r'got signal=(\d+)', o.output)
    if m and int(m.group(1)) != (sent or 0):
        return 'crash'
    # timeout(1) passes fio's death by signal on as 128 + the signal.
    if o.rc > 128 and o.rc - 128 not in (sent or 0, 0) and o.rc - 128 in (
            signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL):
        return 'crash'
    if c['must_fire'] and not o.fired:
        return 'not fired'
    errs = re.findall(r'err=\s*(\d+)', o.output)
    clean = o.rc == 0 and errs and all(e == '0' for e in errs)
    # Status 0 is success to whoever runs fio, whatever else it printed.
    if c['status'] == 'fail' and o.rc == 0:
        return 'fake data' if c['server'] in DATA_CASES else 'accepted'
    if o.strays:
        return 'strays'
    if c['status'] == 'ok':
        return 'passed' if clean else 'wrong fail'
    return 'failed'


def children(pid):
    try:
        with open(f'/proc/{pid}/task/{pid}/children') as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def wait_for(pred, secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def killpg(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def become_subreaper():
    # fio's job processes call setsid(), so killing fio's process group
    # misses them; as a subreaper we inherit them if fio's main dies.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)          # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def kill_descendants():
    """SIGKILLs every live process below this one and reaps all of them
    (orphans we inherited as subreaper); returns the live ones' commands."""
    stat = {}
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                with open(f'/proc/{d}/stat') as f:
                    fields = f.read().rsplit(')', 1)[1].split()
                stat[int(d)] = (fields[0], int(fields[1]))     # state, ppid
            except (OSError, IndexError, ValueError):
                pass
    mine, todo = [], [os.getpid()]
    while todo:
        p = todo.pop()
        kids = [c for c, (_, pp) in stat.items() if pp == p]
        mine += kids
        todo += kids
    live = []
    for pid in mine:
        if stat[pid][0] == 'Z':
            continue
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as f:
                cmdline = f.read().replace(b'\0', b' ').decode(errors='replace')
            live.append(f'{pid} {cmdline[:80]}')
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for pid in mine:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    return live


def tail(path, n=40):
    try:
        with open(path, errors='replace') as f:
            return ''.join(f.readlines()[-n:])
    except OSError:
        return '(none)\n'


def fio_env(tmp):
    """fio's environment. In a sanitized build (TORUS_SANITIZE=1, as
    tests/lib.sh explains) the uninstrumented fio must load the ASan
    runtime first; reports go to files in tmp, read by san_reports()."""
    env = dict(os.environ)
    if env.get('TORUS_SANITIZE') != '1':
        return env
    runtime = env.get('TORUS_ASAN_RUNTIME') or subprocess.run(
        ['cc', '-print-file-name=libasan.so'], capture_output=True,
        text=True).stdout.strip()
    env['LD_PRELOAD'] = os.path.realpath(runtime)
    # fio's own leaks are not ours.
    env['ASAN_OPTIONS'] = ('abort_on_error=1:halt_on_error=1:detect_leaks=0:'
                           f'log_path={tmp}/asan')
    env['UBSAN_OPTIONS'] = ('abort_on_error=1:halt_on_error=1:print_stacktrace=1:'
                            f'log_path={tmp}/ubsan')
    return env


def san_reports(tmp):
    out = []
    for name in sorted(os.listdir(tmp)):
        if name.startswith(('asan.', 'ubsan.')):
            with open(os.path.join(tmp, name), errors='replace') as f:
                out.append(f.read())
    return out
