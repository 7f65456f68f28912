# SPDX-License-Identifier: MIT
"""Thread creation in bulk: fork-many (100,000 threads, [SA]/003) and
1,000 forks ([STH Table 1]): create them all, then join them all."""
from harness.experiment import Experiment, cpu_set, pair_bars
from harness.fmt import cpu_label, vp_label
from harness.runner import Config
from harness.targets import Target


class ForkMany(Experiment):
    programs = ("forkmany",)
    count_note = True

    def __init__(self, name, order, count, title, source, summary, targets=(), notes=""):
        super().__init__()
        self.name, self.order, self.count = name, order, count
        self.title, self.source, self.summary, self.targets, self.notes = title, source, summary, targets, notes

    def configs(self, ctx):
        cs = []
        exp = self.name
        for c in cpu_set(ctx.ncpu):
            cs.append(Config(exp, "%s/pthread/%d" % (exp, c), "pthread", cpu_label(c), "forkmany",
                             ["--exp", exp, "--impl", "pthread", "--cpus", c, "--count", self.count], c,
                             "ns_per_thread", "ns", ctx.R(3, 7) if exp == "forkmany" else ctx.R(7, 15), timeout=300))
            cs.append(Config(exp, "%s/ito/%d" % (exp, c), "ito", vp_label(c), "forkmany",
                             ["--exp", exp, "--impl", "ito", "--cpus", c, "--count", self.count], c,
                             "ns_per_thread", "ns", ctx.R(7, 15), pair="%s/pthread/%d" % (exp, c)))
        return cs

    def micro_bars(self, ctx):
        what = "fork-many" if self.name == "forkmany" else "1000 forks"
        return pair_bars(ctx, self.cfgs, lambda c: "%s\n/thread\n%s" % (what, cpu_label(c.cpus)))


EXPERIMENTS = [
    ForkMany("forkmany", 20, 100000, "Fork many: create 100,000 threads, then join them all",
             "[SA] / 003 (thread creation in bulk)",
             ("fork-many", "[SA]/003", "create 100,000 threads, then join them all; cost per thread"),
             (Target("forkmany2", "fork-many <= 200 ns per thread on 2 vprocs", "<=", 200, "ns",
                     key="forkmany/ito/2"),),
             "POSIX threads cannot have 100,000 unjoined threads at once with default limits (each keeps "
             "its stack mapping until joined; vm.max_map_count and pid_max bound them): the program "
             "lowers the count and says so in the notes."),
    ForkMany("fork1000", 30, 1000, "1,000 forks: create 1,000 threads, then join them all",
             "[STH Table 1] (1,000 thread-forks)",
             ("1,000 forks", "[STH Table 1]",
              "create 1,000 threads, then join them all; cost per thread (x1000 = the paper's figure)")),
]
