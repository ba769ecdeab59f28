# SPDX-License-Identifier: GPL-2.0-only
"""fio-nbd-engine.py: how outcomes are told apart (on made-up runs), which
cases apply to fio's own engine, how an offload case that hangs is run
again (on made-up runs), and real runs against Debian's fio: a correct
server passes (also one that reorders replies, run without the project
engine's options), a bad reply magic fails cleanly, one case at a time and
two at once. The series' engine built alone is run by hostile-fio-nbd-so."""

import importlib.util
import os
import signal
import shutil
import sys
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
spec = importlib.util.spec_from_file_location('survey', os.path.join(HERE, 'fio-nbd-engine.py'))
survey = importlib.util.module_from_spec(spec)
spec.loader.exec_module(survey)
import hostile_run  # noqa: E402
from hostile_cases import CASES  # noqa: E402


def outcome(rc, output='', fired=True, strays=()):
    o = hostile_run.Outcome()
    o.rc, o.output, o.fired, o.strays = rc, output, fired, list(strays)
    return o


class Classify(unittest.TestCase):
    def test_outcomes(self):
        fail, ok, sig = CASES['bad-magic'], CASES['good'], CASES['sigint-silent']
        self.assertEqual(survey.classify(fail, outcome(-9)), 'hang')
        self.assertEqual(survey.classify(fail, outcome(137)), 'hang')
        self.assertEqual(survey.classify(fail, outcome(139)), 'crash')
        self.assertEqual(survey.classify(fail, outcome(1, 'fio: pid=3, got signal=11')), 'crash')
        self.assertEqual(survey.classify(fail, outcome(0, 'err= 0', fired=False)), 'not fired')
        # fio's status 0 with nothing done is still success to its caller
        self.assertEqual(survey.classify(CASES['size-zero'], outcome(0, 'no I/O')), 'accepted')
        self.assertEqual(survey.classify(fail, outcome(0, 'x: (groupid=0): err= 0')),
                         'accepted')
        self.assertEqual(survey.classify(CASES['half-data'], outcome(0, 'x: err= 0')),
                         'fake data')
        self.assertEqual(survey.classify(fail, outcome(1, 'err= 5')), 'failed')
        self.assertEqual(survey.classify(fail, outcome(1, 'err= 5', strays=['9 fio'])), 'strays')
        self.assertEqual(survey.classify(ok, outcome(0, 'err= 0', fired=False)), 'passed')
        self.assertEqual(survey.classify(ok, outcome(1, 'err= 5', fired=False)), 'wrong fail')
        # The signal the case sent is not a crash.
        self.assertEqual(survey.classify(sig, outcome(1, 'got signal=2')), 'failed')
        self.assertEqual(survey.classify(sig, outcome(128 + signal.SIGINT)), 'failed')

    def test_libnbd_hides(self):
        # A block size violation libnbd drops is the library's, not accepted.
        self.assertEqual(survey.judge('bs-min0', CASES['bs-min0'], outcome(0, 'err= 0')),
                         'libnbd')
        self.assertEqual(survey.judge('size-zero', CASES['size-zero'], outcome(0, 'err= 0')),
                         'accepted')
        self.assertEqual(survey.judge('bs-min0', CASES['bs-min0'], outcome(1, 'err= 22')),
                         'failed')
        self.assertNotIn('libnbd', survey.BAD)

    def test_engine_args(self):
        # The case's timeout goes to the engine only when it has the option.
        self.assertEqual(survey.engine_args(CASES['silent-first'], False), ['--ioengine=nbd'])
        self.assertEqual(survey.engine_args(CASES['silent-first'], True),
                         ['--ioengine=nbd', '--request_timeout=2'])
        self.assertEqual(survey.engine_args(CASES['sigint-silent'], True),
                         ['--ioengine=nbd', '--request_timeout=0'])
        self.assertEqual(survey.engine_args(CASES['good'], True), ['--ioengine=nbd'])
        # An engine's .so is loaded by path, not as external:PATH.
        self.assertEqual(survey.engine_args(CASES['silent-first'], True, '/x/fio-nbd.so'),
                         ['--ioengine=/x/fio-nbd.so', '--request_timeout=2'])
        # --fio-opt: after the engine's, in every case.
        self.assertEqual(survey.engine_args(CASES['good'], True, 'nbd',
                                            ['--verify_state_save=0']),
                         ['--ioengine=nbd', '--verify_state_save=0'])

    def test_applicable(self):
        cases = survey.applicable()
        for n in ('good', 'bad-magic', 'silent-first', 'sigint-silent', 'reorder',
                  'good-conns2-qd16'):
            self.assertIn(n, cases)
        for n in ('mode-verify-offload', 'mode-verify-thread', 'mode-verify-numjobs2',
                  'mode-verify-create-serialize-0'):
            self.assertIn('--verify=crc32c', cases[n]['fio'])
        for n in ('good-simple', 'good-export-name', 'poll-good', 'opt-poll-us', 'opt-timeout'):
            self.assertNotIn(n, cases)
        # The engine's options are gone from the jobs.
        self.assertNotIn('--structured_replies=0', cases['reorder']['fio'])
        self.assertEqual(cases['good-conns2-qd16']['fio'][-1], '--iodepth=16')


class OffloadTries(unittest.TestCase):
    """An offload case that hangs runs again, up to --offload-tries runs;
    no other case does (made-up runs, no fio)."""

    def run_main(self, argv):
        calls = []

        def fake_run(c, fio, args, limit):
            calls.append(c)
            if '--io_submit_mode=offload' in c['fio'] or c['server'] == 'silent':
                return outcome(-9)
            return outcome(0, 'x: err= 0', fired=False)

        with mock.patch.object(survey, 'nbd_help', return_value='uri'), \
                mock.patch.object(survey.hostile_run, 'run', fake_run), \
                mock.patch.object(survey.hostile_run, 'become_subreaper'), \
                mock.patch('sys.stdout'), mock.patch('sys.stderr'):
            rc = survey.main(['--fio', sys.executable] + argv)
        return rc, calls

    def test_tries(self):
        rc, calls = self.run_main(['--cases', 'mode-offload,good,silent-first',
                                   '--offload-tries', '3', '--check'])
        self.assertEqual(rc, 1)
        self.assertEqual(sum(1 for c in calls if '--io_submit_mode=offload' in c['fio']), 3)
        self.assertEqual(sum(1 for c in calls if c['server'] == 'silent'), 1)
        self.assertEqual(len(calls), 5)
        rc, calls = self.run_main(['--cases', 'mode-offload,good'])
        self.assertEqual((rc, len(calls)), (0, 2))

    def test_skip(self):
        rc, calls = self.run_main(['--cases', 'mode-offload,good', '--skip', 'mode-offload'])
        self.assertEqual((rc, len(calls)), (0, 1))


@unittest.skipUnless(shutil.which('fio'), 'fio is not installed (scripts/deps.sh installs it)')
class RealFio(unittest.TestCase):
    def test_two_cases(self):
        md = os.path.join(os.environ.get('TMPDIR', '/tmp'), f'survey-{os.getpid()}.md')
        try:
            self.assertEqual(survey.main(['--cases', 'good,bad-magic,reorder', '--md', md]), 0)
            with open(md) as f:
                text = f.read()
        finally:
            if os.path.exists(md):
                os.unlink(md)
        self.assertIn('engine: nbd (libnbd)', text)
        self.assertRegex(text, r'\| good \|.*\*\*passed\*\*')
        self.assertRegex(text, r'\| bad-magic \|.*\*\*failed\*\*')
        # run without the project engine's --structured_replies=0
        self.assertRegex(text, r'\| reorder \|.*\*\*passed\*\*')

    def test_jobs(self):
        # Two at once, each in a process of its own; the table in case order.
        md = os.path.join(os.environ.get('TMPDIR', '/tmp'), f'survey-jobs-{os.getpid()}.md')
        texts = []
        try:
            for skip in ([], ['--skip', 'good']):
                self.assertEqual(survey.main(['--cases', 'bad-magic,good', '--jobs', '2',
                                              '--md', md] + skip), 0)
                with open(md) as f:
                    texts.append(f.read())
        finally:
            if os.path.exists(md):
                os.unlink(md)
        self.assertRegex(texts[0], r'\| bad-magic \|.*\*\*failed\*\*[^\n]*\n'
                                   r'\| good \|.*\*\*passed')
        self.assertNotIn('| good |', texts[1])
        self.assertIn('Left out (--skip): good.', texts[1])

    def test_usage(self):
        self.assertEqual(survey.main(['--cases', 'no-such-case']), 2)
        self.assertEqual(survey.main(['--cases', 'poll-good']), 2)
        self.assertEqual(survey.main(['--fio', '/nonexistent/fio']), 2)
        self.assertEqual(survey.main(['--cases', 'good', '--skip', 'bad-magic']), 2)
        self.assertEqual(survey.main(['--cases', 'good', '--engine-so', '/nonexistent.so']), 2)
        # A file that is no engine of fio's.
        self.assertEqual(survey.main(['--cases', 'good', '--engine-so', __file__]), 2)


if __name__ == '__main__':
    unittest.main()
