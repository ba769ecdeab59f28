#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Runs fio with the engine against nbd-hostile.py for one case and checks
fio's exit status, a substring of its output, and how long it took; or
runs many and prints a Markdown table of what each did.

  run-case.py [-v] [--transport libnbd] CASE   (-v: fio's output on a pass too)
  run-case.py [--transport libnbd] --list [suite]
                                  the case names, or those meson runs (suite)
  run-case.py [--transport libnbd] --table [--cases A,B] [--md FILE]

--transport libnbd runs the engine with transport=libnbd: each case
without the native transport's own options, against what hostile_cases.py
expects there (LIBNBD_MSG, LIBNBD_DIFF). The table has a row per case: the
misbehaviour, the outcome (hostile_run.OUTCOMES), fio's status, seconds,
and whether the run matched the native transport's expectation, a
documented difference (with its reason), or neither (what went wrong).

Environment: TORUS_SRC, TORUS_BUILD, FIO (default fio), HOSTILE_TIMEOUT_OPT
(the engine's timeout option, default request_timeout).

Exit 0 pass, 1 fail (with the reasons, the command and fio's output),
77 skip (no fio, or an engine built without libnbd for --transport
libnbd); --table exits 1 if any case failed. fio never outlives the test
(hostile_run.py).
"""

import argparse
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys

from hostile_cases import CASES, LIBNBD_MSG, LIBNBD_SUITE, MSG, TIMEOUT_OPT, libnbd_cases
import hostile_run

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get('TORUS_SRC', os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get('TORUS_BUILD', os.path.join(SRC, 'build'))
ENGINE = os.path.join(BUILD, 'engines', 'libtorus.so')
FIO = os.environ.get('FIO') or 'fio'
VERBOSE = False


def transport_cases(transport):
    """The cases a transport runs and the messages they name."""
    if transport == 'libnbd':
        return libnbd_cases()[0], LIBNBD_MSG
    return CASES, MSG


def judge(c, o, msg=MSG):
    """What is wrong with Outcome O of case C, for the engine: a list.
    MSG: the table C's message keys name."""
    problems = list(o.problems)
    for report in o.san:
        problems.append('sanitizer report:\n' + report)
    if o.killed:
        problems.append(f'fio did not end and was killed after {o.kill_after} s')
    elif c['status'] == 'fail' and o.rc == 0:
        problems.append('fio succeeded but should have failed')
    elif c['status'] == 'ok':
        if o.rc != 0:
            problems.append(f'fio exited with status {o.rc} but should have succeeded')
        else:
            errs = re.findall(r'err=\s*(\d+)', o.output)
            if not errs or any(e != '0' for e in errs):
                problems.append('fio reported an error (err= in its summary)')
    for key in c['msgs']:
        if msg[key] not in o.output:
            problems.append(f'output lacks "{msg[key]}"')
    for key in c['absent']:
        if msg[key] in o.output:
            problems.append(f'output has "{msg[key]}", which it should not')
    if not o.killed and o.elapsed > c['bound']:
        since = 'after the signal ' if c['signal'] else ''
        problems.append(f'fio took {o.elapsed:.1f} s {since}(bound {c["bound"]} s)')
    if o.strays:
        problems.append('stray processes were left and killed: ' + '; '.join(o.strays))
    if c['must_fire'] and not o.fired:
        problems.append('the server never misbehaved (its case did not fire)')
    if c['name_offset'] and o.fired:
        m = re.search(r'offset=(\d+)', o.trigger)
        if m and f'offset {m.group(1)}' not in o.output:
            problems.append(f'output does not name the request\'s offset ("offset {m.group(1)}")')
    return problems


def matches(c, problems):
    """The table's last column: the native transport's expectation met,
    a documented difference met (its reason), or what went wrong."""
    if problems:
        return 'NO: ' + '; '.join(p.splitlines()[0] for p in problems).replace('|', '\\|')
    return f'differs: {c["reason"]}' if c.get('reason') else 'yes'


def engine_args(c, transport):
    if transport == 'libnbd':
        args = [f'--ioengine=external:{ENGINE}', '--transport=libnbd']
    else:
        args = [f'--ioengine=external:{ENGINE}', '--structured_replies=1']
    if c['eng_timeout'] is not None:
        args.append(f'--{TIMEOUT_OPT}={c["eng_timeout"]}')
    return args


def run_one(c, transport, msg):
    """Runs case C; (Outcome, problems)."""
    # A hang is killed well after the bound, so the failure says how long.
    kill_after = c['bound'] + 10 + (20 if c['signal'] else 0)
    o = hostile_run.run(c, FIO, engine_args(c, transport), kill_after)
    return o, judge(c, o, msg)


def cannot_run(transport):
    """Why no case can run here (then skip, 77, or fail, 1), or None."""
    if not shutil.which(FIO):
        return 77, f'SKIP: {FIO} is not installed (scripts/deps.sh installs it)'
    if not os.path.exists(ENGINE):
        # meson builds it first (depends), so this is a wrong path: fail.
        return 1, f'FAIL: no engine at {ENGINE} (set TORUS_BUILD to the build directory)'
    if transport == 'libnbd':
        out = subprocess.run([FIO, f'--enghelp={ENGINE}'], capture_output=True,
                             text=True, timeout=30).stdout
        if 'tls_certificates' not in out:
            return 77, (f'SKIP: {ENGINE} was built without libnbd (no transport=libnbd): '
                        'install libnbd-dev (scripts/deps.sh) and reconfigure')
    return None


def run(name, transport):
    cases, msg = transport_cases(transport)
    c = cases[name]
    why = cannot_run(transport)
    if why:
        print(why[1])
        return why[0]
    o, problems = run_one(c, transport, msg)
    desc = f'{name}: server case {c["server"]}, fio status {o.rc}, {o.elapsed:.1f} s'
    if c.get('reason'):
        desc += f' (differs from the native transport: {c["reason"]})'
    if problems or VERBOSE:
        print(f'{"FAIL" if problems else "PASS"}: {desc}')
        for p in problems:
            print(f'  - {p}')
        print('command: ' + ' '.join(o.cmd))
        print('--- fio output:\n' + o.output.rstrip())
        print('--- server log (tail):\n' + o.server_log.rstrip())
        return 1 if problems else 0
    print(f'PASS: {desc}')
    return 0


def fio_version():
    return subprocess.run([FIO, '--version'], capture_output=True, text=True,
                          timeout=30).stdout.strip()


def libnbd_version():
    """libnbd's version as the library itself says it, or ''."""
    try:
        lib = ctypes.CDLL('libnbd.so.0')
        lib.nbd_create.restype = ctypes.c_void_p
        lib.nbd_get_version.restype = ctypes.c_char_p
        lib.nbd_get_version.argtypes = [ctypes.c_void_p]
        lib.nbd_close.argtypes = [ctypes.c_void_p]
        h = lib.nbd_create()
        v = lib.nbd_get_version(h).decode()
        lib.nbd_close(h)
        return v
    except (OSError, AttributeError):
        return ''


def table(head, rows):
    """The Markdown table of ROWS: (name, case, outcome, Outcome, matches)."""
    lines = [head, '',
             '| case | server misbehaviour | outcome | fio status | seconds | '
             'matches native? |',
             '|---|---|---|---|---|---|']
    for name, c, outcome, o, match in rows:
        sig = f', {signal.Signals(c["signal"]).name} sent' if c['signal'] else ''
        lines.append(f'| {name} | {c["server"]} (after {c["after"]}){sig} | '
                     f'**{outcome}** | {o.rc} | {o.elapsed:.1f} | {match} |')
    counts = {k: sum(1 for r in rows if r[2] == k) for k in hostile_run.OUTCOMES}
    same = sum(1 for r in rows if r[4] == 'yes')
    differs = sum(1 for r in rows if r[4].startswith('differs'))
    lines += ['', 'Outcomes: ' + ', '.join(f'{k} {v}' for k, v in counts.items() if v) +
              f'. Matches the native transport: {same}; documented differences: '
              f'{differs}; neither: {len(rows) - same - differs}.']
    return '\n'.join(lines) + '\n'


def run_table(transport, names, md):
    cases, msg = transport_cases(transport)
    why = cannot_run(transport)
    if why:
        print(why[1], file=sys.stderr)
        return why[0]
    rows, version = [], ''
    for n in names or list(cases):
        c = cases[n]
        o, problems = run_one(c, transport, msg)
        # The outcome as the protocol sees it (the native case's status).
        outcome = hostile_run.classify(CASES[n], o)
        rows.append((n, c, outcome, o, matches(c, problems)))
        m = re.search(r'^torus \S+', o.output, re.M)
        version = version or (m.group(0) if m else '')
        print(f'{n}: {outcome} (status {o.rc}, {o.elapsed:.1f} s): {rows[-1][4]}',
              file=sys.stderr)
    head = f'fio: {fio_version()}, engine: {version or ENGINE}, transport: {transport}'
    if transport == 'libnbd':
        head += f' (libnbd {libnbd_version() or "of unknown version"})'
    text = table(head, rows)
    print(text, end='')
    if md:
        with open(md, 'w') as f:
            f.write(text)
    return 1 if any(r[4].startswith('NO') for r in rows) else 0


def parse_args(argv):
    first, rest = __doc__.split('\n\n', 1)
    p = argparse.ArgumentParser(description=first, epilog=rest,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('case', nargs='?', help='the case to run and judge')
    p.add_argument('-v', action='store_true', help="show fio's output on a pass too")
    p.add_argument('--transport', choices=('nbd', 'libnbd'), default='nbd',
                   help='the engine\'s transport (default: nbd, the native one)')
    p.add_argument('--list', nargs='?', const='all', choices=('all', 'suite'),
                   help="list the cases (suite: those meson's suite runs) and exit")
    p.add_argument('--table', action='store_true',
                   help='run the cases (all, or --cases) and print the table')
    p.add_argument('--cases', help='comma-separated case names for --table')
    p.add_argument('--md', help='write the table to this file too')
    return p.parse_args(argv)


def main(argv=None):
    global VERBOSE
    a = parse_args(argv)
    cases = transport_cases(a.transport)[0]
    if a.list:
        # The native transport's suite runs every case.
        suite = LIBNBD_SUITE if a.transport == 'libnbd' else cases
        print('\n'.join(n for n in cases if a.list == 'all' or n in suite))
        return 0
    names = a.cases.split(',') if a.cases else [a.case] if a.case else []
    bad = [n for n in names if n not in cases]
    if bad or (not a.table and len(names) != 1):
        left = libnbd_cases()[1] if a.transport == 'libnbd' else {}
        for n in bad:
            print(f'run-case.py: no case {n} for transport {a.transport}'
                  + (f': {left[n]}' if n in left else ''), file=sys.stderr)
        print('usage: run-case.py [-v] [--transport libnbd] CASE | --list | --table '
              '[--cases A,B] [--md FILE]\ncases: ' + ' '.join(cases), file=sys.stderr)
        return 2
    VERBOSE = a.v
    hostile_run.become_subreaper()
    if a.table:
        return run_table(a.transport, names, a.md)
    return run(names[0], a.transport)


if __name__ == '__main__':
    sys.exit(main())
