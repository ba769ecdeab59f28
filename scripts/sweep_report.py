"""scripts/compare --sweep's report: report.md (the crossover in its first
lines, each kernel path's extra share of latency and CPU ratio over the
grid, the figures of every cell and path with their min-max), report.png
(heat maps of the share and the CPU ratio per kernel path, cells over the
spread limit hatched and emulated ones grey; latency against the second
key for each value of the first, per path) and, with --timeline,
timeline.png (the phases of every path, one small panel per cell). Its
input is the sweep's results.json (compare_sweep's state)."""

import os

import compare_sweep
import timeline_runs
from compare_report import FLAG, cell, fmt, fmt_extra
from compare_run import log


def grid_of(state):
    return [(k, vs) for k, vs in state["sweep"]["settings"]["grid"]]


def layout(grid):
    """(row key, its values, column key, its values, [the other keys' combos
    as {key: value}]): the heat maps' axes. One key: a single row."""
    if len(grid) == 1:
        return None, [None], grid[0][0], grid[0][1], [{}]
    rest = grid[2:]
    combos = compare_sweep.cells(rest) if rest else [{}]
    return grid[0][0], grid[0][1], grid[1][0], grid[1][1], combos


def cell_at(grid, row_key, rv, col_key, cv, combo):
    """The cell {key: value} in GRID's key order at row RV, column CV, COMBO."""
    vals = dict(combo, **{col_key: cv})
    if row_key:
        vals[row_key] = rv
    return {k: vals[k] for k, _ in grid}


def kernel_paths(state):
    return list(dict.fromkeys(p for c in state["cells"] for p in c.get("kernel") or {}))


def pct(v, digits=0):
    return "–" if v is None else f"{100 * v:.{digits}f}%"


def share_cell(c):
    """A cost's extra share of latency as the tables show it."""
    if not c:
        return "–"
    if c["functional_only"]:
        return "functional only"
    s = c.get("latency_share")
    if not s:
        return "–"
    return f"{pct(s[0])} ({pct(s[1])}–{pct(s[2])})" + (f" {FLAG}" if c["flagged"] else "")


def ratio_cell(c, key):
    if not c:
        return "–"
    if c["functional_only"]:
        return "functional only"
    v = c.get(key)
    if not v:
        return "–"
    return cell(v[0], v[1:], True, digits=2, unit="x") + (f" {FLAG}" if c["flagged"] else "")


def matrix_lines(state, title, render):
    """One table per kernel path (and combo of further keys): rows the first
    key's values, columns the second's; each entry RENDER(cost)."""
    grid = grid_of(state)
    row_key, rows, col_key, cols, combos = layout(grid)
    costs = {c["id"]: c.get("kernel") or {} for c in state["cells"]}
    out = []
    for path in kernel_paths(state):
        for combo in combos:
            base = next((c[path]["baseline"] for c in costs.values() if path in c), "?")
            extra = " ".join(f"{k}={v}" for k, v in combo.items())
            out += [f"**{path}** against {base}{', ' + extra if extra else ''}: {title}", "",
                    f"| {row_key or ''} \\ {col_key} | " + " | ".join(cols) + " |",
                    "|---|" + "---|" * len(cols)]
            for rv in rows:
                ents = [render(costs.get(compare_sweep.cell_id(
                    cell_at(grid, row_key, rv, col_key, cv, combo)), {}).get(path))
                    for cv in cols]
                out.append(f"| {rv if rv is not None else ''} | " + " | ".join(ents) + " |")
            out.append("")
    return out


def figure_rows(state):
    """The figures of every cell and path: median (min–max) over the rounds."""
    out = ["| cell | path | where | IOPS | MiB/s | clat mean µs | p99 µs | fio CPU µs/IO "
           "| machine CPU µs/IO |", "|" + "---|" * 9]
    other = []
    for c in state["cells"]:
        label = compare_sweep.cell_label(c["params"])
        for r in c["paths"]:
            if r["status"] != "ok":
                other.append(f"| {label} | {r['path']} | {r['status']} | {r['reason']} |")
                continue
            f, rng = r["figures"], r.get("range") or {}
            show = len(r.get("rounds") or [1]) > 1

            def v(key, digits=1):
                return cell(f.get(key), rng.get(key), show, digits=digits) + \
                    (f" {FLAG}" if key in (r.get("flagged") or []) else "")
            where = r["where"] + (" **functional only**" if r["functional_only"] else "")
            out.append(f"| {label} | {r['path']} | {where} | {v('iops', 0)} | {v('bw_mib')} | "
                       f"{v('clat_mean_us')} | {v('clat_p99_us')} | "
                       f"{v('fio_cpu_us_per_io', 2)} | {v('machine_cpu_us_per_io', 2)} |")
    if other:
        out += ["", "| cell | path | status | why |", "|---|---|---|---|"] + other
    return out


def cost_rows(state):
    out = ["| cell | path | against | clat extra µs | clat ratio | extra share | CPU extra "
           "µs/IO | CPU ratio |", "|" + "---|" * 8]
    for c in state["cells"]:
        label = compare_sweep.cell_label(c["params"])
        for path, k in (c.get("kernel") or {}).items():
            if "none_because" in k:
                out.append(f"| {label} | {path} | {k['baseline']} | not comparable: "
                           f"{k['none_because']} | – | – | – | – |")
                continue

            def ex(key):
                v = k.get(key)
                return cell(v[0], v[1:], True, form=fmt_extra) if v else "–"
            out.append(f"| {label} | {path} | {k['baseline']} | {ex('latency_extra_us')} | "
                       f"{ratio_cell(k, 'latency_ratio')} | {share_cell(k)} | "
                       f"{ex('cpu_extra_us')} | {ratio_cell(k, 'cpu_ratio')} |")
    return out


def timeline_rows(state):
    """Each path's phases per cell (--timeline): one line each, µs per I/O."""
    out = []
    for c in state["cells"]:
        for r in c["paths"]:
            t = r.get("timeline") or {}
            if r["status"] != "ok" or not t.get("phases"):
                continue
            parts = [f"{p['name']} {timeline_runs.fmt(p['mean_us'])}" for p in t["phases"]
                     if p["where"] != "total"]
            total = next((p["mean_us"] for p in t["phases"] if p["where"] == "total"), None)
            out.append(f"- {compare_sweep.cell_label(c['params'])}, {r['path']}: "
                       + ", ".join(parts) + f" (total {timeline_runs.fmt(total)} µs)")
    return (["## Where the time goes, per cell", "",
             "Each path's phases (docs/timeline.md), µs per I/O, the median round; "
             "cells/<cell>/report.md has their tables and checks.", ""] + out + [""]) \
        if out else []


def crossover_lines(state):
    grid = grid_of(state)
    costs = {c["id"]: c.get("kernel") or {} for c in state["cells"]}
    xs = compare_sweep.crossovers(grid, costs)
    if not xs:
        return ["No kernel path with an engine baseline ran: no crossover."]
    return [f"- {compare_sweep.crossover_text(x)}" for x in xs]


def write(folder, state):
    """report.md and report.png (timeline.png) in FOLDER from STATE; returns
    the report's text."""
    s = state["sweep"]
    st = s["settings"]
    n, total = len(state["cells"]), s["cells_total"]
    pictures = write_pictures(folder, state)
    lines = [f"# scripts/compare --sweep: {os.path.basename(st['job'])}", "",
             "## Crossover", "",
             "Where each kernel path's extra share of latency ((kernel − engine) / kernel, "
             "mean completion latency, the median of the rounds' own) falls below 10% and "
             "25% and stays below for the rest of the line, along each key of the grid "
             "(values in ascending order); \"not in the grid\" when it never does:", ""]
    lines += crossover_lines(state) + [""]
    lines += [f"Grid {s['grid']}: {n} of {total} cells"
              + (" (interrupted: carry on with scripts/compare --resume "
                 f"{folder})" if n < total else "")
              + f"; paths {', '.join(st['paths'])}, {st['rounds']} round(s) of "
              f"{st['seconds']} s each per cell, in alternation; target: {s['target']}; "
              f"started {s['started']}, commit {s.get('commit') or '?'}"
              + "".join(f", resumed {r['date']} at {r['commit'] or '?'}"
                        for r in s.get("resumed") or [])
              + f", kernel {s['kernel']}"
              + (f", {state['elapsed_s'] / 60:.1f} min of running" if "elapsed_s" in state
                 else "") + ".", "",
             "Each figure is the median of the rounds with its min–max; each ratio the median "
             "of the rounds' own (round N of the kernel path against round N of its engine). "
             f"{FLAG}: the kernel path or its engine moved more than {s['spread_limit']}x "
             "(max/min) between rounds in that cell (hatched in the picture). Cells marked "
             "functional only ran under software emulation (or are not comparable): no "
             "figure, grey in the picture.", ""]
    if pictures.get("report"):
        lines += ["![extra share of latency and CPU ratio per kernel path, latency per path]"
                  "(report.png)", ""]
    lines += ["## Extra share of latency", ""]
    lines += matrix_lines(state, "(kernel − engine) / kernel, mean completion latency",
                          share_cell)
    lines += ["## Machine CPU per I/O, kernel path / engine", ""]
    lines += matrix_lines(state, "ratio of the machine's CPU per I/O",
                          lambda c: ratio_cell(c, "cpu_ratio"))
    lines += ["## Against the engine, per cell", ""] + cost_rows(state) + [""]
    lines += ["## Figures per cell and path", ""] + figure_rows(state) + [""]
    lines += timeline_rows(state)
    if pictures.get("timeline"):
        lines += ["![phases per path, one panel per cell](timeline.png)", ""]
    lines += ["Every cell's own compare report, fio JSON per path and round and job: "
              "cells/<cell>/.", ""]
    text = "\n".join(lines)
    with open(os.path.join(folder, "report.md"), "w") as f:
        f.write(text)
    return text


# --------------------------------------------------------- pictures

def heatmap(ax, state, path, combo, key, title, norm, cmap):
    """One kernel path's KEY (its median) over the grid: cells coloured by
    it, each with its median and min–max written in; hatched when flagged,
    grey and "functional only" when emulated, blank when it did not run."""
    import numpy
    from matplotlib.patches import Rectangle
    grid = grid_of(state)
    row_key, rows, col_key, cols, _ = layout(grid)
    costs = {c["id"]: c.get("kernel") or {} for c in state["cells"]}
    data = numpy.full((len(rows), len(cols)), numpy.nan)
    found = {}
    for i, rv in enumerate(rows):
        for j, cv in enumerate(cols):
            c = costs.get(compare_sweep.cell_id(cell_at(grid, row_key, rv, col_key, cv,
                                                        combo)), {}).get(path)
            found[i, j] = c
            if c and not c["functional_only"] and c.get(key):
                data[i, j] = c[key][0]
    im = ax.imshow(data, cmap=cmap, norm=norm, aspect="auto")
    share = key == "latency_share"
    for (i, j), c in found.items():
        if not c:
            ax.text(j, i, "did not run", ha="center", va="center", fontsize=6, color="#666")
        elif c["functional_only"]:
            ax.add_patch(Rectangle((j - .5, i - .5), 1, 1, color="#cccccc"))
            ax.text(j, i, "functional\nonly", ha="center", va="center", fontsize=6)
        elif c.get(key):
            m, lo, hi = c[key]
            text = (f"{pct(m)}\n{pct(lo)}–{pct(hi)}" if share
                    else f"{m:.2f}x\n{lo:.2f}–{hi:.2f}")
            ax.text(j, i, text, ha="center", va="center", fontsize=6.5)
        if c and c["flagged"]:
            ax.add_patch(Rectangle((j - .5, i - .5), 1, 1, fill=False, hatch="///",
                                   edgecolor="#555555", linewidth=0))
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(cols, fontsize=7)
    ax.set_xlabel(col_key, fontsize=8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r if r is not None else "" for r in rows], fontsize=7)
    if row_key:
        ax.set_ylabel(row_key, fontsize=8)
    extra = " ".join(f"{k}={v}" for k, v in combo.items())
    ax.set_title(f"{path}: {title}" + (f" ({extra})" if extra else ""), fontsize=8)
    cb = ax.figure.colorbar(im, ax=ax, fraction=0.05, pad=0.02)
    cb.ax.tick_params(labelsize=6)
    if share:
        from matplotlib.ticker import PercentFormatter
        cb.ax.yaxis.set_major_formatter(PercentFormatter(1.0))


def latency_lines(ax, state, rv, combo, row_key, col_key, cols):
    """Mean completion latency of each path against the column key at the
    row value RV: medians joined, min–max as error bars; functional-only
    runs are not drawn (the panel says which were left out)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    grid = grid_of(state)
    by = {c["id"]: {r["path"]: r for r in c["paths"]} for c in state["cells"]}
    left_out = []
    for path in state["sweep"]["settings"]["paths"]:
        xs, ys, lo, hi = [], [], [], []
        for j, cv in enumerate(cols):
            r = by.get(compare_sweep.cell_id(cell_at(grid, row_key, rv, col_key, cv, combo)),
                       {}).get(path)
            if not r or r["status"] != "ok" or not r["figures"].get("clat_mean_us"):
                continue
            if r["functional_only"]:
                left_out.append(f"{path} at {col_key}={cv}")
                continue
            m = r["figures"]["clat_mean_us"]
            a, b = (r.get("range") or {}).get("clat_mean_us") or [m, m]
            xs.append(j)
            ys.append(m)
            lo.append(m - a)
            hi.append(b - m)
        if xs:
            ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", markersize=3, capsize=3,
                        linewidth=1, label=path)
    if left_out:
        ax.text(0.01, 0.01, "functional only, not drawn: " + ", ".join(left_out),
                transform=ax.transAxes, fontsize=6, color="#666666", wrap=True)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(axis="y", which="both", labelsize=6)
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(cols, fontsize=7)
    ax.set_xlabel(col_key, fontsize=8)
    ax.set_ylabel("mean clat µs (log)", fontsize=7)
    ax.grid(alpha=0.3, which="both")
    where = " ".join(([f"{row_key}={rv}"] if row_key else []) +
                     [f"{k}={v}" for k, v in combo.items()])
    ax.set_title(f"latency against {col_key}" + (f", {where}" if where else ""), fontsize=8)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6)


def write_pictures(folder, state):
    """report.png (and timeline.png when a cell has phases); {name: True}
    for each written."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import TwoSlopeNorm
    except ImportError:
        log("matplotlib is missing (Debian package python3-matplotlib): no report.png")
        return {}
    if not state["cells"]:
        return {}
    grid = grid_of(state)
    row_key, rows, col_key, cols, combos = layout(grid)
    kpaths = kernel_paths(state)
    heat_rows = len(kpaths) * len(combos)
    line_panels = [(rv, combo) for combo in combos for rv in rows]
    line_rows = (len(line_panels) + 1) // 2
    h_heat = 0.9 + 0.55 * len(rows)
    fig = plt.figure(figsize=(13, h_heat * heat_rows + 3.0 * line_rows + 0.6))
    gs = fig.add_gridspec(heat_rows + line_rows, 2,
                          height_ratios=[h_heat] * heat_rows + [3.0] * line_rows)
    costs = [c for cell_costs in (x.get("kernel") or {} for x in state["cells"])
             for c in cell_costs.values() if not c["functional_only"]]
    cpus = [c["cpu_ratio"][0] for c in costs if c.get("cpu_ratio")]
    # green below the crossover's first threshold, red above; a share is
    # at most 100%, and far below 0 (the kernel faster) is all one green
    share_norm = TwoSlopeNorm(vmin=-0.5, vcenter=compare_sweep.THRESHOLDS[0], vmax=1.0)
    cpu_norm = TwoSlopeNorm(vmin=min([0.5] + cpus), vcenter=1.0, vmax=max([2.0] + cpus))
    row = 0
    for path in kpaths:
        for combo in combos:
            heatmap(fig.add_subplot(gs[row, 0]), state, path, combo, "latency_share",
                    "extra share of latency (kernel − engine) / kernel", share_norm,
                    "RdYlGn_r")
            heatmap(fig.add_subplot(gs[row, 1]), state, path, combo, "cpu_ratio",
                    "machine CPU per I/O, kernel / engine", cpu_norm, "RdYlGn_r")
            row += 1
    for i, (rv, combo) in enumerate(line_panels):
        latency_lines(fig.add_subplot(gs[row + i // 2, i % 2]), state, rv, combo, row_key,
                      col_key, cols)
    s = state["sweep"]
    fig.suptitle(f"{os.path.basename(s['settings']['job'])}: compare --sweep {s['grid']}, "
                 f"{s['settings']['rounds']} rounds of {s['settings']['seconds']} s per cell "
                 f"(numbers: median, min–max; hatched: rounds moved more than "
                 f"{s['spread_limit']}x; grey: functional only)", fontsize=9, x=0.01,
                 ha="left")
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "report.png"), dpi=90)
    plt.close(fig)
    out = {"report": True}
    timed = [c for c in state["cells"] if any((r.get("timeline") or {}).get("phases")
                                              for r in c["paths"])]
    if timed:
        out["timeline"] = timeline_picture(folder, state, plt)
    return out


def timeline_picture(folder, state, plt):
    """timeline.png: a small panel per cell (rows: the first key, columns:
    the second), a stacked bar of phases per path in each."""
    grid = grid_of(state)
    row_key, rows, col_key, cols, combos = layout(grid)
    by = {c["id"]: c for c in state["cells"]}
    nrows = len(rows) * len(combos)
    npaths = len(state["sweep"]["settings"]["paths"])
    fig, axes = plt.subplots(nrows, len(cols), squeeze=False,
                             figsize=(max(7.0, 4.2 * len(cols)),
                                      0.6 + (0.8 + 0.35 * npaths) * nrows))
    for k, combo in enumerate(combos):
        for i, rv in enumerate(rows):
            for j, cv in enumerate(cols):
                ax = axes[k * len(rows) + i][j]
                c = by.get(compare_sweep.cell_id(cell_at(grid, row_key, rv, col_key, cv,
                                                         combo)))
                if not c or not timeline_runs.draw(ax, c["paths"]):
                    ax.axis("off")
                    continue
                ax.set_xlabel("")
                ax.tick_params(labelsize=6)
                ax.set_title(compare_sweep.cell_label(c["params"]), fontsize=7)
    fig.suptitle("where the time goes, µs per I/O per phase, the median round\n(orange client, "
                 "blue wire, green server, grey server and wire, purple kernel)", fontsize=8,
                 x=0.01, ha="left")
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "timeline.png"), dpi=80)
    plt.close(fig)
    return True
