#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Unit tests of mancheck.py's parsers and of the drift messages it gives."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
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
        self.assertEqual(mancheck.split_default('the  --store\n servers'),
                         ('the --store servers', None))


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


HELP_STORES = """OPTIONS
    --store STORE
        Where data lives:
          memory              an anonymous mapping
          file:PATH[,ro]
                              a file
          nbd:URI             an NBD export,
                              of its size
        With more (default: memory)
    --vdisk NAME
          notastore
"""

STORE_PAGE = r'''.TH X 1
.SH OPTIONS
.TP
.BI \-\-store " STORE"
One of
.BR memory ,
.BI file: PATH\fR[,ro],
.BI nbd: URI
or
.BI lba: VDISK\fR).
.TP
.BR \-\-size
memory only.
.SH STORES
.TP
.B memory
.TP
.BI file: PATH
.TP
.B nbd
'''


class Stores(unittest.TestCase):
    USAGES = ['memory', 'file:PATH[,ro]', 'nbd:URI']

    def test_compare_paths(self):
        top = os.path.dirname(os.path.dirname(HERE))
        paths = mancheck.compare_paths(top)
        self.assertIsNotNone(paths)
        self.assertIn('engine-nbd', paths)

    def test_help_stores(self):
        self.assertEqual(mancheck.help_stores(HELP_STORES), self.USAGES)

    def test_page_blocks(self):
        blocks = mancheck.page_blocks(STORE_PAGE)
        self.assertIn(['--store', 'memory', 'file:PATH[,ro]', 'nbd:URI', 'lba:VDISK'], blocks)
        self.assertIn(['memory', 'file:PATH', 'nbd'], blocks)

    def test_markdown_blocks(self):
        self.assertEqual(mancheck.markdown_blocks('a `memory`, `nbd:URI`\nand `x`\n\n| `file:P` |\n| b |\n'),
                         [['memory', 'nbd:URI', 'x'], ['file:P']])

    def test_markdown_tables(self):
        text = 'x `a` `b` `c`\n\n| path | what |\n|---|---|\n| `a` | `z` |\n| `b`, `c` | y |\n'
        self.assertEqual(mancheck.markdown_tables(text), [['a', 'b', 'c']])

    def test_syntax_or_example(self):
        self.assertTrue(mancheck.is_syntax('file:PATH[,direct]'))
        self.assertTrue(mancheck.is_syntax('nbd:URI'))
        self.assertFalse(mancheck.is_syntax('file:/tmp/x'))
        self.assertFalse(mancheck.is_syntax('memory'))

    def test_lists_checked(self):
        drifts = mancheck.store_list_drifts(mancheck.page_blocks(STORE_PAGE), self.USAGES, 'p')
        self.assertEqual(drifts, ['p: store file: the list says file:PATH; the registry says file:PATH[,ro]'])
        # a new store in the registry: every list misses it
        drifts = mancheck.store_list_drifts([['memory', 'file:PATH[,ro]', 'nbd:URI']],
                                            self.USAGES + ['pattern'], 'p')
        self.assertEqual(drifts, ['p: a list of stores (memory, file:PATH[,ro], nbd:URI) misses pattern'])
        # compare's paths the same way
        drifts = mancheck.store_list_drifts([['engine-nbd', 'kernel-nbd', 'guest-virtio']],
                                            ['engine-nbd', 'kernel-nbd', 'guest-virtio', 'x-y'],
                                            'p', 'compare path')
        self.assertEqual(drifts, ['p: a list of compare paths (engine-nbd, kernel-nbd, '
                                  'guest-virtio) misses x-y'])
        # two stores named in passing are not a list
        self.assertEqual(mancheck.store_list_drifts([['memory', 'nbd:X']], self.USAGES, 'p'), [])


if __name__ == '__main__':
    unittest.main(verbosity=2)
