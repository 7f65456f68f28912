# SPDX-License-Identifier: MIT
"""Priorities ([SSH section 4.3.3], [SA section 1.2]): CPU shares of
four busy threads, and waking an urgent thread while every vproc computes."""
from harness.experiment import Experiment, config_table
from harness.runner import Config
from harness.targets import Target


class Priorities(Experiment):
    name = "priorities"
    order = 180
    title = "Priorities: CPU shares, and waking an urgent thread while every vproc computes"
    source = "[SSH section 4.3.3], [SA section 1.2] (shares; urgent wake-ups)"
    summary = ("priorities", "[SSH section 4.3.3], [SA section 1.2]", "four busy threads at four priorities "
               "on one CPU: the top one's share over the bottom one's; a most-urgent thread woken while "
               "least-urgent ones compute on every CPU: time from the post to it running")
    programs = ("prio",)
    targets = (Target("wake_p50", "prio: an urgent thread woken while every vproc computes runs within 50 us "
                      "(median)", "<=", 50, "us", key="priorities/wake/prio"),)

    def configs(self, ctx):
        ms = 3000 if ctx.full else 1000
        exp, R, ncpu = self.name, ctx.R, ctx.ncpu
        cs = [Config(exp, "priorities/share/pthread", "pthread", "4 busy threads on 1 CPU, nice 19/13/6/0",
                     "prio", ["--mode", "share", "--impl", "pthread", "--ms", ms], 1, "top_over_bottom", "x",
                     R(3, 5), group="share")]
        for pol in ("prio", "prio-shared"):
            cs.append(Config(exp, "priorities/share/%s" % pol, "ito",
                             "4 busy threads on 1 vproc, priorities 0/10/20/31, %s" % pol, "prio",
                             ["--mode", "share", "--impl", "ito", "--ms", ms], 1, "top_over_bottom", "x",
                             R(3, 5), group="share", env={"ITO_POLICY": pol, "ITO_TIMESLICE_US": "1000"}))
        samples = 1000 if ctx.full else 300
        pk = "priorities/wake/pthread"
        cs.append(Config(exp, pk, "pthread", "nice 0 woken, nice 19 spinning on every CPU", "prio",
                         ["--mode", "wake", "--impl", "pthread", "--samples", samples, "--cpus", ncpu], ncpu,
                         "p50_us", "us", R(3, 5), group="wake", timeout=120))
        for pol in ("prio", "prio-shared", "ws"):
            cs.append(Config(exp, "priorities/wake/%s" % pol, "ito",
                             "priority 31 woken, priority 0 computing on every vproc, %s" % pol, "prio",
                             ["--mode", "wake", "--impl", "ito", "--samples", samples, "--cpus", ncpu], ncpu,
                             "p50_us", "us", R(3, 5), group="wake", timeout=120, pair=pk,
                             env={"ITO_POLICY": pol}))
        return cs

    def tables(self, ctx):
        return [config_table(self, ctx, [c for c in self.cfgs if c.group == "share"],
                             "CPU shares: the top priority's share over the bottom one's (top_over_bottom)"),
                config_table(self, ctx, [c for c in self.cfgs if c.group == "wake"],
                             "Urgent wake-ups: from the post to the woken thread running, p50")]


EXPERIMENT = Priorities()
