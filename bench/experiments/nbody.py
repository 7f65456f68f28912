# SPDX-License-Identifier: MIT
"""Barnes-Hut N-body ([SA Fig. 2]): speedup against processors."""
from harness.experiment import Experiment, cpu_steps, run_notes
from harness.fmt import Table, cpu_label, fmt_ns, fmt_ratio, vp_label
from harness.runner import Config
from harness.stats import speedup
from harness.targets import Target, target_note


def nbody_speedup(by_key, impl, c):
    return speedup(by_key.get("nbody/seq"), by_key.get("nbody/%s/%d" % (impl, c)))


def nbody2(by_key):
    v = nbody_speedup(by_key, "ito", 2)[0]
    return {"value": v, "keys": ["nbody/seq", "nbody/ito/2"],
            "note": "above the ideal 2: the runs compared saw different machine load" if v and v > 2.0 else ""}


class NBody(Experiment):
    name = "nbody"
    order = 80
    title = "Barnes-Hut N-body: speedup vs processors"
    source = "[SA Fig. 2] (N-body speedup)"
    summary = ("N-body", "[SA Fig. 2]", "Barnes-Hut simulation (2D); ito forks thousands of threads per step "
               "recursively, POSIX threads use one thread per CPU and a static partition; speedup over a "
               "sequential version; results checked bit for bit against it")
    programs = ("nbody",)
    targets = (Target("nbody2", "N-body speedup >= 1.95x on 2 vprocs", ">=", 1.95, "x", value=nbody2),)
    notes = ("Each parallel run's final positions are compared (hash) with the sequential run's: they must be "
             "bit-for-bit equal, else the run counts as failed.")

    def configs(self, ctx):
        n, steps = (100000, 5) if ctx.full else (20000, 3)
        common = ["--n", n, "--steps", steps]
        reps = ctx.R(7, 11)
        cs = [Config(self.name, "nbody/seq", "seq", "sequential", "nbody", ["--impl", "seq"] + common, 1,
                     "seconds", "ns", reps, scale=1e9, x=1, timeout=600)]
        for c in cpu_steps(ctx.ncpu, ctx.full):
            cs.append(Config(self.name, "nbody/pthread/%d" % c, "pthread", cpu_label(c), "nbody",
                             ["--impl", "pthread", "--cpus", c] + common, c, "seconds", "ns", reps,
                             scale=1e9, x=c, timeout=600))
            cs.append(Config(self.name, "nbody/ito/%d" % c, "ito", vp_label(c), "nbody",
                             ["--impl", "ito", "--cpus", c] + common, c, "seconds", "ns", reps,
                             scale=1e9, x=c, timeout=600, pair="nbody/pthread/%d" % c))
        return cs

    def check(self, ctx):
        """Every run must end with the sequential run's positions, bit for bit."""
        hashes = [r["data"]["hash"] for c in self.cfgs if c.impl == "seq" for r in c.ok_runs()]
        if not hashes:
            return
        want = hashes[0]
        for c in self.cfgs:
            for r in c.ok_runs():
                if r["data"].get("hash") != want:
                    r["error"] = "result differs from the sequential one (hash %s, sequential %s)" % (
                        r["data"].get("hash"), want)
                    ctx.prog.note("run.py: FAILED nbody %s %s rep %d: %s" % (c.impl, c.label, r["rep"], r["error"]))

    def tables(self, ctx):
        by_key = ctx.by_key
        headers = ["CPUs", "seq", "ito", "ito speedup", "pthread", "pthread speedup", "pthread/ito"]
        seq = by_key.get("nbody/seq")
        rows, notes = [], []
        cs = sorted({c.x for c in self.cfgs if c.impl != "seq"})
        if seq:
            notes += run_notes(seq, "sequential")
        for c in cs:
            ito, pth = by_key.get("nbody/ito/%d" % c), by_key.get("nbody/pthread/%d" % c)
            si, sp = nbody_speedup(by_key, "ito", c), nbody_speedup(by_key, "pthread", c)
            ratio = fmt_ratio(pth.median() / ito.median()) if ito and pth and ito.median() and pth.median() else ""
            for cfg in (ito, pth):
                if cfg:
                    notes += run_notes(cfg)
            if ito and ito.ok_runs():
                notes.append("ito %s: threads/step %d" % (ito.label,
                                                            ito.ok_runs()[0]["data"].get("threads_per_step", 0)))
            rows.append([c, fmt_ns(seq.median()) if seq else "-", fmt_ns(ito.median()) if ito else "-",
                         "%.2f (%.2f-%.2f)" % si if si[0] else "-", fmt_ns(pth.median()) if pth else "-",
                         "%.2f (%.2f-%.2f)" % sp if sp[0] else "-", ratio])
        notes.append(target_note(ctx.target("nbody2"), "ito speedup on 2 vprocs >= 1.95x"))
        d = seq.ok_runs()[0]["data"] if seq and seq.ok_runs() else {}
        return [Table(headers, rows, "%s bodies, %s steps; run times: medians; speedup = median sequential time / "
                      "median parallel time (min-max: over the parallel runs' max and min)" % (
                          format(d.get("n", 0), ","), d.get("steps", "?")), notes)]

    def plots(self, pl, ctx):
        seq = ctx.by_key.get("nbody/seq")
        if not self.cfgs or not seq or not seq.median():
            return
        cs = sorted({c.x for c in self.cfgs if c.impl != "seq"})
        fig, ax = pl.plt.subplots(figsize=(6.4, 4.8))
        for impl, color, label in (("ito", "tab:blue", "ito (fine-grained fork/join)"),
                                   ("pthread", "tab:orange", "POSIX threads (1 per CPU, static)")):
            pts = [(c,) + nbody_speedup(ctx.by_key, impl, c) for c in cs]
            pts = [p for p in pts if p[1] is not None]
            if pts:
                ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                            yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                            marker="o", capsize=3, color=color, label=label)
        ax.plot([1, max(cs)], [1, max(cs)], "k--", label="ideal", linewidth=1)
        ax.set_xlabel("processors (vprocs / CPUs)")
        ax.set_ylabel("speedup over the sequential version")
        ax.set_xticks(cs)
        d = seq.ok_runs()[0]["data"]
        ax.set_title("Barnes-Hut N-body ([SA Fig. 2]): %s bodies, %d steps\n%s" % (
            format(d["n"], ","), d["steps"], pl.machine), fontsize=9)
        ax.legend()
        ax.grid(alpha=0.3)
        pl.save(fig, "nbody_speedup.png")


EXPERIMENT = NBody()
