#!/usr/bin/env python3
"""The layers hold (the meson test "meta-layers"): every #include "..." of the C
tree points down a layer or within its folder, as the file layers at the
top declares, and docs/architecture.md shows the graph drawn from it;
tcmu-runner's API that tcmu-shim gives plugins is defined in
bridges/runner/plugin_api*.c only. Then scripts/layerslib.py's rules on
small made-up trees: what it must flag."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

SRC = os.environ.get("TORUS_SRC") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SRC, "scripts"))

import layerslib  # noqa: E402

DECL = """\
top: [top] top/a top/b -> low
low: [low] -> base
base: [base]
"""


class Tree(unittest.TestCase):
    def test_includes_point_down(self):
        layers, allows = layerslib.load(SRC)
        problems = layerslib.violations(SRC, layers, allows)
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_architecture_shows_the_graph(self):
        layers, _ = layerslib.load(SRC)
        self.assertIsNone(layerslib.doc_problem(SRC, layers))

    def test_command(self):
        r = subprocess.run([os.path.join(SRC, "scripts", "layers")], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("bridges", r.stdout)


# A function defined at the start of a line (kernel style), its name.
DEFINED = re.compile(r"^(?![#/]|\s)[^;=]*?\b([a-z_][a-z0-9_]*)\s*\([^;]*$")
PLUGIN_API = ("plugin_api.c", "plugin_api_helpers.c")


def defined(path):
    with open(path, errors="replace") as f:
        return [(n, m.group(1)) for n, line in enumerate(f, 1)
                for m in [DEFINED.match(line)] if m]


class PluginApi(unittest.TestCase):
    """tcmu-runner's API that tcmu-shim gives plugins stays apart from the
    project's own tcmu_ code: only bridges/runner/plugin_api*.c defines
    tcmu_* or tcmur_* in bridges/, and no file of the C tree defines one
    of the names the plugins import (bridges/runner/meson.build's list)."""

    def exports(self):
        with open(os.path.join(SRC, "bridges", "runner", "meson.build")) as f:
            text = f.read()
        block = text[text.index("tcmu_runner_exports = ["):]
        return set(re.findall(r"'([a-z_0-9]+)'", block[:block.index("]")]))

    def test_apart(self):
        exports = self.exports()
        self.assertIn("tcmur_register_handler", exports)
        layers, _ = layerslib.load(SRC)
        bad = []
        for f in layerslib.tree_files(SRC):
            if layerslib.folder_of(layers, f)[0] is None or not f.endswith(".c"):
                continue
            api = f.startswith("bridges/runner/") and os.path.basename(f) in PLUGIN_API
            for n, name in defined(os.path.join(SRC, f)):
                if api:
                    continue
                if name in exports:
                    bad.append(f"{f}:{n}: {name} is tcmu-runner's API: only "
                               "bridges/runner/plugin_api*.c defines it")
                elif f.startswith("bridges/") and name.startswith(("tcmu_", "tcmur_")):
                    bad.append(f"{f}:{n}: {name}: in bridges/, tcmu_ and tcmur_ are "
                               "tcmu-runner's API (plugin_api*.c); name the host's own runner_")
        self.assertEqual(bad, [], "\n" + "\n".join(bad))


class Rules(unittest.TestCase):
    def setUp(self):
        self.src = tempfile.mkdtemp(prefix="torus-layers.")
        self.addCleanup(shutil.rmtree, self.src)
        self.decl = DECL

    def put(self, path, text=""):
        full = os.path.join(self.src, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(textwrap.dedent(text))

    def problems(self):
        layers, allows = layerslib.parse(self.decl)
        return layerslib.violations(self.src, layers, allows)

    def tree(self):
        self.put("top/top.h")
        self.put("top/a/a.h")
        self.put("top/b/b.h")
        self.put("low/low.h")
        self.put("base/base.h")

    def test_down_and_shared_pass(self):
        self.tree()
        self.put("top/a/a.c", '#include "a.h"\n#include "top.h"\n#include "../top.h"\n'
                              '#include "low.h"\n#include "base.h"\n#include <stdio.h>\n'
                              '#include "fio.h"\n')
        self.put("tests/t.c", '#include "a.h"\n#include "b.h"\n')
        self.assertEqual(self.problems(), [])

    def test_up_is_named(self):
        self.tree()
        self.put("low/low.c", '/* x */\n#include "a.h"\n')
        [p] = self.problems()
        self.assertIn("low/low.c:2: #include \"a.h\"", p)
        self.assertIn("low may not include top", p)
        self.assertIn("a layer above it", p)

    def test_across_is_named(self):
        self.tree()
        self.put("top/a/a.c", '#include "../b/b.h"\n')
        self.put("top/top.c", '#include "b.h"\n')
        a, top = sorted(self.problems())
        self.assertIn("top/a/a.c:1", a)
        self.assertIn("across layer top: top/a/ may include its own folder and top/, "
                      "not top/b/", a)
        self.assertIn("top/top.c:1", top)
        self.assertIn("top/ is what its folders share, and includes none of them", top)

    def test_no_shared_folder(self):
        self.decl = "top: top/a top/b -> base\nbase: [base]\n"
        self.put("top/a/a.h")
        self.put("top/b/b.h")
        self.put("top/a/a.c", '#include "b.h"\n')
        [p] = self.problems()
        self.assertIn("no shared folder", p)

    def test_into_tests(self):
        self.tree()
        self.put("tests/helper.h")
        self.put("base/base.c", '#include "helper.h"\n')
        [p] = self.problems()
        self.assertIn("tests/helper.h is in no layer", p)

    def test_folder_of_no_layer(self):
        self.tree()
        self.put("other/x.c")
        [p] = self.problems()
        self.assertIn("other/: C in a folder of no layer", p)

    def test_ambiguous(self):
        self.tree()
        self.put("top/a/log.h")
        self.put("top/b/log.h")
        self.put("top/top.c", '#include "log.h"\n')
        [p] = self.problems()
        self.assertIn("ambiguous", p)

    def test_allow_and_stale_allow(self):
        self.tree()
        self.put("low/low.c", '#include "a.h"\n')
        self.decl += "allow low/low.c a.h  # issue 0\nallow low/low.c b.h\n"
        [p] = self.problems()
        self.assertIn("allow low/low.c b.h: no such include", p)

    def test_declaration_errors(self):
        with self.assertRaisesRegex(layerslib.DeclError, "not below it"):
            layerslib.parse("low: [low]\ntop: [top] -> low\n")
        with self.assertRaisesRegex(layerslib.DeclError, "not declared"):
            layerslib.parse("top: [top] -> nowhere\n")
        with self.assertRaisesRegex(layerslib.DeclError, "allow FILE HEADER"):
            layerslib.parse("allow x\n")

    def test_draw_and_doc(self):
        layers, _ = layerslib.parse(DECL)
        self.assertEqual(layerslib.draw(layers).splitlines()[1:],
                         ["top    top/ + a/ b/                ──▶ low",
                          "low    low/                        ──▶ base",
                          "base   base/"])
        self.put("docs/architecture.md", "# A\n\n" + layerslib.BEGIN + "\nold\n" +
                 layerslib.END + "\n\nrest\n")
        self.assertIn("differs", layerslib.doc_problem(self.src, layers))
        layerslib.write_doc(self.src, layers)
        self.assertIsNone(layerslib.doc_problem(self.src, layers))
        with open(os.path.join(self.src, "docs/architecture.md")) as f:
            self.assertTrue(f.read().endswith("\n\nrest\n"))


if __name__ == "__main__":
    unittest.main()
