# SPDX-License-Identifier: GPL-2.0-only
"""The hostile cases as transport=libnbd runs them (hostile_cases.py's
libnbd_cases, LIBNBD_MSG, LIBNBD_DIFF, LIBNBD_SUITE) and run-case.py's
table: which cases run and how they are changed, that every message key
has libnbd's words, that meson's subset covers every family and outcome,
and how a run is judged and shown (on made-up runs: no fio is started)."""

import importlib.util
import io
import os
import re
import sys
import unittest
from contextlib import redirect_stderr

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
spec = importlib.util.spec_from_file_location('run_case', os.path.join(HERE, 'run-case.py'))
run_case = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_case)
import hostile_run  # noqa: E402
from hostile_cases import (CASES, LIBNBD_DIFF, LIBNBD_MSG, LIBNBD_SUITE, MSG,  # noqa: E402
                           NATIVE_OPTS, libnbd_cases)


def outcome(rc, output='', fired=True, elapsed=0.5):
    o = hostile_run.Outcome()
    o.rc, o.output, o.fired, o.elapsed = rc, output, fired, elapsed
    return o


class Cases(unittest.TestCase):
    def setUp(self):
        self.cases, self.left = libnbd_cases()

    def test_left_out(self):
        # Each left out with a reason: an option check of the native
        # transport, or the same run as another case once stripped.
        self.assertIn('native transport', self.left['opt-poll-us'])
        for n in ('good-simple', 'good-export-name', 'poll-good'):
            self.assertIn('same run as good', self.left[n])
        self.assertIn('same run as silent-nth', self.left['poll-silent'])
        self.assertEqual(set(self.cases) | set(self.left), set(CASES))
        self.assertEqual(list(self.cases), [n for n in CASES if n in self.cases])

    def test_stripped(self):
        for n, c in self.cases.items():
            for a in c['fio']:
                self.assertNotIn(a[2:].split('=', 1)[0], NATIVE_OPTS, n)
        # conns and the timeout are the libnbd transport's too.
        self.assertIn('--conns=2', self.cases['good-conns2-qd16']['fio'])
        self.assertEqual(self.cases['silent-first']['eng_timeout'], 2)
        # A stall without the engine's timeout is another run than with it.
        self.assertIn('runtime-silent', self.cases)

    def test_differences(self):
        for n, (change, reason) in LIBNBD_DIFF.items():
            self.assertIn(n, self.cases, n)
            self.assertTrue(reason, n)
            self.assertEqual(self.cases[n]['reason'], reason)
            for k, v in change.items():
                self.assertEqual(self.cases[n][k], list(v) if isinstance(v, tuple) else v)
        same = [n for n in self.cases if n not in LIBNBD_DIFF]
        for n in same:
            self.assertIsNone(self.cases[n]['reason'], n)
            for k in ('status', 'msgs', 'absent', 'bound'):
                self.assertEqual(self.cases[n][k], CASES[n][k], n)
        # The table itself is not changed.
        self.assertEqual(CASES['bs-min0']['status'], 'fail')

    def test_messages(self):
        for n, c in self.cases.items():
            for k in c['msgs'] + c['absent']:
                self.assertIn(k, LIBNBD_MSG, f'{n}: no libnbd wording for {k}')
        # The stalls and stops are the transport's and the glue's words,
        # which say the same as the native transport's.
        for k in ('noreply', 'timeout2', 'empty', 'timeout_opt'):
            self.assertEqual(LIBNBD_MSG[k], MSG[k])

    def test_suite(self):
        self.assertTrue(set(LIBNBD_SUITE) <= set(self.cases))
        suite = [self.cases[n] for n in LIBNBD_SUITE]
        # Every family: handshake, reply framing, data, stalls, signals.
        self.assertTrue(any(c['server'].startswith(('hs-', 'bad-greeting')) for c in suite))
        self.assertTrue(any(c['server'] in ('bad-magic', 'unknown-cookie') for c in suite))
        self.assertTrue(set(hostile_run.DATA_CASES) & set(LIBNBD_SUITE))
        self.assertTrue(any(c['server'] == 'silent' and c['eng_timeout'] for c in suite))
        self.assertTrue(any(c['server'].startswith('hs-silent') and not c['signal']
                            for c in suite))
        self.assertTrue(any(c['signal'] for c in suite))
        self.assertTrue(any('--runtime=2' in c['fio'] for c in suite))
        # Every outcome the full run has: passed, failed, accepted.
        self.assertTrue(any(c['status'] == 'ok' and CASES[n]['status'] == 'ok'
                            for n, c in zip(LIBNBD_SUITE, suite)))
        self.assertTrue(any(c['status'] == 'ok' and CASES[n]['status'] == 'fail'
                            for n, c in zip(LIBNBD_SUITE, suite)))
        self.assertTrue(any(c['status'] == 'fail' for c in suite))
        # The README lists the rest, as run by the script only.
        with open(os.path.join(HERE, 'README.md')) as f:
            text = f.read()
        rest = text[text.index('The other '):text.index('Neither it nor')]
        self.assertEqual(set(re.findall(r'`([a-z][a-z0-9-]*)`', rest)),
                         set(self.cases) - set(LIBNBD_SUITE))
        self.assertIn(f'only the {len(LIBNBD_SUITE)} cases', text)
        self.assertIn(f'The other {len(self.cases) - len(LIBNBD_SUITE)} run', text)
        # Every kind of documented difference (the three bs- cases are one).
        kinds = {tuple(sorted(ch)) for n, (ch, _) in LIBNBD_DIFF.items()}
        self.assertEqual(kinds, {tuple(sorted(LIBNBD_DIFF[n][0]))
                                 for n in LIBNBD_SUITE if n in LIBNBD_DIFF})


class Judge(unittest.TestCase):
    def test_words(self):
        c = libnbd_cases()[0]['bad-magic']
        said = ('torus: nbd+unix:///?socket=s: connection 1: libnbd: nbd_aio_notify_read: '
                'invalid reply magic; its 0 outstanding requests fail with EIO')
        self.assertEqual(run_case.judge(c, outcome(1, said), LIBNBD_MSG), [])
        # The native transport's words are not libnbd's.
        self.assertIn('output lacks "connection 1 lost"', run_case.judge(c, outcome(1, said)))
        self.assertIn('fio succeeded but should have failed',
                      run_case.judge(c, outcome(0, said + ' err= 0'), LIBNBD_MSG))

    def test_matches(self):
        cases = libnbd_cases()[0]
        self.assertEqual(run_case.matches(cases['good'], []), 'yes')
        self.assertEqual(run_case.matches(cases['overlap'], []),
                         'differs: ' + LIBNBD_DIFF['overlap'][1])
        self.assertEqual(run_case.matches(cases['good'], ['a | b\nfio output', 'c']),
                         'NO: a \\| b; c')

    def test_table(self):
        cases = libnbd_cases()[0]
        rows = [('good', cases['good'], 'passed', outcome(0), 'yes'),
                ('bs-min0', cases['bs-min0'], 'accepted', outcome(0), 'differs: x'),
                ('sigint-silent', cases['sigint-silent'], 'failed', outcome(129, elapsed=0.74),
                 'NO: y')]
        text = run_case.table('fio: fio-3.33', rows)
        self.assertIn('| case | server misbehaviour | outcome | fio status | seconds | '
                      'matches native? |', text)
        self.assertIn('| sigint-silent | silent (after 0), SIGINT sent | **failed** | 129 | '
                      '0.7 | NO: y |', text)
        self.assertIn('Outcomes: accepted 1, failed 1, passed 1. Matches the native '
                      'transport: 1; documented differences: 1; neither: 1.', text)

    def test_usage(self):
        with redirect_stderr(io.StringIO()) as err:
            self.assertEqual(run_case.main(['--transport', 'libnbd', 'opt-poll-us']), 2)
        self.assertIn('opt-poll-us for transport libnbd: tests an option of the native '
                      'transport', err.getvalue())
        with redirect_stderr(io.StringIO()):
            self.assertEqual(run_case.main(['no-such-case']), 2)
            self.assertEqual(run_case.main(['--table', '--cases', 'good,nope']), 2)


if __name__ == '__main__':
    unittest.main()
