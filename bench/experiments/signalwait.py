# SPDX-License-Identifier: MIT
"""Signal-wait ([SA Table 4]): a mutex + condition-variable ping-pong."""
import statistics

from harness.experiment import Experiment, pair_bars
from harness.runner import Config
from harness.targets import Target


def misplaced_note(cfg, used):
    """How often an ito thread found itself off the vproc it was placed on."""
    if cfg.impl != "ito":
        return []
    mis = [r["data"]["misplaced"] / max(1, r["data"]["placement_checks"]) for r in used]
    return ["off its vproc: %.0f%% of checks (median)" % (100 * statistics.median(mis))]


class SignalWait(Experiment):
    name = "signalwait"
    order = 50
    title = "Signal-wait: mutex + condition ping-pong, round trip"
    source = "[SA Table 4] (signal-wait)"
    summary = ("signal-wait", "[SA Table 4]", "two threads ping-pong through a mutex and condition "
               "variables; round trip, on one processor and across two")
    programs = ("signalwait",)
    no_steals_note = True
    targets = (Target("sw_same", "signal-wait round trip <= 60 ns on one vproc", "<=", 60, "ns",
                      key="signalwait/ito/same"),
               Target("sw_cross", "signal-wait round trip <= 180 ns across two busy vprocs", "<=", 180, "ns",
                      key="signalwait/ito/cross"))
    notes = ("ito threads are placed with ito_attr_set_vproc; \"off its vproc\" is how often (every "
             "64th iteration) a thread found itself on another vproc than the one it was placed on. "
             "POSIX threads are pinned with pthread_attr_setaffinity_np. The \"hardware floor\" row is "
             "two pinned threads handing one cache line back and forth by spinning: no round trip "
             "between two CPUs can be faster, and a mutex + condition round trip moves several lines "
             "(the mutex word, the condition's queue, the woken thread's state) each way.")

    def configs(self, ctx):
        R, full, exp = ctx.R, ctx.full, self.name
        cs = [Config(exp, "signalwait/pthread/same", "pthread", "same CPU", "signalwait",
                     ["--impl", "pthread", "--placement", "same", "--n", 50000 if full else 20000], 1,
                     "ns_per_roundtrip", "ns", R(11, 21)),
              Config(exp, "signalwait/ito/same", "ito", "1 vproc", "signalwait",
                     ["--impl", "ito", "--placement", "same", "--n", 1000000 if full else 200000], 1,
                     "ns_per_roundtrip", "ns", R(11, 21), pair="signalwait/pthread/same")]
        if ctx.ncpu > 1:
            cs.append(Config(exp, "signalwait/pthread/cross", "pthread", "2 CPUs (one each)", "signalwait",
                             ["--impl", "pthread", "--placement", "cross", "--n", 20000 if full else 5000], 2,
                             "ns_per_roundtrip", "ns", R(11, 21)))
            cs.append(Config(exp, "signalwait/ito/cross", "ito", "vprocs 0 and 1 of 2", "signalwait",
                             ["--impl", "ito", "--placement", "cross", "--vprocs", 2,
                              "--n", 1000000 if full else 200000], 2,
                             "ns_per_roundtrip", "ns", R(11, 21), pair="signalwait/pthread/cross"))
            cs.append(Config(exp, "signalwait/raw/cross", "raw", "hardware floor: 1 cache line, 2 CPUs",
                             "signalwait", ["--impl", "raw", "--placement", "cross", "--n", 2000000], 2,
                             "ns_per_roundtrip", "ns", R(11, 21)))
        return cs

    def row_notes(self, cfg, used):
        return misplaced_note(cfg, used)

    def micro_bars(self, ctx):
        return pair_bars(ctx, self.cfgs, lambda c: "signal-wait\n%s" % (
            "same vproc/CPU" if c.key.endswith("same") else "across 2"))


EXPERIMENT = SignalWait()
