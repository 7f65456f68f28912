# SPDX-License-Identifier: MIT
"""Thread groups ([SKY section 3]): threads sharing data under fifo, ws,
affinity without and with groups, and POSIX threads."""
import statistics

from harness.experiment import Experiment, first_data, reps_str, run_notes
from harness.fmt import Table, cpu_label, secs_cell
from harness.runner import Config
from harness.stats import median_ratio
from harness.targets import Target, target_note

# (name, label, ITO_POLICY, --groups); None: POSIX threads. "fifo" is the
# single-queue scheduler [SKY] compares with.
CONFIGS = [("fifo", "fifo (one shared queue)", "fifo", "off"),
           ("ws", "ws (work stealing)", "ws", "off"),
           ("affinity", "affinity, no groups", "affinity", "off"),
           ("affinity-groups", "affinity + groups", "affinity", "on"),
           ("pthread", "POSIX threads (the kernel)", None, None)]
# The share of a thread's line visits that also write the line ([SKY]'s
# "shared data": 32 %); the targets are read at WRITE_PCT.
WRITE_PCT = 30


def misses(cfg):
    """(median, min, max) of a configuration's cache misses over its runs
    used, or Nones when the counters were not available."""
    v = [r["data"]["cache_misses"] for r in cfg.used_runs() if r["data"].get("cache_misses") is not None]
    return (statistics.median(v), min(v), max(v)) if v else (None, None, None)


def counters_reason(cfgs):
    """Why the hardware counters were unavailable (the first run that said so), or None."""
    return next((r["data"].get("counters_reason", "?") for c in cfgs for r in c.ok_runs()
                 if r["data"].get("counters") is False), None)


def groups_value(tid):
    def value(by_key):
        f, a = "groups/fifo/%d" % WRITE_PCT, "groups/affinity-groups/%d" % WRITE_PCT
        cf, ca = by_key.get(f), by_key.get(a)
        out = {"value": None, "keys": [f, a], "note": "%d %% writes" % WRITE_PCT}
        if not cf or not ca:
            return out
        if tid == "groups_time":
            out["value"] = median_ratio(by_key, f, a)
            return out
        why = counters_reason([cf, ca])
        if why:
            out.update(note="not measurable: hardware counters unavailable: " + why, unmeasurable=True)
            return out
        mf, ma = misses(cf)[0], misses(ca)[0]
        out["value"] = ma / mf if ma is not None and mf else None
        return out
    return value


def millions(v):
    return "%.2fM" % (v / 1e6)


class Groups(Experiment):
    name = "groups"
    order = 190
    title = "Thread groups: threads sharing data under fifo, ws, affinity with and without groups"
    source = "[SKY section 3] (SKY-1: same-processor priority, thread grouping, load balancing)"
    summary = ("thread groups", "[SKY section 3]", "groups of threads sharing a working set each (4 groups per CPU, "
               "4 threads each), every thread sweeping its group's set and writing a share of its lines, then "
               "yielding; fifo, ws, affinity without and with groups, POSIX threads; run time and hardware cache "
               "misses")
    programs = ("groups",)
    targets = (Target("groups_time", "[SKY], threads sharing data: affinity with groups >= 10 % faster than fifo "
                      "(fifo time / its time)", ">=", 1.1, "x", value=groups_value("groups_time")),
               Target("groups_misses", "[SKY], threads sharing data: affinity with groups has fewer cache misses "
                      "than fifo (its misses / fifo's)", "<", 1.0, "x", value=groups_value("groups_misses")))
    notes = ("bench/groups: word j of a line belongs to member j, the only one that writes it; every member reads "
             "a word of the next member's, so each line is shared by the group, and the writes invalidate the copies "
             "other CPUs hold ([SKY]'s shared data). The default working set per group is L2 / (2 x groups per "
             "CPU), rounded down to a power of two: the sets of the groups one CPU holds under affinity with groups "
             "fill half its L2, while a CPU that runs every group's threads (fifo) cycles through all of them. The "
             "visits are scattered (a stride of 0.6 of the set, a page or more apart), so that no prefetcher "
             "follows them, but independent: the CPU overlaps their misses. Threads are spawned group by group; "
             "with 'affinity' and groups each group gets a home vproc round-robin and runs only there. Cache "
             "misses are PERF_COUNT_HW_CACHE_MISSES for the whole process (user space, counters inherited by every "
             "thread, ito's vprocs included), over the same span as the time; where the machine exposes no PMU (a "
             "virtual machine) the table says so and the target on misses is not measurable. Every run verifies "
             "every word of every set (each writer's additions, whatever the interleaving). How the policies place "
             "the threads (main spawns them all on vproc 0): fifo runs whichever thread is oldest on whichever vproc "
             "is free, so a group's consecutive turns land on either CPU and two members often run at once; ws "
             "leaves a thread where it is, and the idle vproc steals half of vproc 0's deque, the oldest threads, "
             "which with group-by-group spawning tends to be whole groups (with members spawned interleaved, ws "
             "splits every group); affinity without groups keeps a thread where it last ran and lets an idle "
             "vproc take only a thread that never ran or has waited ITO_AFFINITY_IDLE_US (500 us), which threads "
             "that yield every few microseconds never do: the notes say when one CPU ran most of the turns.")

    def configs(self, ctx):
        # G = 4 groups per CPU of 4 threads; each group's working set is sized
        # by the program from the L2 (bench/groups.c); fixed work: R turns per
        # thread, each a sweep of the group's set, then a yield
        rounds = 12000 if ctx.full else 6000
        cs = []
        for wp in ([0, WRITE_PCT, 60] if ctx.full else [WRITE_PCT]):
            pk = "groups/pthread/%d" % wp
            common = ["--cpus", ctx.ncpu, "--write-pct", wp, "--rounds", rounds]
            for name, label, pol, grp in CONFIGS:
                if pol is None:
                    cs.append(Config(self.name, pk, "pthread", label, "groups", ["--impl", "pthread"] + common,
                                     ctx.ncpu, "seconds", "ns", ctx.R(5, 9), scale=1e9, x=wp, group=wp, timeout=120))
                else:
                    cs.append(Config(self.name, "groups/%s/%d" % (name, wp), "ito", label, "groups",
                                     ["--impl", "ito", "--groups", grp] + common, ctx.ncpu, "seconds", "ns",
                                     ctx.R(5, 9), scale=1e9, x=wp, group=wp, timeout=120, pair=pk,
                                     env={"ITO_POLICY": pol}))
        return cs

    def tables_at(self, ctx, wp):
        """One write share: the run times, then the caches."""
        by_key = ctx.by_key
        cfgs = [c for c in self.cfgs if c.group == wp]
        fifo, pth = by_key.get("groups/fifo/%d" % wp), by_key.get("groups/pthread/%d" % wp)
        fm = misses(fifo)[0] if fifo else None
        why = counters_reason(cfgs)
        times, caches, notes = [], [], []
        for c in cfgs:
            med = c.median()
            times.append([c.label, c.cpus, secs_cell(*c.stats()) if med else "-",
                          "%.2fx" % (fifo.median() / med) if fifo and fifo.median() and med else "-",
                          "%.2fx" % (pth.median() / med) if pth and pth.median() and med else "-", reps_str(c)])
            mm, mlo, mhi = misses(c)
            l1 = [r["data"]["l1d_misses"] for r in c.used_runs() if r["data"].get("l1d_misses") is not None]
            npl, cross = c.field_stats("ns_per_line")[0], c.field_stats("cross_pct")[0]
            caches.append([c.label] + (["unavailable", "-", "unavailable"] if why else [
                "%s (%s-%s)" % (millions(mm), millions(mlo), millions(mhi)) if mm is not None else "-",
                "%.2fx" % (mm / fm) if mm is not None and fm else "-",
                millions(statistics.median(l1)) if l1 else "-"]) +
                ["%.2f" % npl if npl is not None else "-", "%.0f %%" % cross if cross is not None else "-"])
            n = []
            if c.impl == "ito" and c.used_runs():
                n.append("steals %d, idle sleeps %d, switches %s" % (
                    c.field_stats("steals")[0], c.field_stats("idle_sleeps")[0],
                    format(int(c.field_stats("switches")[0]), ",")))
            elif c.used_runs():
                n.append("kernel switches %s" % format(int(c.field_stats("kernel_switches")[0]), ","))
            busy = c.field_stats("busiest_cpu_pct")[0]
            if busy is not None and c.cpus > 1 and busy > 100.0 / c.cpus + 10:
                n.append("unbalanced: %.0f %% of the turns on one CPU" % busy)
            mig = c.field_stats("migrations_pct")[0]
            if mig is not None and mig >= 0.05:
                n.append("a thread on another CPU than its previous turn: %.1f %%" % mig)
            notes += run_notes(c, c.label) + (["%s: %s" % (c.label, "; ".join(n))] if n else [])
        d = first_data(cfgs)
        cap = ("%d %% writes. bench/groups on %s: %s groups of %s threads, each group a working set of %s KiB (%s KiB "
               "per CPU when the groups are spread evenly, %s KiB in all; L2 %s KiB per CPU%s, L3 %s KiB); each "
               "thread makes %s turns, each a sweep of its group's set in scattered order reading in every line a "
               "word another member writes and adding to its own word in %d %% of the lines, then yields. Run "
               "times: median (min-max); fifo/this and pthread/this: how many times faster than fifo and than "
               "POSIX threads" % (
                   wp, cpu_label(cfgs[0].cpus), d.get("ngroups", "?"), d.get("threads_per_group", "?"),
                   d.get("ws_kib", "?"), d.get("sets_per_cpu_kib", "?"), d.get("sets_total_kib", "?"),
                   d.get("l2_kib", "?"), ", shared" if d.get("l2_shared") else ", private", d.get("l3_kib", "?"),
                   format(d.get("rounds", 0), ","), wp))
        tnotes = []
        if wp == WRITE_PCT:
            tnotes = [target_note(ctx.target("groups_time"), "affinity + groups >= 10 % faster than fifo"),
                      target_note(ctx.target("groups_misses"), "affinity + groups: fewer cache misses than fifo")]
        cap2 = ("%d %% writes, caches: cache misses (PERF_COUNT_HW_CACHE_MISSES, user space, whole process; millions): "
                "median (min-max); L1d read misses: median; ns per line: a turn's time per line visited; other "
                "CPU: the share of turns whose group's previous turn ran on another CPU (vproc)" % wp)
        if why:
            cap2 += ". Cache misses: hardware counters unavailable: " + why
        return [Table(["configuration", "CPUs", "run time (min-max)", "fifo/this", "pthread/this", "reps"], times,
                      cap, tnotes),
                Table(["configuration", "cache misses (min-max)", "this/fifo", "L1d misses", "ns per line",
                       "other CPU"], caches, cap2, notes)]

    def tables(self, ctx):
        return [t for wp in sorted({c.group for c in self.cfgs}) for t in self.tables_at(ctx, wp)]

    def plots(self, pl, ctx):
        gr = [c for c in self.cfgs if c.median()]
        if not gr:
            return
        by_key = ctx.by_key
        wps = sorted({c.group for c in gr})
        counted = not counters_reason(gr)
        fig, axs = pl.plt.subplots(1, 2, figsize=(11, 4.4))
        colors = ["tab:red", "tab:green", "tab:purple", "tab:blue", "tab:orange"]
        w = 0.8 / len(wps)
        for k, wp in enumerate(wps):
            for i, (name, label, _, _) in enumerate(CONFIGS):
                c = by_key.get("groups/%s/%d" % (name, wp))
                if not c or not c.median():
                    continue
                x = i + (k - (len(wps) - 1) / 2) * w
                alpha = 1.0 if wp == WRITE_PCT else 0.5
                v, lo, hi = pl.err(c, 1e-9)
                axs[0].bar([x], [v], w, yerr=[[lo], [hi]], capsize=3, color=colors[i], alpha=alpha)
                f = by_key.get("groups/fifo/%d" % wp)
                tag = ("%d%%: " % wp if len(wps) > 1 else "") + (
                    "%.2fx" % (f.median() / c.median()) if f and f.median() else "")
                axs[0].text(x, v + hi + 0.01 * v, tag, ha="center", va="bottom", fontsize=7)
                if counted:
                    m, mlo, mhi = misses(c)
                    if m is not None:
                        axs[1].bar([x], [m / 1e6], w, yerr=[[(m - mlo) / 1e6], [(mhi - m) / 1e6]], capsize=3,
                                   color=colors[i], alpha=alpha)
                else:
                    npl = c.field_stats("ns_per_line")
                    axs[1].bar([x], [npl[0]], w, yerr=[[npl[0] - npl[1]], [npl[2] - npl[0]]], capsize=3,
                               color=colors[i], alpha=alpha)
        labels = ["fifo", "ws", "affinity\nno groups", "affinity\n+ groups", "POSIX\nthreads"]
        for ax in axs:
            ax.set_xticks(range(len(CONFIGS)))
            ax.set_xticklabels(labels, fontsize=8)
            ax.grid(axis="y", alpha=0.3)
            ax.set_ylim(bottom=0)
        axs[0].set_ylabel("run time (s), median and min-max")
        axs[0].set_title("run time (label: fifo time / this)", fontsize=9)
        if counted:
            axs[1].set_ylabel("cache misses (millions, user space, whole process)")
            axs[1].set_title("PERF_COUNT_HW_CACHE_MISSES, median and min-max", fontsize=9)
        else:
            axs[1].set_ylabel("ns per line visited (a turn's time / its lines)")
            axs[1].set_title("hardware counters unavailable: a turn's time per line instead", fontsize=9)
        d = first_data(gr)
        fig.suptitle("Threads sharing data ([SKY]): %d groups of %d threads, %d KiB per group, %s writes, %s\n%s" % (
            d["ngroups"], d["threads_per_group"], d["ws_kib"], ", ".join("%d %%" % x for x in wps),
            cpu_label(gr[0].cpus), pl.machine), fontsize=9, y=1.04)
        pl.save(fig, "groups.png")


EXPERIMENT = Groups()
