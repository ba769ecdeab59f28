#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Hold the man pages to the code: every option's names, default and range.

The code's side is what the programs print: `fio --enghelp=libtorus.so`
(one `name : help` line per option, the help ending in `(default: VALUE)`
or `(default: VALUE; range: MIN to MAX)`) and each shim's `--help` (its
OPTIONS section: a flag line indented by four, aliases after a comma, then
the help indented further, ending in `(default: VALUE)` where there is one).

Every list of stores (and of scripts/compare's paths), too: the registry's stores are what the shims'
`--help` lists under --store (`NAME[:SYNTAX]` indented by ten). A list is
any block of a page that names three stores or more (in a man page: a
section, or an OPTIONS entry, with the stores in bold; in Markdown, README
and docs/: a paragraph or table with the stores in backquotes); it must
name every store, and where it gives a store's syntax (`file:PATH[,direct]`,
not an example such as `file:/tmp/x`), the registry's. Compare's paths are
the names in the PATHS table of scripts/compare*.py, checked the same way
in the Markdown files' tables (a table whose rows start with three paths
or more: prose names a few paths in passing).

The page's side: in its OPTIONS section, each option is a `.TP` whose tag
line names it (aliases after a comma), and whose text has a line
`Default: VALUE.` or `Default: VALUE; range: MIN to MAX.` where the code
has a default.

  mancheck.py --man DIR [--fio FIO --engine libtorus.so]
              [--nbd-shim PATH] [--tcmu-shim PATH] [--top DIR]

--top: the source tree, whose README.md, CONTRIBUTING.md and docs/*.md
have their lists of stores checked too.

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


# ---- lists of stores

STORE_MIN = 3    # stores a block names before it counts as a list of them


def help_stores(out):
    """The registry's store syntaxes, as --help lists them under --store."""
    usages, inside = [], False
    for line in out.splitlines():
        if re.match(r' {4}--store ', line):
            inside = True
        elif inside and re.match(r' {0,4}\S', line):
            break
        elif inside:
            m = re.match(r' {10}([a-z][\w-]*\S*)', line)
            if m:
                usages.append(m.group(1))
    return usages


def store_name(token):
    return re.split(r'[:\[]', token, 1)[0]


def is_syntax(token):
    """`file:PATH[,direct]` or `nbd:URI` is a syntax; `file:/tmp/x` is not."""
    return bool(re.match(r'[a-z][\w-]*(\[|:[A-Z])', token))


def page_blocks(text):
    """A man page's blocks: each section, but each OPTIONS entry apart;
    every block as the list of its bold words (.B, .BR, .BI lines)."""
    blocks, cur, section = [], [], ''
    for raw in text.splitlines():
        if raw.startswith('.SH'):
            blocks.append(cur)
            cur, section = [], tag_text(raw).strip('"')
            continue
        if raw.startswith('.TP') and section == 'OPTIONS':
            blocks.append(cur)
            cur = []
            continue
        if re.match(r'\.B[IR]?\s', raw):
            word = tag_text(raw)
            word = re.sub(r'[,.;)]+$', '', word.split()[0]) if word.split() else ''
            cur.append(word)
    blocks.append(cur)
    return blocks


def markdown_blocks(text):
    """A Markdown file's blocks (paragraphs and tables), each as the list of
    its backquoted words."""
    return [re.findall(r'`([^`\s]+)`', b) for b in re.split(r'\n\s*\n', text)]


def markdown_tables(text):
    """A Markdown file's tables, each as the backquoted words of its rows'
    first cells."""
    tables = []
    for b in re.split(r'\n\s*\n', text):
        rows = [r for r in b.splitlines() if r.startswith('|')]
        if rows:
            tables.append([w for r in rows for w in re.findall(r'`([^`\s]+)`',
                                                                 r.split('|')[1])])
    return tables


def store_list_drifts(blocks, usages, where, what='store'):
    """Every block naming STORE_MIN stores (or compare's paths) or more must
    name them all, with the registry's syntax wherever it gives one."""
    names = {store_name(u): u for u in usages}
    drifts = []
    for words in blocks:
        named = [w for w in words if store_name(w) in names]
        if len({store_name(w) for w in named}) < STORE_MIN:
            continue
        missing = [n for n in names if n not in {store_name(w) for w in named}]
        if missing:
            drifts.append(f'{where}: a list of {what}s ({", ".join(named)}) misses '
                          f'{", ".join(missing)}')
        for w in named:
            if is_syntax(w) and w != names[store_name(w)]:
                drifts.append(f'{where}: {what} {store_name(w)}: the list says {w}; '
                              f'the registry says {names[store_name(w)]}')
    return drifts


def compare_paths(top):
    """The names of scripts/compare's paths, from the PATHS table of
    whichever scripts/compare*.py module defines it (records with a .name),
    or None when none does."""
    scripts = os.path.join(top, 'scripts')
    sys.path.insert(0, scripts)
    try:
        mods = sorted(f[:-3] for f in os.listdir(scripts)
                      if f.startswith('compare') and f.endswith('.py'))
        for mod in sorted(mods, key=lambda m: m != 'comparelib'):
            try:
                paths = getattr(__import__(mod), 'PATHS', None)
            except Exception:  # a module that needs more than import: not this one
                continue
            if paths and all(hasattr(p, 'name') for p in paths):
                return [p.name for p in paths]
        return None
    finally:
        sys.path.remove(scripts)


def markdown_files(top):
    """README.md, CONTRIBUTING.md and docs/*.md under @top."""
    docs = os.path.join(top, 'docs')
    return [os.path.join(top, f) for f in ('README.md', 'CONTRIBUTING.md')
            if os.path.exists(os.path.join(top, f))] + \
        sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith('.md'))


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
    ap.add_argument('--top', help='the source tree, for its Markdown lists of stores')
    args = ap.parse_args()
    docs = markdown_files(args.top) if args.top else []

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
    shim = args.nbd_shim or args.tcmu_shim
    if shim:
        usages = help_stores(run([shim, '--help']))
        if not usages:
            drifts.append(f'{shim} --help listed no stores: has its format changed? '
                          '(tests/man/mancheck.py parses it)')
        man = list(dict.fromkeys(pages + [os.path.join(args.man, 'libtorus.7')]))
        for path in man:
            with open(path, encoding='utf-8') as f:
                drifts += store_list_drifts(page_blocks(f.read()), usages, path)
        for path in docs:
            with open(path, encoding='utf-8') as f:
                drifts += store_list_drifts(markdown_blocks(f.read()), usages, path)
        print(f'stores: {len(usages)} in the registry, checked in {len(man)} '
              f'man pages and {len(docs)} Markdown files')
    if args.top:
        paths = compare_paths(args.top)
        if paths is None:
            drifts.append('no scripts/compare*.py defines PATHS (records with a .name): '
                          'where did compare\'s paths go? (tests/man/mancheck.py looks)')
        else:
            for path in docs:
                with open(path, encoding='utf-8') as f:
                    drifts += store_list_drifts(markdown_tables(f.read()), paths, path,
                                                'compare path')
            print(f'compare paths: {len(paths)}, checked in {len(docs)} Markdown files')
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
