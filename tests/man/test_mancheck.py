#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Unit tests of mancheck.py's parsers and of the drift messages it gives."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mancheck  # noqa: E402

PAGE = r'''.TH X 1
.SH DESCRIPTION
.TP
.B notanoption
Default: 7.
.SH OPTIONS
.\" a comment: Default: 9.
.TP
.BI \-\-listen ", \-\-socket " ADDR
Where to listen: \fBunix:\fIPATH\fR.
Default: tcp:127.0.0.1:10809.
.TP
.BR \-v ", " \-\-verbose
Log more.
.TP
.B conns
Connections.
Default: 1; range: 1 to 64.
.TP
.BI \-\-export " NAME"
Default: torus "torus", standard "".
.SH EXAMPLES
.TP
.B \-\-late
Default: 3.
'''

USAGE = '''NAME
    x - a server

OPTIONS
    --listen, --socket unix:PATH | tcp:HOST:PORT
        Where to listen. Port 0 picks a free port
        (default: tcp:127.0.0.1:10809)
    -v, --verbose
        Log more (see (this) note).
    --block-size N
        The block (default: 4096; range: 512 to 1M)

EXAMPLES
    --not-an-option
'''


class Roff(unittest.TestCase):
    def test_unroff(self):
        self.assertEqual(mancheck.unroff(r'\fB\-\-x\fR=\fIN\fP \(aqa\(aq \e'),
                         "--x=N 'a' \\")

    def test_macro_args_quotes(self):
        self.assertEqual(mancheck.macro_args(r'.BI "\-\-size " SIZE'),
                         [r'\-\-size ', 'SIZE'])
        self.assertEqual(mancheck.macro_args('.B'), [])
        self.assertEqual(mancheck.macro_args('.BR a "" b'), ['a', '', 'b'])

    def test_tag_text(self):
        self.assertEqual(mancheck.tag_text(r'.BI \-\-poll\-us " N"'), '--poll-us N')
        self.assertEqual(mancheck.tag_text(r'.BR \-v ", " \-\-verbose'), '-v, --verbose')
        self.assertEqual(mancheck.tag_text('.B fua flag'), 'fua flag')

    def test_tag_names(self):
        self.assertEqual(mancheck.tag_names('--listen, --socket ADDR'), ['--listen', '--socket'])
        self.assertEqual(mancheck.tag_names('-v, --verbose'), ['-v', '--verbose'])
        self.assertEqual(mancheck.tag_names('--help'), ['--help'])
        self.assertEqual(mancheck.tag_names('request_timeout'), ['request_timeout'])


class Defaults(unittest.TestCase):
    def test_plain_and_range(self):
        self.assertEqual(mancheck.help_default('Seconds (default: 30)'), ('30', None))
        self.assertEqual(mancheck.help_default('N (default: 30; range: 0 to 86400)'),
                         ('30', ('0', '86400')))

    def test_nested_parentheses_and_last_wins(self):
        self.assertEqual(mancheck.help_default('a (default: x) b (default: f(y), z)'),
                         ('f(y), z', None))

    def test_none(self):
        self.assertEqual(mancheck.help_default('Bytes (default 8M)'), (None, None))
        self.assertEqual(mancheck.help_default('Bytes (default: 8M'), (None, None))

    def test_whitespace_joined(self):
        self.assertEqual(mancheck.split_default('the  --backend\n servers'),
                         ('the --backend servers', None))


class Parsers(unittest.TestCase):
    def test_page(self):
        opts = mancheck.parse_page(PAGE)
        self.assertEqual([o.names for o in opts],
                         [('--listen', '--socket'), ('-v', '--verbose'), ('conns',),
                          ('--export',)])
        self.assertEqual([(o.default, o.range) for o in opts],
                         [('tcp:127.0.0.1:10809', None), (None, None),
                          ('1', ('1', '64')), ('torus "torus", standard ""', None)])

    def test_page_two_defaults(self):
        with self.assertRaisesRegex(ValueError, 'option x: two Default: lines'):
            mancheck.parse_page('.SH OPTIONS\n.TP\n.B x\nDefault: 1.\nDefault: 2.\n')

    def test_enghelp(self):
        out = ('uri                     : Target (default: start the embedded server)\n'
               'conns                   : Connections (default: 1; range: 1 to 64)\n'
               'fua                     : Set FUA\n')
        opts = mancheck.parse_enghelp(out)
        self.assertEqual([(o.names, o.default, o.range) for o in opts],
                         [(('uri',), 'start the embedded server', None),
                          (('conns',), '1', ('1', '64')),
                          (('fua',), None, None)])

    def test_usage(self):
        opts = mancheck.parse_usage(USAGE)
        self.assertEqual([(o.names, o.default, o.range) for o in opts],
                         [(('--listen', '--socket'), 'tcp:127.0.0.1:10809', None),
                          (('-v', '--verbose'), None, None),
                          (('--block-size',), '4096', ('512', '1M'))])


class Compare(unittest.TestCase):
    def drifts(self, page, code):
        return mancheck.compare(page, code, 'man/x.1', 'x --help')

    def test_agree(self):
        self.assertEqual(self.drifts([mancheck.Opt(['-v', '--verbose'], '1', ('0', '2'))],
                                     [mancheck.Opt(['-v', '--verbose'], '1', ('0', '2'))]), [])

    def test_each_drift_named(self):
        page = [mancheck.Opt(['--a'], '1'), mancheck.Opt(['--b'], None, ('1', '2')),
                mancheck.Opt(['--gone']), mancheck.Opt(['--listen'])]
        code = [mancheck.Opt(['--a'], '2'), mancheck.Opt(['--b'], None, ('1', '3')),
                mancheck.Opt(['--new']), mancheck.Opt(['--listen', '--socket'])]
        self.assertEqual(self.drifts(page, code), [
            "option --a: default: man/x.1 says '1'; x --help says '2'",
            "option --b: range: man/x.1 says '1 to 2'; x --help says '1 to 3'",
            'option --new: in x --help but not in man/x.1',
            'option --listen: names: man/x.1 says --listen; x --help says --listen, --socket',
            'option --gone: in man/x.1 but not in x --help',
        ])

    def test_default_missing_in_code(self):
        self.assertEqual(self.drifts([mancheck.Opt(['c'], '8M')], [mancheck.Opt(['c'])]),
                         ["option c: default: man/x.1 says '8M'; x --help says none"])


if __name__ == '__main__':
    unittest.main(verbosity=2)
