#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Hold the man pages to the code: every option's names, default and range.

The code's side is what the programs print: `fio --enghelp=libtorus.so`
(one `name : help` line per option, the help ending in `(default: VALUE)`
or `(default: VALUE; range: MIN to MAX)`) and each shim's `--help` (its
OPTIONS section: a flag line indented by four, aliases after a comma, then
the help indented further, ending in `(default: VALUE)` where there is one).

The page's side: in its OPTIONS section, each option is a `.TP` whose tag
line names it (aliases after a comma), and whose text has a line
`Default: VALUE.` or `Default: VALUE; range: MIN to MAX.` where the code
has a default.

  mancheck.py --man DIR [--fio FIO --engine libtorus.so]
              [--nbd-shim PATH] [--tcmu-shim PATH]

Exit 0 when page and code agree (and groff finds nothing to warn about),
1 naming every drift (option, page says, code says), 77 when groff is
missing (after the drift checks passed). The docs' lists of transports and
compare paths are held to the registries too (doclists.py).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

import doclists


class Opt:
    """One option: its names (the first is the one reports use), its
    default and its (min, max) range, None where there is none."""

    def __init__(self, names, default=None, vrange=None):
        self.names = tuple(names)
        self.default = default
        self.range = vrange

    def __repr__(self):
        return f'Opt({self.names!r}, {self.default!r}, {self.range!r})'


def unroff(text):
    """Text as the reader sees it: font changes dropped, escapes undone."""
    text = re.sub(r'\\f(\(..|\[[^]]*\]|.)', '', text)
    for esc, plain in (('\\(aq', "'"), ('\\(dq', '"'), ('\\-', '-'),
                       ('\\e', '\\'), ('\\&', ''), ('\\ ', ' ')):
        text = text.replace(esc, plain)
    return text


def macro_args(line):
    """The arguments of a macro line, double quotes respected."""
    args, cur, quoted, started = [], '', False, False
    for ch in line.split(None, 1)[1] if ' ' in line else '':
        if ch == '"':
            quoted = not quoted
            started = True
        elif ch in ' \t' and not quoted:
            if started:
                args.append(cur)
            cur, started = '', False
        else:
            cur += ch
            started = True
    if started:
        args.append(cur)
    return args


def tag_text(line):
    """A .TP tag line as printed: .B joins its words with spaces, the
    alternating-font macros (.BI, .BR, .IR, ...) with nothing."""
    if not line.startswith('.'):
        return unroff(line).strip()
    macro = line.split(None, 1)[0]
    args = macro_args(line)
    sep = ' ' if macro in ('.B', '.I') else ''
    return unroff(sep.join(args)).strip()


def tag_names(tag):
    """The option names a tag gives: leading flags separated by commas
    (`-v, --verbose`), else its first word (`conns`)."""
    m = re.match(r'(-[\w-]+(?:,\s*-[\w-]+)*)', tag)
    if m:
        return [n.strip() for n in m.group(1).split(',')]
    return [tag.split()[0]] if tag.split() else []


def split_default(inner):
    """`VALUE` or `VALUE; range: MIN to MAX` -> (default, range or None)."""
    inner = ' '.join(inner.split())
    m = re.fullmatch(r'(.*?); range: (.+?) to (.+)', inner)
    if m:
        return m.group(1), (m.group(2), m.group(3))
    return inner, None


def help_default(text):
    """The last `(default: ...)` of a help text, parentheses balanced:
    (default, range) or (None, None)."""
    start = text.rfind('(default: ')
    if start < 0:
        return None, None
    depth, i = 0, start
    while i < len(text):
        if text[i] == '(':
            depth += 1
        elif text[i] == ')':
            depth -= 1
            if depth == 0:
                break
        i += 1
    if depth:
        return None, None
    return split_default(text[start + len('(default: '):i])


def parse_page(text):
    """The options of a man page's OPTIONS section."""
    opts, cur, in_options, want_tag = [], None, False, False
    for raw in text.splitlines():
        if raw.startswith('.\\"'):
            continue
        if raw.startswith('.SH'):
            in_options = tag_text(raw).strip('"') == 'OPTIONS'
            cur = None
            continue
        if not in_options:
            continue
        if raw.startswith('.TP'):
            want_tag, cur = True, None
            continue
        if want_tag:
            want_tag = False
            cur = Opt(tag_names(tag_text(raw)))
            opts.append(cur)
            continue
        if cur is None:
            continue
        m = re.fullmatch(r'Default: (.*)\.', unroff(raw).strip())
        if m:
            if cur.default is not None:
                raise ValueError(f'option {cur.names[0]}: two Default: lines')
            cur.default, cur.range = split_default(m.group(1))
    return opts


def parse_enghelp(out):
    """fio --enghelp's `name : help` lines."""
    opts = []
    for line in out.splitlines():
        m = re.match(r'(\S+)\s+: (.*)$', line)
        if m:
            default, vrange = help_default(m.group(2))
            opts.append(Opt([m.group(1)], default, vrange))
    return opts


def parse_usage(out):
    """The OPTIONS section of a shim's --help."""
    opts, cur, body, in_options = [], None, [], False

    def close():
        if cur is not None:
            cur.default, cur.range = help_default(' '.join(body))

    for line in out.splitlines():
        if line and not line[0].isspace():
            close()
            cur, body = None, []
            in_options = line.strip() == 'OPTIONS'
            continue
        if not in_options:
            continue
        m = re.match(r' {4}(-\S.*)$', line)
        if m:
            close()
            cur, body = Opt(tag_names(m.group(1))), []
            opts.append(cur)
        elif cur is not None:
            body.append(line.strip())
    close()
    return opts


def compare(page, code, page_name, code_name):
    """Every difference between two option lists, one message each."""
    drifts = []
    by_name = {n: o for o in page for n in o.names}
    seen = set()
    for c in code:
        p = next((by_name[n] for n in c.names if n in by_name), None)
        if p is None:
            drifts.append(f'option {c.names[0]}: in {code_name} but not in {page_name}')
            continue
        seen.add(id(p))
        opt = c.names[0]
        if set(p.names) != set(c.names):
            drifts.append(f'option {opt}: names: {page_name} says {", ".join(p.names)}; '
                          f'{code_name} says {", ".join(c.names)}')
        if p.default != c.default:
            drifts.append(f'option {opt}: default: {page_name} says {show(p.default)}; '
                          f'{code_name} says {show(c.default)}')
        if p.range != c.range:
            drifts.append(f'option {opt}: range: {page_name} says {show_range(p.range)}; '
                          f'{code_name} says {show_range(c.range)}')
    for p in page:
        if id(p) not in seen:
            drifts.append(f'option {p.names[0]}: in {page_name} but not in {code_name}')
    return drifts


def show(value):
    return 'none' if value is None else repr(value)


def show_range(r):
    return 'none' if r is None else f"'{r[0]} to {r[1]}'"


def run(cmd, env=None):
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
    if res.returncode:
        sys.exit(f'FAIL: {" ".join(cmd)} exited with {res.returncode}:\n{res.stderr}')
    return res.stdout


def fio_env():
    """A sanitized engine needs the ASan runtime first in fio (tests/lib.sh)."""
    env = dict(os.environ)
    if env.get('TORUS_SANITIZE') == '1':
        env['LD_PRELOAD'] = env['TORUS_ASAN_RUNTIME']
        env['ASAN_OPTIONS'] = env.get('ASAN_OPTIONS', '') + ':detect_leaks=0'
    return env


def groff_warnings(path):
    res = subprocess.run(['groff', '-man', '-Tutf8', '-ww', '-z', path],
                         capture_output=True, text=True, timeout=60)
    return res.stderr.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--man', required=True, help='the folder of the man pages')
    ap.add_argument('--fio', default='fio')
    ap.add_argument('--engine', help='libtorus.so, for fio --enghelp')
    ap.add_argument('--nbd-shim')
    ap.add_argument('--tcmu-shim')
    args = ap.parse_args()

    checks = []
    if args.engine:
        checks.append(('libtorus.7', f'fio --enghelp={os.path.basename(args.engine)}',
                       lambda: parse_enghelp(run([args.fio, f'--enghelp={args.engine}'],
                                                 fio_env()))))
    for name, path in (('nbd-shim', args.nbd_shim), ('tcmu-shim', args.tcmu_shim)):
        if path:
            checks.append((f'{name}.1', f'{name} --help',
                           lambda path=path: parse_usage(run([path, '--help']))))

    enghelp = run([args.fio, f'--enghelp={args.engine}'], fio_env()) if args.engine else None
    drifts, pages = doclists.drifts(args.man, enghelp), []
    for page_file, code_name, code_opts in checks:
        path = os.path.join(args.man, page_file)
        pages.append(path)
        with open(path, encoding='utf-8') as f:
            page = parse_page(f.read())
        code = code_opts()
        if not code:
            drifts.append(f'{code_name} listed no options: has its format changed? '
                          '(tests/man/mancheck.py parses it)')
        if not page:
            drifts.append(f'man/{page_file} has no options in its OPTIONS section')
        drifts += compare(page, code, f'man/{page_file}', code_name)
        print(f'{page_file}: {len(page)} options on the page, {len(code)} in {code_name}')
    for d in drifts:
        print(f'DRIFT: {d}', file=sys.stderr)
    if drifts:
        print('FAIL: the man pages and the code disagree (above): correct the page, '
              'or the code\'s help if the page is right', file=sys.stderr)
        return 1

    if not shutil.which('groff'):
        print('SKIP: groff is not installed (scripts/deps.sh installs groff-base)',
              file=sys.stderr)
        return 77
    bad = [(p, w) for p in pages for w in [groff_warnings(p)] if w]
    for p, w in bad:
        print(f'FAIL: groff warns about {p}:\n{w}', file=sys.stderr)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
