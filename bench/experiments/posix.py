# SPDX-License-Identifier: MIT
"""[LWP]: POSIX threads on ito through the drop-in (libito-pthread, ito-run),
against the C library's threads in the same run: the calls of one unmodified
binary, and real unmodified programs."""
import os

from harness.experiment import Experiment, pair_bars
from harness.runner import Config
from harness.targets import Target

OPS = (("nullfork", "create + join", "nullfork/ito/1"),
       ("signalwait", "signal-wait round trip", "signalwait/ito/same"),
       ("yield", "yield", "yield/ito/1"),
       ("mutex", "mutex lock + unlock", None),
       ("pipe", "pipe round trip (blocking read/write)", "kpingpong/ito/pipe/same"))
WORKS = (("pigz", "pigz -p {t} (48 MB of text)", "ms", "ns", 1e6),
         ("xz", "xz -T{t} -3 (48 MB of text)", "ms", "ns", 1e6),
         ("zstd", "zstd -T{t} -3 (48 MB of text)", "ms", "ns", 1e6),
         ("redis", "redis-server --io-threads {t}, SET+GET", "ns_per_request", "ns", 1.0))
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# ito's own create + join with the stack a POSIX thread gets by default (the
# C library's 8 MiB): too big to run inline on the joiner's stack, as the
# drop-in never does (a thread runs on its own thread pointer).
SAME_STACK = "posix/api/nullfork/8m"


def overhead(op, native):
    """The drop-in's figure for an operation over ito's own API's, same run."""
    def value(by_key):
        a, b = by_key.get("posix/ito/%s" % op), by_key.get(native)
        v = a.median() / b.median() if a and b and a.median() and b.median() else None
        return {"value": v, "keys": ["posix/ito/%s" % op, native]}
    return value


def no_slower(by_key):
    """The worst ratio, ito-run over the C library, over the real programs."""
    worst, keys = None, []
    for w, _, _, _, _ in WORKS:
        a, b = by_key.get("posix/ito/prog/%s" % w), by_key.get("posix/pthread/prog/%s" % w)
        if a and b and a.median() and b.median():
            r = a.median() / b.median()
            worst = r if worst is None else max(worst, r)
            keys += [a.key, b.key]
    return {"value": worst, "keys": keys}


class Posix(Experiment):
    name = "posix"
    order = 200
    title = "POSIX threads on ito (libito-pthread): one unmodified binary, and real programs"
    source = "[LWP] (a POSIX threads library on lightweight processes)"
    summary = ("POSIX drop-in", "[LWP]", "the same pthread binary on the C library's threads and on ito's "
               "(LD_PRELOAD); pigz, xz, zstd and redis-server under ito-run")
    programs = ("posixcalls",)
    targets = tuple(Target("posix_%s" % op, "drop-in %s <= 1.10x ito's own API" % text, "<=", 1.10, "x",
                           value=overhead(op, native)) for op, text, native in OPS if native) + (
        Target("posix_nullfork_8m", "drop-in create + join <= 1.10x ito's own API with the same 8 MiB "
               "stacks (no inline join)", "<=", 1.10, "x", value=overhead("nullfork", SAME_STACK)),
        Target("posix_programs", "real programs under ito-run no slower than on the C library "
               "(worst ratio)", "<=", 1.0, "x", value=no_slower),)
    notes = ("posixcalls is a plain pthread program (it includes no ito header): \"pthread\" runs it on the "
             "C library's threads restricted to one CPU, \"ito\" runs the same binary with libito-pthread "
             "preloaded on one vproc. The targets compare the drop-in with ito's own API on the same "
             "operation in the same run (nullfork, signalwait, yield on 1 vproc; pipe: kpingpong's ito_read/ito_write "
             "round trip on 1 vproc); create + join also against ito's API with the 8 MiB stacks POSIX threads "
             "get, which rules out ito's inline join as the drop-in's own join. Each ito thread has its "
             "own thread pointer, so a switch also writes the %fs base (wrfsbase, src/posix/tcb.c). "
             "Real programs: the same command with and without ito-run, T threads (the CPUs used); "
             "redis-benchmark itself always runs on the C library's threads.")

    def configs(self, ctx):
        R, exp = ctx.R, self.name
        cs = []
        for op, text, _ in OPS:
            cs.append(Config(exp, "posix/pthread/%s" % op, "pthread", text, "posixcalls",
                             ["--impl", "pthread", "--op", op], 1, "ns_per_op", "ns", R(5, 11)))
            cs.append(Config(exp, "posix/ito/%s" % op, "ito", text + " (drop-in)", "posixcalls",
                             ["--impl", "ito-pthread", "--op", op], 1, "ns_per_op", "ns", R(5, 11),
                             pair="posix/pthread/%s" % op))
        cs.append(Config(exp, SAME_STACK, "ito", "create + join, ito's API, 8 MiB stacks", "nullfork",
                         ["--impl", "ito", "--cpus", 1, "--n", 200000], 1, "ns_per_op", "ns", R(5, 11),
                         env={"ITO_STACK_SIZE": "8M"}))
        script = os.path.join(HERE, "programs.sh")
        runner = os.path.join(ctx.build, "ito-run")
        t = max(1, min(ctx.ncpu, 4))
        for w, text, metric, unit, scale in WORKS:
            label = text.format(t=t)
            args = ["--ito-run", runner, "--work", w, "--threads", t]
            cs.append(Config(exp, "posix/pthread/prog/%s" % w, "pthread", label, script,
                             args + ["--impl", "pthread"], t, metric, unit, R(3, 5), scale=scale, timeout=300))
            cs.append(Config(exp, "posix/ito/prog/%s" % w, "ito", label + " (ito-run)", script,
                             args + ["--impl", "ito-pthread"], t, metric, unit, R(3, 5), scale=scale,
                             timeout=300, pair="posix/pthread/prog/%s" % w))
        return cs

    def micro_bars(self, ctx):
        return pair_bars(ctx, [c for c in self.cfgs if "/prog/" not in c.key], lambda c: "drop-in\n%s" % c.label)


EXPERIMENT = Posix()
