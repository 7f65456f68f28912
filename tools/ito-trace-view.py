#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Draw an ito execution timeline (ITO_TRACE=file, docs/diagnostics.md) as a PNG.

A row per vproc (and one for foreign kernel threads if they did anything in
the window), a bar per run of a thread coloured per thread, the scheduler
context in light grey, a wake as an arrow from the waker's row to the woken
thread's next run, a park as a small triangle above the bar it ends.

  tools/ito-trace-view.py trace.json -o timeline.png [--from US] [--to US]

--from/--to: the window, in microseconds from the first event drawn (default:
the whole trace). Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import json
import sys


def load(path):
    with open(path) as f:
        d = json.load(f)
    return d["traceEvents"], d.get("otherData", {})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("-o", "--out", default="timeline.png")
    ap.add_argument("--from", dest="t0", type=float, default=None, help="window start, us from the first event")
    ap.add_argument("--to", dest="t1", type=float, default=None, help="window end, us from the first event")
    ap.add_argument("--width", type=float, default=10.0, help="inches")
    ap.add_argument("--dpi", type=int, default=100)
    ap.add_argument("--title", default=None)
    a = ap.parse_args()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    ev, other = load(a.trace)
    names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
    timed = [e for e in ev if e.get("ph") != "M"]
    if not timed:
        sys.exit("no events in " + a.trace)
    base = min(e["ts"] for e in timed)
    lo = base + (a.t0 or 0.0)
    hi = base + a.t1 if a.t1 is not None else max(e["ts"] + e.get("dur", 0) for e in timed)

    def visible(e):
        return e["ts"] <= hi and e["ts"] + e.get("dur", 0) >= lo

    slices = [e for e in timed if e["ph"] == "X" and e.get("cat") in ("run", "scheduler") and visible(e)]
    # Rows: the vprocs, then the foreign track if anything of it is in the window.
    vtids = sorted((t for t, n in names.items() if n.startswith("vproc ")), key=lambda t: int(names[t].split()[1]))
    ftids = [t for t, n in names.items() if not n.startswith("vproc ")]
    rows = list(vtids)
    if any(e["tid"] in ftids and lo <= e["ts"] <= hi for e in timed):
        rows += ftids
    row_of = {t: i for i, t in enumerate(rows)}

    # A colour per thread (by name when it has one, else by number).
    def key(e):
        n = e["args"].get("name") or ""
        return n if n else "thread %d" % e["args"]["thread"]

    order = []
    for e in sorted(slices, key=lambda e: e["ts"]):
        if e["cat"] == "run" and key(e) not in order:
            order.append(key(e))
    cmap = plt.get_cmap("tab20" if len(order) > 10 else "tab10")
    colour = {k: cmap(i % cmap.N) for i, k in enumerate(order)}

    height = 0.6 + 0.9 * len(rows)
    fig, ax = plt.subplots(figsize=(a.width, height + 0.9), dpi=a.dpi)
    us = lambda t: t - lo
    for e in slices:
        r = row_of.get(e["tid"])
        if r is None:
            continue
        x0, x1 = max(e["ts"], lo), min(e["ts"] + e["dur"], hi)
        if e["cat"] == "scheduler":
            ax.broken_barh([(us(x0), x1 - x0)], (r - 0.12, 0.24), facecolors="#dddddd", edgecolor="none")
        else:
            ax.broken_barh([(us(x0), x1 - x0)], (r - 0.35, 0.7), facecolors=colour[key(e)],
                           edgecolor="white", linewidth=0.3)

    # Wakes: from the waker's row at the wake to the woken thread's next run.
    starts = {e["id"]: e for e in timed if e["ph"] == "s"}
    ends = {e["id"]: e for e in timed if e["ph"] == "f"}
    arrows = 0
    for i, s in starts.items():
        f = ends.get(i)
        if not f or s["tid"] not in row_of or f["tid"] not in row_of:
            continue
        if not (lo <= s["ts"] <= hi and lo <= f["ts"] <= hi):
            continue
        y0, y1 = row_of[s["tid"]], row_of[f["tid"]]
        if y0 == y1:
            y0, y1 = y0 + 0.38, y1 + 0.38   # on one row: a short hop above the bars
        ax.annotate("", xy=(us(f["ts"]), y1), xytext=(us(s["ts"]), y0),
                    arrowprops=dict(arrowstyle="-|>", mutation_scale=6, color="#222222", lw=0.6, alpha=0.75,
                                    shrinkA=0, shrinkB=0))
        arrows += 1
    parks = [e for e in timed if e.get("name") == "park" and e["tid"] in row_of and lo <= e["ts"] <= hi]
    if parks:
        ax.plot([us(e["ts"]) for e in parks], [row_of[e["tid"]] - 0.45 for e in parks], linestyle="none",
                marker="^", markersize=3, color="#444444")

    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([names[t].replace("foreign kernel threads", "foreign") for t in rows])
    ax.set_ylim(len(rows) - 0.4, -0.6)
    ax.set_xlim(0, hi - lo)
    ax.set_xlabel("microseconds (from %.3f us, CLOCK_MONOTONIC)" % lo)
    title = a.title or "ito timeline: %s" % a.trace.rsplit("/", 1)[-1]
    ax.set_title(title, fontsize=10)
    handles = [Patch(color=colour[k], label=k) for k in order[:12]]
    handles.append(Patch(color="#dddddd", label="scheduler"))
    handles.append(plt.Line2D([], [], color="#222222", lw=0.6, marker=">", markersize=3, label="wake"))
    handles.append(plt.Line2D([], [], color="#444444", linestyle="none", marker="^", markersize=3, label="park"))
    ax.legend(handles=handles, fontsize=7, ncol=min(len(handles), 8), loc="upper center",
              bbox_to_anchor=(0.5, -0.25 if len(rows) < 4 else -0.12), frameon=False)
    ax.grid(axis="x", linewidth=0.3, alpha=0.5)
    fig.tight_layout()
    fig.savefig(a.out)
    print("%s: %d rows, %d slices, %d wake arrows, %d parks" % (a.out, len(rows), len(slices), arrows, len(parks)))


if __name__ == "__main__":
    main()
