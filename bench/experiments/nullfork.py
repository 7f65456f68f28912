# SPDX-License-Identifier: MIT
"""Null fork ([SA Table 4]): create + join of an empty thread."""
from harness.experiment import Experiment, cpu_set, pair_bars
from harness.fmt import cpu_label, vp_label
from harness.runner import Config
from harness.targets import Target


class NullFork(Experiment):
    name = "nullfork"
    order = 10
    title = "Null fork: create + join of an empty thread"
    source = "[SA Table 4] (null fork)"
    summary = ("null fork", "[SA Table 4]",
               "mean cost of creating and joining an empty thread, one after another")
    programs = ("nullfork",)
    targets = (Target("nullfork1", "null fork <= 30 ns on 1 vproc", "<=", 30, "ns", key="nullfork/ito/1"),
               Target("nullfork2", "null fork <= 60 ns on 2 vprocs", "<=", 60, "ns", key="nullfork/ito/2"))
    notes = ("ito runs on the given number of vprocs (the main thread is an ito thread on vproc 0); "
             "POSIX threads run with the process restricted to the same number of CPUs. "
             "A warm-up of a tenth of the operations precedes the timed ones. \"switches/op\" and "
             "\"steals\" are ito's own counters over the timed part (ito may run a child that has not "
             "started yet inside the join that waits for it: see src/runtime/inline.c).")

    def configs(self, ctx):
        cs = []
        for c in cpu_set(ctx.ncpu):
            cs.append(Config(self.name, "nullfork/pthread/%d" % c, "pthread", cpu_label(c), "nullfork",
                             ["--impl", "pthread", "--cpus", c, "--n", 20000 if ctx.full else 5000], c,
                             "ns_per_op", "ns", ctx.R(7, 15)))
            cs.append(Config(self.name, "nullfork/ito/%d" % c, "ito", vp_label(c), "nullfork",
                             ["--impl", "ito", "--cpus", c, "--n", 1000000 if ctx.full else 200000], c,
                             "ns_per_op", "ns", ctx.R(7, 15), pair="nullfork/pthread/%d" % c))
        return cs

    def micro_bars(self, ctx):
        return pair_bars(ctx, self.cfgs, lambda c: "null fork\n%s" % cpu_label(c.cpus))


EXPERIMENT = NullFork()
