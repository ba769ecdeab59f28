#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Unit tests of doclists.py: the docs' lists of transports and compare
paths, read and held to the registries, and the drift messages."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doclists  # noqa: E402

ENGHELP = (
    'uri                     : Target of torus 1: a uri of one of the transports (nbd: '
    'nbd://host/export or nbd+unix:///export?socket=PATH; loop: loop://); without one '
    '(default: none)\n'
    'transport               : Which transport: one of nbd, loop; with a uri, one that '
    'serves it (default: nbd)\n')

LIBTORUS = r'''.TH X 7
.SH TARGETS
.TP
.BI nbd:// host / export
.TP
.BI nbd+unix:/// export ?socket= PATH
.SH EMBEDDED SERVERS
.TP
.B transport=nbd
nbdkit memory.
.SH OPTIONS
.TP
.B uri
Picks
.BR transport .
.TP
.B transport
Which transport:
.B nbd
(native).
'''

README = '| `transport` | `nbd` (native) |\n'


class DocLists(unittest.TestCase):
    """A transport the engine lists but the docs do not (a new one added
    without its docs) is named in each place it is missing."""

    def test_help_read(self):
        self.assertEqual(doclists.transports_in_help(ENGHELP),
                         (['nbd', 'loop'], ['nbd://', 'nbd+unix://', 'loop://']))

    def test_new_transport_undocumented(self):
        self.assertEqual(doclists.transport_drifts(ENGHELP, LIBTORUS, README), [
            "uri loop://: the engine serves it but man/libtorus.7's TARGETS does not describe it",
            "transport loop: not in man/libtorus.7's EMBEDDED SERVERS (a .TP tagged "
            "transport=loop: its server, or that it has none)",
            "transport loop: man/libtorus.7's option transport does not name it",
            "transport loop: README.md's option table row `transport` does not name it as "
            "`loop`",
        ])

    def test_documented(self):
        page = LIBTORUS.replace('.SH EMBEDDED', '.TP\n.B loop://\n.SH EMBEDDED').replace(
            '.SH OPTIONS', '.TP\n.B transport=loop\nnone.\n.SH OPTIONS') + 'or\n.BR loop .\n'
        self.assertEqual(doclists.transport_drifts(ENGHELP, page, README.replace(
            '(native)', '(native) or `loop`')), [])

    def test_help_unreadable(self):
        self.assertIn('names no transports', doclists.transport_drifts('', LIBTORUS, README)[0])

    def test_lists_of_paths(self):
        md = 'x\n| path | what |\n|---|---|\n| `engine-nbd` | a |\n| `kernel-x` | b |\n\nmore\n'
        self.assertEqual(doclists.table_first_column(md, '| path |'), ['engine-nbd', 'kernel-x'])
        text = "`--kernel-paths LIST` adds the kernel's paths (`kernel-loop`,\n`kernel-nbd`; x)"
        self.assertEqual(doclists.kernel_paths_listed(text), ['kernel-loop', 'kernel-nbd'])

    def test_paths_of_this_tree(self):
        src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        self.assertEqual(doclists.path_drifts(src), [])


if __name__ == '__main__':
    unittest.main(verbosity=2)
