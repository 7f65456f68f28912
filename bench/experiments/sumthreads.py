# SPDX-License-Identifier: MIT
"""[SSH section 7]: spawn T threads that each sum n integers, collect
the sums; every ito policy beside POSIX threads."""
from harness.experiment import Experiment, config_table
from harness.runner import Config
from harness.targets import Target

POLICIES = ["prio", "prio-shared", "ws", "fifo", "affinity"]


def sum_vs_pthread(by_key):
    """The smallest pthread/prio ratio over T at n = 1,000."""
    keys = [c.key for c in by_key.values() if c.exp == "sumthreads" and c.group == "a" and
            c.key.startswith("sumthreads/prio/")]
    ratios = []
    for k in keys:
        c, pc = by_key[k], by_key.get(by_key[k].pair)
        if c.median() and pc and pc.median():
            ratios.append(pc.median() / c.median())
    return {"value": min(ratios) if ratios else None, "keys": keys}


class SumThreads(Experiment):
    name = "sumthreads"
    order = 160
    title = "Spawn T threads that each sum n integers, collect the sums (per policy)"
    source = "[SSH section 7] (T threads summing n integers)"
    summary = ("spawn and sum", "[SSH section 7]", "main spawns T threads that each sum the same n integers, "
               "joins them in order and checks every sum; total time; POSIX threads and ito under each policy")
    programs = ("sumthreads",)
    targets = (Target("sum_vs_pthread", "[SSH] experiment, n = 1,000: prio faster than POSIX threads by >= 20x "
                      "at every T (the smallest pthread/ito)", ">=", 20, "x", value=sum_vs_pthread),)

    def configs(self, ctx):
        # (a) n = 1000, T varies; (b) T = 25, n varies. Every policy beside POSIX threads.
        ts = [10, 100, 1000, 10000, 100000] if ctx.full else [10, 1000, 100000]
        ns = [100, 1000, 10000, 100000] if ctx.full else [100, 10000, 100000]
        points = [("a", t, 1000) for t in ts] + [("b", 25, n) for n in ns]
        cs = []
        for part, t, n in points:
            pk = "sumthreads/pthread/%s/%d/%d" % (part, t, n)
            common = ["--threads", t, "--n", n, "--cpus", ctx.ncpu]
            x = t if part == "a" else n
            cs.append(Config(self.name, pk, "pthread", "T=%s n=%s" % (format(t, ","), format(n, ",")), "sumthreads",
                             ["--impl", "pthread"] + common, ctx.ncpu, "seconds", "ns", ctx.R(3, 5), scale=1e9,
                             x=x, group=part, timeout=300))
            for pol in POLICIES:
                cs.append(Config(self.name, "sumthreads/%s/%s/%d/%d" % (pol, part, t, n), "ito",
                                 "T=%s n=%s, %s" % (format(t, ","), format(n, ","), pol), "sumthreads",
                                 ["--impl", "ito"] + common, ctx.ncpu, "seconds", "ns", ctx.R(3, 5), scale=1e9, x=x,
                                 group=part, timeout=300, pair=pk,
                                 env={"ITO_POLICY": pol, "ITO_STATS_CYCLES": "1"}))
        return cs

    def tables(self, ctx):
        return [config_table(self, ctx, [c for c in self.cfgs if c.group == "a"],
                             "(a) n = 1,000 integers per thread, T threads"),
                config_table(self, ctx, [c for c in self.cfgs if c.group == "b"],
                             "(b) T = 25 threads, n integers per thread")]

    def plots(self, pl, ctx):
        for part, xlabel in (("a", "threads T (n = 1,000)"), ("b", "integers summed per thread n (T = 25)")):
            cs_all = [c for c in self.cfgs if c.group == part and c.median()]
            if not cs_all:
                continue
            fig, ax = pl.plt.subplots(figsize=(7, 4.5))
            for name in ["pthread"] + POLICIES:
                cs = sorted((c for c in cs_all if (c.impl == "pthread" if name == "pthread" else
                                                    c.env.get("ITO_POLICY") == name)), key=lambda c: c.x)
                pl.errorbar(ax, cs, 1e-6, label="POSIX threads" if name == "pthread" else "ito " + name)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(xlabel)
            ax.set_ylabel("total time (ms)")
            ax.set_title("[SSH section 7]: spawn, sum, collect (median, min-max)\n" + pl.machine)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
            pl.save(fig, "sumthreads_%s.png" % part)


EXPERIMENT = SumThreads()
