#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The hostile cases against fio's built-in nbd engine (libnbd), for fio
contributors: which misbehaviours of a server make it crash, hang, hand
back data it never got, or fail cleanly. Any fio binary built with libnbd;
no engine of this project is involved.

  fio-nbd-engine.py [--fio PATH] [--cases NAME,...] [--hang-after S]
                    [--md FILE] [--list]

Each case of hostile_cases.py runs as the engine's test runs it (the same
server misbehaviour, the same job), with --ioengine=nbd and without the
project engine's own options; cases that test those options, or that are
another case once the options are gone, are left out (--list). Two more
run a correct server in fio's modes create_serialize=0 and
io_submit_mode=offload. The outcome of each, in the order they are judged:

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

Prints a Markdown table (fio version, case, the misbehaviour, outcome,
status, seconds); --md writes it to FILE too. Exit 0 when every case ran
(whatever the outcomes), 2 on usage errors or no usable fio.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys

import hostile_cases
from hostile_cases import CASES, ENGINE_OPTS, READ, case
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
}


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


def has_nbd(fio):
    out = subprocess.run([fio, '--enghelp=nbd'], capture_output=True, text=True, timeout=10)
    return out.returncode == 0 and 'uri' in out.stdout


def table(version, rows):
    lines = [f'fio: {version}, engine: nbd (libnbd)', '',
             '| case | server misbehaviour | job | outcome | fio status | seconds |',
             '|---|---|---|---|---|---|']
    for name, c, outcome, o in rows:
        job = ' '.join(a for a in c['fio'])
        sig = f', {signal.Signals(c["signal"]).name} sent' if c['signal'] else ''
        lines.append(f'| {name} | {c["server"]} (after {c["after"]}){sig} | `{job}` | '
                     f'**{outcome}** | {o.rc} | {o.elapsed:.1f} |')
    counts = {k: sum(1 for r in rows if r[2] == k) for k in OUTCOMES}
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
    if not has_nbd(fio):
        print(f'fio-nbd-engine: {fio} has no nbd engine (fio --enghelp=nbd fails): build fio '
              'with libnbd (./configure --enable-libnbd, libnbd-dev installed)', file=sys.stderr)
        return 2
    hostile_run.become_subreaper()
    rows = []
    for n in names:
        c = cases[n]
        # The signal cases wait up to 20 s for the misbehaviour first.
        limit = a.hang_after + (20 if c['signal'] else 0)
        o = hostile_run.run(c, fio, ['--ioengine=nbd'], limit)
        outcome = classify(c, o)
        rows.append((n, c, outcome, o))
        print(f'{n}: {outcome} (status {o.rc}, {o.elapsed:.1f} s)', file=sys.stderr)
        if outcome in ('wrong fail', 'not fired', 'crash'):
            said = [l for l in o.output.splitlines() if l.strip()][-3:]
            print('  fio said: ' + ' / '.join(said), file=sys.stderr)
    text = table(fio_version(fio), rows)
    print(text, end='')
    if a.md:
        with open(a.md, 'w') as f:
            f.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
