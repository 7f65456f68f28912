# SPDX-License-Identifier: MIT
"""Yield ([STH Table 2]): two threads on one processor yield to each other."""
from harness.experiment import Experiment, pair_bars
from harness.runner import Config
from harness.targets import Target


class Yield(Experiment):
    name = "yield"
    order = 40
    title = "Yield: 100,000 yields between two threads on one processor"
    source = "[STH Table 2] (100,000 thread-yields)"
    summary = ("yield", "[STH Table 2]",
               "two threads on one processor yield to each other 100,000 times; cost per yield")
    programs = ("yield",)
    targets = (Target("yield", "yield <= 12 ns", "<=", 12, "ns", key="yield/ito/1"),)
    notes = ("\"yields without a switch\" counts the yields after which the other thread had not run: "
             "such a yield is not the operation measured. The ito row \"both on vproc 0 of N\" places both "
             "threads on vproc 0 while the other vprocs idle (the policy may move one of them away).")

    def configs(self, ctx):
        R = ctx.R
        cs = [Config(self.name, "yield/pthread/1", "pthread", "1 CPU, both pinned", "yield",
                     ["--impl", "pthread", "--n", 100000], 1, "ns_per_yield", "ns", R(11, 21)),
              Config(self.name, "yield/ito/1", "ito", "1 vproc", "yield",
                     ["--impl", "ito", "--vprocs", 1, "--n", 100000], 1, "ns_per_yield", "ns",
                     R(11, 21), pair="yield/pthread/1")]
        if ctx.ncpu > 1:
            cs.append(Config(self.name, "yield/ito/%d" % ctx.ncpu, "ito", "both on vproc 0 of %d" % ctx.ncpu, "yield",
                             ["--impl", "ito", "--vprocs", ctx.ncpu, "--n", 100000], ctx.ncpu, "ns_per_yield",
                             "ns", R(11, 21), pair="yield/pthread/1"))
        return cs

    def row_notes(self, cfg, used):
        return ["yields without a switch: <= %d" % max(r["data"].get("no_switch", 0) for r in used)]

    def micro_bars(self, ctx):
        return pair_bars(ctx, [c for c in self.cfgs if c.cpus == 1], lambda c: "yield\n1 CPU")


EXPERIMENT = Yield()
