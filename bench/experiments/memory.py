# SPDX-License-Identifier: MIT
"""Memory (ito's own target): resident memory per blocked thread."""
import statistics
import subprocess
import os

from harness.experiment import Experiment
from harness.machine import mem_available_kib
from harness.runner import Config, parse_json_line
from harness.targets import Target


def memory_value(by_key):
    cfg = by_key.get("memory/ito")
    out = {"value": cfg.median() if cfg else None, "keys": ["memory/ito"]}
    if cfg is not None and cfg.ok_runs():
        n = min(r["data"]["count"] for r in cfg.ok_runs())
        if n < 1000000:
            out.update(note="measured with %s threads only (memory)" % format(n, ","), short=True)
    return out


class Memory(Experiment):
    name = "memory"
    order = 140
    title = "Memory: resident memory per blocked thread"
    source = "ito's 1,000,000-thread target"
    summary = ("memory", "ito's target", "resident memory per thread with 1,000,000 ito threads blocked at once "
               "(POSIX threads: up to 10,000)")
    programs = ("memory",)
    count_note = True
    targets = (Target("memory", "1,000,000 threads blocked at once: <= 16 KiB resident per thread", "<=", 16,
                      "KiB", key="memory/ito", value=memory_value),)
    notes = ("VmRSS after all threads block, minus VmRSS before creating them, divided by the count. "
             "VmRSS does not include the kernel's own 16 KiB stack per kernel thread, so the POSIX-threads "
             "figure understates their cost. The count is lowered (and the target not met) only if the "
             "machine lacks the memory.")

    def __init__(self):
        super().__init__()
        self.count = 1000000

    def configs(self, ctx):
        return [Config(self.name, "memory/pthread", "pthread", "up to 10,000 threads", "memory",
                       ["--impl", "pthread", "--count", 10000], ctx.ncpu, "kib_per_thread", "KiB", ctx.R(3, 3),
                       timeout=300),
                Config(self.name, "memory/ito", "ito", "%s threads" % format(self.count, ","), "memory",
                       ["--impl", "ito", "--count", self.count], ctx.ncpu, "kib_per_thread", "KiB", ctx.R(3, 5),
                       timeout=900, pair="memory/pthread")]

    def prepare(self, ctx):
        """1,000,000 unless the machine lacks the memory: a small ito run
        measures the cost per thread first, and the count is lowered to fit
        in 70 % of MemAvailable (the report then says so)."""
        want = 1000000
        avail = mem_available_kib()
        try:
            p = subprocess.run([os.path.join(ctx.build, "bench", "memory"), "--impl", "ito", "--count", "20000"],
                               capture_output=True, text=True, timeout=300, env=ctx.env)
            d = parse_json_line(p.stdout)
            per = d["kib_per_thread"] if d and "kib_per_thread" in d else 16.0
        except (OSError, subprocess.SubprocessError):
            per = 16.0
        if avail is None:
            return False
        fit = int(avail * 0.7 / max(per * 1.1, 1.0))
        if fit >= want:
            return False
        self.count = max(10000, fit // 10000 * 10000)
        ctx.prog.note("run.py: memory: %d MiB available, %.1f KiB per ito thread: measuring %s threads, "
                      "not 1,000,000" % (avail // 1024, per, format(self.count, ",")))
        self.cfgs = self.configs(ctx)
        return True

    def row_notes(self, cfg, used):
        return ["create+block %.2f s" % statistics.median([r["data"]["create_block_s"] for r in used])]

    def plots(self, pl, ctx):
        mem = [ctx.by_key.get("memory/ito"), ctx.by_key.get("memory/pthread")]
        if not all(m and m.median() for m in mem):
            return
        fig, ax = pl.plt.subplots(figsize=(5, 4))
        labels = []
        for i, (m, color) in enumerate(zip(mem, ("tab:blue", "tab:orange"))):
            v, lo, hi = pl.err(m)
            ax.bar([i], [v], 0.6, yerr=[[lo], [hi]], capsize=3, color=color)
            cnt = m.ok_runs()[0]["data"]["count"]
            labels.append("%s\n%s threads" % ("ito" if m.impl == "ito" else "POSIX threads", format(cnt, ",")))
            ax.text(i, v, "%.2f KiB" % v, ha="center", va="bottom")
        ax.axhline(16, color="k", linestyle=":", linewidth=1, label="target (ito): 16 KiB")
        ax.set_xticks([0, 1])
        ax.set_xticklabels(labels)
        ax.set_ylabel("resident memory per blocked thread (KiB)")
        ax.set_title("Memory per blocked thread (VmRSS; pthreads' kernel stacks not counted)\n" + pl.machine,
                     fontsize=9)
        ax.legend()
        pl.save(fig, "memory.png")


EXPERIMENT = Memory()
