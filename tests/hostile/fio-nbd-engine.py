#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The hostile cases against fio's built-in nbd engine (libnbd), for fio
contributors: which misbehaviours of a server make it crash, hang, hand
back data it never got, or fail cleanly. Any fio binary built with libnbd;
no engine of this project is involved.

  fio-nbd-engine.py [--fio PATH] [--cases NAME,...] [--hang-after S]
                    [--md FILE] [--list] [--check]

Each case of hostile_cases.py runs as the engine's test runs it (the same
server misbehaviour, the same job), with --ioengine=nbd and without the
project engine's own options; cases that test those options, or that are
another case once the options are gone, are left out (--list). More run
a correct server in fio's modes (create_serialize=0, io_submit_mode=offload,
threads, two jobs, TCP) with verify. When the engine has the request_timeout
option (fio patched with upstream/fio/), a case that gives the project
engine a timeout gives it request_timeout: 2 s for the stalls, 0 where fio's
own stop (runtime, SIGINT, SIGTERM) must end the job. The outcome of each,
in the order they are judged:

  crash       fio ended on a signal it was not sent (SIGSEGV, SIGABRT, ...)
  hang        fio did not end within --hang-after seconds (default 10, from
              the signal for the SIGINT/SIGTERM cases) and was killed
  fake data   a read's data was not all sent (answered without data, half
              of it, chunks that overlap and so leave bytes unsent) and fio
              reported success (err=0, status 0): bytes the server never
              sent were passed off as read
  accepted    another violation of the protocol, and fio reported success:
              tolerated (the data may still be right)
  strays      fio ended but left processes behind
  failed      fio reported the error (status not 0), within the bound
  passed      a case of a correct server, and fio succeeded
  wrong fail  a case of a correct server (or a legal oddity), and fio failed
  not fired   the server's misbehaviour never happened (the engine never
              sent the request it applies to)
  libnbd      accepted, but libnbd hid the violation from the engine (it
              drops malformed block size constraints and reports none):
              left to the library, not counted as accepted

Prints a Markdown table (fio version, case, the misbehaviour, outcome,
status, seconds); --md writes it to FILE too. Exit 0 when every case ran
(whatever the outcomes), 2 on usage errors or no usable fio. With --check,
exit 1 when a case crashed, hung, faked data, accepted a violation, left
strays, failed wrongly or did not fire: what the patched fio must pass.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys

import hostile_cases
from hostile_cases import CASES, ENGINE_OPTS, READ, TIMEOUT_OPT, VERIFY, case
import hostile_run
from hostile_run import OUTCOMES, classify

# Messages of the project engine's option checks: their cases test options.
OPTION_MSGS = ('poll_us', 'timeout_opt')

# fio's own modes against a correct server (the project engine's are
# tested in engine-fio-modes): per-job state set up where fio does not
# call it for these.
MODE_CASES = {
    'mode-create-serialize-0': case('good', 'ok', fio=READ + ['--create_serialize=0'],
                                    must_fire=False),
    'mode-offload': case('good', 'ok', fio=READ + ['--io_submit_mode=offload'],
                         must_fire=False),
    # A correct server verified in each of fio's modes (processes are the
    # default of the cases above; TCP is good-tcp).
    'mode-verify-create-serialize-0': case('good', 'ok', must_fire=False,
                                           fio=VERIFY + ['--create_serialize=0']),
    'mode-verify-offload': case('good', 'ok', must_fire=False,
                                fio=VERIFY + ['--io_submit_mode=offload', '--iodepth=4']),
    'mode-verify-thread': case('good', 'ok', must_fire=False,
                               fio=VERIFY + ['--thread', '--iodepth=8']),
    # Two jobs, a connection each, on regions of their own.
    'mode-verify-numjobs2': case('good', 'ok', must_fire=False,
                                 fio=VERIFY + ['--numjobs=2', '--offset_increment=1m',
                                               '--iodepth=8']),
}

# Violations that libnbd keeps from its caller: it drops a malformed
# NBD_INFO_BLOCK_SIZE and reports no constraints, so no engine over
# libnbd can refuse them (hostile_cases.LIBNBD_DIFF says the same of the
# project's libnbd transport).
LIBNBD_HIDES = ('bs-min0', 'bs-npow2', 'bs-max-lt-min')

# The outcomes --check fails on.
BAD = ('crash', 'hang', 'fake data', 'accepted', 'strays', 'wrong fail', 'not fired')
TABLE_OUTCOMES = OUTCOMES + ('libnbd',)


def strip(c):
    """Case C as another engine runs it: without the project engine's own
    options in its job."""
    return hostile_cases.strip(c, ENGINE_OPTS)


def applicable():
    """The cases fio's nbd engine can run, stripped, in table order: not
    those that test the project engine's option checks, and each
    misbehaviour and job once (poll-good is good without poll_us)."""
    out, seen = {}, set()
    for name, c in list(CASES.items()) + list(MODE_CASES.items()):
        if set(c['msgs']) & set(OPTION_MSGS):
            continue
        c = strip(c)
        key = (c['server'], c['after'], tuple(c['fio']), c['signal'], c['tcp'])
        if key not in seen:
            seen.add(key)
            out[name] = c
    return out


def fio_version(fio):
    try:
        return subprocess.run([fio, '--version'], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ''


def nbd_help(fio):
    """fio --enghelp=nbd's output, '' when FIO has no nbd engine."""
    out = subprocess.run([fio, '--enghelp=nbd'], capture_output=True, text=True, timeout=10)
    return out.stdout if out.returncode == 0 and 'uri' in out.stdout else ''


def engine_args(c, has_timeout):
    """fio's arguments for case C: the engine, and the case's timeout when
    the engine has the option."""
    args = ['--ioengine=nbd']
    if has_timeout and c['eng_timeout'] is not None:
        args.append(f'--{TIMEOUT_OPT}={c["eng_timeout"]}')
    return args


def judge(name, c, o):
    """classify(), with the violations libnbd hides told apart."""
    outcome = classify(c, o)
    if outcome == 'accepted' and name in LIBNBD_HIDES:
        return 'libnbd'
    return outcome


def table(version, rows):
    lines = [f'fio: {version}, engine: nbd (libnbd)', '',
             '| case | server misbehaviour | job | outcome | fio status | seconds |',
             '|---|---|---|---|---|---|']
    for name, c, outcome, o, args in rows:
        job = ' '.join(c['fio'] + args[1:])
        sig = f', {signal.Signals(c["signal"]).name} sent' if c['signal'] else ''
        lines.append(f'| {name} | {c["server"]} (after {c["after"]}){sig} | `{job}` | '
                     f'**{outcome}** | {o.rc} | {o.elapsed:.1f} |')
    counts = {k: sum(1 for r in rows if r[2] == k) for k in TABLE_OUTCOMES}
    lines += ['', 'Outcomes: ' + ', '.join(f'{k} {v}' for k, v in counts.items() if v) + '.']
    return '\n'.join(lines) + '\n'


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--fio', default=os.environ.get('FIO') or 'fio')
    p.add_argument('--cases', help='comma-separated case names (default: every one that applies)')
    p.add_argument('--hang-after', type=float, default=10.0)
    p.add_argument('--md', help='write the table to this file too')
    p.add_argument('--list', action='store_true', help='list the cases that apply and exit')
    p.add_argument('--check', action='store_true',
                   help='exit 1 unless every case failed cleanly or passed')
    return p.parse_args(argv)


def main(argv=None):
    a = parse_args(argv)
    cases = applicable()
    names = list(cases)
    if a.list:
        print('\n'.join(names))
        return 0
    if a.cases:
        asked = a.cases.split(',')
        bad = [n for n in asked if n not in CASES and n not in MODE_CASES]
        if bad:
            print(f'fio-nbd-engine: no case {", ".join(bad)} (--list names them)',
                  file=sys.stderr)
            return 2
        skipped = [n for n in asked if n not in names]
        if skipped:
            print(f'fio-nbd-engine: {", ".join(skipped)}: the project engine\'s own options '
                  '(or the same run as another case without them); --list names the cases '
                  'that apply', file=sys.stderr)
            return 2
        names = asked
    fio = shutil.which(a.fio)
    if not fio:
        print(f'fio-nbd-engine: no fio at {a.fio} (install the Debian package fio, or give '
              '--fio PATH)', file=sys.stderr)
        return 2
    help_text = nbd_help(fio)
    if not help_text:
        print(f'fio-nbd-engine: {fio} has no nbd engine (fio --enghelp=nbd fails): build fio '
              'with libnbd (./configure --enable-libnbd, libnbd-dev installed)', file=sys.stderr)
        return 2
    has_timeout = TIMEOUT_OPT in help_text
    hostile_run.become_subreaper()
    rows = []
    for n in names:
        c = cases[n]
        # The signal cases wait up to 20 s for the misbehaviour first.
        limit = a.hang_after + (20 if c['signal'] else 0)
        args = engine_args(c, has_timeout)
        o = hostile_run.run(c, fio, args, limit)
        outcome = judge(n, c, o)
        rows.append((n, c, outcome, o, args))
        print(f'{n}: {outcome} (status {o.rc}, {o.elapsed:.1f} s)', file=sys.stderr)
        if outcome in ('wrong fail', 'not fired', 'crash'):
            said = [l for l in o.output.splitlines() if l.strip()][-3:]
            print('  fio said: ' + ' / '.join(said), file=sys.stderr)
    text = table(fio_version(fio), rows)
    print(text, end='')
    if a.md:
        with open(a.md, 'w') as f:
            f.write(text)
    bad = [r[0] for r in rows if r[2] in BAD]
    if a.check and bad:
        print(f'fio-nbd-engine: {len(bad)} cases neither passed nor failed cleanly: '
              f'{", ".join(bad)}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
