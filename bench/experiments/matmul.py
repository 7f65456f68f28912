# SPDX-License-Identifier: MIT
"""Matrix multiply ([LWP] Figs. 4 and 5): run time against the matrix
size (4 threads), and against the thread count (512 x 512)."""
from harness.experiment import Experiment, cell, cpu_set, run_notes
from harness.fmt import Table, cpu_label, fmt_ns, fmt_ratio, vp_label
from harness.runner import Config
from harness.targets import Target, target_note


def matmul4096(by_key):
    a, b = by_key.get("matmul/fig5/ito/4"), by_key.get("matmul/fig5/ito/4096")
    v = b.median() / a.median() if a and b and a.median() and b.median() else None
    return {"value": v, "keys": ["matmul/fig5/ito/4", "matmul/fig5/ito/4096"]}


class MatMul(Experiment):
    name = "matmul"
    order = 130
    title = "Matrix multiply"
    source = "[LWP] Figs. 4 and 5 (matrix multiply)"
    summary = ("matrix multiply", "[LWP] Figs. 4, 5", "C = A x B in doubles; Fig. 4: 4 threads, size varied, "
               "1 CPU vs all; Fig. 5: 512 x 512, 1 to 4096 threads; results checked")
    programs = ("matmul",)
    targets = (Target("matmul4096", "matmul 512: 4096 threads within 10 % of 4 threads (ito)", "<=", 1.10, "x",
                      value=matmul4096),)
    notes = ("The time covers creating the threads, the multiplication and the joins. Thread t computes "
             "the t-th of T equal contiguous ranges of C's elements (whole rows while T <= n), each element "
             "a dot product with B stored transposed, so the work per element and its memory access do not "
             "change with T. Each result is verified by exact checksums.")

    def cpus_list(self, ncpu):
        """Fig. 4's processor counts: those of cpu_set up to the paper's 4 threads."""
        return [c for c in cpu_set(ncpu) if c <= 4]

    def configs(self, ctx):
        sizes = [128, 256, 384, 512, 768, 1024] if ctx.full else [128, 256, 512]
        reps, ncpu, exp = ctx.R(5, 9), ctx.ncpu, self.name
        cs = []
        for s in sizes:
            for c in self.cpus_list(ncpu):
                cs.append(Config(exp, "matmul/fig4/pthread/%d/%d" % (s, c), "pthread", "%d, %s" % (s, cpu_label(c)),
                                 "matmul", ["--impl", "pthread", "--cpus", c, "--n", s, "--threads", 4], c,
                                 "seconds", "ns", reps, scale=1e9, x=s, group="fig4", timeout=600))
                cs.append(Config(exp, "matmul/fig4/ito/%d/%d" % (s, c), "ito", "%d, %s" % (s, vp_label(c)),
                                 "matmul", ["--impl", "ito", "--cpus", c, "--n", s, "--threads", 4], c,
                                 "seconds", "ns", reps, scale=1e9, x=s, group="fig4", timeout=600,
                                 pair="matmul/fig4/pthread/%d/%d" % (s, c)))
        t = 1
        while t <= 4096:
            cs.append(Config(exp, "matmul/fig5/pthread/%d" % t, "pthread", "%d threads" % t, "matmul",
                             ["--impl", "pthread", "--cpus", ncpu, "--n", 512, "--threads", t], ncpu,
                             "seconds", "ns", reps, scale=1e9, x=t, group="fig5", timeout=600))
            cs.append(Config(exp, "matmul/fig5/ito/%d" % t, "ito", "%d threads" % t, "matmul",
                             ["--impl", "ito", "--cpus", ncpu, "--n", 512, "--threads", t], ncpu,
                             "seconds", "ns", reps, scale=1e9, x=t, group="fig5", timeout=600,
                             pair="matmul/fig5/pthread/%d" % t))
            t *= 2
        return cs

    def tables(self, ctx):
        by_key, ncpu = ctx.by_key, ctx.ncpu
        cpus_list = self.cpus_list(ncpu)
        sizes = sorted({c.x for c in self.cfgs if c.group == "fig4"})
        h4 = ["size"]
        for c in cpus_list:
            h4 += ["ito %s" % cpu_label(c), "pthread %s" % cpu_label(c), "pthread/ito"]
        if len(cpus_list) > 1:
            h4 += ["ito speedup"]
        r4, n4 = [], []
        for s in sizes:
            row = [s]
            for c in cpus_list:
                i, p = by_key.get("matmul/fig4/ito/%d/%d" % (s, c)), by_key.get("matmul/fig4/pthread/%d/%d" % (s, c))
                row += [fmt_ns(i.median()) if i else "-", fmt_ns(p.median()) if p else "-",
                        fmt_ratio(p.median() / i.median()) if i and p and i.median() and p.median() else "-"]
                for cfg in (i, p):
                    if cfg:
                        n4 += run_notes(cfg)
            if len(cpus_list) > 1:
                a, b = by_key.get("matmul/fig4/ito/%d/1" % s), by_key.get("matmul/fig4/ito/%d/%d" % (s, cpus_list[-1]))
                row.append("%.2fx" % (a.median() / b.median()) if a and b and a.median() and b.median() else "-")
            r4.append(row)
        where = "on %s" % ", ".join(cpu_label(c) for c in cpus_list) if ncpu > 1 else "on the only CPU"
        cap4 = "Fig. 4: 4 threads, run time vs matrix size, %s (ito on as many vprocs); medians" % where
        if len(cpus_list) > 1:
            cap4 += "; ito speedup: its time on 1 vproc / on %s" % vp_label(cpus_list[-1])

        h5 = ["threads", "ito (min-max)", "pthread (min-max)", "pthread/ito", "ito vs 4 threads"]
        r5, n5 = [], []
        ito4 = by_key.get("matmul/fig5/ito/4")
        for th in sorted({c.x for c in self.cfgs if c.group == "fig5"}):
            i, p = by_key.get("matmul/fig5/ito/%d" % th), by_key.get("matmul/fig5/pthread/%d" % th)
            im, pm = i.median() if i else None, p.median() if p else None
            rel = "%+.1f %%" % (100 * (im / ito4.median() - 1)) if ito4 and ito4.median() and im else "-"
            for cfg in (i, p):
                if cfg:
                    n5 += run_notes(cfg)
            r5.append([th, cell(i), cell(p), fmt_ratio(pm / im) if pm and im else "-", rel])
        n5.append(target_note(ctx.target("matmul4096"), "ito with 4096 threads within 10 % of 4 threads"))
        return [Table(h4, r4, cap4, n4),
                Table(h5, r5, "Fig. 5: 512 x 512, run time vs thread count, on %s" % cpu_label(ncpu), n5)]

    def plots(self, pl, ctx):
        ncpu, plt = ctx.ncpu, pl.plt
        f4 = [c for c in self.cfgs if c.group == "fig4"]
        if f4:
            fig, ax = plt.subplots(figsize=(6.4, 4.8))
            styles = {"ito": "-", "pthread": "--"}
            colors = {1: "tab:green", 2: "tab:blue", 4: "tab:purple"}
            for impl in ("ito", "pthread"):
                for c in sorted({x.cpus for x in f4}):
                    pts = sorted([x for x in f4 if x.impl == impl and x.cpus == c], key=lambda x: x.x)
                    pl.errorbar(ax, pts, 1e-9, linestyle=styles[impl], color=colors.get(c, "tab:red"),
                                label="%s, %s" % ("ito" if impl == "ito" else "POSIX threads",
                                                  vp_label(c) if impl == "ito" else cpu_label(c)))
            ax.set_yscale("log")
            ax.set_xlabel("matrix size n (n x n doubles)")
            ax.set_ylabel("run time (s, log scale)")
            ax.set_title("Matrix multiply with 4 threads ([LWP Fig. 4])\n" + pl.machine, fontsize=9)
            ax.legend()
            ax.grid(alpha=0.3, which="both")
            pl.save(fig, "matmul_size.png")
        f5 = [c for c in self.cfgs if c.group == "fig5"]
        if f5:
            fig, ax = plt.subplots(figsize=(6.4, 4.8))
            for impl, color, label in (("ito", "tab:blue", "ito"), ("pthread", "tab:orange", "POSIX threads")):
                pl.errorbar(ax, sorted([x for x in f5 if x.impl == impl], key=lambda x: x.x), 1e-9,
                            color=color, label=label)
            i4 = ctx.by_key.get("matmul/fig5/ito/4")
            if i4 and i4.median():
                ax.axhline(i4.median() * 1.1 / 1e9, color="tab:blue", linestyle=":", linewidth=1,
                           label="target: ito 4 threads + 10 %")
            ax.set_xscale("log", base=2)
            ticks = sorted({x.x for x in f5})
            ax.set_xticks(ticks)
            ax.set_xticklabels([str(t) for t in ticks], fontsize=8)
            ax.minorticks_off()
            ax.set_xlabel("threads")
            ax.set_ylabel("run time (s)")
            ax.set_ylim(bottom=0)
            ax.set_title("Matrix multiply 512 x 512 vs thread count ([LWP Fig. 5]), %s\n%s" % (
                cpu_label(ncpu), pl.machine), fontsize=9)
            ax.legend()
            ax.grid(alpha=0.3, which="both")
            pl.save(fig, "matmul_threads.png")


EXPERIMENT = MatMul()
