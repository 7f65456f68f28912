#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ito benchmark driver: runs the programs of bench/, prints a table per
experiment, writes <report>/REPORT.md, <report>/results.json and PNG plots.

    python3 bench/run.py --build build/release --report report [--full]
                         [--only EXP[,EXP...]] [--reps N]

Each program run is one measurement of one implementation and prints one JSON
object (bench/README.md). This script repeats every configuration (rounds of
all configurations of an experiment, so that slow drifts of a shared machine
hit every configuration alike), takes the median and min-max, puts each ito
figure beside the POSIX-threads figure measured in the same run (as the ratio
pthread/ito: how many times ito is faster, or smaller), and checks the
ito's targets. A crash, a time-out, a failed verification or a
mismatch with the sequential N-body result is shown in the tables and makes
the script exit with status 1 at the end.

The experiments are the modules of bench/experiments/ (one each: its
configurations, targets, tables, plots and notes); the shared parts are in
bench/harness/. Python standard library plus matplotlib (Agg backend) for the
plots; without matplotlib the report is written without plots and the run
fails.
"""
import argparse
import datetime
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness.experiment import Context, discover          # noqa: E402
from harness.fmt import cpu_label, wrap                        # noqa: E402
from harness.load import load_line                        # noqa: E402
from harness.machine import machine_info, read_first      # noqa: E402
from harness.plot import Plotter, load_matplotlib, micro_plot   # noqa: E402
from harness.report import targets_table, write_report    # noqa: E402
from harness.runner import Progress, run_one              # noqa: E402


def run_experiment(exp, ctx, prog):
    """Rounds over all configurations (slow drifts of the machine hit them
    alike); later rounds only for the configurations that still need a run
    to replace a loaded one."""
    prog.show(exp.name, "starting", force=True)
    while True:
        todo = [c for c in exp.cfgs if c.needs_more()]
        if not todo:
            break
        for c in todo:
            extra_run = len(c.runs) >= c.reps
            if extra_run:
                prog.extra += 1
            prog.show(exp.name, "%s %s (rep %d/%d%s)" % (
                c.impl, c.label, len(c.runs) + 1, c.reps, ", replaces a loaded one" if extra_run else ""))
            rec = run_one(c, ctx.build, ctx.env, ctx.affinity)
            if rec["error"]:
                prog.note("run.py: FAILED %s rep %d: %s" % (c.cmdline(ctx.build), rec["rep"], rec["error"]))
    exp.check(ctx)
    prog.clear()


def evaluate(exps, ctx, ran):
    out = []
    for e in exps:
        for t in e.evaluate(ctx, e.name in ran):
            ctx.targets[t["id"]] = t
            out.append(t)
    return out


def print_tables(exp, ctx):
    print("== %s ==" % exp.title)
    print(wrap("Reproduces %s." % exp.source))
    for t in exp.table_list:
        print(t.text())
    print(wrap(load_line(exp.cfgs, ctx.ncpu)))
    print()
    sys.stdout.flush()


def main():
    everything = discover()
    names = [e.name for e in everything]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build directory (binaries in <build>/bench/)")
    ap.add_argument("--report", required=True, help="where to write REPORT.md, results.json and PNGs")
    ap.add_argument("--full", action="store_true", help="the long version: more repetitions, bigger sizes")
    ap.add_argument("--only", help="comma-separated experiments: " + ", ".join(names))
    ap.add_argument("--reps", type=int, help="repetitions of every configuration (overrides the defaults)")
    args = ap.parse_args()

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = os.path.abspath(args.build)
    exps = everything
    if args.only:
        want = [e.strip() for e in args.only.split(",") if e.strip()]
        bad = [e for e in want if e not in names]
        if bad:
            ap.error("unknown experiment(s) %s; choose from %s" % (", ".join(bad), ", ".join(names)))
        exps = [e for e in everything if e.name in want]
    missing = sorted({p for e in exps for p in e.programs
                      if not os.access(os.path.join(build, "bench", p), os.X_OK)})
    if missing:
        sys.exit("run.py: missing benchmark programs in %s/bench: %s (build first)" % (build, ", ".join(missing)))
    os.makedirs(args.report, exist_ok=True)

    start = time.monotonic()
    info = machine_info(root)
    ncpu = info["cpus_usable"]
    env = dict(os.environ)
    env.pop("ITO_VPROCS", None)   # every run says how many vprocs it wants
    ctx = Context(ncpu, args.full, args.reps, build, env, info["cpus_affinity"], None)
    for e in exps:
        e.cfgs = e.configs(ctx)
        for c in e.cfgs:
            ctx.by_key[c.key] = c
    prog = ctx.prog = Progress(start, [c for e in exps for c in e.cfgs])
    ran = set()

    print("ito benchmarks (%s mode) on %s: %s usable%s" % (
        "full" if args.full else "quick", info["cpu_model"], cpu_label(ncpu),
        " of %d online" % info["cpus_online"] if info["cpus_online"] != ncpu else ""))
    print("commit %s; load average %s; %d runs planned\n" % (
        info.get("commit") or "?", info["loadavg_start"], prog.counts()[1]))
    sys.stdout.flush()

    for e in exps:
        old = list(e.cfgs)
        if e.prepare(ctx):
            prog.replace(old, e.cfgs)
            for c in old:
                ctx.by_key.pop(c.key, None)
            for c in e.cfgs:
                ctx.by_key[c.key] = c
        run_experiment(e, ctx, prog)
        ran.add(e.name)
        evaluate(exps, ctx, ran)
        e.table_list = e.tables(ctx)
        print_tables(e, ctx)

    targets = evaluate(exps, ctx, ran)
    # the tables again, now that every target is known (some span experiments' configurations)
    for e in exps:
        e.table_list = e.tables(ctx)
    duration = time.monotonic() - start
    info["loadavg_end"] = read_first("/proc/loadavg")
    info["finished"] = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")

    failures = [{"key": c.key, "argv": c.cmdline(), "rep": r["rep"], "error": r["error"]}
                for e in exps for c in e.cfgs for r in c.failures()]

    plt, plot_err = load_matplotlib()
    pngs = []
    if plt:
        pl = Plotter(plt, args.report, info["cpu_model"], ncpu)
        bars = []
        for e in exps:
            before = len(pl.made)
            e.plots(pl, ctx)
            e.pngs = pl.made[before:]
            bars += [(e, b) for b in e.micro_bars(ctx)]
        name = micro_plot(pl, [b for _, b in bars])
        if name:
            bars[-1][0].pngs.append(name)   # below the last experiment it shows
        pngs = pl.made
    write_report(os.path.join(args.report, "REPORT.md"), info, args.full, args.only, exps, ctx, targets,
                 plot_err, failures, duration)
    with open(os.path.join(args.report, "results.json"), "w") as f:
        json.dump({"machine": info, "mode": "full" if args.full else "quick", "only": [e.name for e in exps],
                   "duration_s": round(duration, 1), "targets": targets, "failures": failures,
                   "configs": [c.to_json() for e in exps for c in e.cfgs]}, f, indent=1)

    if targets:
        print("== ito's targets (set for the 2-core development machine) ==")
        print(targets_table(targets).text())
        print()
    print(wrap("report: %s (%s); %d runs in %d:%02d" % (
        os.path.join(args.report, "REPORT.md"), ", ".join(pngs) if pngs else "no plots",
        sum(len(c.runs) for e in exps for c in e.cfgs), int(duration) // 60, int(duration) % 60)))
    bad = False
    if failures:
        print("run.py: %d run(s) FAILED:" % len(failures))
        for f in failures:
            print(wrap("%s (rep %d): %s" % (f["argv"], f["rep"], f["error"]), "  "))
        bad = True
    if plot_err:
        print("run.py: " + plot_err)
        bad = True
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
