#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Runs fio with the engine against nbd-hostile.py for one case and checks
fio's exit status, a substring of its output, and how long it took.

  run-case.py [-v] CASE  (-v: show fio's output on a pass too)
  run-case.py --list     the case names, one a line (meson reads this)

Environment: TORUS_SRC, TORUS_BUILD, FIO (default fio), HOSTILE_TIMEOUT_OPT
(the engine's timeout option, default request_timeout).

Exit 0 pass, 1 fail (with the reasons, the command and fio's output),
77 skip. fio never outlives the test (hostile_run.py).
"""

import os
import re
import shutil
import sys

from hostile_cases import CASES, MSG, TIMEOUT_OPT
import hostile_run

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get('TORUS_SRC', os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get('TORUS_BUILD', os.path.join(SRC, 'build'))
ENGINE = os.path.join(BUILD, 'engines', 'libtorus.so')
FIO = os.environ.get('FIO') or 'fio'
VERBOSE = False


def judge(c, o):
    """What is wrong with Outcome O of case C, for the engine: a list."""
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
        if MSG[key] not in o.output:
            problems.append(f'output lacks "{MSG[key]}"')
    for key in c['absent']:
        if MSG[key] in o.output:
            problems.append(f'output has "{MSG[key]}", which it should not')
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


def run(name):
    c = CASES[name]
    if not shutil.which(FIO):
        print(f'SKIP: {FIO} is not installed (scripts/deps.sh installs it)')
        return 77
    if not os.path.exists(ENGINE):
        # meson builds it first (depends), so this is a wrong path: fail.
        print(f'FAIL: no engine at {ENGINE} (set TORUS_BUILD to the build directory)')
        return 1
    engine_args = [f'--ioengine=external:{ENGINE}', '--structured_replies=1']
    if c['eng_timeout'] is not None:
        engine_args.append(f'--{TIMEOUT_OPT}={c["eng_timeout"]}')
    # A hang is killed well after the bound, so the failure says how long.
    kill_after = c['bound'] + 10 + (20 if c['signal'] else 0)
    o = hostile_run.run(c, FIO, engine_args, kill_after)
    problems = judge(c, o)
    desc = f'{name}: server case {c["server"]}, fio status {o.rc}, {o.elapsed:.1f} s'
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
    hostile_run.become_subreaper()
    return run(sys.argv[1])


if __name__ == '__main__':
    sys.exit(main())
