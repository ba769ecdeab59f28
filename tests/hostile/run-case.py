#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Runs fio with the engine against nbd-hostile.py for one case and checks
fio's exit status, a substring of its output, and how long it took.

  run-case.py [-v] CASE  (-v: show fio's output on a pass too)
  run-case.py --list     the case names, one a line (meson reads this)

Environment: TORUS_SRC, TORUS_BUILD, FIO (default fio), HOSTILE_TIMEOUT_OPT
(the engine's timeout option, default request_timeout).

Exit 0 pass, 1 fail (with the reasons, the command and fio's output),
77 skip. fio never outlives the test: it runs under `timeout -s KILL` in
its own session, and at the end every process left below this one (fio's
job processes start their own sessions) is killed and reported.
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
SRC = os.environ.get('TORUS_SRC', os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get('TORUS_BUILD', os.path.join(SRC, 'build'))
ENGINE = os.path.join(BUILD, 'engines', 'libtorus.so')
FIO = os.environ.get('FIO') or 'fio'

# The engine's request/handshake timeout option, named in one place. Not
# "timeout": fio takes that name as an alias of its runtime option.
TIMEOUT_OPT = os.environ.get('HOSTILE_TIMEOUT_OPT', 'request_timeout')

# What fio's output must contain: short, stable substrings of the engine's
# messages, in one table so they are easy to adjust to the final wording.
MSG = {
    'lost': 'connection 1 lost',
    'magic': 'bad reply magic',
    'cookie': 'unknown cookie',
    'unneg': 'not negotiated',
    'data': 'OFFSET_DATA chunk',
    'hole': 'OFFSET_HOLE chunk',
    'overlap': 'overlap',
    'large': 'too large',
    'malformed': 'malformed',
    'closed': 'server closed the connection',
    'noreply': 'no reply for 2 s',
    'timeout2': 'timeout=2',
    'partial': 'ended having sent only',
    'eio': 'Input/output error',
    'hs_deadline': 'the handshake did not finish within 2 s',
    'greeting': 'the greeting has the wrong magic',
    'info': 'malformed NBD_REP_INFO',
    'huge_reply': '4294967295-byte reply to',
    'reply_limit': '(limit 65536)',
    'hs_closed': 'closed the connection during the handshake',
    'empty': 'the export is empty',
    'poll_us': 'torus: poll_us',
    'timeout_opt': 'torus: ' + TIMEOUT_OPT,
}

READ = ['--rw=randread']
VERIFY = ['--rw=randwrite', '--verify=crc32c']


def case(server, status, msgs=(), absent=(), bound=15, fio=(), eng_timeout=None,
         after=0, signal_=None, must_fire=True, tcp=False, name_offset=False):
    """server: nbd-hostile.py --case; status: 'fail', 'ok' or 'any' (fio's
    exit status); msgs/absent: MSG keys that must / must not appear; bound:
    seconds fio may take (from the signal, for signal cases); fio: extra fio
    arguments (the default job is a 1 MiB 4 KiB randread); eng_timeout: the
    engine's timeout option; after: requests answered right first;
    signal_: sent to fio's main pid once the misbehaviour fired;
    must_fire: the server must report that the misbehaviour happened;
    name_offset: the output names the offset of the request it hit;
    tcp: connect over TCP 127.0.0.1 instead of the Unix socket."""
    return dict(server=server, status=status, msgs=list(msgs), absent=list(absent),
                bound=bound, fio=list(fio) or READ, eng_timeout=eng_timeout, after=after,
                signal=signal_, must_fire=must_fire, tcp=tcp,
                name_offset=name_offset)


LOST = ('lost',)
HS = dict(eng_timeout=2, bound=8)          # handshake stalls: 2 s deadline
CASES = {
    # A correct server first: the harness and the server are sound.
    'good': case('good', 'ok', fio=VERIFY, must_fire=False),
    'good-simple': case('good', 'ok', fio=VERIFY + ['--structured_replies=0'],
                        must_fire=False),
    'good-tcp': case('good', 'ok', fio=VERIFY, must_fire=False, tcp=True),
    'good-export-name': case('good', 'ok', fio=VERIFY + ['--handshake=export-name'],
                             must_fire=False),
    'good-conns2-qd16': case('good', 'ok', fio=VERIFY + ['--conns=2', '--iodepth=16'],
                             must_fire=False),
    # Transmission: connection-fatal violations.
    'bad-magic': case('bad-magic', 'fail', LOST + ('magic',)),
    'bad-magic-qd16': case('bad-magic', 'fail', LOST + ('magic',), after=40,
                           fio=READ + ['--iodepth=16']),
    'unknown-cookie': case('unknown-cookie', 'fail', LOST + ('cookie',)),
    'duplicate-reply': case('duplicate-reply', 'fail', LOST + ('cookie',), after=3),
    'truncated-close': case('truncated-close', 'fail', LOST + ('closed',)),
    'structured-unnegotiated': case('structured-unnegotiated', 'fail', LOST + ('unneg',)),
    'data-too-large': case('data-too-large', 'fail', LOST + ('data',)),
    'data-undersize': case('data-undersize', 'fail', LOST + ('data',)),
    'data-before': case('data-before', 'fail', LOST + ('data',)),
    'data-wrap': case('data-wrap', 'fail', LOST + ('data',)),
    'data-after': case('data-after', 'fail', LOST + ('data',)),
    'hole-before': case('hole-before', 'fail', LOST + ('hole',)),
    'hole-after': case('hole-after', 'fail', LOST + ('hole',)),
    'hole-wrap': case('hole-wrap', 'fail', LOST + ('hole',)),
    'hole-zero': case('hole-zero', 'fail', LOST + ('hole',)),
    'overlap': case('overlap', 'fail', LOST + ('overlap',)),
    'overlap-hole': case('overlap-hole', 'fail', LOST + ('overlap',)),
    'error-malformed': case('error-malformed', 'fail', LOST + ('malformed',)),
    'oversize-chunk': case('oversize-chunk', 'fail', LOST + ('large',)),
    # Transmission: the request fails, the connection stays.
    'done-no-data': case('done-no-data', 'fail', ('partial',), absent=LOST, name_offset=True),
    'half-data': case('half-data', 'fail', ('partial',), absent=LOST, name_offset=True),
    'error-chunk': case('error-chunk', 'fail', ('eio',), absent=LOST, after=5),
    # Transmission: legal but unusual.
    'reverse-chunks': case('reverse-chunks', 'ok', fio=VERIFY),
    # Replies out of order, and a read failed without its data, between
    # others: receives laid out in send order must notice and recover.
    'reorder': case('reorder', 'ok', fio=['--rw=randrw', '--verify=crc32c',
                                          '--structured_replies=0', '--iodepth=16',
                                          '--bsrange=4k-64k', '--size=8m']),
    'simple-error': case('simple-error', 'fail', ('eio',), absent=LOST, after=20,
                         fio=READ + ['--structured_replies=0', '--iodepth=16']),
    # Transmission: stalls, ended by the engine's timeout.
    'silent-first': case('silent', 'fail', ('noreply', 'timeout2'), eng_timeout=2, bound=8),
    'silent-nth': case('silent', 'fail', ('noreply', 'timeout2'), eng_timeout=2, bound=8,
                       after=20),
    'silent-qd8': case('silent', 'fail', ('noreply', 'timeout2'), eng_timeout=2, bound=8,
                       after=10, fio=READ + ['--iodepth=8']),
    'truncated-silence': case('truncated-silence', 'fail', ('noreply', 'timeout2'),
                              eng_timeout=2, bound=8),
    # Stalls ended by fio (no engine timeout): the end of runtime, SIGINT,
    # SIGTERM. Outstanding requests fail, so fio's status is non-zero.
    'runtime-silent': case('silent', 'fail', eng_timeout=0, bound=5,
                           fio=READ + ['--runtime=2', '--time_based']),
    'sigint-silent': case('silent', 'fail', eng_timeout=0, bound=3, signal_=signal.SIGINT),
    'sigterm-silent': case('silent', 'fail', eng_timeout=0, bound=3,
                           signal_=signal.SIGTERM),
    'sigint-hs-silent': case('hs-silent-option', 'fail', eng_timeout=0, bound=3,
                             signal_=signal.SIGINT),
    # Handshake.
    'bad-greeting': case('bad-greeting', 'fail', ('greeting',)),
    'bad-greeting2': case('bad-greeting2', 'fail', ('greeting',)),
    'bs-min0': case('bs-min0', 'fail', ('info',)),
    'bs-npow2': case('bs-npow2', 'fail', ('info',)),
    'bs-max-lt-min': case('bs-max-lt-min', 'fail', ('info',)),
    'size-zero': case('size-zero', 'fail', ('empty',)),
    'size-2e63': case('size-2e63', 'ok'),
    'hs-silent-accept': case('hs-silent-accept', 'fail', ('hs_deadline',), **HS),
    'hs-silent-greeting': case('hs-silent-greeting', 'fail', ('hs_deadline',), **HS),
    'hs-silent-flags': case('hs-silent-flags', 'fail', ('hs_deadline',), **HS),
    'hs-silent-option': case('hs-silent-option', 'fail', ('hs_deadline',), **HS),
    'hs-silent-mid-reply': case('hs-silent-mid-reply', 'fail', ('hs_deadline',), **HS),
    'hs-trickle': case('hs-trickle', 'fail', ('hs_deadline',), **HS),
    'hs-huge-reply': case('hs-huge-reply', 'fail', ('huge_reply', 'reply_limit')),
    'hs-accept-close': case('hs-accept-close', 'fail', ('hs_closed',)),
    # Busy-polling (poll_us): receives made by the spin itself, at QD1 and
    # QD2 where it applies; the same faults end it as end a sleeping wait.
    'poll-good': case('good', 'ok', fio=VERIFY + ['--poll_us=200'], must_fire=False),
    'poll-good-qd2-tcp': case('good', 'ok', must_fire=False, tcp=True,
                              fio=VERIFY + ['--poll_us=200', '--iodepth=2',
                                            '--bsrange=4k-256k']),
    'poll-reorder': case('reorder', 'ok', fio=['--rw=randrw', '--verify=crc32c',
                                               '--structured_replies=0', '--iodepth=2',
                                               '--bsrange=4k-64k', '--size=8m',
                                               '--poll_us=200']),
    'poll-bad-magic': case('bad-magic', 'fail', LOST + ('magic',),
                           fio=READ + ['--poll_us=200']),
    'poll-truncated-close': case('truncated-close', 'fail', LOST + ('closed',),
                                 fio=READ + ['--poll_us=200']),
    'poll-silent': case('silent', 'fail', ('noreply', 'timeout2'), eng_timeout=2, bound=8,
                        after=20, fio=READ + ['--poll_us=1000000']),
    # Out-of-range options are refused, naming the option.
    'opt-poll-us': case('good', 'fail', ('poll_us',), fio=READ + ['--poll_us=-1'],
                        must_fire=False),
    'opt-timeout': case('good', 'fail', ('timeout_opt',), eng_timeout=-1, must_fire=False),
}


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


def run(name):
    c = CASES[name]
    if not shutil.which(FIO):
        print(f'SKIP: {FIO} is not installed (scripts/deps.sh installs it)')
        return 77
    if not os.path.exists(ENGINE):
        # meson builds it first (depends), so this is a wrong path: fail.
        print(f'FAIL: no engine at {ENGINE} (set TORUS_BUILD to the build directory)')
        return 1

    tmp = tempfile.mkdtemp(prefix='torus-hostile.')
    # Removed however the test ends (even if printing the report fails).
    atexit.register(shutil.rmtree, tmp, True)
    sock = os.path.join(tmp, 'nbd.sock')
    trig = os.path.join(tmp, 'trigger')
    portf = os.path.join(tmp, 'port')
    slog = os.path.join(tmp, 'server.log')
    fout = os.path.join(tmp, 'fio.out')
    srv = fio = None
    problems = []
    cmd = []
    try:
        argv = [sys.executable, os.path.join(HERE, 'nbd-hostile.py'), sock,
                '--case', c['server'], '--trigger', trig, '--after', str(c['after'])]
        if c['tcp']:
            argv += ['--tcp-port-file', portf]
        with open(slog, 'w') as log:
            srv = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: os.path.exists(sock) or srv.poll() is not None, 10) \
                or srv.poll() is not None:
            print('FAIL: the hostile server did not start\n' + tail(slog))
            return 1
        if c['tcp']:
            if not wait_for(lambda: os.path.exists(portf), 10):
                print('FAIL: the hostile server did not write its TCP port\n' + tail(slog))
                return 1
            uri = f'nbd://127.0.0.1:{open(portf).read().strip()}/'
        else:
            uri = f'nbd+unix:///?socket={sock}'

        # Engine options follow --ioengine (fio learns them once it is loaded).
        fio_args = [f'--ioengine=external:{ENGINE}', f'--uri={uri}', '--name=x',
                    '--bs=4k', '--size=1m', '--structured_replies=1']
        if c['eng_timeout'] is not None:
            fio_args.append(f'--{TIMEOUT_OPT}={c["eng_timeout"]}')
        fio_args += c['fio']
        # A hang is killed well after the bound, so the failure says how long.
        kill_after = c['bound'] + 10 + (20 if c['signal'] else 0)
        cmd = ['timeout', '-s', 'KILL', str(kill_after), FIO] + fio_args
        with open(fout, 'w') as out:
            start = time.monotonic()
            # Own session: the process group we kill at the end is fio's alone.
            fio = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=tmp,
                                   start_new_session=True, env=fio_env(tmp))
        if c['signal']:
            # Signal fio's main process once the server is stalling it.
            if not wait_for(lambda: os.path.exists(trig) or fio.poll() is not None, 20) \
                    or fio.poll() is not None:
                problems.append('the server never stalled fio, so no signal was sent')
            else:
                time.sleep(0.5)
                kids = children(fio.pid)
                if not kids:
                    problems.append('cannot find fio under timeout')
                else:
                    os.kill(kids[0], c['signal'])
                    start = time.monotonic()
        rc = fio.wait()
        elapsed = time.monotonic() - start
    finally:
        if fio is not None:
            killpg(fio.pid)
        if srv is not None:
            srv.kill()
            srv.wait()
        # Whatever is left is a stray fio job process (or worse).
        strays = kill_descendants()

    with open(fout, errors='replace') as f:
        output = f.read()
    fired = os.path.exists(trig)
    for report in san_reports(tmp):
        problems.append('sanitizer report:\n' + report)

    killed = rc in (137, -9, 124)
    if killed:
        problems.append(f'fio did not end and was killed after {kill_after} s')
    elif c['status'] == 'fail' and rc == 0:
        problems.append('fio succeeded but should have failed')
    elif c['status'] == 'ok':
        if rc != 0:
            problems.append(f'fio exited with status {rc} but should have succeeded')
        else:
            errs = re.findall(r'err=\s*(\d+)', output)
            if not errs or any(e != '0' for e in errs):
                problems.append('fio reported an error (err= in its summary)')
    for key in c['msgs']:
        if MSG[key] not in output:
            problems.append(f'output lacks "{MSG[key]}"')
    for key in c['absent']:
        if MSG[key] in output:
            problems.append(f'output has "{MSG[key]}", which it should not')
    if not killed and elapsed > c['bound']:
        since = 'after the signal' if c['signal'] else ''
        problems.append(f'fio took {elapsed:.1f} s {since}(bound {c["bound"]} s)')
    if strays:
        problems.append('stray processes were left and killed: ' + '; '.join(strays))
    if c['must_fire'] and not fired:
        problems.append('the server never misbehaved (its case did not fire)')
    if c['name_offset'] and fired:
        m = re.search(r'offset=(\d+)', open(trig).read())
        if m and f'offset {m.group(1)}' not in output:
            problems.append(f'output does not name the request\'s offset ("offset {m.group(1)}")')

    desc = f'{name}: server case {c["server"]}, fio status {rc}, {elapsed:.1f} s'
    if problems:
        print(f'FAIL: {desc}')
        for p in problems:
            print(f'  - {p}')
        print('command: ' + ' '.join(cmd))
        print('--- fio output:\n' + output.rstrip())
        print('--- server log (tail):\n' + tail(slog).rstrip())
        return 1
    print(f'PASS: {desc}')
    if VERBOSE:
        print('command: ' + ' '.join(cmd))
        print('--- fio output:\n' + output.rstrip())
        print('--- server log (tail):\n' + tail(slog).rstrip())
    return 0


VERBOSE = False


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


def main():
    global VERBOSE
    if len(sys.argv) == 3 and sys.argv[1] == '-v':
        VERBOSE = True
        del sys.argv[1]
    if len(sys.argv) == 2 and sys.argv[1] == '--list':
        print('\n'.join(CASES))
        return 0
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print('usage: run-case.py [-v] CASE | --list\ncases: ' + ' '.join(CASES), file=sys.stderr)
        return 2
    become_subreaper()
    return run(sys.argv[1])


if __name__ == '__main__':
    sys.exit(main())
