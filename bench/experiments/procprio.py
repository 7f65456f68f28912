# SPDX-License-Identifier: MIT
"""Unequal priorities ([SA section 4.1]): a high-priority program beside a low-priority one."""
from harness.experiment import Experiment, first_data, run_notes
from harness.fmt import Table, cpu_label, fmt_ns
from harness.runner import Config
from harness.targets import Target, target_cell


def slowdown(key):
    def value(by_key):
        cfg = by_key.get(key)
        return {"value": cfg.field_stats("slowdown")[0] if cfg else None, "keys": [key]}
    return value


class ProcPrio(Experiment):
    name = "procprio"
    order = 120
    title = "Unequal priorities: a high-priority program beside a low-priority one"
    source = "[SA section 4.1] (priorities between address spaces)"
    summary = ("unequal priorities", "[SA section 4.1]", "a low-priority program computes on every CPU; a "
               "high-priority one arrives; its time beside the low one over its time alone")
    programs = ("procprio",)
    targets = (Target("procprio_all", "Unequal priorities: a high-priority program wanting every CPU loses <= 5 % to "
                      "a low-priority one (its time beside it / alone)", "<=", 1.05, "x", key="procprio/ito/all",
                      value=slowdown("procprio/ito/all")),
               Target("procprio_rest", "Unequal priorities: the same, the high program using all CPUs but one", "<=",
                      1.05, "x", key="procprio/ito/all-but-one", value=slowdown("procprio/ito/all-but-one")))
    notes = ("ito: the processes are ITO_PRIORITY=10 and 0, in an allocation domain of their own; the "
             "division gives the high one every processor it wants and the low one the rest, but never fewer "
             "than one: where H wants every CPU, L's one vproc time-shares a CPU with one of H's, and H's "
             "barriers wait for the worker that shares it. H also asks for more processors only when a time "
             "slice ends, or a thread yields, while another waits: workers that block at a barrier every 500 "
             "us on one vproc never do. POSIX threads: L at nice 19, H at nice 0, unpinned.")

    def configs(self, ctx):
        if ctx.ncpu < 2:
            return []
        # L computes on every CPU at low priority; H arrives wanting every
        # CPU, then (a second configuration) all but one
        cs = []
        for ht in sorted({ctx.ncpu, ctx.ncpu - 1}, reverse=True):
            which = "all" if ht == ctx.ncpu else "all-but-one"
            for impl in ("ito", "pthread"):
                cs.append(Config(self.name, "procprio/%s/%s" % (impl, which), impl,
                                 "ITO_PRIORITY 10 vs 0" if impl == "ito" else "nice 0 vs nice 19", "procprio",
                                 ["--impl", impl, "--high-threads", ht, "--rounds", 800 if ctx.full else 400],
                                 ctx.ncpu, "high_s", "ns", ctx.R(3, 5), scale=1e9, x=ht, group=which, timeout=120))
        return cs

    def tables(self, ctx):
        headers = ["H uses", "impl", "priorities", "H alone", "H beside L", "slowdown (min-max)", "L's share",
                   "target"]
        rows, notes = [], []
        for c in self.cfgs:
            a, h, (sd, lo, hi), share = (c.field_stats("alone_s")[0], c.field_stats("high_s")[0],
                                         c.field_stats("slowdown"), c.field_stats("low_share")[0])
            notes += run_notes(c)
            rows.append([cpu_label(c.x), c.impl, c.label, fmt_ns(a * 1e9) if a else "-",
                         fmt_ns(h * 1e9) if h else "-", "%.2fx (%.2f-%.2f)" % (sd, lo, hi) if sd else "-",
                         "%.2f" % share if share is not None else "-", target_cell(ctx.target_of(c.key))])
        d = first_data(self.cfgs)
        return [Table(headers, rows, "bench/procprio on %s: a low-priority program L computes with a thread per CPU "
                      "in rounds of %s us and a barrier; a high-priority program H of %s such rounds arrives; "
                      "slowdown = H's time beside L / H's time alone; L's share: L's rate while H runs over its rate "
                      "alone; medians" % (cpu_label(self.cfgs[0].cpus) if self.cfgs else "?",
                                          d.get("round_us", "?"), d.get("rounds", "?")),
                      notes).drop_empty("target")]


EXPERIMENT = ProcPrio()
