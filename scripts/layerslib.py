"""The layers of the C tree, as the file `layers` at the top declares them:
reading the declaration, checking every #include "..." against it, and
drawing the graph that docs/architecture.md shows. scripts/layers is the
command; the meson test "meta-layers" (tests/meta/test_layers.py) runs check().
"""

import collections
import os
import re
import sys

Layer = collections.namedtuple("Layer", "name shared folders uses")
Allow = collections.namedtuple("Allow", "file header line")
Include = collections.namedtuple("Include", "file line header target")

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCES = (".c", ".h")
# Folders whose C may include any layer, and is in none.
FREE = ("tests", "fuzz")
# Where the drawn graph sits in docs/architecture.md.
DOC = os.path.join("docs", "architecture.md")
BEGIN = "<!-- layers: drawn by scripts/layers from the file layers; the test layers checks it -->"
END = "<!-- end of layers -->"


class DeclError(Exception):
    pass


def parse(text, where="layers"):
    """The declaration's layers (top to bottom) and allowed exceptions."""
    layers, allows = [], []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        if words[0] == "allow":
            if len(words) != 3:
                raise DeclError(f"{where}:{n}: use: allow FILE HEADER")
            allows.append(Allow(words[1], words[2], n))
            continue
        m = re.fullmatch(r"([a-z_]+):\s*([^>]*?)\s*(?:->\s*(.*))?", line)
        if not m:
            raise DeclError(f"{where}:{n}: use: LAYER: [SHARED] FOLDER... -> LAYER...")
        shared, folders = [], []
        for w in m.group(2).split():
            if w.startswith("[") and w.endswith("]"):
                shared.append(w[1:-1].rstrip("/"))
            else:
                folders.append(w.rstrip("/"))
        uses = (m.group(3) or "").split()
        layers.append(Layer(m.group(1), shared, shared + folders, uses))
    names = [la.name for la in layers]
    for la in layers:
        for u in la.uses:
            if u not in names:
                raise DeclError(f"{where}: {la.name} uses {u}, which is not declared")
            if names.index(u) <= names.index(la.name):
                raise DeclError(f"{where}: {la.name} uses {u}, which is not below it")
    return layers, allows


def below(layers):
    """Each layer's name -> the layers it reaches through its uses."""
    by_name = {la.name: la for la in layers}
    out = {}
    for la in reversed(layers):
        reach = set()
        for u in la.uses:
            reach |= {u} | out[u]
        out[la.name] = reach
    assert set(out) == set(by_name)
    return out


def folder_of(layers, path):
    """(layer, folder) holding the file at path (relative), or (None, None)."""
    d = os.path.dirname(path)
    for la in layers:
        if d in la.folders:
            return la, d
    return None, None


def resolve(src, path, header, headers):
    """The tree's file that `#include "header"` in path names, or None
    (another project's header). Tried as the compiler does: beside the
    file, then on the include path, which meson gives every folder's; a
    name in several folders is taken from the including folder or not at
    all (ambiguous: returned as a list)."""
    d = os.path.dirname(path)
    near = os.path.normpath(os.path.join(d, header))
    if os.path.isfile(os.path.join(src, near)):
        return near
    hits = [h for h in headers if h == header or h.endswith("/" + header)]
    if len(hits) > 1:
        # tests/ and fuzz/ are on no layer's include path
        hits = [h for h in hits if h.split("/")[0] not in FREE] or hits
    if len(hits) == 1:
        return hits[0]
    if not hits:
        return None
    return sorted(hits)


def tree_files(src):
    """Every .c and .h under src, relative, but the build's and .deps'."""
    out = []
    for root, dirs, names in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build")))
        rel = os.path.relpath(root, src)
        for n in sorted(names):
            if n.endswith(SOURCES):
                out.append(os.path.normpath(os.path.join(rel, n)))
    return out


def includes(src, layers):
    """Every #include "..." in the declared folders, resolved."""
    files = tree_files(src)
    headers = [f for f in files if f.endswith(".h")]
    out = []
    for f in files:
        if folder_of(layers, f)[0] is None:
            continue
        with open(os.path.join(src, f), errors="replace") as fh:
            for n, text in enumerate(fh, 1):
                m = INCLUDE.match(text)
                if m:
                    out.append(Include(f, n, m.group(1), resolve(src, f, m.group(1), headers)))
    return out


def violations(src, layers, allows):
    """One line per include that breaks the layers, naming file:line and
    the rule; and per allow that no longer matches anything."""
    reach = below(layers)
    used = set()
    out = []
    for d in sorted({os.path.dirname(f) for f in tree_files(src)}):
        if folder_of(layers, os.path.join(d, "x.c"))[0] is None and \
           d.split("/")[0] not in FREE:
            out.append(f"{d}/: C in a folder of no layer: add it to the file layers")
    for inc in includes(src, layers):
        la, folder = folder_of(layers, inc.file)
        where = f"{inc.file}:{inc.line}: #include \"{inc.header}\""
        if isinstance(inc.target, list):
            out.append(f"{where}: ambiguous, it names {' and '.join(inc.target)}: "
                       "include it by its folder or rename one")
            continue
        if inc.target is None:
            continue
        tla, tfolder = folder_of(layers, inc.target)
        why = None
        if tla is None:
            why = (f"{inc.target} is in no layer (tests/ and fuzz/ may include the layers, "
                   "not the other way round)")
        elif tla is la:
            if tfolder != folder and folder in la.shared:
                why = (f"across layer {la.name}: {folder}/ is what its folders share, "
                       f"and includes none of them ({tfolder}/)")
            elif tfolder != folder and tfolder not in la.shared:
                why = (f"across layer {la.name}: {folder}/ may include its own folder and "
                       f"{', '.join(s + '/' for s in la.shared) or 'no shared folder'}, "
                       f"not {tfolder}/")
        elif tla.name not in reach[la.name]:
            up = [x.name for x in layers].index(tla.name) < [x.name for x in layers].index(la.name)
            why = (f"{la.name} may not include {tla.name} ({inc.target}): "
                   f"{'a layer above it' if up else 'not a layer it uses'}; "
                   f"{la.name} uses {', '.join(sorted(reach[la.name])) or 'nothing'} (file layers)")
        if why is None:
            continue
        hit = [a for a in allows if a.file == inc.file and a.header == inc.header]
        if hit:
            used.update(hit)
            continue
        out.append(f"{where}: {why}")
    for a in allows:
        if a not in used:
            out.append(f"layers:{a.line}: allow {a.file} {a.header}: no such include breaks "
                       "the layers any more: remove the line")
    return out


def draw(layers):
    """The graph, as text: each layer, top to bottom, its folders (the
    shared one first) and the layers it uses."""
    rows = []
    for la in layers:
        shared = " ".join(s + "/" for s in la.shared)
        rest = [f for f in la.folders if f not in la.shared]
        base = la.shared[0] + "/" if la.shared else ""
        others = " ".join(f[len(base):] + "/" if base and f.startswith(base) else f + "/"
                          for f in rest)
        folders = shared + (" + " if shared and others else "") + others
        rows.append((la.name, folders, " ".join(la.uses)))
    head = ("layer", "folders (shared + its own)")
    w0 = max(len(r[0]) for r in rows + [head])
    w1 = max(len(r[1]) for r in rows + [head])
    lines = [head[0].ljust(w0) + "  " + head[1].ljust(w1) + "  uses"]
    for name, folders, uses in rows:
        line = name.ljust(w0) + "  " + folders.ljust(w1)
        lines.append((line + "  ──▶ " + uses) if uses else line.rstrip())
    return "\n".join(lines) + "\n"


def doc_block(layers):
    return BEGIN + "\n```text\n" + draw(layers) + "```\n" + END


def doc_problem(src, layers):
    """None when docs/architecture.md shows draw()'s graph; else why not."""
    path = os.path.join(src, DOC)
    with open(path) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        return f"{DOC}: no layer graph between '{BEGIN}' and '{END}'"
    shown = text[text.index(BEGIN):text.index(END) + len(END)]
    if shown != doc_block(layers):
        return (f"{DOC}: the layer graph differs from the file layers: "
                "run scripts/layers --doc to redraw it")
    return None


def write_doc(src, layers):
    path = os.path.join(src, DOC)
    with open(path) as f:
        text = f.read()
    text = text[:text.index(BEGIN)] + doc_block(layers) + text[text.index(END) + len(END):]
    with open(path, "w") as f:
        f.write(text)


def load(src):
    with open(os.path.join(src, "layers")) as f:
        return parse(f.read())


def check(src):
    """Every problem: includes against the layers, and the doc's graph."""
    layers, allows = load(src)
    out = violations(src, layers, allows)
    doc = doc_problem(src, layers)
    return out + ([doc] if doc else [])


USAGE = """usage: layers [--check | --doc]
  (nothing)  print the graph of the layers the file layers declares
  --check    check every #include of the C tree and docs/architecture.md's
             graph against it; a line per problem, exit 1 if any
  --doc      redraw the graph in docs/architecture.md
"""


def main(argv=None, src=None):
    argv = sys.argv[1:] if argv is None else argv
    src = src or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if argv in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    if len(argv) > 1 or (argv and argv[0] not in ("--check", "--doc")):
        sys.stderr.write(USAGE)
        return 2
    try:
        layers, _ = load(src)
        if not argv:
            sys.stdout.write(draw(layers))
            return 0
        if argv[0] == "--doc":
            write_doc(src, layers)
            return 0
        problems = check(src)
    except DeclError as e:
        sys.stderr.write(f"layers: {e}\n")
        return 1
    for p in problems:
        print(p)
    return 1 if problems else 0
