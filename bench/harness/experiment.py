# SPDX-License-Identifier: MIT
"""The experiment interface, and finding the experiments.

An experiment is an object of a subclass of Experiment, exported by a module
of bench/experiments/ as EXPERIMENT (or several as EXPERIMENTS). It holds
everything about its measurement: its configurations (the command lines and
how often to run them, quick and --full), its targets, a check of the results
across runs, its tables, its plots and the notes the report prints below
them. run.py finds every module of bench/experiments/ and orders the
experiments by `order`."""
import importlib
import os
import pkgutil
import statistics

from harness.fmt import Table, fmt_cell, fmt_ratio, fmt_range, fmt_val
from harness.stats import pair_ratio
from harness.targets import not_run, target_cell


class Context:
    """What a run of the suite knows: the machine, the options, every
    configuration so far (by_key) and the targets evaluated so far."""

    def __init__(self, ncpu, full, reps, build, env, affinity, prog):
        self.ncpu, self.full, self.reps_override = ncpu, full, reps
        self.build, self.env, self.affinity, self.prog = build, env, affinity, prog
        self.by_key = {}
        self.targets = {}

    def R(self, quick, full):
        """Repetitions: --reps, else the quick or the --full count."""
        return self.reps_override or (full if self.full else quick)

    def target(self, tid):
        return self.targets.get(tid)

    def target_of(self, key):
        """The evaluated target read from configuration `key`, if any."""
        return next((t for t in self.targets.values() if t.get("key") == key), None)


class Experiment:
    name = ""           # for --only
    order = 0           # place in the suite and the report
    title = ""
    source = ""         # what it reproduces
    summary = None      # (name, reproduces, what one measurement is): the report's overview
    programs = ()       # the programs of <build>/bench/ it runs
    notes = ""          # the paragraph below its tables in the report
    targets = ()        # Target objects

    def __init__(self):
        self.cfgs = []
        self.pngs = []
        self.table_list = []

    # -- configurations and runs
    def configs(self, ctx):
        """The configurations to run (runner.Config), in the order of a round."""
        return []

    def prepare(self, ctx):
        """Just before the runs: may rebuild self.cfgs (returns True if it did)."""
        return False

    def check(self, ctx):
        """After the runs: mark the runs whose results are wrong as failed."""

    # -- targets
    def evaluate(self, ctx, ran):
        return [t.evaluate(self.name, ctx.by_key) if ran else not_run(self.name, t) for t in self.targets]

    # -- tables: a list of harness.fmt.Table
    def tables(self, ctx):
        return [config_table(self, ctx, self.cfgs)]

    def row_notes(self, cfg, used):
        """Notes on one configuration beyond the generic ones (a list of strings)."""
        return []

    # -- plots
    def plots(self, pl, ctx):
        """Draw with pl (harness.plot.Plotter); pl.save() records the files."""

    def micro_bars(self, ctx):
        """Bars for the microbenchmark plot: [(label, ito config, pthread config)]."""
        return []


def discover():
    """Every experiment in bench/experiments/, in order."""
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "experiments")
    found = []
    for m in sorted(pkgutil.iter_modules([here]), key=lambda m: m.name):
        if m.name.startswith("_"):
            continue
        mod = importlib.import_module("experiments." + m.name)
        found += list(getattr(mod, "EXPERIMENTS", [])) + (
            [mod.EXPERIMENT] if hasattr(mod, "EXPERIMENT") else [])
    names = [e.name for e in found]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SystemExit("run.py: experiment names defined twice: %s" % ", ".join(sorted(dup)))
    return sorted(found, key=lambda e: (e.order, e.name))


# --------------------------------------------------------------------------
# the generic table: one row per configuration

def reps_str(cfg):
    """runs used / runs made."""
    return "%d/%d" % (len(cfg.used_runs()), len(cfg.runs))


def disturbed_str(cfg):
    ok = cfg.ok_runs()
    nq = len(cfg.quiet_runs())
    if nq == len(ok):
        return ""
    used = cfg.used_runs()
    if len(used) == nq:
        return "%d loaded set aside" % (len(ok) - nq)
    worst = max(cfg.load(r) for r in used)
    return "LOADED: %d least-loaded of %d runs used (up to %.0f%% of their CPUs taken)" % (
        len(used), len(ok), 100 * worst)


def status_str(cfg):
    f = cfg.failures()
    if not f:
        return ""
    return "FAILED %d/%d: %s" % (len(f), len(cfg.runs), f[0]["error"])


def run_notes(cfg, who=None):
    """A configuration's failures and load, "who: ..." each."""
    who = who or "%s %s" % (cfg.impl, cfg.label)
    return ["%s: %s" % (who, s) for s in (cfg.skipped() and "skipped: " + cfg.skipped(), status_str(cfg),
                                          disturbed_str(cfg)) if s]


def generic_notes(exp, cfg):
    """Load, limits and ito's counters of one configuration, plus the experiment's own notes."""
    notes = []
    ok = cfg.used_runs()
    if not ok:
        return notes
    if disturbed_str(cfg):
        notes.append(disturbed_str(cfg))
    d = ok[-1]["data"]
    lim = [r["data"] for r in ok if r["data"].get("limited")]
    if lim or getattr(exp, "count_note", False):
        counts = sorted({r["data"].get("count") for r in ok})
        s = "count " + "/".join(format(c, ",") for c in counts if c is not None)
        if lim:
            s += " (limited from %s: %s)" % (format(lim[0]["requested"], ","), lim[0].get("limit_reason", ""))
        notes.append(s)
    notes += exp.row_notes(cfg, ok)
    if cfg.impl == "ito" and d.get("io_uring") is False:
        notes.append("io_uring OFF: plain blocking calls")
    if cfg.impl == "ito" and "switches" in d:
        ops = d.get("n", d.get("count"))
        if ops:
            notes.append("switches/op %.2f" % statistics.median([r["data"]["switches"] / ops for r in ok]))
    if cfg.impl == "ito" and "steals" in d and not getattr(exp, "no_steals_note", False):
        notes.append("steals %d" % statistics.median([r["data"].get("steals", 0) for r in ok]))
    return notes


def config_table(exp, ctx, cfgs, caption=""):
    """configuration, impl, CPUs, median, min - max, reps, pthread/ito, target;
    the notes of each configuration below the table."""
    headers = ["configuration", "impl", "CPUs", "median", "min - max", "reps", "pthread/ito", "target"]
    rows, notes = [], []
    for c in cfgs:
        med, lo, hi = c.stats()
        r = pair_ratio(ctx.by_key, c)
        rows.append([c.label, c.impl, c.cpus, fmt_val(med, c.unit), fmt_range(lo, hi, c.unit), reps_str(c),
                     fmt_ratio(r) if r else "", target_cell(ctx.target_of(c.key))])
        n = ([status_str(c)] if status_str(c) else []) + generic_notes(exp, c)
        if n:
            notes.append("%s, %s: %s" % (c.impl, c.label, "; ".join(n)))
    return Table(headers, rows, caption, notes).drop_empty("pthread/ito", "target")


def cell(cfg, unit="ns"):
    """A configuration's median (min-max), or "-"."""
    return fmt_cell(*cfg.stats(), unit) if cfg and cfg.median() is not None else "-"


def pair_bars(ctx, cfgs, name):
    """micro_bars for the ito configurations with a measured pair: name(cfg) labels each."""
    out = []
    for c in cfgs:
        p = ctx.by_key.get(c.pair) if c.pair else None
        if c.impl == "ito" and p and c.median() and p.median():
            out.append((name(c), c, p))
    return out


def cpu_steps(ncpu, full):
    """Processor counts for scaling curves: all of them on small machines,
    powers of two and the total on large ones."""
    limit = 16 if full else 4
    if ncpu <= limit:
        return list(range(1, ncpu + 1))
    s, p = [], 1
    while p < ncpu:
        s.append(p)
        p *= 2
    s.append(ncpu)
    return s


def cpu_set(ncpu):
    """1, 2 (the targets are stated for 2), every power of two up to ncpu,
    and all CPUs: the processor counts of every scaling experiment."""
    s, p = {ncpu}, 1
    while p < ncpu:
        s.add(p)
        p *= 2
    return sorted(s)


def first_data(cfgs):
    """The JSON of the first successful run among the configurations, or {}."""
    return next((r["data"] for c in cfgs if c for r in c.ok_runs()), {})
