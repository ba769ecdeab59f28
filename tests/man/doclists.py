# SPDX-License-Identifier: GPL-2.0-only
"""The lists of transports and compare paths that the docs keep by hand,
held to the registries (for man-drift, through mancheck.py).

Transports come from the engine (`fio --enghelp`: transport='s help
names every one, uri='s help each one's uris, both built from
engines/transports.c); each must be in man/libtorus.7 (its uri schemes in
TARGETS, `transport=NAME` in EMBEDDED SERVERS, its name in the transport
option) and in the README's `transport` row. Compare paths come from
scripts/compare_paths.py's PATHS: docs/compare.md's Paths table and
jobs/README.md's list of kernel paths (rerunlib.KERNEL_PATHS) must name
exactly those.
"""

import os
import re
import sys

import mancheck


def transports_in_help(enghelp):
    """(names, uri schemes) of the engine's transports, from --enghelp."""
    names, schemes = [], []
    for line in enghelp.splitlines():
        m = re.match(r'transport\s+: Which transport: one of ([^;]+);', line)
        if m:
            names = [n.strip() for n in m.group(1).split(',')]
        if re.match(r'uri\s+: ', line):
            for s in re.findall(r'[a-z][a-z0-9+]*://', line):
                if s not in schemes:
                    schemes.append(s)
    return names, schemes


def man_sections(text):
    """{section name: its text as the reader sees it} of a man page."""
    out, cur = {}, None
    for raw in text.splitlines():
        if raw.startswith('.\\"'):
            continue
        if raw.startswith('.SH'):
            cur = ' '.join(mancheck.macro_args(raw))
            out[cur] = ''
        elif cur is not None:
            out[cur] += mancheck.tag_text(raw) + '\n'
    return out


def man_option_text(text, name):
    """The text of option NAME's .TP entry in OPTIONS."""
    entry, on, tag = '', False, False
    for raw in text.splitlines():
        if raw.startswith('.TP') or raw.startswith('.SH'):
            if on:
                break
            tag = raw.startswith('.TP')
            continue
        if tag and mancheck.tag_text(raw) == name:
            on = True
        elif on:
            entry += mancheck.tag_text(raw) + '\n'
        tag = False
    return entry


def transport_drifts(enghelp, man_text, readme_text, page='man/libtorus.7'):
    """Every transport or uri scheme of the engine a doc does not name."""
    names, schemes = transports_in_help(enghelp)
    if not names or not schemes:
        return ['fio --enghelp names no transports (transport=\'s help "Which transport: '
                'one of A, B;") or no uris: has its help changed? (tests/man/doclists.py '
                'reads it)']
    drifts = []
    sec = man_sections(man_text)
    for s in schemes:
        if s not in sec.get('TARGETS', ''):
            drifts.append(f'uri {s}: the engine serves it but {page}\'s TARGETS does not '
                          'describe it')
    tp_text = man_option_text(man_text, 'transport')
    row = next((line for line in readme_text.splitlines()
                if line.startswith('| `transport` |')), '')
    for n in names:
        if f'transport={n}' not in sec.get('EMBEDDED SERVERS', ''):
            drifts.append(f'transport {n}: not in {page}\'s EMBEDDED SERVERS '
                          f'(a .TP tagged transport={n}: its server, or that it has none)')
        if not re.search(rf'(^|\W){re.escape(n)}(\W|$)', tp_text):
            drifts.append(f'transport {n}: {page}\'s option transport does not name it')
        if f'`{n}`' not in row:
            drifts.append(f'transport {n}: README.md\'s option table row `transport` does '
                          f'not name it as `{n}`')
    return drifts


def table_first_column(text, header):
    """The `NAME`s of the first column of the markdown table whose header
    row starts with HEADER."""
    names, on = [], False
    for line in text.splitlines():
        if line.startswith(header):
            on = True
        elif on and line.startswith('|---'):
            continue
        elif on and line.startswith('| `'):
            names.append(line.split('`')[1])
        elif on:
            break
    return names


def kernel_paths_listed(text):
    """The paths jobs/README.md lists after `--kernel-paths LIST` adds."""
    m = re.search(r'`--kernel-paths LIST` adds the kernel\'s paths \(([^;]*);', text)
    return re.findall(r'`([^`]+)`', m.group(1)) if m else []


def path_drifts(src):
    """docs/compare.md's and jobs/README.md's paths against PATHS."""
    sys.path.insert(0, os.path.join(src, 'scripts'))
    import compare_paths
    import rerunlib

    def read(rel):
        with open(os.path.join(src, rel), encoding='utf-8') as f:
            return f.read()

    drifts = []
    for doc, listed, want in (
            ('docs/compare.md', table_first_column(read('docs/compare.md'), '| path |'),
             [p.name for p in compare_paths.PATHS]),
            ('jobs/README.md', kernel_paths_listed(read('jobs/README.md')),
             list(rerunlib.KERNEL_PATHS))):
        if not listed:
            drifts.append(f'{doc} lists no compare paths where doclists.py looks for them')
        for n in want:
            if n not in listed:
                drifts.append(f'compare path {n}: in scripts/compare_paths.py\'s PATHS but '
                              f'not in {doc}\'s list')
        for n in listed:
            if n not in want:
                drifts.append(f'compare path {n}: in {doc}\'s list but not a path of '
                              'scripts/compare_paths.py')
    return drifts


def drifts(man, enghelp):
    """Every drift of the lists: MAN is the folder of the man pages (the
    source tree above it), ENGHELP fio --enghelp's output, or None when
    there is no engine to ask."""
    src = os.path.dirname(os.path.abspath(man))
    out = []
    if enghelp is not None:
        with open(os.path.join(man, 'libtorus.7'), encoding='utf-8') as f, \
                open(os.path.join(src, 'README.md'), encoding='utf-8') as g:
            out += transport_drifts(enghelp, f.read(), g.read())
    return out + path_drifts(src)
