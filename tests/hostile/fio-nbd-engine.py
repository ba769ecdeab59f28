#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The hostile cases against fio's built-in nbd engine (libnbd), for fio
contributors: which misbehaviours of a server make it crash, hang, hand
back data it never got, or fail cleanly. Any fio binary built with libnbd;
no engine of this project is involved.

  fio-nbd-engine.py [--fio PATH] [--engine-so SO] [--cases NAME,...]
                    [--skip NAME,...] [--hang-after S] [--jobs N]
                    [--offload-tries N] [--md FILE] [--list] [--check]

Each case of hostile_cases.py runs as the engine's test runs it (the same
server misbehaviour, the same job), with --ioengine=nbd and without the
project engine's own options; cases that test those options, or that are
another case once the options are gone, are left out (--list). More run
a correct server in fio's modes (create_serialize=0, io_submit_mode=offload,
threads, two jobs, TCP) with verify. When the engine has the request_timeout
option (fio patched with upstream/fio/), a case that gives the project
engine a timeout gives it request_timeout: 2 s for the stalls, 0 where fio's
own stop (runtime, SIGINT, SIGTERM) must end the job.

--engine-so runs the engine of SO instead of the one built into fio: an nbd
engine built as fio's dynamic engines are (fio-nbd.so, from
scripts/fio-patched.sh --engine-only) against the configured tree of that
very fio. fio loads it by path (ioengine=SO): with ioengine=external:SO
given before the job, fio's offload workers lose the path and fail to load
it (options.c, str_ioengine_external_cb). --jobs runs N cases at a time,
each in a process of its own. --fio-opt gives fio an option in every case.
--offload-tries runs an offload case that
hung again, up to N runs: fio up to 3.41 can deadlock as an offload job
starts its workers, whatever the engine (workqueue.c, start_worker(); fixed
in 3.42), and a hang the series causes hangs every run. The outcome of
each, in the order they are judged:

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
import concurrent.futures
import json
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

# fio's offload mode: its workers start with a race of fio's own up to 3.41
# (workqueue.c, start_worker(); fixed in 3.42), so --offload-tries.
OFFLOAD = '--io_submit_mode=offload'

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


def nbd_help(fio, engine='nbd'):
    """fio --enghelp=ENGINE's output (ENGINE: nbd, or the path of an
    engine's .so), '' when FIO cannot load it or it is no nbd engine."""
    out = subprocess.run([fio, f'--enghelp={engine}'], capture_output=True, text=True,
                         timeout=10)
    return out.stdout if out.returncode == 0 and 'uri' in out.stdout else ''


def engine_args(c, has_timeout, engine='nbd', extra=()):
    """fio's arguments for case C: the engine (ENGINE: nbd, or the path of
    an engine's .so), the case's timeout when the engine has the option, and
    EXTRA (--fio-opt) for every case."""
    args = [f'--ioengine={engine}']
    if has_timeout and c['eng_timeout'] is not None:
        args.append(f'--{TIMEOUT_OPT}={c["eng_timeout"]}')
    return args + list(extra)


def judge(name, c, o):
    """classify(), with the violations libnbd hides told apart."""
    outcome = classify(c, o)
    if outcome == 'accepted' and name in LIBNBD_HIDES:
        return 'libnbd'
    return outcome


def run_apart(base_argv, name, limit):
    """Case NAME run by this script in a process of its own (--one NAME,
    BASE_ARGV naming fio and the engine), which reaps what its fio leaves:
    hostile_run.run() kills every process below its own. The Outcome."""
    o = hostile_run.Outcome()
    cmd = [sys.executable, os.path.abspath(__file__)] + base_argv + ['--one', name]
    try:
        # The child's fio is killed at LIMIT: this bound is never reached.
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit + 60)
        o.__dict__.update(json.loads(p.stdout))
    except (subprocess.TimeoutExpired, ValueError) as e:
        o.problems.append(f'its run in a process of its own failed: {e}')
    return o


def table(version, rows, engine='nbd', skipped=None):
    lines = [f'fio: {version}, engine: {engine} (libnbd)', '',
             '| case | server misbehaviour | job | outcome | fio status | seconds |',
             '|---|---|---|---|---|---|']
    for name, c, outcome, o, args in rows:
        job = ' '.join(c['fio'] + args[1:])
        sig = f', {signal.Signals(c["signal"]).name} sent' if c['signal'] else ''
        lines.append(f'| {name} | {c["server"]} (after {c["after"]}){sig} | `{job}` | '
                     f'**{outcome}** | {o.rc} | {o.elapsed:.1f} |')
    counts = {k: sum(1 for r in rows if r[2] == k) for k in TABLE_OUTCOMES}
    lines += ['', 'Outcomes: ' + ', '.join(f'{k} {v}' for k, v in counts.items() if v) + '.']
    if skipped:
        lines.append(f'Left out (--skip): {skipped.replace(",", ", ")}.')
    return '\n'.join(lines) + '\n'


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--fio', default=os.environ.get('FIO') or 'fio')
    p.add_argument('--engine-so', metavar='SO',
                   help='the nbd engine of this .so (loaded by path), not fio\'s own')
    p.add_argument('--cases', help='comma-separated case names (default: every one that applies)')
    p.add_argument('--hang-after', type=float, default=10.0)
    p.add_argument('--jobs', type=int, default=1, help='cases run at a time (default 1)')
    p.add_argument('--skip', help='comma-separated cases to leave out (named under the table)')
    p.add_argument('--offload-tries', type=int, default=1, metavar='N',
                   help='runs of an offload case that hangs (default 1): fio up to 3.41 can '
                   'deadlock starting its offload workers, whatever the engine')
    p.add_argument('--fio-opt', action='append', default=[], metavar='OPT',
                   help='an option for fio in every case, e.g. --fio-opt=--verify_state_save=0 '
                   '(repeatable)')
    p.add_argument('--one', help=argparse.SUPPRESS)
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
    if a.skip:
        skip = a.skip.split(',')
        unknown = [n for n in skip if n not in names]
        if unknown:
            print(f'fio-nbd-engine: --skip {", ".join(unknown)}: not among the cases to run '
                  '(--list names them)', file=sys.stderr)
            return 2
        names = [n for n in names if n not in skip]
    fio = shutil.which(a.fio)
    if not fio:
        print(f'fio-nbd-engine: no fio at {a.fio} (install the Debian package fio, or give '
              '--fio PATH)', file=sys.stderr)
        return 2
    engine = 'nbd'
    if a.engine_so:
        so = os.path.abspath(a.engine_so)
        if not os.path.isfile(so):
            print(f'fio-nbd-engine: no engine at {a.engine_so} (scripts/fio-patched.sh '
                  '--engine-only builds one)', file=sys.stderr)
            return 2
        engine = so
    help_text = nbd_help(fio, so if a.engine_so else 'nbd')
    if not help_text and a.engine_so:
        print(f'fio-nbd-engine: {fio} cannot load {so} as an nbd engine (fio --enghelp={so} '
              'fails): build it against the configured tree of this very fio '
              '(scripts/fio-patched.sh --engine-only)', file=sys.stderr)
        return 2
    if not help_text:
        print(f'fio-nbd-engine: {fio} has no nbd engine (fio --enghelp=nbd fails): build fio '
              'with libnbd (./configure --enable-libnbd, libnbd-dev installed)', file=sys.stderr)
        return 2
    has_timeout = TIMEOUT_OPT in help_text
    hostile_run.become_subreaper()

    def limit(c):
        # The signal cases wait up to 20 s for the misbehaviour first.
        return a.hang_after + (20 if c['signal'] else 0)

    if a.one:
        c = cases[a.one]
        o = hostile_run.run(c, fio, engine_args(c, has_timeout, engine, a.fio_opt), limit(c))
        print(json.dumps(vars(o)))
        return 0
    base_argv = ['--fio', fio, '--hang-after', str(a.hang_after)]
    if a.engine_so:
        base_argv += ['--engine-so', so]
    base_argv += [f'--fio-opt={o}' for o in a.fio_opt]
    outcomes, tries = {}, dict.fromkeys(names, 1)
    with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as pool:
        def submit(n):
            c = cases[n]
            if a.jobs > 1:
                return pool.submit(run_apart, base_argv, n, limit(c))
            return pool.submit(hostile_run.run, c, fio,
                               engine_args(c, has_timeout, engine, a.fio_opt),
                               limit(c))

        runs = {submit(n): n for n in names}
        while runs:
            done, _ = concurrent.futures.wait(runs, return_when=concurrent.futures.FIRST_COMPLETED)
            for f in done:
                n, o = runs.pop(f), f.result()
                outcome = judge(n, cases[n], o)
                print(f'{n}: {outcome} (status {o.rc}, {o.elapsed:.1f} s)', file=sys.stderr)
                for problem in o.problems:
                    print(f'  {problem}', file=sys.stderr)
                if outcome in ('wrong fail', 'not fired', 'crash'):
                    said = [l for l in o.output.splitlines() if l.strip()][-3:]
                    print('  fio said: ' + ' / '.join(said), file=sys.stderr)
                if outcome == 'hang' and OFFLOAD in cases[n]['fio'] and \
                        tries[n] < a.offload_tries:
                    tries[n] += 1
                    print(f'  {n}: run again ({tries[n]} of {a.offload_tries}): fio up to '
                          '3.41 can deadlock starting its offload workers', file=sys.stderr)
                    runs[submit(n)] = n
                    continue
                outcomes[n] = (outcome, o)
    rows = [(n, cases[n], outcomes[n][0], outcomes[n][1],
             engine_args(cases[n], has_timeout, engine, a.fio_opt)) for n in names]
    text = table(fio_version(fio), rows, engine, a.skip)
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
