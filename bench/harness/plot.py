# SPDX-License-Identifier: MIT
"""Plots: matplotlib (Agg) and what every plot shares."""
import os

from harness.fmt import cpu_label


class Plotter:
    """plt: matplotlib.pyplot; machine: the line every title ends with;
    save(fig, name) writes <report>/name and records it for the report."""

    def __init__(self, plt, report, cpu_model, ncpu):
        self.plt = plt
        self.report = report
        self.machine = "%s, %s" % (cpu_model, cpu_label(ncpu))
        self.made = []

    def save(self, fig, name):
        fig.savefig(os.path.join(self.report, name), dpi=110, bbox_inches="tight")
        self.plt.close(fig)
        self.made.append(name)
        return name

    @staticmethod
    def err(cfg, scale=1.0):
        """median, and its distances to min and max, scaled (for error bars)."""
        m, lo, hi = cfg.stats()
        return m * scale, (m - lo) * scale, (hi - m) * scale

    def errorbar(self, ax, cfgs, scale=1.0, **kw):
        """One line through the configurations' medians at their x, min-max bars."""
        cfgs = [c for c in cfgs if c.median() is not None]
        if cfgs:
            e = [self.err(c, scale) for c in cfgs]
            ax.errorbar([c.x for c in cfgs], [v for v, _, _ in e], yerr=[[a for _, a, _ in e], [b for _, _, b in e]],
                        marker="o", capsize=3, **kw)


def load_matplotlib():
    """(pyplot, None) or (None, why not)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return None, "matplotlib is not available (%s): no plots" % e
    return plt, None


def micro_plot(pl, bars):
    """Microbenchmarks: log-scale bars, ito vs POSIX threads; bars from every
    experiment's micro_bars(). Returns the file name, or None."""
    if not bars:
        return None
    from harness.fmt import fmt_ratio
    plt = pl.plt
    fig, ax = plt.subplots(figsize=(max(7, 1.25 * len(bars)), 4.8))
    xs = list(range(len(bars)))
    w = 0.38
    for off, idx, label, color in ((-w / 2, 1, "ito", "tab:blue"), (w / 2, 2, "POSIX threads", "tab:orange")):
        e = [pl.err(b[idx]) for b in bars]
        ax.bar([x + off for x in xs], [v for v, _, _ in e], w, yerr=[[a for _, a, _ in e], [b for _, _, b in e]],
               capsize=3, label=label, color=color)
    for x, b in zip(xs, bars):
        ax.text(x, b[2].median() * 1.4, fmt_ratio(b[2].median() / b[1].median()), ha="center", fontsize=8)
    ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xticklabels([b[0] for b in bars], fontsize=8)
    ax.set_ylabel("time per operation (ns, log scale)")
    ax.set_title("Microbenchmarks: ito vs POSIX threads (median, min-max; label: pthread/ito)\n" + pl.machine,
                 fontsize=9)
    ax.legend()
    ax.grid(axis="y", which="both", alpha=0.3)
    return pl.save(fig, "micro.png")
