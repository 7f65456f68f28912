# SPDX-License-Identifier: MIT
"""A burst of work reaching idle processors: after every other vproc has
fallen asleep, main spawns one computing thread per vproc; the time until
all of them run, and main's cost per spawn."""
import statistics

from harness.experiment import Experiment, config_table, cpu_set
from harness.fmt import cpu_label, vp_label
from harness.runner import Config


class Burst(Experiment):
    name = "burst"
    order = 25
    title = "Burst: one thread per processor spawned at once onto sleeping processors, time until all run"
    source = "ito's scaling target (work reaching every idle processor at once)"
    summary = ("burst", "ito's target", "after a 5 ms pause (every other processor asleep), spawn one thread per "
               "processor, each computing 500 us; time from the first spawn until all have started (median "
               "of the rounds)")
    programs = ("burst",)
    notes = ("ito wakes the first sleeping vproc from the spawn; that vproc steals half of the spawned threads "
             "and wakes up to two more, which do the same (a tree, idle.c), while the spawns that follow see a "
             "vproc counted as looking and wake nobody. POSIX threads: pthread_create starts each thread on a "
             "CPU the kernel chooses. Rows with more vprocs than CPUs (threads of 5 ms there) show how many "
             "vprocs a burst reaches and how many wake-ups it took on a larger machine's vproc count; their "
             "times are the kernel's time-sharing of this machine's CPUs.")

    def configs(self, ctx):
        cs, R, ncpu = [], ctx.R, ctx.ncpu
        rounds = 101 if ctx.full else 41
        for c in cpu_set(ncpu):
            if c < 2:
                continue
            pk = "burst/pthread/%d" % c
            cs.append(Config(self.name, pk, "pthread", "%d threads on %s" % (c, cpu_label(c)), "burst",
                             ["--impl", "pthread", "--cpus", c, "--rounds", rounds], c, "reach_us", "us",
                             R(3, 5), timeout=120))
            cs.append(Config(self.name, "burst/ito/%d" % c, "ito", "%d threads on %s" % (c, vp_label(c)),
                             "burst", ["--impl", "ito", "--cpus", c, "--rounds", rounds], c, "reach_us", "us",
                             R(3, 5), timeout=120, pair=pk))
        # More vprocs than CPUs: the kernel time-shares the carriers, so each
        # thread computes 5 ms, long enough for every woken vproc to get a turn.
        for v in (8, 16):
            if v > ncpu:
                cs.append(Config(self.name, "burst/ito/over%d" % v, "ito",
                                 "%d threads of 5 ms on %d vprocs on %s" % (v, v, cpu_label(ncpu)), "burst",
                                 ["--impl", "ito", "--vprocs", v, "--work-us", 5000, "--rounds", 21], ncpu,
                                 "reach_us", "us", R(3, 5), timeout=120))
        return cs

    def row_notes(self, cfg, used):
        if cfg.impl != "ito" or not used:
            return []
        med = lambda k: statistics.median(r["data"][k] for r in used)
        return ["threads started on %g of %d vprocs, %.1f wake-ups per burst (medians)" % (
            med("vprocs_reached"), used[0]["data"]["vprocs"], med("wakeups_per_round"))]

    def tables(self, ctx):
        return [config_table(self, ctx, self.cfgs, "From the first spawn until every thread runs (reach_us), "
                             "median of the rounds")]


EXPERIMENT = Burst()
