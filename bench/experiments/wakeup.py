# SPDX-License-Identifier: MIT
"""Wake-up latency (issue 22, item 1; [SA section 1.2]): how soon a thread
made ready runs while other threads compute -- a most-urgent thread under
prio and prio-shared by every path that makes a thread ready, sleep timers and
semaphore wake-ups beside busy threads under every policy, and round robin
among threads of one priority."""
from harness.experiment import Experiment, run_notes
from harness.fmt import Table, fmt_cell, fmt_ratio, fmt_us, plural
from harness.runner import Config
from harness.targets import Target, met_str

POLICIES = ("ws", "fifo", "affinity", "prio", "prio-shared")
PRIO_POLICIES = ("prio", "prio-shared")
# path: (what makes the urgent thread ready, POSIX threads measure it too)
PATHS = (("sem", "ito_sem_post from a computing ito thread", True),
         ("cond", "ito_cond_signal from a computing ito thread", True),
         ("timer", "its own ito_sleep_ns (0.5-1.5 ms) ends: wake time - deadline", True),
         ("io", "ito_read on a pipe completes (a foreign pthread writes)", True),
         ("foreign", "ito_sem_post from a pthread ito did not create", True),
         ("spawn", "ito_spawn by a computing ito thread: to its first instruction", False),
         ("raise", "ito_set_priority(MAX), by a computing ito thread, of a priority-0 thread that computes "
          "too (V + 1 of them on V vprocs) while a slice has it waiting in a ready queue", False),
         ("raise-foreign", "the same call from a pthread ito did not create", False))
URGENT_P99_US = 100          # issue 22: "runs within 100 us (p99) ... by every path"
TIMER_P99_US = 1000          # issue 22: "a due timer fires within 1 ms (p99) while busy threads run"
RR_THREADS = 4
RR_SLICES_US = (10000, 2000)  # the default slice, and a short one (below two ticks of a 250 Hz kernel)


def rr_key(pol, slice_us):
    return "wakeup/rr/%s" % pol if slice_us == RR_SLICES_US[0] else "wakeup/rr/%s/%dus" % (pol, slice_us)


def busy_kinds(full):
    """none: no busy threads; spin: 2 x CPUs that never call ito; park / yield:
    2 x CPUs that compute in short bursts and park (a semaphore ring) or yield."""
    return ("none", "spin", "park", "yield") if full else ("none", "spin", "park")


def p99(cfg):
    return cfg.field_stats("p99_us")[0] if cfg else None


def worst(by_key, keys):
    """The largest median p99 among the configurations, and which it is."""
    got = [(p99(by_key.get(k)), k) for k in keys if by_key.get(k) and p99(by_key.get(k)) is not None]
    if not got:
        return {"value": None, "keys": keys}
    v, k = max(got)
    return {"value": v, "keys": keys, "note": "worst: %s" % k.split("/", 2)[2]}


def urgent_target(pol):
    keys = ["wakeup/urgent/%s/%s" % (pol, p) for p, _, _ in PATHS]
    return Target("wakeup_urgent_%s" % pol.replace("-", "_"),
                  "%s: a most-urgent thread made ready while least-urgent ones compute runs within 100 us, p99, "
                  "by every path (the worst path's median p99)" % pol, "<=", URGENT_P99_US, "us",
                  value=lambda by_key: worst(by_key, keys), keys=keys)


def timer_target(pol):
    def value(by_key):
        keys = [c.key for c in by_key.values() if c.exp == "wakeup" and c.group == "timer" and
                c.env.get("ITO_POLICY") == pol and not c.key.endswith("/none")]
        return worst(by_key, keys)
    return Target("wakeup_timer_%s" % pol.replace("-", "_"),
                  "%s: a due timer fires within 1 ms, p99, while busy threads run (the worst kind of busy "
                  "threads)" % pol, "<=", TIMER_P99_US, "us", value=value,
                  keys=["wakeup/timer/%s/spin" % pol, "wakeup/timer/%s/park" % pol])


def rr_target(pol, slice_us):
    key = rr_key(pol, slice_us)

    def value(by_key):
        c = by_key.get(key)
        return {"value": c.field_stats("gap_over_bound")[0] if c else None, "keys": [key]}
    name = "wakeup_rr_%s" % pol.replace("-", "_")
    if slice_us != RR_SLICES_US[0]:
        name += "_%dus" % slice_us
    return Target(name, "%s: %d threads of one priority on one vproc, slices of %d us: the longest wait between two "
                  "runs of one of them <= %d x the slice (round robin within one slice per ready thread)" % (
                      pol, RR_THREADS, slice_us, RR_THREADS),
                  "<=", 1.0, "x", value=value, keys=[key], show="<= N x slice")


def fmt_rate(v):
    if v is None:
        return "-"
    if v >= 1e6:
        return "%.2f M" % (v / 1e6)
    if v >= 1e3:
        return "%.1f k" % (v / 1e3)
    return "%.0f" % v


def p99_cell(c):
    return fmt_cell(*c.stats(), "us") if c and c.median() is not None else "-"


def field(c, name, fmt=fmt_us):
    v = c.field_stats(name)[0] if c else None
    return fmt(v) if v is not None else "-"


def samples_cell(c):
    """Median samples per run; '*' where runs ended at their time limit first."""
    if not c or not c.used_runs():
        return "-"
    n = c.field_stats("samples")[0]
    lim = any(r["data"].get("time_limited") for r in c.used_runs())
    return "%d%s" % (n, "*" if lim else "")


def verdict(c, limit):
    v = p99(c)
    return "" if v is None else ("MET" if v <= limit else "NOT MET")


def censored_note(cfgs):
    """The configurations whose p99 a wake-up still outstanding at the end of the window reached."""
    cen = ["%s %s" % (c.impl, c.label) for c in cfgs
           if any(r["data"].get("censored") and r["data"].get("censored_max_us", 0) >= r["data"].get(
               "p99_us", r["data"].get("p99_gap_ms", 0) * 1e3) for r in c.used_runs())]
    return ("a wake-up still outstanding when the window closed counts as a sample of the time it had waited "
            "(a lower bound), and reached the p99 in: " + "; ".join(cen)) if cen else ""


class Wakeup(Experiment):
    name = "wakeup"
    order = 185
    title = "Wake-up latency: urgent threads by every path, timers and wake-ups beside busy threads, round robin"
    source = "issue 22 (ito's own), [SA section 1.2] (an urgent thread made ready runs at once)"
    summary = ("wake-up latency", "ito (issue 22), [SA section 1.2]",
               "from the event that makes a thread ready to it running: a most-urgent thread while least-urgent "
               "ones compute on every vproc (prio, prio-shared; per path); sleep-timer lateness and semaphore "
               "round trips beside busy threads (every policy); the longest wait among equal-priority threads")
    programs = ("wakeup",)
    targets = tuple([urgent_target(p) for p in PRIO_POLICIES] + [timer_target(p) for p in POLICIES] +
                    [rr_target(p, us) for us in RR_SLICES_US for p in PRIO_POLICIES])
    notes = ("Every run measures for a fixed window after a 30 ms warm-up (urgent: or until its sample count), "
             "then stops its busy threads: a watchdog pthread closes the window whatever the scheduler does, so a "
             "defect makes samples rare (the `samples` column; `*`: the window ended before the count was "
             "reached), never a hang. Urgent: every CPU runs a priority-0 thread that computes and never calls "
             "ito (POSIX threads: nice 19, pinned); the most-urgent thread (ITO_PRIO_MAX; nice 0) is made ready "
             "0.5-1.5 ms after it took the previous event. Timer: 4 sleepers of 0.5-1.5 ms beside 2 x CPUs busy "
             "threads at the default priority (spin: never call ito; park: pass V+1 tokens round a ring of "
             "semaphores computing 50 us with each; yield: 20 us then ito_yield). Wake: a semaphore ping-pong "
             "pair beside 2 x CPUs spinning threads (warmed up for 30 ms: they have run whole slices). "
             "Round robin: %d threads of priority 15 on one vproc with ITO_TIMESLICE_US=%s, each noting every "
             "gap of more than 50 us in its own progress (POSIX threads: pinned to one CPU, the kernel's "
             "slices); the kernel looks at CPU-time timers only at its own tick, so ito's slices are whole ticks "
             "and the bound is out of reach for a slice shorter than two ticks. ito runs in an allocation domain of its own (ITO_ALLOC_DOMAIN), so that other ito processes "
             "on the machine do not take its processors. Percentiles are each run's; the tables give their "
             "medians over the runs." % (
                 RR_THREADS, " and ".join(str(us) for us in RR_SLICES_US)))

    def configs(self, ctx):
        R, exp, ncpu, full = ctx.R, self.name, ctx.ncpu, ctx.full
        cs = []
        # -- a most-urgent thread made ready by each path (prio, prio-shared; POSIX threads where they have it)
        u = ["--mode", "urgent", "--cpus", ncpu, "--samples", 1000 if full else 100, "--ms", 3000 if full else 300]
        for path, _, posix in PATHS:
            pk = "wakeup/urgent/pthread/%s" % path
            if posix:
                cs.append(Config(exp, pk, "pthread", "%s, nice 0 woken, nice 19 spinning" % path, "wakeup",
                                 ["--impl", "pthread", "--path", path] + u, ncpu, "p99_us", "us", R(3, 5),
                                 group="urgent", x=path, timeout=60))
            for pol in PRIO_POLICIES:
                cs.append(Config(exp, "wakeup/urgent/%s/%s" % (pol, path), "ito", "%s, %s" % (path, pol), "wakeup",
                                 ["--impl", "ito", "--path", path] + u, ncpu, "p99_us", "us", R(3, 5),
                                 group="urgent", x=path, timeout=60, pair=pk if posix else None,
                                 env={"ITO_POLICY": pol}))
        # -- sleep-timer lateness, every policy, with and without busy threads
        t = ["--mode", "timer", "--cpus", ncpu, "--ms", 1000 if full else 250]
        for kind in busy_kinds(full):
            b = ["--busy", 0] if kind == "none" else ["--busy", 2 * ncpu, "--busy-kind", kind]
            pk = "wakeup/timer/pthread/%s" % kind
            cs.append(Config(exp, pk, "pthread", "busy: %s" % kind, "wakeup", ["--impl", "pthread"] + t + b, ncpu,
                             "p99_us", "us", R(3, 5), group="timer", x=kind, timeout=60))
            for pol in POLICIES:
                cs.append(Config(exp, "wakeup/timer/%s/%s" % (pol, kind), "ito", "busy: %s, %s" % (kind, pol),
                                 "wakeup", ["--impl", "ito"] + t + b, ncpu, "p99_us", "us", R(3, 5), group="timer",
                                 x=kind, timeout=60, pair=pk, env={"ITO_POLICY": pol}))
        # -- semaphore ping-pong, every policy, with and without busy threads
        w = ["--mode", "wake", "--cpus", ncpu, "--ms", 1000 if full else 250]
        for kind in ("none", "spin"):
            b = ["--busy", 0] if kind == "none" else ["--busy", 2 * ncpu, "--busy-kind", "spin"]
            pk = "wakeup/wake/pthread/%s" % kind
            cs.append(Config(exp, pk, "pthread", "busy: %s" % kind, "wakeup", ["--impl", "pthread"] + w + b, ncpu,
                             "p99_us", "us", R(3, 5), group="wake", x=kind, timeout=60))
            for pol in POLICIES:
                cs.append(Config(exp, "wakeup/wake/%s/%s" % (pol, kind), "ito", "busy: %s, %s" % (kind, pol),
                                 "wakeup", ["--impl", "ito"] + w + b, ncpu, "p99_us", "us", R(3, 5), group="wake",
                                 x=kind, timeout=60, pair=pk, env={"ITO_POLICY": pol}))
        # -- round robin among equals on one vproc
        r = ["--mode", "rr", "--threads", RR_THREADS, "--ms", 1000 if full else 300]
        pk = "wakeup/rr/pthread"
        cs.append(Config(exp, pk, "pthread", "%d threads, 1 CPU" % RR_THREADS, "wakeup", ["--impl", "pthread"] + r,
                         1, "max_gap_ms", "ns", R(3, 5), scale=1e6, group="rr", timeout=60))
        for us in RR_SLICES_US:
            for pol in PRIO_POLICIES:
                cs.append(Config(exp, rr_key(pol, us), "ito", "%d threads, 1 vproc, %s, %d us slices" % (
                    RR_THREADS, pol, us), "wakeup", ["--impl", "ito"] + r, 1, "max_gap_ms", "ns", R(3, 5),
                    scale=1e6, group="rr", timeout=60, pair=pk,
                    env={"ITO_POLICY": pol, "ITO_TIMESLICE_US": str(us)}))
        return cs

    # ------------------------------------------------------------------ tables
    def by(self, ctx, key):
        return ctx.by_key.get(key)

    def urgent_table(self, ctx):
        headers = ["path", "policy", "p50", "p99 (min-max)", "samples", "POSIX p99", "pthread/ito", "p99<=100us"]
        rows, notes = [], []
        for path, what, posix in PATHS:
            pc = self.by(ctx, "wakeup/urgent/pthread/%s" % path)
            for pol in PRIO_POLICIES:
                c = self.by(ctx, "wakeup/urgent/%s/%s" % (pol, path))
                if not c:
                    continue
                r = p99(pc) / p99(c) if pc and p99(pc) and p99(c) else None
                rows.append([path, pol, field(c, "p50_us"), p99_cell(c), samples_cell(c),
                             field(pc, "p99_us") if posix else "", fmt_ratio(r) if r else "",
                             verdict(c, URGENT_P99_US)])
                notes += run_notes(c)
                if path.startswith("raise"):
                    tn = c.field_stats("raced")[0]
                    if tn:
                        notes.append("%s, %s: %d raises (median) found the thread running after all (not "
                                     "samples)" % (path, pol, tn))
            if pc:
                notes += run_notes(pc)
        notes.insert(0, "paths: " + "; ".join("%s: %s" % (p, w) for p, w, _ in PATHS))
        pt = [c for c in self.cfgs if c.group == "urgent" and c.impl == "pthread"]
        if pt:
            notes.insert(1, "POSIX threads: the same with sem_t, pthread_cond_t, clock_nanosleep, read and sem_post "
                         "from a separate pthread; they have no spawn-to-urgent or raise counterpart here")
        notes.append(censored_note([c for c in self.cfgs if c.group == "urgent"]))
        return Table(headers, rows, "A most-urgent thread made ready while a least-urgent thread computes on every "
                     "vproc (%s): from the event to it running; medians over the runs of each run's p50 and p99 "
                     "(samples: median per run; *: the window ended first)" % plural(ctx.ncpu, "vproc", "vprocs"),
                     notes)

    def timer_table(self, ctx):
        headers = ["busy threads", "policy", "p50", "p99 (min-max)", "max", "sleeps/s", "pthread/ito", "target"]
        rows, notes = [], []
        for kind in busy_kinds(ctx.full):
            for pol in ("pthread",) + POLICIES:
                c = self.by(ctx, "wakeup/timer/%s/%s" % (pol, kind))
                if not c:
                    continue
                pc = self.by(ctx, c.pair) if c.pair else None
                r = p99(pc) / p99(c) if pc and p99(pc) and p99(c) else None
                tgt = "" if kind == "none" or pol == "pthread" else "<= 1 ms: " + verdict(c, TIMER_P99_US)
                rows.append([kind if kind == "none" else "%s (%d)" % (kind, 2 * ctx.ncpu),
                             "POSIX threads" if pol == "pthread" else pol, field(c, "p50_us"), p99_cell(c),
                             field(c, "max_us"), field(c, "sleeps_per_s", fmt_rate), fmt_ratio(r) if r else "", tgt])
                notes += run_notes(c)
        d = next((r["data"] for c in self.cfgs if c.group == "timer" for r in c.ok_runs()), {})
        if d:
            notes.insert(0, "sleeps/s: all sleepers together; without delays about %s" %
                         fmt_rate(d.get("ideal_sleeps_per_s")))
        notes.append(censored_note([c for c in self.cfgs if c.group == "timer"]))
        return Table(headers, rows, "Sleep-timer lateness (wake time - deadline) of 4 sleepers of 0.5-1.5 ms beside "
                     "busy threads at the same priority, every policy; POSIX threads: clock_nanosleep", notes)

    def wake_table(self, ctx):
        headers = ["policy", "idle: p50", "p99", "trips/s", "busy: p50", "p99 (min-max)", "trips/s", "pthread/ito"]
        rows, notes = [], []
        for pol in ("pthread",) + POLICIES:
            a = self.by(ctx, "wakeup/wake/%s/none" % pol)
            b = self.by(ctx, "wakeup/wake/%s/spin" % pol)
            if not a and not b:
                continue
            pb = self.by(ctx, "wakeup/wake/pthread/spin")
            r = p99(pb) / p99(b) if pol != "pthread" and pb and p99(pb) and p99(b) else None
            rows.append(["POSIX threads" if pol == "pthread" else pol, field(a, "p50_us"), field(a, "p99_us"),
                         field(a, "round_trips_per_s", fmt_rate), field(b, "p50_us"), p99_cell(b),
                         field(b, "round_trips_per_s", fmt_rate), fmt_ratio(r) if r else ""])
            for c in (a, b):
                if c:
                    notes += run_notes(c)
        notes.append(censored_note([c for c in self.cfgs if c.group == "wake"]))
        return Table(headers, rows, "Semaphore ping-pong round trips (post, then wait for the answer), alone (idle) "
                     "and beside %d threads that compute and never call ito (busy); pthread/ito: busy p99" % (
                         2 * ctx.ncpu), notes)

    def rr_table(self, ctx):
        headers = ["policy", "slice", "kernel tick", "longest wait (min-max)", "p50 wait", "p99 wait", "N x slice",
                   "shares", "target"]
        rows, notes = [], []
        ms = lambda v: fmt_us(v * 1e3)   # noqa: E731
        for pol, us in [("pthread", 0)] + [(p, us) for us in RR_SLICES_US for p in PRIO_POLICIES]:
            c = self.by(ctx, "wakeup/rr/pthread" if pol == "pthread" else rr_key(pol, us))
            if not c:
                continue
            bound = c.field_stats("bound_ms")[0]
            tick = c.field_stats("cpu_timer_tick_ms")[0]
            lo, hi = c.field_stats("min_share")[0], c.field_stats("max_share")[0]
            t = None
            if pol != "pthread":
                t = ctx.target("wakeup_rr_%s" % pol.replace("-", "_") +
                               ("" if us == RR_SLICES_US[0] else "_%dus" % us))
            rows.append(["POSIX threads" if pol == "pthread" else pol, ms(us / 1e3) if us else "kernel's",
                         ms(tick) if tick else "-",
                         fmt_cell(*c.stats()) if c.median() is not None else "-", field(c, "p50_gap_ms", ms),
                         field(c, "p99_gap_ms", ms), ms(bound) if bound else "-",
                         "%.0f-%.0f %%" % (100 * lo, 100 * hi) if lo is not None else "-",
                         "<= N x slice: %s" % met_str(t) if t else ""])
            notes += run_notes(c)
        notes.insert(0, "kernel tick: how often the kernel looked at CPU-time timers (measured by each run); ito's "
                     "slices are whole ticks, so with a slice shorter than two ticks a slice is one tick")
        notes.insert(0, "shares: the least and the most CPU time one thread got in the window, of the whole")
        notes.append(censored_note([c for c in self.cfgs if c.group == "rr"]))
        return Table(headers, rows, "Round robin among N = %d threads of one priority on one vproc (POSIX threads: "
                     "on one CPU, nice 0): the longest any thread waited between two runs, median over the runs" % (
                         RR_THREADS), notes)

    def tables(self, ctx):
        return [self.urgent_table(ctx), self.timer_table(ctx), self.wake_table(ctx), self.rr_table(ctx)]

    # ------------------------------------------------------------------- plot
    def plots(self, pl, ctx):
        if not any(c.median() for c in self.cfgs):
            return
        fig, axs = pl.plt.subplots(1, 3, figsize=(16, 4.8), gridspec_kw={"width_ratios": [3, 3, 2]})
        colors = {"pthread": "tab:orange", "ws": "tab:blue", "fifo": "tab:green", "affinity": "tab:purple",
                  "prio": "tab:red", "prio-shared": "tab:brown"}

        def bars(ax, groups, series, key, limit, title):
            w = 0.8 / len(series)
            for j, s in enumerate(series):
                label = "POSIX threads" if s == "pthread" else s
                for i, g in enumerate(groups):
                    c = ctx.by_key.get(key % (s, g))
                    if not c or c.median() is None:
                        continue
                    m, lo, hi = c.stats()
                    ax.bar([i + (j - (len(series) - 1) / 2) * w], [m], w, yerr=[[m - lo], [hi - m]], capsize=2,
                           color=colors[s], label=label)
                    label = None
            ax.axhline(limit, color="black", linestyle="--", linewidth=1)
            ax.set_yscale("log")
            ax.set_xticks(range(len(groups)))
            ax.set_xticklabels([g.replace("-", "-\n") for g in groups], fontsize=8)
            ax.set_title(title, fontsize=9)
            ax.grid(axis="y", which="both", alpha=0.3)
            ax.legend(fontsize=7)

        bars(axs[0], [p for p, _, _ in PATHS], ("pthread",) + PRIO_POLICIES, "wakeup/urgent/%s/%s", URGENT_P99_US,
             "most-urgent thread made ready, per path: p99 (us)\ndashed: the 100 us target")
        bars(axs[1], list(busy_kinds(ctx.full)), ("pthread",) + POLICIES, "wakeup/timer/%s/%s", TIMER_P99_US,
             "sleep-timer lateness p99 (us) by busy threads\ndashed: the 1 ms target")
        bars(axs[2], ["none", "spin"], ("pthread",) + POLICIES, "wakeup/wake/%s/%s", TIMER_P99_US,
             "semaphore round trip p99 (us), alone / busy\ndashed: 1 ms")
        axs[0].set_ylabel("microseconds (median of the runs' p99, min-max; log)")
        fig.suptitle("Wake-up latency while threads compute\n" + pl.machine, fontsize=10, y=1.04)
        pl.save(fig, "wakeup.png")


EXPERIMENT = Wakeup()
