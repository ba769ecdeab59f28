"""scripts/compare's report: report.md (the table of figures with their
min-max, the costs, the spread's footnotes, the notes) and report.png
(latency percentiles and bandwidth per path)."""

import datetime
import os

import issued
import timeline_runs
from compare_run import log
from kernel_shares import KEYS as SHARE_KEYS, WORDS as SHARE_WORDS
from compare_rounds import SPREAD_KEYS, SPREAD_LIMIT

FLAG = "‡"


def fmt(v, digits=1):
    if v is None:
        return "–"
    if abs(v) >= 10000:
        return f"{v / 1000:.1f}k"
    return f"{v:.{digits}f}"


def cell(value, rng, show, form=fmt, digits=1, unit=""):
    """VALUE as the table shows it (FORM, DIGITS, then UNIT), with its
    min–max when SHOW."""
    if value is None:
        return "–"
    s = form(value, digits) + unit
    if show and rng:
        s += f" ({form(rng[0], digits)}–{form(rng[1], digits)})"
    return s


def fmt_extra(v, digits=1):
    return f"{v:+.{digits}f}"


def table(results):
    """The report's tables: the figures (median and min–max over the rounds),
    the costs against the engine, the spread's footnotes, every round's
    IOPS, the paths that did not run and the notes."""
    ok = [r for r in results if r["status"] == "ok"]
    lines = ["| path | where | rounds | IOPS | MiB/s | clat mean µs | p50 | p99 | p99.9 "
             "| fio CPU µs/IO | machine CPU µs/IO | kernel's submission share µs/IO "
             "| kernel's completion share µs/IO |", "|" + "---|" * 13]
    for r in ok:
        f, rng = r["figures"], r.get("range") or {}
        n = len(r.get("rounds") or [1])
        flagged = r.get("flagged") or []

        def c(key, digits=1):
            return cell(f.get(key), rng.get(key), n > 1, digits=digits) + \
                (f" {FLAG}" if key in flagged else "")
        where = r["where"] + (" **functional only**" if r["functional_only"] else "")
        name = r["path"] + (f" {FLAG}" if flagged else "")
        lines.append(f"| {name} | {where} | {n} | {c('iops', 0)} | {c('bw_mib')} | "
                     f"{c('clat_mean_us')} | {c('clat_p50_us')} | {c('clat_p99_us')} | "
                     f"{c('clat_p99.9_us')} | {c('fio_cpu_us_per_io', 2)} | "
                     f"{c('machine_cpu_us_per_io', 2)} | {c(SHARE_KEYS['submission'], 2)} | "
                     f"{c(SHARE_KEYS['completion'], 2)} |")
    costed = [r for r in ok if r.get("vs_engine")]
    if costed:
        lines += ["", "Against the engine (each a median of the rounds' own ratios, min–max):",
                  "", "| path | against | IOPS | clat mean | clat extra µs | machine CPU/IO "
                  "| CPU extra µs/IO |", "|" + "---|" * 7]
        for r in costed:
            cst = r["vs_engine"]
            if "none_because" in cst:
                lines.append(f"| {r['path']} | {cst['baseline']} | not comparable: "
                             f"{cst['none_because']} | – | – | – | – |")
                continue
            rng = cst.get("range") or {}
            show = len(cst.get("rounds") or [1]) > 1

            def ratio(key):
                return cell(cst.get(key), rng.get(key), show, form=fmt, digits=2, unit="x")

            def extra(key):
                return cell(cst.get(key), rng.get(key), show, form=fmt_extra)
            lines.append(f"| {r['path']} | {cst['baseline']} | {ratio('iops_ratio')} | "
                         f"{ratio('latency_ratio')} | {extra('latency_extra_us')} | "
                         f"{ratio('cpu_ratio')} | {extra('cpu_extra_us')} |")
        share = share_text(ok, costed)
        if share:
            lines += ["", share]
    flagged = [r for r in ok if r.get("flagged")]
    if flagged:
        lines += ["", f"{FLAG} The rounds of these paths moved more than {SPREAD_LIMIT}x "
                  "(max/min), so their medians say less than the others': more --rounds, a "
                  "longer --seconds or a quieter machine narrow them.", ""]
        for r in flagged:
            moved = ", ".join(f"{label} {r['spread'][k]:.2f}x" for k, label in SPREAD_KEYS
                              if k in r["flagged"])
            lines.append(f"- {r['path']}: {moved}")
    counted = issued.lines(issued.of_results(results))
    if counted:
        lines += [""] + counted
    if any(len(r.get("rounds") or []) > 1 for r in ok):
        lines += ["", "IOPS of every round, in the order run:", ""]
        lines += [f"- {r['path']}: " + ", ".join(fmt(x["figures"]["iops"], 0)
                                                  for x in r["rounds"]) for r in ok]
    other = [r for r in results if r["status"] != "ok"]
    if other:
        lines += ["", "| path | status | why |", "|---|---|---|"]
        lines += [f"| {r['path']} | {r['status']} | {r['reason']} |" for r in other]
    notes = [(r["path"], n) for r in results for n in r["notes"]]
    if notes:
        lines += [""] + [f"- {p}: {n}" for p, n in notes]
    return "\n".join(lines)


def share_text(ok, costed):
    """The line under the costs when engine-tcmu's CPU is in them: its
    figure holds the kernel's shares, the work the kernel does outside the
    initiator's thread (a kworker's submission, the completion in the
    handler's notify), or None."""
    tcmu = next((r for r in ok if r["path"] == "engine-tcmu"), None)
    if not tcmu or all(tcmu["figures"].get(k) is None for k in SHARE_KEYS.values()):
        return None
    if not any(r["path"] == "engine-tcmu" or r["vs_engine"].get("baseline") == "engine-tcmu"
               for r in costed if "none_because" not in r["vs_engine"]):
        return None
    n = len(tcmu.get("rounds") or [1])
    said = []
    for side, key in SHARE_KEYS.items():
        if tcmu["figures"].get(key) is None:
            continue
        v = cell(tcmu["figures"][key], (tcmu.get("range") or {}).get(key), n > 1, digits=2)
        said.append(f"its {side} share, {v} µs/IO ({SHARE_WORDS[side]})")
    return ("engine-tcmu's CPU per I/O includes the kernel's shares, work the engine does "
            "in fio's thread that the kernel does elsewhere: " + "; and ".join(said) + ".")


def latency_text(found, on):
    """The report's line on a job that turns latency recording off, or None."""
    if not found:
        return None
    said = ", ".join(found)
    if on:
        return (f"The job turns fio's latency recording off ({said}); compare ran it with "
                f"{', '.join(f'{k}={v}' for k, v in on.items())}, so that every path's "
                "latency is measured (at the cost of reading the clock per I/O).")
    return (f"The job turns fio's latency recording off ({said}) and --as-written keeps it "
            "so: no latency figures.")


def probe_text(probes):
    """The report's line on the CPU-speed probe, PROBES: [before round 1,
    after round 1, ...] in ms (None: it did not run)."""
    if not any(p is not None for p in probes):
        return None
    when = ["before round 1"] + [f"after round {i}" for i in range(1, len(probes))]
    said = "; ".join(f"{w} {p:.0f} ms" for w, p in zip(when, probes) if p is not None)
    return ("CPU-speed probe (scripts/bench_run.py's cpu_probe: the milliseconds a fixed loop "
            f"takes, lower is faster; context for the spread, figures are not scaled by it): "
            f"{said}.")


def write_report(ctx, results, text, picture, probes):
    rounds = ctx.args.rounds
    lines = [f"# scripts/compare: {os.path.basename(ctx.args.job)}", "",
             f"Target: {ctx.target_desc}. {rounds} round{'s' if rounds != 1 else ''} of "
             f"{ctx.seconds} s per path, in alternation ({', '.join(ctx.args.paths)}, then "
             f"again) ({datetime.datetime.now().isoformat(timespec='seconds')}, "
             f"kernel {os.uname().release}).", "",
             "Each figure is the median of the rounds with its min–max in brackets. "
             "Latency is fio's completion latency (clat) over all directions ('–' where fio "
             "recorded none). fio CPU: the fio process's usr+sys per I/O; machine CPU: every "
             "CPU's busy time during the run per I/O (servers, FUSE, kernel threads "
             "included). Kernel's shares (engine-tcmu): the work the engine does in fio's thread "
             "that the kernel does elsewhere, per I/O: the submission share (the ring's entry "
             "and a write's copy, a kworker's in the kernel) and the completion share (the "
             "completions walked and reads copied out, inside the handler's notify write() in "
             "the kernel); both are inside engine-tcmu's CPU figures. 'Against the engine' "
             "compares each kernel path with the engine on "
             "the same transport, and engine-tcmu with engine-nbd: each ratio, and the extra "
             "microseconds per I/O, is the median of the rounds' own (round N against the "
             "other path's round N). A path whose IOPS or mean latency moved more than "
             f"{SPREAD_LIMIT}x (max/min) between rounds is marked {FLAG}. Rows marked "
             "functional only ran under software emulation: their timings mean nothing.", ""]
    for extra in (latency_text(ctx.latency_found, ctx.latency_on), probe_text(probes)):
        if extra:
            lines += [extra, ""]
    if ctx.fs != "none":
        lines += [f"Kernel paths ran the job in a directory of a filesystem ({ctx.fs}) made on "
                  f"the device and mounted with -o {ctx.args.mount_options}"
                  + (f" ({ctx.args.fs_why})" if ctx.args.fs_why else "")
                  + ", with the job's own direct= setting: the page cache is part of "
                  "their figures. The engine paths have no filesystem: fio's requests go "
                  "to the export as they are.", ""]
    lines += [text, ""]
    lines += timeline_runs.report_lines(results)
    if picture:
        lines += ["![latency percentiles and bandwidth per path](report.png)", ""]
    with open(ctx.out("report.md"), "w") as f:
        f.write("\n".join(lines))


def write_picture(ctx, results):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is missing (Debian package python3-matplotlib): no report.png")
        return False
    ok = [r for r in results if r["status"] == "ok"]
    if not ok:
        return False
    timed = [r for r in ok if (r.get("timeline") or {}).get("phases")]
    if timed:                                   # --timeline: a row of stacked bars below
        fig, axes = plt.subplots(2, 2, figsize=(12, 4.4 + 0.6 * (len(ok) + len(timed))),
                                 gridspec_kw={"width_ratios": [3, 2],
                                              "height_ratios": [len(ok), len(timed)]})
        (ax1, ax2), (ax3, ax4) = axes
        ax3.remove()
        ax4.remove()
        timeline_runs.draw(fig.add_subplot(2, 1, 2), results)
    else:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 2.2 + 0.6 * len(ok)),
                                       gridspec_kw={"width_ratios": [3, 2]})
    names = [r["path"] + (f" {FLAG}" if r.get("flagged") else "")
             + (" (functional only)" if r["functional_only"] else "") for r in ok]
    ys = list(range(len(ok)))
    keys = [("clat_mean_us", "mean", "o"), ("clat_p50_us", "p50", "s"),
            ("clat_p99_us", "p99", "^"), ("clat_p99.9_us", "p99.9", "v")]
    for key, label, marker in keys:
        xs = [r["figures"].get(key) for r in ok]
        pts = [(x, y) for x, y in zip(xs, ys) if x]
        if pts:
            ax1.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, label=label,
                        zorder=3)
    for y, r in zip(ys, ok):
        vals = [r["figures"].get(k) for k, _, _ in keys if r["figures"].get(k)]
        if vals:
            ax1.plot([min(vals), max(vals)], [y, y], color="#bbbbbb", zorder=1)
    ax1.set_xscale("log")
    ax1.set_xlabel("completion latency, µs (log; medians of the rounds)")
    ax1.set_yticks(ys)
    ax1.set_yticklabels(names, fontsize=8)
    ax1.set_ylim(len(ok) - 0.5, -0.5)
    ax1.grid(axis="x", which="both", alpha=0.3)
    if ax1.get_legend_handles_labels()[0]:      # none when the job keeps no latencies
        ax1.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=4,
                   frameon=False)
    colors = ["#cccccc" if r["functional_only"] else
              ("#2a9d8f" if r["transport"] == "tcmu" else "#d9822b") for r in ok]
    bws = [r["figures"]["bw_mib"] for r in ok]
    # error bars: each bar's min–max over the rounds
    lows = [bw - (r.get("range") or {}).get("bw_mib", [bw, bw])[0] for bw, r in zip(bws, ok)]
    highs = [(r.get("range") or {}).get("bw_mib", [bw, bw])[1] - bw for bw, r in zip(bws, ok)]
    ax2.barh(ys, bws, color=colors, xerr=[lows, highs], capsize=4,
             hatch=None, error_kw={"elinewidth": 1, "ecolor": "#333333"})
    for y, r, bw, hi in zip(ys, ok, bws, highs):
        moved = max((r["spread"][k] for k in r.get("flagged") or []), default=None)
        ax2.annotate(f"{bw:.0f}" + (f" {FLAG} {moved:.2f}x" if moved else "")
                     + (" (functional only)" if r["functional_only"] else ""),
                     (bw + hi, y), xytext=(5, 0), textcoords="offset points", va="center",
                     fontsize=7)
    # room for the labels right of the longest error bar
    ax2.set_xlim(0, max(bw + hi for bw, hi in zip(bws, highs)) * 1.35 or 1)
    ax2.set_yticks(ys)
    ax2.set_yticklabels([])
    ax2.set_ylim(len(ok) - 0.5, -0.5)
    ax2.set_xlabel(f"bandwidth, MiB/s: median, error bars min–max of {ctx.args.rounds} "
                   "round(s)\n(orange: NBD, green: TCMU, grey: emulated)")
    ax2.grid(axis="x", alpha=0.3)
    fig.suptitle(f"{os.path.basename(ctx.args.job)}: each path to the same storage"
                 + (f" ({FLAG}: rounds moved more than {SPREAD_LIMIT}x)"
                    if any(r.get("flagged") for r in ok) else ""),
                 fontsize=10, x=0.02, ha="left")
    fig.tight_layout()
    fig.savefig(ctx.out("report.png"), dpi=100)
    plt.close(fig)
    return True
