# SPDX-License-Identifier: MIT
"""Two N-body programs at once ([SA Table 5]): space sharing by ito's
processor allocator against the kernel's time sharing."""
from harness.experiment import Experiment, run_notes
from harness.fmt import Table, cpu_label, fmt_ns
from harness.runner import Config
from harness.targets import Target, target_cell, target_note

# The spinning barrier: how long a waiter spins before it blocks (Intel's
# OpenMP spins 200 ms by default, KMP_BLOCKTIME; GNU's a few milliseconds).
SPIN_US = 20000
# The two problem sizes, bodies and steps (doubled by --full): a step of the
# fine one takes about 4 ms on one CPU, of the coarse one about 50 ms.
GRAINS = {"fine": (2000, 100), "coarse": (20000, 10)}


def speedups(by_key, key):
    """The two programs' speedups over the sequential run of their grain (medians), or None."""
    seq, c = by_key.get("table5/seq/" + key.rsplit("/", 1)[1]), by_key.get(key)
    if not seq or not c or seq.median() is None:
        return None
    t0, t1 = c.field_stats("seconds_0")[0], c.field_stats("seconds_1")[0]
    if not t0 or not t1:
        return None
    s = seq.median() / 1e9
    return s / t0, s / t1


def sum_over_cpus(sync, grain):
    def value(by_key):
        key = "table5/ito/%s/%s" % (sync, grain)
        sp = speedups(by_key, key)
        cpus = by_key[key].cpus if key in by_key else 1
        return {"value": sum(sp) / cpus if sp else None, "keys": ["table5/seq/" + grain, key],
                "note": "%d CPUs" % cpus}
    return value


def vs_noalloc(grain):
    def value(by_key):
        ka, kb = "table5/ito/spin/" + grain, "table5/ito-noalloc/spin/" + grain
        a, b = speedups(by_key, ka), speedups(by_key, kb)
        return {"value": sum(a) / sum(b) if a and b else None, "keys": ["table5/seq/" + grain, ka, kb],
                "note": "%s bodies" % format(GRAINS[grain][0], ",")}
    return value


def grain_targets(grain):
    what = "Table 5, %s grain, %s barriers: sum of the two programs' speedups >= 0.9 x CPUs (sum / CPUs)"
    return (Target("table5_spin_" + grain, what % (grain, "spinning"), ">=", 0.9, "x",
                   value=sum_over_cpus("spin", grain)),
            Target("table5_block_" + grain, what % (grain, "blocking"), ">=", 0.9, "x",
                   value=sum_over_cpus("block", grain)),
            Target("table5_vs_noalloc_" + grain, "Table 5, %s grain, spinning barriers: ito's sum of speedups >= 1.5x "
                   "ITO_ALLOCATOR=0's" % grain, ">=", 1.5, "x", value=vs_noalloc(grain)))


class Table5(Experiment):
    name = "table5"
    order = 100
    title = "Two N-body programs at once: space sharing vs time sharing"
    source = "[SA Table 5] (two parallel programs on one machine)"
    summary = ("two N-body programs", "[SA Table 5]", "two copies of the N-body worker version started together, "
               "each asking for every CPU, at a fine and a coarse grain; each one's speedup over a sequential run "
               "timed alone; POSIX threads, ito, ito with ITO_ALLOCATOR=0")
    programs = ("nbody", "together")
    targets = grain_targets("fine") + grain_targets("coarse")
    notes = ("bench/together starts two copies of bench/nbody at once, in an allocation domain of their own "
             "(ITO_ALLOC_DOMAIN), so that other ito processes do not count. Each copy runs the worker version: one "
             "worker per CPU (POSIX threads pinned, as in the nbody experiment; ito threads on a vproc per CPU), "
             "barriers between phases. With ito's allocator the two processes divide the CPUs (half each on 2 "
             "CPUs); with ITO_ALLOCATOR=0 and with POSIX threads both run a worker per CPU and the kernel "
             "time-slices them. Spinning barriers: a waiter spins for the time given (an ito thread by yielding "
             "its vproc) before it blocks; blocking ones block at once. Time-slicing costs a program whose "
             "workers spin at a barrier the time its other worker is off the CPU, up to a kernel slice (a few ms) "
             "per barrier: little when a phase lasts tens of ms (coarse grain), much when it lasts about 1 ms "
             "(fine grain, three barriers in a 4 ms step). The sequential run is timed separately, alone on the "
             "machine, so the two speedups are not shares of one measured run: taken under different conditions "
             "(what the caches hold, the clock speed, other load), their sum can exceed the number of CPUs, as "
             "the coarse grain's may.")

    def configs(self, ctx):
        # two copies of the worker N-body started together (bench/together),
        # each asking for every CPU; their speedups over one sequential run.
        # Two grains: how much time-slicing costs depends on how long a phase
        # between barriers is against the kernel's slice (a few ms).
        cs, R, ncpu = [], ctx.R, ctx.ncpu
        for grain, (n, steps) in GRAINS.items():
            common = ["--n", n, "--steps", steps * (2 if ctx.full else 1)]
            cs.append(Config(self.name, "table5/seq/%s" % grain, "seq", "sequential, alone", "nbody",
                             ["--impl", "seq"] + common, 1, "seconds", "ns", R(3, 5), scale=1e9, x=n, group=grain,
                             timeout=300))
            for sync in ("spin", "block"):
                extra = ["--sync", sync] + (["--spin-us", SPIN_US] if sync == "spin" else [])
                cs.append(Config(self.name, "table5/pthread/%s/%s" % (sync, grain), "pthread", "POSIX threads",
                                 "together", ["nbody", "--impl", "pthread"] + extra + common, ncpu, "seconds", "ns",
                                 R(3, 5), scale=1e9, x=n, group=sync, timeout=300))
                for alloc in ("1", "0"):
                    cs.append(Config(self.name, "table5/ito%s/%s/%s" % ("" if alloc == "1" else "-noalloc", sync,
                                                                        grain),
                                     "ito", "ito" if alloc == "1" else "ito, ITO_ALLOCATOR=0", "together",
                                     ["nbody", "--impl", "ito"] + extra + common, ncpu, "seconds", "ns", R(3, 5),
                                     scale=1e9, x=n, group=sync, timeout=300, env={"ITO_ALLOCATOR": alloc}))
        return cs

    def table(self, ctx, grain):
        """A row per program: each configuration ran two at once."""
        by_key = ctx.by_key
        headers = ["barriers", "implementation", "prog.", "time (min-max)", "speedup", "sum", "sum/CPUs", "target"]
        rows, notes = [], []
        for c in self.cfgs:
            if c.impl == "seq" or not c.key.endswith("/" + grain):
                continue
            sp = speedups(by_key, c.key)
            tid = "table5_%s_%s" % (c.group, grain) if c.key.startswith("table5/ito/") else None
            notes += run_notes(c, "%s barriers, %s" % (c.group, c.label))
            for k, f in enumerate(("seconds_0", "seconds_1")):
                m, lo, hi = c.field_stats(f)
                rows.append([c.group if k == 0 else "", c.label if k == 0 else "", k + 1,
                             "%.2f s (%.2f-%.2f)" % (m, lo, hi) if m else "-", "%.2f" % sp[k] if sp else "-"] +
                            (["%.2f" % sum(sp) if sp else "-", "%.2f" % (sum(sp) / c.cpus) if sp else "-",
                              target_cell(ctx.target(tid)) if tid else ""] if k == 0 else ["", "", ""]))
        seq = by_key.get("table5/seq/" + grain)
        if seq:
            notes = run_notes(seq, "sequential") + notes
        notes.append(target_note(ctx.target("table5_vs_noalloc_" + grain),
                                 "spinning barriers, ito's sum >= 1.5x ITO_ALLOCATOR=0's"))
        if not rows:
            return None
        c = next(x for x in self.cfgs if x.impl != "seq" and x.key.endswith("/" + grain))
        d = seq.ok_runs()[0]["data"] if seq and seq.ok_runs() else {}
        cap = ("%s grain: %s bodies, %s steps of about %s each on one CPU. Two copies of bench/nbody's worker "
               "version started together on %s, each with a worker per CPU; spinning barriers spin %d ms "
               "before blocking; program times: median (min-max); speedup = the sequential run alone (%s, timed "
               "separately) / the program's time" % (
                   grain, format(GRAINS[grain][0], ","), d.get("steps", "?"),
                   fmt_ns(seq.median() / d["steps"]) if seq and seq.median() and d.get("steps") else "?",
                   cpu_label(c.cpus), SPIN_US // 1000, fmt_ns(seq.median()) if seq and seq.median() else "?"))
        return Table(headers, rows, cap, notes)

    def tables(self, ctx):
        return [t for t in (self.table(ctx, g) for g in GRAINS) if t]

    def plots(self, pl, ctx):
        t5 = self.cfgs
        if not any(c.ok_runs() for c in t5 if c.impl != "seq"):
            return
        grains = [g for g in GRAINS if any(c.ok_runs() for c in t5 if c.key.endswith("/" + g))]
        fig, axs = pl.plt.subplots(1, len(grains), figsize=(5.6 * len(grains), 4.4), sharey=True, squeeze=False)
        kinds = (("ito", "ito (allocator)", "tab:blue"), ("ito-noalloc", "ito, ITO_ALLOCATOR=0", "tab:red"),
                 ("pthread", "POSIX threads", "tab:orange"))
        cpus = next(c.cpus for c in t5 if c.impl != "seq")
        for ax, grain in zip(axs[0], grains):
            w = 0.26
            for i, (kind, label, color) in enumerate(kinds):
                for j, sync in enumerate(("spin", "block")):
                    sp = speedups(ctx.by_key, "table5/%s/%s/%s" % (kind, sync, grain))
                    if sp:
                        ax.bar(j + (i - 1) * w, sp[0], w, color=color, label=label if j == 0 else None)
                        ax.bar(j + (i - 1) * w, sp[1], w, bottom=sp[0], color=color, alpha=0.6)
                        ax.text(j + (i - 1) * w, sum(sp) + 0.03, "%.2f" % sum(sp), ha="center", fontsize=8)
            ax.axhline(cpus, color="k", linestyle="--", linewidth=1, label="CPUs")
            ax.set_xticks([0, 1])
            ax.set_xticklabels(["spinning barriers", "blocking barriers"])
            ax.set_title("%s grain: %s bodies" % (grain, format(GRAINS[grain][0], ",")), fontsize=9)
            ax.grid(axis="y", alpha=0.3)
        axs[0][0].set_ylabel("sum of the two programs' speedups\n(lower bar: program 1, upper: program 2)")
        fig.legend(*axs[0][0].get_legend_handles_labels(), fontsize=8, loc="lower center", ncol=4,
                   bbox_to_anchor=(0.5, -0.06))
        fig.text(0.5, -0.13, "speedup = the sequential run's time / the program's time. The sequential run is timed "
                 "separately, alone on the machine,\nso the two speedups are not shares of one measured run: under "
                 "different conditions (caches, clock speed, other load)\ntheir sum can exceed the CPUs (dashed "
                 "line), as the coarse grain's may", ha="center", va="top", fontsize=8)
        fig.suptitle("Two N-body programs at once ([SA Table 5]), each asking for every CPU; medians\n" +
                     pl.machine, fontsize=9)
        pl.save(fig, "table5.png")


EXPERIMENT = Table5()
