# SPDX-License-Identifier: MIT
"""Processor reallocation between two ito processes ([SA section 4.1]):
from a process's hint to the processor changing hands."""
from harness.experiment import Experiment, first_data, run_notes
from harness.fmt import Table, cpu_label, fmt_us
from harness.runner import Config
from harness.targets import Target, met_str

KINDS = (("arrive", "a process arrives (its join) -> the old owner off the processor"),
         ("more", "its want rises -> the old owner off the processor"),
         ("idle", "its vprocs go idle -> the other's vproc running there"),
         ("leave", "it exits -> the other's vproc running there"))


def p99(by_key):
    cfg = by_key.get("realloc/ito")
    v = cfg.field_stats("p99_us")[0] if cfg else None
    return {"value": v * 1e3 if v is not None else None, "keys": ["realloc/ito"]}


class Realloc(Experiment):
    name = "realloc"
    order = 110
    title = "Reallocation: from a process's hint to the processor changing hands"
    source = "[SA section 4.1] (processor allocation between address spaces)"
    summary = ("reallocation", "[SA section 4.1]", "process A computes on every CPU; in each round a process B "
               "arrives, computes, sleeps, computes, exits; latency from each of B's hints to the processor "
               "changing hands")
    programs = ("realloc",)
    targets = (Target("realloc_p50", "reallocation latency, hint to the processor changing hands: median <= 200 us",
                      "<=", 200000, "ns", key="realloc/ito"),
               Target("realloc_p99", "reallocation latency: p99 <= 2 ms (median of the runs' p99)", "<=", 2000000,
                      "ns", value=p99, keys=["realloc/ito"]))
    notes = ("Times are the library's own, CLOCK_MONOTONIC in both processes: a hint's time is "
             "ito_alloc_info().hinted_ns (B's join, its want rising or falling), polled from a plain kernel thread "
             "of B every 0.5 ms; 'leave' is timed just before B exits. A processor taken from A is B's when A's "
             "threads last ran on it (they log sched_getcpu() intervals), since B's vprocs already run there, "
             "time-shared; one given to A is A's when its vproc there reports VPROC_ADDED. A hint after which "
             "nothing moved before the next one is left out (counted as unmatched), as is an arrival whose join "
             "the poller missed.")

    def configs(self, ctx):
        if ctx.ncpu < 2:
            return []
        # a process computing on every CPU; others arrive, go idle, want more, leave
        return [Config(self.name, "realloc/ito", "ito", "two processes, %s" % cpu_label(ctx.ncpu), "realloc",
                       ["--rounds", 60 if ctx.full else 30], ctx.ncpu, "p50_us", "ns", ctx.R(3, 5), scale=1e3,
                       timeout=120)]

    def tables(self, ctx):
        headers = ["what happened", "samples", "p50", "p99", "max"]
        rows, notes = [], []
        for c in self.cfgs:
            for kind, text in KINDS:
                n = c.field_stats(kind + "_n")[0]
                rows.append([text, "%d" % n if n is not None else "-"] +
                            [fmt_us(c.field_stats("%s_%s_us" % (kind, f))[0]) for f in ("p50", "p99", "max")])
            met = [met_str(ctx.target(i)) for i in ("realloc_p50", "realloc_p99")]
            n = c.field_stats("samples")[0]
            rows.append(["all, pooled (targets: p50 %s, p99 %s)" % tuple(met), "%d" % n if n is not None else "-"] +
                        [fmt_us(c.field_stats(f)[0]) for f in ("p50_us", "p99_us", "max_us")])
            notes += run_notes(c)
            pk = c.field_stats("parked_p50_us")[0], c.field_stats("parked_p99_us")[0]
            if pk[0] is not None:
                rows.append(["(the old owner's vproc parked: its VPROC_REMOVED)", "", fmt_us(pk[0]), fmt_us(pk[1]),
                             ""])
                notes.append("the old owner's vproc parked: on the processors it kept")
        if not self.cfgs:
            return [Table(headers, [], "needs 2 CPUs")]
        c = self.cfgs[0]
        d = first_data(self.cfgs)
        return [Table(headers, rows, "bench/realloc: process A computes on %s throughout; in each of %s rounds a "
                      "process B starts, computes %s ms, sleeps %s ms, computes again, exits (a thread per CPU in "
                      "both); medians over the runs of each run's percentiles" % (
                          cpu_label(c.cpus), d.get("rounds", "?"), d.get("phase_ms", "?"), d.get("phase_ms", "?")),
                      notes)]


EXPERIMENT = Realloc()
