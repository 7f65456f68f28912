# SPDX-License-Identifier: MIT
"""Hand-off ([SA Table 2], the "activation has blocked" event): a
processor lost to a blocked kernel call, until another thread runs on it."""
from harness.experiment import Experiment, first_data, reps_str, run_notes
from harness.fmt import Table, fmt_cell, fmt_ratio, fmt_us
from harness.runner import Config
from harness.targets import Target, target_cell


class Handoff(Experiment):
    name = "handoff"
    order = 70
    title = "Hand-off: a processor lost to a blocked kernel call, until another thread runs on it"
    source = "[SA Table 2] (the \"activation has blocked\" event)"
    summary = ("hand-off", "[SA Table 2] (\"blocked\" event)", "one processor: thread A makes B ready, then "
               "blocks in nanosleep, inside ITO_BLOCKING (2 ms) or bare (10 ms); time until B runs (ito: the "
               "monitor hands the vproc to a spare kernel thread; POSIX threads: the kernel switches)")
    programs = ("handoff",)
    targets = (Target("handoff", "hand-off of a vproc blocked in an ITO_BLOCKING call: p50 <= 100 us", "<=",
                      100000, "ns", key="handoff/ito"),
               Target("handoff_plain", "hand-off of a vproc blocked in a call nobody bracketed: p50 <= 2 ms",
                      "<=", 2000000, "ns", key="handoff/ito-plain"))
    notes = ("B waits on a semaphore; A notes the time, posts it and calls nanosleep (2 ms) inside "
             "ito_blocking_begin/end; B notes when it runs. ito runs both on one vproc, so B can only run once the "
             "monitor has seen A's call (after about 20 us) and handed the vproc to a spare kernel thread; with "
             "ITO_ACTIVATIONS=0 B waits for the whole sleep. In the plain-call row A's nanosleep (10 ms) is not "
             "bracketed: the monitor must find the vproc stalled -- no pick and no CPU time for 1 ms, its kernel "
             "thread asleep -- and the p99 holds the first stall after a quiet spell, which takes longer. "
             "POSIX threads are both pinned to one CPU: the kernel switches to B when A sleeps (the floor).")

    def configs(self, ctx):
        # one processor; A blocks in nanosleep(2 ms) right after making B ready
        R, exp = ctx.R, self.name
        common = ["--n", 1000 if ctx.full else 200, "--block-us", 2000]
        # a plain call is found after about 1 ms: it must sleep well beyond that
        plain = ["--n", 500 if ctx.full else 100, "--block-us", 10000, "--call", "plain"]
        return [
            Config(exp, "handoff/pthread", "pthread", "kernel switch (both pinned to 1 CPU)", "handoff",
                   ["--impl", "pthread"] + common, 1, "p50_us", "ns", R(5, 9), scale=1e3, timeout=60),
            Config(exp, "handoff/ito", "ito", "1 vproc, ITO_BLOCKING (activations on)", "handoff",
                   ["--impl", "ito"] + common, 1, "p50_us", "ns", R(5, 9), scale=1e3, timeout=60,
                   pair="handoff/pthread", env={"ITO_ACTIVATIONS": "1"}),
            Config(exp, "handoff/ito-plain", "ito", "1 vproc, plain call (a stall), 10 ms sleeps", "handoff",
                   ["--impl", "ito"] + plain, 1, "p50_us", "ns", R(3, 5), scale=1e3, timeout=60,
                   pair="handoff/pthread", env={"ITO_ACTIVATIONS": "1"}),
            Config(exp, "handoff/ito-noact", "ito", "1 vproc, ITO_ACTIVATIONS=0 (the call keeps it)",
                   "handoff", ["--impl", "ito"] + common, 1, "p50_us", "ns", R(3, 5), scale=1e3, timeout=60,
                   pair="handoff/pthread", env={"ITO_ACTIVATIONS": "0"})]

    def tables(self, ctx):
        headers = ["configuration", "p50 (min-max)", "p99", "max", "reps", "p50/floor", "target"]
        rows, notes, p90s = [], [], []
        for c in self.cfgs:
            med, lo, hi = c.stats()
            p = ctx.by_key.get(c.pair)
            pm = p.median() if p else None
            rows.append([c.label, fmt_cell(med, lo, hi), fmt_us(c.field_stats("p99_us")[0]),
                         fmt_us(c.field_stats("max_us")[0]), reps_str(c), fmt_ratio(med / pm) if pm and med else "",
                         target_cell(ctx.target_of(c.key))])
            notes += run_notes(c)
            p90 = c.field_stats("p90_us")[0]
            if p90 is not None:
                p90s.append("%s %s" % (c.label, fmt_us(p90)))
        if p90s:
            notes.insert(0, "p90 (median over the runs): " + "; ".join(p90s))
        d = first_data(self.cfgs)
        return [Table(headers, rows, "latency from A entering nanosleep(%s us; plain calls: 10,000 us) (B already "
                      "made ready) to B running on the same processor; %s samples per run; p99, max (and p90 "
                      "below): medians over the runs; p50/floor: over POSIX threads' p50" % (
                          d.get("block_us", "?"), d.get("n", "?")), notes)]


EXPERIMENT = Handoff()
