# SPDX-License-Identifier: MIT
"""REPORT.md: the machine, what was measured, the targets, every
experiment's tables, plots and notes."""
from harness.fmt import Table, md_table
from harness.load import LOADED_FRACTION, load_line
from harness.machine import compress_cpus
from harness.targets import fmt_value, met_str

HOW_TO_READ = """\
How to read the tables: each configuration ran several times, each time in a fresh process (`reps`:
runs used / runs made); the figure is the **median**, with the **min - max** beside it. **pthread/ito** is
the POSIX-threads median divided by the ito median under the same conditions (same number of CPUs):
how many times faster (or smaller) ito is. ito's vprocs are pinned one per CPU by ito; POSIX threads
are pinned where the experiment says "one CPU" / "two CPUs", otherwise the process is restricted to
the CPUs it may use. ito's targets were set for the 2-core development machine;
"MET" means the median meets the target. Notes on single configurations (failures, load, ito's
counters) are listed below each table.

The machine is shared. For every run, `run.py` measures how busy other processes kept the CPUs the run
used (from /proc/stat, minus the run's own CPU time). A run during which they kept %.0f %% or more of
its CPUs busy on average is *loaded*: it stays in results.json, another run replaces it (up to twice
the repetitions), and the figures come from the unloaded runs when there are at least half the
repetitions of them (the notes say "k loaded set aside"); otherwise from that many of the least-loaded
runs (the notes say "LOADED", and how much of their CPUs others took at worst). Runs are chosen by the
load measured beside them, never by their results. CPU accounting cannot tell whether that load
delayed a run or only used a CPU the run left idle (a run with fewer busy threads than CPUs, an ito
vproc asleep for lack of work), so a loaded run is only less trustworthy, not wrong.
""" % (100 * LOADED_FRACTION)


def write_report(path, info, full, only, exps, ctx, targets, plot_err, failures, duration):
    ncpu = ctx.ncpu
    L = ["# ito benchmark report\n"]
    L.append("Generated %s by `bench/run.py` (%s mode%s) in %s; ito commit %s.\n" % (
        info["finished"], "full" if full else "quick", ", only: " + ", ".join(e.name for e in exps) if only else "",
        "%d min %02d s" % (duration // 60, duration % 60), info.get("commit") or "unknown"))
    L.append("## Machine\n")
    L.append("- CPU: %s; %d online, **%d usable by this process** (affinity %s%s); every figure below "
             "states how many it used." % (
                 info["cpu_model"], info["cpus_online"], ncpu, compress_cpus(info["cpus_affinity"]),
                 ", cgroup limit %s" % info["cgroup_cpu_limit"] if info["cgroup_cpu_limit"] else ""))
    L.append("- Memory: %s GiB; kernel %s; pid_max %s, vm.max_map_count %s (defaults left alone)." % (
        "%.1f" % (info["mem_total_kib"] / 1048576) if info["mem_total_kib"] else "?", info["kernel"],
        info["pid_max"], info["max_map_count"]))
    L.append("- Load average at start: %s; at end: %s." % (info["loadavg_start"], info.get("loadavg_end")))
    ll = load_line([c for e in exps for c in e.cfgs], ncpu)
    if ll:
        L.append("- " + ll.replace("of these runs", "of the benchmark runs (all experiments; measured from "
                                   "/proc/stat minus the benchmark's own CPU time)"))
    L.append("- Compiler: %s (benchmarks -O2, no -march=native; ito built in Release mode, linked as a "
             "shared library)." % (info["compiler"] or "?"))
    if info["ito_env"]:
        L.append("- ITO_* environment: %s" % ", ".join("%s=%s" % kv for kv in sorted(info["ito_env"].items())))
    L.append("")
    L.append("## What is measured\n")
    L.append("Each experiment reproduces one of the measurements of the works ito is built on (docs/papers.md "
             "gives the keys: [SA], [LWP], [SSH], [STH], [SKY]) or one of ito's own, on the machine at hand, and measures ito beside POSIX "
             "threads (glibc NPTL) in the same run:\n")
    L.append(md_table(["experiment", "reproduces", "what one measurement is"],
                      [e.summary for e in exps if e.summary]))
    L.append("")
    L.append(HOW_TO_READ)
    L.append("## Targets\n")
    if targets:
        L.append(md_table(["target (ito's)", "ito measured (median)", "result", "note"],
                          [[t["text"], fmt_value(t), met_str(t), t["note"]] for t in targets]))
    else:
        L.append("The experiments run have no targets.")
    L.append("")
    if failures:
        L.append("## Failures\n")
        L.append("These runs failed (crash, time-out, wrong result); the run as a whole fails:\n")
        for f in failures:
            L.append("- `%s` rep %d: %s" % (f["argv"], f["rep"], f["error"]))
        L.append("")
    for e in exps:
        L.append("## %s\n" % e.title)
        L.append("Reproduces %s.\n" % e.source)
        for t in e.table_list:
            L.append(t.markdown())
            L.append("")
        L.append(load_line(e.cfgs, ncpu) + "\n")
        for p in e.pngs:
            L.append("![%s](%s)\n" % (p, p))
        if e.notes:
            L.append(e.notes + "\n")
    if plot_err:
        L.append("**Plots:** %s\n" % plot_err)
    L.append("## Raw data\n")
    L.append("Every run (command line, exit status, the JSON it printed, errors) is in "
             "[results.json](results.json).\n")
    with open(path, "w") as f:
        f.write("\n".join(L))


def targets_table(targets):
    return Table(["target", "ito (median)", "result", "note"],
                 [[t["text"], fmt_value(t), met_str(t), t["note"]] for t in targets], flex=(0, 3))
