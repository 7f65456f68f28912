# SPDX-License-Identifier: MIT
"""[SSH] sections 5-6: the cost of one scheduling decision against the
number of ready threads, per policy, on one vproc."""
from harness.experiment import Experiment
from harness.runner import Config
from harness.targets import Target
from experiments.sumthreads import POLICIES


def decision_flat(by_key):
    a, b = by_key.get("decision/prio/10"), by_key.get("decision/prio/100000")
    v = b.median() / a.median() if a and b and a.median() and b.median() else None
    return {"value": v, "keys": ["decision/prio/10", "decision/prio/100000"]}


class Decision(Experiment):
    name = "decision"
    order = 170
    title = "Cost of one scheduling decision vs the number of ready threads (1 vproc)"
    source = "[SSH] sections 5-6 (O(1) decisions)"
    summary = ("decision cost", "[SSH] sections 5-6", "R threads yielding in a loop on one vproc; CPU cycles "
               "a policy spends picking the next thread (ITO_STATS_CYCLES=1), per policy")
    programs = ("prio",)
    targets = (Target("decision_flat", "prio: cost of one decision with 100,000 ready threads <= 1.2x its cost "
                      "with 10", "<=", 1.2, "x", value=decision_flat),)

    def configs(self, ctx):
        cs = []
        for r in ([10, 100, 1000, 10000, 100000] if ctx.full else [10, 1000, 100000]):
            for pol in POLICIES:
                cs.append(Config(self.name, "decision/%s/%d" % (pol, r), "ito",
                                 "%s ready threads, %s" % (format(r, ","), pol), "prio",
                                 ["--mode", "decide", "--impl", "ito", "--ready", r, "--ms", 300], 1,
                                 "cycles_per_decision", "cycles", ctx.R(3, 5), x=r, group=pol, timeout=300,
                                 env={"ITO_POLICY": pol, "ITO_STATS_CYCLES": "1"}))
        return cs

    def plots(self, pl, ctx):
        dec = [c for c in self.cfgs if c.median()]
        if not dec:
            return
        fig, ax = pl.plt.subplots(figsize=(7, 4.5))
        for pol in POLICIES:
            pl.errorbar(ax, sorted((c for c in dec if c.group == pol), key=lambda c: c.x), label=pol)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("ready threads")
        ax.set_ylabel("cycles per decision (the policy's pick)")
        ax.set_title("Cost of one scheduling decision, 1 vproc (median, min-max)\n" + pl.machine)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        pl.save(fig, "decision.png")


EXPERIMENT = Decision()
