# SPDX-License-Identifier: MIT
"""Signal-wait through the kernel ([SA section 5.2]): blocking
reads and writes on pipes or eventfds."""
from harness.experiment import Experiment, pair_bars
from harness.runner import Config
from harness.stats import relative_value
from harness.targets import Target
from experiments.signalwait import misplaced_note


def relative(key, field):
    """A target on ito's figure over POSIX threads' in the same run."""
    def value(by_key):
        c = by_key.get(key)
        p = by_key.get(c.pair) if c else None
        why = [x.skipped() for x in (c, p) if x and x.skipped()]
        return {"value": relative_value(by_key, key, field), "keys": [key] + ([c.pair] if c else []),
                "note": "skipped: " + why[0] if why else ""}
    return value


class KPingPong(Experiment):
    name = "kpingpong"
    order = 60
    title = "Signal-wait through the kernel: blocking read/write ping-pong, round trip"
    source = "[SA section 5.2] (signal-wait through the kernel)"
    summary = ("kernel signal-wait", "[SA section 5.2]", "two threads ping-pong a message through two pipes "
               "(or eventfds) with blocking reads and writes (ito: ito_read/ito_write on io_uring); round trip, "
               "on one processor and across two")
    programs = ("kpingpong",)
    no_steals_note = True
    targets = (Target("kpp_same", "kernel signal-wait (pipe), 1 vproc: ito round trip <= POSIX threads' "
                      "(ito/pthread)", "<=", 1.0, "x", key="kpingpong/ito/pipe/same",
                      value=relative("kpingpong/ito/pipe/same", "ns_per_roundtrip"), show="ito <= pthread"),
               Target("kpp_cross", "kernel signal-wait (pipe), 2 vprocs: ito round trip <= POSIX threads' "
                      "(ito/pthread)", "<=", 1.0, "x", key="kpingpong/ito/pipe/cross",
                      value=relative("kpingpong/ito/pipe/cross", "ns_per_roundtrip"), show="ito <= pthread"))
    notes = ("Each thread blocks in read until the other writes: ito threads park in ito_read on their vproc's "
             "io_uring ring (the vproc runs other threads or sleeps on the ring), POSIX threads block in the "
             "kernel. Placement as in signal-wait. Every message is checked. Across two CPUs the round trip "
             "is dominated by waking a sleeping CPU, which costs tens of microseconds on some virtual machines.")

    def configs(self, ctx):
        # cross-CPU wake-ups cost tens of us on some VMs: fewer round trips there
        cs, full = [], ctx.full
        for chan in ("pipe", "eventfd"):
            for pl, c, n in (("same", 1, 50000 if full else 20000), ("cross", 2, 10000 if full else 2000)):
                if c > ctx.ncpu:
                    continue
                where = "same CPU" if pl == "same" else "2 CPUs (one each)"
                common = ["--chan", chan, "--placement", pl, "--n", n]
                pk = "kpingpong/pthread/%s/%s" % (chan, pl)
                cs.append(Config(self.name, pk, "pthread", "%s, %s" % (chan, where), "kpingpong",
                                 ["--impl", "pthread"] + common, c, "ns_per_roundtrip", "ns", ctx.R(7, 15),
                                 timeout=60 if full else 20))
                cs.append(Config(self.name, "kpingpong/ito/%s/%s" % (chan, pl), "ito",
                                 "%s, %s" % (chan, "1 vproc" if pl == "same" else "vprocs 0 and 1 of 2"),
                                 "kpingpong", ["--impl", "ito"] + common, c, "ns_per_roundtrip", "ns",
                                 ctx.R(7, 15), timeout=60 if full else 20, pair=pk))
        return cs

    def row_notes(self, cfg, used):
        return misplaced_note(cfg, used)

    def micro_bars(self, ctx):
        return pair_bars(ctx, self.cfgs, lambda c: "kernel s-w %s\n%s" % (
            c.key.split("/")[2], "same vproc/CPU" if c.key.endswith("same") else "across 2"))


EXPERIMENT = KPingPong()
