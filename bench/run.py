#!/usr/bin/env python3
"""ito benchmark driver: runs the programs of bench/, prints a table per
experiment, writes <report>/REPORT.md, <report>/results.json and PNG plots.

    python3 bench/run.py --build build/release --report report [--full]
                         [--only EXP[,EXP...]] [--reps N]

Each program run is one measurement of one implementation and prints one JSON
object (bench/README.md). This script repeats every configuration (rounds of
all configurations of an experiment, so that slow drifts of a shared machine
hit every configuration alike), takes the median and min-max, puts each ito
figure beside the POSIX-threads figure measured in the same run (as the ratio
pthread/ito: how many times ito is faster, or smaller), and checks the
targets of the issue. A crash, a time-out, a failed verification or a
mismatch with the sequential N-body result is shown in the tables and makes
the script exit with status 1 at the end.

Python standard library plus matplotlib (Agg backend) for the plots; without
matplotlib the report is written without plots and the run fails.
"""
import argparse
import datetime
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

EXPERIMENTS = ["nullfork", "forkmany", "fork1000", "yield", "signalwait", "kpingpong", "handoff", "nbody", "fig3",
               "table5", "realloc", "procprio", "matmul", "memory", "echo", "sumthreads", "decision", "priorities",
               "groups"]

TITLES = {
    "nullfork": "Null fork: create + join of an empty thread",
    "forkmany": "Fork many: create 100,000 threads, then join them all",
    "fork1000": "1,000 forks: create 1,000 threads, then join them all",
    "yield": "Yield: 100,000 yields between two threads on one processor",
    "signalwait": "Signal-wait: mutex + condition ping-pong, round trip",
    "kpingpong": "Signal-wait through the kernel: blocking read/write ping-pong, round trip",
    "handoff": "Hand-off: a processor lost to a blocked kernel call, until another thread runs on it",
    "nbody": "Barnes-Hut N-body: speedup vs processors",
    "fig3": "N-body behind a buffer cache: run time vs the share of the data in memory",
    "table5": "Two N-body programs at once: space sharing vs time sharing",
    "realloc": "Reallocation: from a process's hint to the processor changing hands",
    "procprio": "Unequal priorities: a high-priority program beside a low-priority one",
    "matmul": "Matrix multiply",
    "memory": "Memory: resident memory per blocked thread",
    "echo": "Echo server: one thread per connection, closed-loop load",
    "sumthreads": "Spawn T threads that each sum n integers, collect the sums (per policy)",
    "decision": "Cost of one scheduling decision vs the number of ready threads (1 vproc)",
    "priorities": "Priorities: CPU shares, and waking an urgent thread while every vproc computes",
    "groups": "Thread groups: threads sharing data under fifo, ws, affinity with and without groups",
}

SOURCES = {
    "nullfork": "seed 000 Table 4 (null fork)",
    "forkmany": "seed 000 / 003 (thread creation in bulk)",
    "fork1000": "seed 003 Table 1 (1,000 thread-forks)",
    "yield": "seed 003 Table 2 (100,000 thread-yields)",
    "signalwait": "seed 000 Table 4 (signal-wait)",
    "kpingpong": "seed 000 section 5.2 (signal-wait through the kernel)",
    "handoff": "seed 000 Table 2 (the \"activation has blocked\" event)",
    "nbody": "seed 000 Fig. 2 (N-body speedup)",
    "fig3": "seed 000 Fig. 3 (N-body run time vs available memory, 50 ms misses)",
    "table5": "seed 000 Table 5 (two parallel programs on one machine)",
    "realloc": "seed 000 section 4.1 (processor allocation between address spaces)",
    "procprio": "seed 000 section 4.1 (priorities between address spaces)",
    "matmul": "seed 001 Figs. 4 and 5 (matrix multiply)",
    "memory": "the issue's 1,000,000-thread target",
    "echo": "the issue's server target (thread per connection, 10,000 connections)",
    "sumthreads": "seed 002 section 7 (T threads summing n integers)",
    "decision": "seed 002 sections 5-6 (O(1) decisions)",
    "priorities": "seed 002 section 4.3.3, seed 000 section 1.2 (shares; urgent wake-ups)",
    "groups": "seed 004 section 3 (SKY-1: same-processor priority, thread grouping, load balancing)",
}

POLICIES = ["prio", "prio-shared", "ws", "fifo", "affinity"]

# The groups experiment's configurations: (name, label, ITO_POLICY, --groups);
# None: POSIX threads. "fifo" is the single-queue scheduler seed 004 compares with.
GROUPS_CONFIGS = [("fifo", "fifo (one shared queue)", "fifo", "off"),
                  ("ws", "ws (work stealing)", "ws", "off"),
                  ("affinity", "affinity, no groups", "affinity", "off"),
                  ("affinity-groups", "affinity + groups", "affinity", "on"),
                  ("pthread", "POSIX threads (the kernel)", None, None)]
# The share of a thread's line visits that also write the line (seed 004's
# "shared data": 32 %); the targets are read at GROUPS_WRITE_PCT.
GROUPS_WRITE_PCT = 30


# --------------------------------------------------------------------------
# formatting

def fmt_ns(v):
    """A duration given in ns, with a readable unit."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    a = abs(v)
    if a < 1e3:
        return "%.1f ns" % v
    if a < 1e6:
        return "%.2f us" % (v / 1e3) if a < 1e4 else "%.1f us" % (v / 1e3)
    if a < 1e9:
        return "%.2f ms" % (v / 1e6) if a < 1e7 else "%.1f ms" % (v / 1e6)
    return "%.3f s" % (v / 1e9)


def fmt_val(v, unit):
    if v is None:
        return "-"
    if unit == "ns":
        return fmt_ns(v)
    if unit == "KiB":
        return "%.2f KiB" % v
    if unit == "x":
        return "%.2fx" % v
    return "%g %s" % (v, unit)


def fmt_range(lo, hi, unit):
    if lo is None:
        return "-"
    if unit == "ns":
        return "%s - %s" % (fmt_ns(lo), fmt_ns(hi))
    if unit == "KiB":
        return "%.2f - %.2f" % (lo, hi)
    if unit == "x":
        return "%.2f - %.2f" % (lo, hi)
    return "%g - %g" % (lo, hi)


def fmt_ratio(r):
    if r is None:
        return "-"
    if r >= 100:
        return "%.0fx" % r
    if r >= 10:
        return "%.1fx" % r
    return "%.2fx" % r


def text_table(headers, rows):
    cols = len(headers)
    widths = [len(h) for h in headers]
    for r in rows:
        for i in range(cols):
            widths[i] = max(widths[i], len(str(r[i])))
    out = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(headers)),
           "  ".join("-" * widths[i] for i in range(cols))]
    for r in rows:
        out.append("  ".join(str(r[i]).ljust(widths[i]) for i in range(cols)))
    return "\n".join(out)


def md_table(headers, rows):
    def cell(x):
        return str(x).replace("|", "\\|")
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for r in rows:
        out.append("| " + " | ".join(cell(x) for x in r) + " |")
    return "\n".join(out)


# --------------------------------------------------------------------------
# the machine

def read_first(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def cgroup_cpu_limit():
    """CPUs allowed by a cgroup v2 quota (cpu.max), or None."""
    v = read_first("/sys/fs/cgroup/cpu.max")
    if not v:
        return None
    parts = v.split()
    if len(parts) != 2 or parts[0] == "max":
        return None
    try:
        return max(1, math.ceil(int(parts[0]) / int(parts[1])))
    except ValueError:
        return None


CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_busy_s(cpus):
    """Seconds of CPU time the given CPUs have spent busy (user, nice, system,
    irq, softirq, and steal: time the hypervisor gave to others)."""
    want = {"cpu%d" % c for c in cpus}
    total, seen = 0.0, 0
    try:
        with open("/proc/stat") as f:
            for line in f:
                parts = line.split()
                if parts and parts[0] in want:
                    v = [int(x) for x in parts[1:9]]
                    total += (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / CLK_TCK
                    seen += 1
    except (OSError, ValueError, IndexError):
        return None
    return total if seen == len(want) else None


# A run during which other processes kept this fraction of its CPUs busy on
# average is "loaded" (a compute-bound run on them would have lost about that
# much of its time): it is kept in results.json and replaced by another run
# (see Config.used_runs). CPU accounting cannot tell whether that load delayed
# the run or only used a CPU the run left idle, so a loaded run is not called
# wrong, only less trustworthy: the figures prefer the runs without it.
LOADED_FRACTION = 0.1


def mem_available_kib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def machine_info(root):
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    affinity = sorted(os.sched_getaffinity(0))
    quota = cgroup_cpu_limit()
    usable = len(affinity) if quota is None else min(len(affinity), quota)
    mem_total = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem_total = int(line.split()[1])
    except OSError:
        pass
    commit = None
    try:
        commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "src", "include"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        if commit and dirty:
            commit += " (src/ or include/ modified)"
    except (OSError, subprocess.SubprocessError):
        pass
    cc = None
    try:
        cc = subprocess.run(["cc", "--version"], capture_output=True, text=True, timeout=10).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return {
        "cpu_model": model,
        "cpus_online": os.cpu_count(),
        "cpus_affinity": affinity,
        "cgroup_cpu_limit": quota,
        "cpus_usable": usable,
        "mem_total_kib": mem_total,
        "kernel": platform.release(),
        "pid_max": read_first("/proc/sys/kernel/pid_max"),
        "max_map_count": read_first("/proc/sys/vm/max_map_count"),
        "loadavg_start": read_first("/proc/loadavg"),
        "compiler": cc,
        "commit": commit,
        "ito_env": {k: v for k, v in os.environ.items() if k.startswith("ITO_")},
        "python": platform.python_version(),
    }


# --------------------------------------------------------------------------
# configurations and runs

class Config:
    """One configuration of one experiment: a command line, repeated."""

    def __init__(self, exp, key, impl, label, prog, args, cpus, metric, unit, reps, timeout=120,
                 pair=None, x=None, scale=1.0, group=None, load_cpus=None, env=None):
        self.exp = exp
        self.key = key            # unique within the run
        self.impl = impl          # ito | pthread | seq
        self.label = label        # what varies, for humans
        self.prog = prog
        self.args = args
        self.cpus = cpus          # CPUs (vprocs) it uses
        self.metric = metric      # JSON field measured
        self.unit = unit          # "ns" (metric * scale is ns) or "KiB"
        self.scale = scale
        self.reps = reps
        self.timeout = timeout
        self.pair = pair          # key of the pthread configuration to compare with
        self.x = x                # plot coordinate (size, threads, vprocs)
        self.group = group        # sub-table (matmul: fig4 / fig5)
        self.load_cpus = load_cpus or cpus   # CPUs the run keeps busy (echo: server + client)
        self.env = env or {}      # environment variables set for this configuration only
        self.runs = []            # dicts: rep, rc, wall_s, data, error

    def argv(self, build):
        return [os.path.join(build, "bench", self.prog)] + [str(a) for a in self.args]

    def cmdline(self, build=None):
        """The command line as a shell would read it, this configuration's environment first."""
        argv = self.argv(build) if build else [self.prog] + [str(a) for a in self.args]
        return " ".join(["%s=%s" % kv for kv in sorted(self.env.items())] + argv)

    def ok_runs(self):
        return [r for r in self.runs if not r["error"] and not r.get("skipped")]

    def skipped(self):
        """Why the program declined to measure (a system limit), or None."""
        return next((r["skipped"] for r in self.runs if r.get("skipped")), None)

    def load(self, r):
        """Fraction of this run's CPUs that other processes kept busy."""
        return r.get("other_load_cpus", 0.0) / max(1, self.load_cpus)

    def quiet_runs(self):
        return [r for r in self.ok_runs() if self.load(r) < LOADED_FRACTION]

    def used_runs(self):
        """The runs the figures come from: the unloaded ones when there are
        at least half as many as the repetitions asked for; else that many of
        the least loaded runs (chosen by the load measured beside the run,
        never by its result)."""
        want = max(2, (self.reps + 1) // 2)
        q = self.quiet_runs()
        if len(q) >= want:
            return q
        ok = self.ok_runs()
        return sorted(ok, key=self.load)[:want] if len(ok) > want else ok

    def needs_more(self):
        """Another run replaces a loaded one, up to twice the repetitions."""
        if self.skipped():
            return False
        done = len(self.quiet_runs()) + len(self.failures())
        return len(self.runs) < self.reps or (done < self.reps and len(self.runs) < 2 * self.reps)

    def failures(self):
        return [r for r in self.runs if r["error"]]

    def values(self):
        return [r["data"][self.metric] * self.scale for r in self.used_runs()]

    def stats(self):
        v = self.values()
        if not v:
            return None, None, None
        return statistics.median(v), min(v), max(v)

    def median(self):
        return self.stats()[0]

    def field_stats(self, field):
        """Median, min, max of another JSON field over the runs used."""
        v = [r["data"][field] for r in self.used_runs() if field in r["data"]]
        return (statistics.median(v), min(v), max(v)) if v else (None, None, None)

    def to_json(self):
        med, lo, hi = self.stats()
        return {"exp": self.exp, "key": self.key, "impl": self.impl, "label": self.label,
                "argv": [self.prog] + [str(a) for a in self.args], "env": self.env, "cpus": self.cpus,
                "metric": self.metric, "unit": self.unit, "scale": self.scale, "group": self.group,
                "x": self.x, "pair": self.pair, "reps": self.reps, "median": med, "min": lo, "max": hi,
                "failures": len(self.failures()), "used_reps": [r["rep"] for r in self.used_runs()],
                "runs": self.runs}


def parse_json_line(out):
    for line in reversed(out.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if isinstance(d, dict):
                return d
    return None


def run_one(cfg, build, env, affinity):
    argv = cfg.argv(build)
    t0 = time.monotonic()
    rec = {"rep": len(cfg.runs) + 1, "rc": None, "wall_s": None, "data": None, "error": None, "stderr": "",
           "loadavg": read_first("/proc/loadavg")}
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    used_cpus = affinity[:max(1, cfg.load_cpus)]   # ito pins vproc i, pthreads use the first N
    busy0 = cpu_busy_s(used_cpus)
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=cfg.timeout,
                           env=dict(env, **cfg.env) if cfg.env else env)
        rec["rc"] = p.returncode
        rec["stderr"] = p.stderr[-2000:]
        rec["data"] = parse_json_line(p.stdout)
        if rec["data"] and "error" in rec["data"]:
            rec["error"] = rec["data"]["error"]
        elif rec["data"] and rec["data"].get("skipped") and p.returncode == 0:
            rec["skipped"] = rec["data"].get("skip_reason", "skipped")   # a system limit: not measured
        elif p.returncode < 0:
            rec["error"] = "killed by signal %d" % -p.returncode
        elif p.returncode != 0:
            rec["error"] = "exit status %d" % p.returncode
        elif rec["data"] is None:
            rec["error"] = "no JSON result on stdout"
        elif rec["data"].get("verified") is False:
            rec["error"] = "verification failed"
        elif cfg.metric not in rec["data"]:
            rec["error"] = "no field %r in the result" % cfg.metric
        if rec["error"] and p.stderr.strip():
            rec["error"] += ": " + p.stderr.strip().splitlines()[-1][:300]
    except subprocess.TimeoutExpired as e:
        rec["error"] = "timed out after %d s (hang?)" % cfg.timeout
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        rec["stderr"] = err[-2000:]
    except OSError as e:
        rec["error"] = "could not run %s: %s" % (argv[0], e)
    rec["wall_s"] = round(time.monotonic() - t0, 3)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU time of the process and how often the kernel preempted it (a sign of
    # other load on a shared machine)
    rec["cpu_s"] = round(ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime, 3)
    rec["involuntary_switches"] = ru1.ru_nivcsw - ru0.ru_nivcsw
    # CPUs kept busy by everything else on the machine, on the CPUs the run
    # used, during the run (other processes, steal): the noise this
    # measurement had to live with
    busy1 = cpu_busy_s(used_cpus)
    if busy0 is not None and busy1 is not None and rec["wall_s"] > 0:
        rec["other_load_cpus"] = round(max(0.0, (busy1 - busy0 - rec["cpu_s"]) / rec["wall_s"]), 3)
    cfg.runs.append(rec)
    return rec


class Progress:
    """One status line on stderr: experiment, step k/n, elapsed."""

    def __init__(self, start):
        self.start = start
        self.tty = sys.stderr.isatty()
        self.last = 0.0
        self.shown = False

    def elapsed(self):
        s = int(time.monotonic() - self.start)
        return "%d:%02d" % (s // 60, s % 60)

    def show(self, exp, k, n, what, force=False):
        line = "[%s %d/%d] %s  elapsed %s" % (exp, k, n, what, self.elapsed())
        if self.tty:
            cols = 120
            try:
                cols = os.get_terminal_size(sys.stderr.fileno()).columns
            except OSError:
                pass
            sys.stderr.write("\r\033[K" + line[:cols - 1])
            sys.stderr.flush()
            self.shown = True
        elif force or time.monotonic() - self.last >= 10:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
            self.last = time.monotonic()

    def clear(self):
        if self.tty and self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self.shown = False

    def note(self, msg):
        self.clear()
        sys.stderr.write(msg + "\n")
        sys.stderr.flush()


# --------------------------------------------------------------------------
# the experiments

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
    """1, 2 (the targets are stated for 2) and all CPUs."""
    return sorted({c for c in (1, 2, ncpu) if c <= ncpu})


def plural(n, one, many):
    return "%d %s" % (n, one if n == 1 else many)


def vp_label(c):
    return plural(c, "vproc", "vprocs")


def cpu_label(c):
    return plural(c, "CPU", "CPUs")


# Table 5's spinning barrier: how long a waiter spins before it blocks (Intel's
# OpenMP spins 200 ms by default, KMP_BLOCKTIME; GNU's a few milliseconds).
TABLE5_SPIN_US = 20000
# Table 5's two problem sizes, bodies and steps (doubled by --full): a step of
# the fine one takes about 4 ms on one CPU, of the coarse one about 50 ms.
TABLE5_GRAINS = {"fine": (2000, 100), "coarse": (20000, 10)}


def build_configs(exp, ncpu, full, reps_override, extra):
    def R(quick, fullr):
        return reps_override or (fullr if full else quick)

    cs = []
    if exp == "nullfork":
        for c in cpu_set(ncpu):
            cs.append(Config(exp, "nullfork/pthread/%d" % c, "pthread", cpu_label(c), "nullfork",
                             ["--impl", "pthread", "--cpus", c, "--n", 20000 if full else 5000], c,
                             "ns_per_op", "ns", R(7, 15)))
            cs.append(Config(exp, "nullfork/ito/%d" % c, "ito", vp_label(c), "nullfork",
                             ["--impl", "ito", "--cpus", c, "--n", 1000000 if full else 200000], c,
                             "ns_per_op", "ns", R(7, 15), pair="nullfork/pthread/%d" % c))
    elif exp in ("forkmany", "fork1000"):
        count = 100000 if exp == "forkmany" else 1000
        for c in cpu_set(ncpu):
            cs.append(Config(exp, "%s/pthread/%d" % (exp, c), "pthread", cpu_label(c), "forkmany",
                             ["--exp", exp, "--impl", "pthread", "--cpus", c, "--count", count], c,
                             "ns_per_thread", "ns", R(3, 7) if exp == "forkmany" else R(7, 15), timeout=300))
            cs.append(Config(exp, "%s/ito/%d" % (exp, c), "ito", vp_label(c), "forkmany",
                             ["--exp", exp, "--impl", "ito", "--cpus", c, "--count", count], c,
                             "ns_per_thread", "ns", R(7, 15), pair="%s/pthread/%d" % (exp, c)))
    elif exp == "yield":
        cs.append(Config(exp, "yield/pthread/1", "pthread", "1 CPU, both pinned", "yield",
                         ["--impl", "pthread", "--n", 100000], 1, "ns_per_yield", "ns", R(11, 21)))
        cs.append(Config(exp, "yield/ito/1", "ito", "1 vproc", "yield",
                         ["--impl", "ito", "--vprocs", 1, "--n", 100000], 1, "ns_per_yield", "ns",
                         R(11, 21), pair="yield/pthread/1"))
        if ncpu > 1:
            cs.append(Config(exp, "yield/ito/%d" % ncpu, "ito", "both on vproc 0 of %d" % ncpu, "yield",
                             ["--impl", "ito", "--vprocs", ncpu, "--n", 100000], ncpu, "ns_per_yield",
                             "ns", R(11, 21), pair="yield/pthread/1"))
    elif exp == "signalwait":
        cs.append(Config(exp, "signalwait/pthread/same", "pthread", "same CPU", "signalwait",
                         ["--impl", "pthread", "--placement", "same", "--n", 50000 if full else 20000], 1,
                         "ns_per_roundtrip", "ns", R(11, 21)))
        cs.append(Config(exp, "signalwait/ito/same", "ito", "1 vproc", "signalwait",
                         ["--impl", "ito", "--placement", "same", "--n", 1000000 if full else 200000], 1,
                         "ns_per_roundtrip", "ns", R(11, 21), pair="signalwait/pthread/same"))
        if ncpu > 1:
            cs.append(Config(exp, "signalwait/pthread/cross", "pthread", "2 CPUs (one each)", "signalwait",
                             ["--impl", "pthread", "--placement", "cross", "--n", 20000 if full else 5000], 2,
                             "ns_per_roundtrip", "ns", R(11, 21)))
            cs.append(Config(exp, "signalwait/ito/cross", "ito", "vprocs 0 and 1 of 2", "signalwait",
                             ["--impl", "ito", "--placement", "cross", "--vprocs", 2,
                              "--n", 1000000 if full else 200000], 2,
                             "ns_per_roundtrip", "ns", R(11, 21), pair="signalwait/pthread/cross"))
            cs.append(Config(exp, "signalwait/raw/cross", "raw", "hardware floor: 1 cache line, 2 CPUs",
                             "signalwait", ["--impl", "raw", "--placement", "cross", "--n", 2000000], 2,
                             "ns_per_roundtrip", "ns", R(11, 21)))
    elif exp == "kpingpong":
        # cross-CPU wake-ups cost tens of us on some VMs: fewer round trips there
        for chan in ("pipe", "eventfd"):
            for pl, c, n in (("same", 1, 50000 if full else 20000), ("cross", 2, 10000 if full else 2000)):
                if c > ncpu:
                    continue
                where = "same CPU" if pl == "same" else "2 CPUs (one each)"
                common = ["--chan", chan, "--placement", pl, "--n", n]
                pk = "kpingpong/pthread/%s/%s" % (chan, pl)
                cs.append(Config(exp, pk, "pthread", "%s, %s" % (chan, where), "kpingpong",
                                 ["--impl", "pthread"] + common, c, "ns_per_roundtrip", "ns", R(7, 15),
                                 timeout=60 if full else 20))
                cs.append(Config(exp, "kpingpong/ito/%s/%s" % (chan, pl), "ito",
                                 "%s, %s" % (chan, "1 vproc" if pl == "same" else "vprocs 0 and 1 of 2"),
                                 "kpingpong", ["--impl", "ito"] + common, c, "ns_per_roundtrip", "ns",
                                 R(7, 15), timeout=60 if full else 20, pair=pk))
    elif exp == "echo":
        # the server on all CPUs but one, the load generator (one thread) on that one
        srv = max(1, ncpu - 1)
        timing = ["--warmup-ms", 1000, "--duration-ms", 5000] if full else ["--warmup-ms", 500, "--duration-ms", 1500]
        for conns in (100, 1000, 10000):
            pk = "echo/pthread/%d" % conns
            for impl in ("pthread", "ito"):
                cs.append(Config(exp, "echo/%s/%d" % (impl, conns), impl, "%s connections" % format(conns, ","),
                                 "echo", ["--impl", impl, "--cpus", srv, "--conns", conns] + timing, srv,
                                 "msgs_per_s", "msg/s", R(3, 5), timeout=120, x=conns,
                                 pair=pk if impl == "ito" else None, load_cpus=min(ncpu, srv + 1)))
    elif exp == "nbody":
        n, steps = (100000, 5) if full else (20000, 3)
        common = ["--n", n, "--steps", steps]
        reps = R(7, 11)
        cs.append(Config(exp, "nbody/seq", "seq", "sequential", "nbody", ["--impl", "seq"] + common, 1,
                         "seconds", "ns", reps, scale=1e9, x=1, timeout=600))
        for c in cpu_steps(ncpu, full):
            cs.append(Config(exp, "nbody/pthread/%d" % c, "pthread", cpu_label(c), "nbody",
                             ["--impl", "pthread", "--cpus", c] + common, c, "seconds", "ns", reps,
                             scale=1e9, x=c, timeout=600))
            cs.append(Config(exp, "nbody/ito/%d" % c, "ito", vp_label(c), "nbody",
                             ["--impl", "ito", "--cpus", c] + common, c, "seconds", "ns", reps,
                             scale=1e9, x=c, timeout=600, pair="nbody/pthread/%d" % c))
    elif exp == "fig3":
        # T = 4 threads per CPU, one per chunk of bodies; every miss blocks 50 ms in nanosleep.
        # Activations on is said explicitly, so an ITO_ACTIVATIONS=0 in the caller's environment
        # cannot turn the comparison into off vs off.
        fits = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4] if full else [1.0, 0.9, 0.75, 0.5]
        common = ["--cpus", ncpu, "--threads", 4 * ncpu, "--n", 16000, "--pages", 20, "--steps", 2 if full else 1]
        for fit in fits:
            pk = "fig3/pthread/%g" % fit   # a pthread run never calls ito: one run serves both miss modes
            cs.append(Config(exp, pk, "pthread", "fit %g" % fit, "nbodycache", ["--impl", "pthread", "--fit", fit]
                             + common, ncpu, "seconds", "ns", R(3, 5), scale=1e9, x=fit, timeout=120))
            for miss in ("annotated", "plain"):
                for act in ("1", "0"):
                    cs.append(Config(exp, "fig3/ito%s/%s/%g" % ("" if act == "1" else "-noact", miss, fit), "ito",
                                     "fit %g, %s misses%s" % (fit, miss, "" if act == "1" else ", ITO_ACTIVATIONS=0"),
                                     "nbodycache", ["--impl", "ito", "--fit", fit, "--miss", miss] + common, ncpu,
                                     "seconds", "ns", R(3, 5), scale=1e9, x=fit, group=miss, timeout=120,
                                     pair=pk, env={"ITO_ACTIVATIONS": act}))
    elif exp == "table5":
        # two copies of the worker N-body started together (bench/together),
        # each asking for every CPU; their speedups over one sequential run.
        # Two grains: how much time-slicing costs depends on how long a phase
        # between barriers is against the kernel's slice (a few ms).
        for grain, (n, steps) in TABLE5_GRAINS.items():
            common = ["--n", n, "--steps", steps * (2 if full else 1)]
            seqk = "table5/seq/%s" % grain
            cs.append(Config(exp, seqk, "seq", "sequential, alone", "nbody", ["--impl", "seq"] + common, 1,
                             "seconds", "ns", R(3, 5), scale=1e9, x=n, group=grain, timeout=300))
            for sync in ("spin", "block"):
                extra = ["--sync", sync] + (["--spin-us", TABLE5_SPIN_US] if sync == "spin" else [])
                cs.append(Config(exp, "table5/pthread/%s/%s" % (sync, grain), "pthread", "POSIX threads", "together",
                                 ["nbody", "--impl", "pthread"] + extra + common, ncpu, "seconds", "ns", R(3, 5),
                                 scale=1e9, x=n, group=sync, timeout=300))
                for alloc in ("1", "0"):
                    cs.append(Config(exp, "table5/ito%s/%s/%s" % ("" if alloc == "1" else "-noalloc", sync, grain),
                                     "ito", "ito" if alloc == "1" else "ito, ITO_ALLOCATOR=0", "together",
                                     ["nbody", "--impl", "ito"] + extra + common, ncpu, "seconds", "ns", R(3, 5),
                                     scale=1e9, x=n, group=sync, timeout=300, env={"ITO_ALLOCATOR": alloc}))
    elif exp == "procprio" and ncpu >= 2:
        # L computes on every CPU at low priority; H arrives wanting every
        # CPU, then (a second configuration) all but one
        for ht in sorted({ncpu, ncpu - 1}, reverse=True):
            which = "all" if ht == ncpu else "all-but-one"
            for impl in ("ito", "pthread"):
                cs.append(Config(exp, "procprio/%s/%s" % (impl, which), impl,
                                 "ITO_PRIORITY 10 vs 0" if impl == "ito" else "nice 0 vs nice 19", "procprio",
                                 ["--impl", impl, "--high-threads", ht, "--rounds", 800 if full else 400], ncpu,
                                 "high_s", "ns", R(3, 5), scale=1e9, x=ht, group=which, timeout=120))
    elif exp == "realloc" and ncpu >= 2:
        # a process computing on every CPU; others arrive, go idle, want more, leave
        cs.append(Config(exp, "realloc/ito", "ito", "two processes, %s" % cpu_label(ncpu), "realloc",
                         ["--rounds", 60 if full else 30], ncpu, "p50_us", "ns", R(3, 5), scale=1e3, timeout=120))
    elif exp == "handoff":
        # one processor; A blocks in nanosleep(2 ms) right after making B ready
        common = ["--n", 1000 if full else 200, "--block-us", 2000]
        cs.append(Config(exp, "handoff/pthread", "pthread", "kernel switch (both pinned to 1 CPU)", "handoff",
                         ["--impl", "pthread"] + common, 1, "p50_us", "ns", R(5, 9), scale=1e3, timeout=60))
        cs.append(Config(exp, "handoff/ito", "ito", "1 vproc, ITO_BLOCKING (activations on)", "handoff",
                         ["--impl", "ito"] + common, 1, "p50_us", "ns", R(5, 9), scale=1e3, timeout=60,
                         pair="handoff/pthread", env={"ITO_ACTIVATIONS": "1"}))
        # a plain call is found after about 1 ms: it must sleep well beyond that
        plain = ["--n", 500 if full else 100, "--block-us", 10000, "--call", "plain"]
        cs.append(Config(exp, "handoff/ito-plain", "ito", "1 vproc, plain call (a stall), 10 ms sleeps", "handoff",
                         ["--impl", "ito"] + plain, 1, "p50_us", "ns", R(3, 5), scale=1e3, timeout=60,
                         pair="handoff/pthread", env={"ITO_ACTIVATIONS": "1"}))
        cs.append(Config(exp, "handoff/ito-noact", "ito", "1 vproc, ITO_ACTIVATIONS=0 (the call keeps it)",
                         "handoff", ["--impl", "ito"] + common, 1, "p50_us", "ns", R(3, 5), scale=1e3, timeout=60,
                         pair="handoff/pthread", env={"ITO_ACTIVATIONS": "0"}))
    elif exp == "matmul":
        sizes = [128, 256, 384, 512, 768, 1024] if full else [128, 256, 512]
        reps = R(5, 9)
        cpus_list = [1] if ncpu == 1 else [1, ncpu]
        for s in sizes:
            for c in cpus_list:
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
    elif exp == "sumthreads":
        # (a) n = 1000, T varies; (b) T = 25, n varies. Every policy beside POSIX threads.
        ts = [10, 100, 1000, 10000, 100000] if full else [10, 1000, 100000]
        ns = [100, 1000, 10000, 100000] if full else [100, 10000, 100000]
        points = [("a", t, 1000) for t in ts] + [("b", 25, n) for n in ns]
        for part, t, n in points:
            pk = "sumthreads/pthread/%s/%d/%d" % (part, t, n)
            common = ["--threads", t, "--n", n, "--cpus", ncpu]
            x = t if part == "a" else n
            cs.append(Config(exp, pk, "pthread", "T=%s n=%s" % (format(t, ","), format(n, ",")), "sumthreads",
                             ["--impl", "pthread"] + common, ncpu, "seconds", "ns", R(3, 5), scale=1e9,
                             x=x, group=part, timeout=300))
            for pol in POLICIES:
                cs.append(Config(exp, "sumthreads/%s/%s/%d/%d" % (pol, part, t, n), "ito",
                                 "T=%s n=%s, %s" % (format(t, ","), format(n, ","), pol), "sumthreads",
                                 ["--impl", "ito"] + common, ncpu, "seconds", "ns", R(3, 5), scale=1e9, x=x,
                                 group=part, timeout=300, pair=pk,
                                 env={"ITO_POLICY": pol, "ITO_STATS_CYCLES": "1"}))
    elif exp == "decision":
        for r in ([10, 100, 1000, 10000, 100000] if full else [10, 1000, 100000]):
            for pol in POLICIES:
                cs.append(Config(exp, "decision/%s/%d" % (pol, r), "ito",
                                 "%s ready threads, %s" % (format(r, ","), pol), "prio",
                                 ["--mode", "decide", "--impl", "ito", "--ready", r, "--ms", 300], 1,
                                 "cycles_per_decision", "cycles", R(3, 5), x=r, group=pol, timeout=300,
                                 env={"ITO_POLICY": pol, "ITO_STATS_CYCLES": "1"}))
    elif exp == "priorities":
        ms = 3000 if full else 1000
        cs.append(Config(exp, "priorities/share/pthread", "pthread", "4 busy threads on 1 CPU, nice 19/13/6/0",
                         "prio", ["--mode", "share", "--impl", "pthread", "--ms", ms], 1, "top_over_bottom", "x",
                         R(3, 5), group="share"))
        for pol in ("prio", "prio-shared"):
            cs.append(Config(exp, "priorities/share/%s" % pol, "ito",
                             "4 busy threads on 1 vproc, priorities 0/10/20/31, %s" % pol, "prio",
                             ["--mode", "share", "--impl", "ito", "--ms", ms], 1, "top_over_bottom", "x",
                             R(3, 5), group="share", env={"ITO_POLICY": pol, "ITO_TIMESLICE_US": "1000"}))
        samples = 1000 if full else 300
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
    elif exp == "groups":
        # G = 4 groups per CPU of 4 threads; each group's working set is sized
        # by the program from the L2 (bench/groups.c); fixed work: R turns per
        # thread, each a sweep of the group's set, then a yield
        rounds = 12000 if full else 6000
        for wp in ([0, GROUPS_WRITE_PCT, 60] if full else [GROUPS_WRITE_PCT]):
            pk = "groups/pthread/%d" % wp
            for name, label, pol, grp in GROUPS_CONFIGS:
                common = ["--cpus", ncpu, "--write-pct", wp, "--rounds", rounds]
                if pol is None:
                    cs.append(Config(exp, pk, "pthread", label, "groups", ["--impl", "pthread"] + common, ncpu,
                                     "seconds", "ns", R(5, 9), scale=1e9, x=wp, group=wp, timeout=120))
                else:
                    cs.append(Config(exp, "groups/%s/%d" % (name, wp), "ito", label, "groups",
                                     ["--impl", "ito", "--groups", grp] + common, ncpu, "seconds", "ns", R(5, 9),
                                     scale=1e9, x=wp, group=wp, timeout=120, pair=pk, env={"ITO_POLICY": pol}))
    elif exp == "memory":
        count = extra.get("memory_count", 1000000)
        cs.append(Config(exp, "memory/pthread", "pthread", "up to 10,000 threads", "memory",
                         ["--impl", "pthread", "--count", 10000], ncpu, "kib_per_thread", "KiB", R(3, 3),
                         timeout=300))
        cs.append(Config(exp, "memory/ito", "ito", "%s threads" % format(count, ","), "memory",
                         ["--impl", "ito", "--count", count], ncpu, "kib_per_thread", "KiB", R(3, 5),
                         timeout=900, pair="memory/pthread"))
    return cs


# --------------------------------------------------------------------------
# targets (the issue; measured on its 2-core development machine)

TARGETS = [
    # id, experiment, config key, comparison, threshold, unit, text, best peer
    ("nullfork1", "nullfork", "nullfork/ito/1", "<=", 30, "ns", "null fork <= 30 ns on 1 vproc", "37.5 ns"),
    ("nullfork2", "nullfork", "nullfork/ito/2", "<=", 60, "ns", "null fork <= 60 ns on 2 vprocs", "85.7 ns"),
    ("forkmany2", "forkmany", "forkmany/ito/2", "<=", 200, "ns", "fork-many <= 200 ns per thread on 2 vprocs",
     "234 ns"),
    ("yield", "yield", "yield/ito/1", "<=", 12, "ns", "yield <= 12 ns", "16 ns"),
    ("sw_same", "signalwait", "signalwait/ito/same", "<=", 60, "ns",
     "signal-wait round trip <= 60 ns on one vproc", "83 ns"),
    ("sw_cross", "signalwait", "signalwait/ito/cross", "<=", 180, "ns",
     "signal-wait round trip <= 180 ns across two busy vprocs", "195 ns"),
    ("nbody2", "nbody", None, ">=", 1.95, "x", "N-body speedup >= 1.95x on 2 vprocs", "-"),
    ("matmul4096", "matmul", None, "<=", 1.10, "x", "matmul 512: 4096 threads within 10 % of 4 threads (ito)",
     "-"),
    ("memory", "memory", "memory/ito", "<=", 16, "KiB",
     "1,000,000 threads blocked at once: <= 16 KiB resident per thread", "-"),
    # relative to POSIX threads measured in the same run (value: ito / pthread)
    ("kpp_same", "kpingpong", "kpingpong/ito/pipe/same", "<=", 1.0, "x",
     "kernel signal-wait (pipe), 1 vproc: ito round trip <= POSIX threads' (ito/pthread)", "-"),
    ("kpp_cross", "kpingpong", "kpingpong/ito/pipe/cross", "<=", 1.0, "x",
     "kernel signal-wait (pipe), 2 vprocs: ito round trip <= POSIX threads' (ito/pthread)", "-"),
    ("echo_tput", "echo", "echo/ito/10000", ">=", 1.3, "x",
     "echo server, 10,000 connections: ito throughput >= 1.3x POSIX threads' (ito/pthread)", "-"),
    ("echo_p99", "echo", "echo/ito/10000", "<=", 1.0, "x",
     "echo server, 10,000 connections: ito p99 latency <= POSIX threads' (ito/pthread)", "-"),
    ("handoff", "handoff", "handoff/ito", "<=", 100000, "ns",
     "hand-off of a vproc blocked in an ITO_BLOCKING call: p50 <= 100 us", "-"),
    ("handoff_plain", "handoff", "handoff/ito-plain", "<=", 2000000, "ns",
     "hand-off of a vproc blocked in a call nobody bracketed: p50 <= 2 ms", "-"),
    # Table 5: sums of speedups (table5_value), at each grain (TABLE5_GRAINS)
    ("table5_spin_fine", "table5", None, ">=", 0.9, "x",
     "Table 5, fine grain, spinning barriers: sum of the two programs' speedups >= 0.9 x CPUs (sum / CPUs)", "-"),
    ("table5_block_fine", "table5", None, ">=", 0.9, "x",
     "Table 5, fine grain, blocking barriers: sum of the two programs' speedups >= 0.9 x CPUs (sum / CPUs)", "-"),
    ("table5_vs_noalloc_fine", "table5", None, ">=", 1.5, "x",
     "Table 5, fine grain, spinning barriers: ito's sum of speedups >= 1.5x ITO_ALLOCATOR=0's", "-"),
    ("table5_spin_coarse", "table5", None, ">=", 0.9, "x",
     "Table 5, coarse grain, spinning barriers: sum of the two programs' speedups >= 0.9 x CPUs (sum / CPUs)", "-"),
    ("table5_block_coarse", "table5", None, ">=", 0.9, "x",
     "Table 5, coarse grain, blocking barriers: sum of the two programs' speedups >= 0.9 x CPUs (sum / CPUs)", "-"),
    ("table5_vs_noalloc_coarse", "table5", None, ">=", 1.5, "x",
     "Table 5, coarse grain, spinning barriers: ito's sum of speedups >= 1.5x ITO_ALLOCATOR=0's", "-"),
    # scheduling policies (the issue "Scheduling policies")
    ("decision_flat", "decision", None, "<=", 1.2, "x",
     "prio: cost of one decision with 100,000 ready threads <= 1.2x its cost with 10", "-"),
    ("sum_vs_pthread", "sumthreads", None, ">=", 20, "x",
     "seed 002 experiment, n = 1,000: prio faster than POSIX threads by >= 20x at every T "
     "(the smallest pthread/ito)", "-"),
    # thread groups (seed 004): groups_value; the misses need hardware counters
    ("groups_time", "groups", None, ">=", 1.1, "x",
     "seed 004, threads sharing data: affinity with groups >= 10 % faster than fifo (fifo time / its time)", "-"),
    ("groups_misses", "groups", None, "<", 1.0, "x",
     "seed 004, threads sharing data: affinity with groups has fewer cache misses than fifo (its misses / fifo's)",
     "-"),
    ("wake_p50", "priorities", "priorities/wake/prio", "<=", 50, "us",
     "prio: an urgent thread woken while every vproc computes runs within 50 us (median)", "-"),
    # unequal priorities: the high program's time beside the low one / alone
    ("procprio_all", "procprio", "procprio/ito/all", "<=", 1.05, "x",
     "Unequal priorities: a high-priority program wanting every CPU loses <= 5 % to a low-priority one "
     "(its time beside it / alone)", "-"),
    ("procprio_rest", "procprio", "procprio/ito/all-but-one", "<=", 1.05, "x",
     "Unequal priorities: the same, the high program using all CPUs but one", "-"),
    # reallocation latency, pooled over arrive / idle / more / leave
    ("realloc_p50", "realloc", "realloc/ito", "<=", 200000, "ns",
     "reallocation latency, hint to the processor changing hands: median <= 200 us", "-"),
    ("realloc_p99", "realloc", "realloc/ito", "<=", 2000000, "ns",
     "reallocation latency: p99 <= 2 ms (median of the runs' p99)", "-"),
    # Fig. 3: run time ratios (fig3_value)
    ("fig3_ann_pt", "fig3", None, "<=", 1.10, "x",
     "Fig. 3, annotated misses: ito within 10 % of POSIX threads at every fit (worst ito/pthread time)", "-"),
    ("fig3_ann_act", "fig3", None, ">=", 1.5, "x",
     "Fig. 3, annotated misses, lowest fit: ito >= 1.5x faster than ITO_ACTIVATIONS=0 (off/on time)", "-"),
    ("fig3_plain_pt", "fig3", None, "<=", 1.10, "x",
     "Fig. 3, un-annotated misses: ito within 10 % of POSIX threads at every fit (worst ito/pthread time)", "-"),
    ("fig3_plain_act", "fig3", None, ">=", 1.5, "x",
     "Fig. 3, un-annotated misses, lowest fit: ito >= 1.5x faster than ITO_ACTIVATIONS=0 (off/on time)", "-"),
]

# the figure a relative target compares, and how it reads in a table
RELATIVE = {"kpp_same": ("ns_per_roundtrip", "ito <= pthread"), "kpp_cross": ("ns_per_roundtrip", "ito <= pthread"),
            "echo_tput": ("msgs_per_s", ">= 1.3x pthread"), "echo_p99": ("p99_us", "p99 <= pthread")}


def relative_value(by_key, key, field):
    """ito's median of `field` over the paired POSIX-threads median."""
    i = by_key.get(key)
    p = by_key.get(i.pair) if i else None
    if not i or not p:
        return None
    a, b = i.field_stats(field)[0], p.field_stats(field)[0]
    return a / b if a is not None and b else None


def median_ratio(by_key, a, b):
    """Median of configuration a over the median of configuration b."""
    a, b = by_key.get(a), by_key.get(b)
    ma, mb = (a.median() if a else None), (b.median() if b else None)
    return ma / mb if ma is not None and mb else None


def fig3_keys(miss, fit):
    """ito with activations, ito with ITO_ACTIVATIONS=0, POSIX threads."""
    return "fig3/ito/%s/%g" % (miss, fit), "fig3/ito-noact/%s/%g" % (miss, fit), "fig3/pthread/%g" % fit


def fig3_value(by_key, tid):
    """(value, configuration keys involved, note) of a Fig. 3 target."""
    miss = "annotated" if tid.startswith("fig3_ann") else "plain"
    fits = sorted({c.x for c in by_key.values() if c.exp == "fig3"})
    if not fits:
        return None, [], ""
    if tid.endswith("_pt"):   # the worst fit
        rs = [(median_ratio(by_key, fig3_keys(miss, f)[0], fig3_keys(miss, f)[2]), f) for f in fits]
        keys = [k for f in fits for k in fig3_keys(miss, f)[::2]]
        if any(r is None for r, _ in rs):
            return None, keys, ""
        r, f = max(rs)
        return r, keys, "worst at fit %g" % f
    i, off, _ = fig3_keys(miss, fits[0])
    return median_ratio(by_key, off, i), [i, off], "fit %g" % fits[0]


def groups_misses(cfg):
    """(median, min, max) of a groups configuration's cache misses over its
    runs used, or Nones when the counters were not available."""
    v = [r["data"]["cache_misses"] for r in cfg.used_runs() if r["data"].get("cache_misses") is not None]
    return (statistics.median(v), min(v), max(v)) if v else (None, None, None)


def groups_counters_reason(cfgs):
    """Why the hardware counters were unavailable (the first run that said so), or None."""
    return next((r["data"].get("counters_reason", "?") for c in cfgs for r in c.ok_runs()
                 if r["data"].get("counters") is False), None)


def groups_value(by_key, tid):
    """(value, keys involved, note, measurable) of a groups target, at GROUPS_WRITE_PCT."""
    f, a = "groups/fifo/%d" % GROUPS_WRITE_PCT, "groups/affinity-groups/%d" % GROUPS_WRITE_PCT
    cf, ca = by_key.get(f), by_key.get(a)
    note = "%d %% writes" % GROUPS_WRITE_PCT
    if not cf or not ca:
        return None, [f, a], note, True
    if tid == "groups_time":
        return median_ratio(by_key, f, a), [f, a], note, True
    why = groups_counters_reason([cf, ca])
    if why:
        return None, [f, a], "not measurable: hardware counters unavailable: " + why, False
    mf, ma = groups_misses(cf)[0], groups_misses(ca)[0]
    return (ma / mf if ma is not None and mf else None), [f, a], note, True


def nbody_speedup(by_key, impl, c):
    seq = by_key.get("nbody/seq")
    par = by_key.get("nbody/%s/%d" % (impl, c))
    if not seq or not par:
        return None, None, None
    s = seq.median()
    m, lo, hi = par.stats()
    if s is None or m is None:
        return None, None, None
    return s / m, s / hi, s / lo


def table5_speedups(by_key, key):
    """The two programs' speedups over the sequential run of their grain (medians), or None."""
    seq, c = by_key.get("table5/seq/" + key.rsplit("/", 1)[1]), by_key.get(key)
    if not seq or not c or seq.median() is None:
        return None
    t0, t1 = c.field_stats("seconds_0")[0], c.field_stats("seconds_1")[0]
    if not t0 or not t1:
        return None
    s = seq.median() / 1e9
    return s / t0, s / t1


def table5_value(by_key, tid):
    """(value, keys involved, note)"""
    grain = tid.rsplit("_", 1)[1]
    seqk = "table5/seq/" + grain
    if tid.startswith("table5_vs_noalloc"):
        ka, kb = "table5/ito/spin/" + grain, "table5/ito-noalloc/spin/" + grain
        a, b = table5_speedups(by_key, ka), table5_speedups(by_key, kb)
        return (sum(a) / sum(b) if a and b else None), [seqk, ka, kb], "%s bodies" % format(TABLE5_GRAINS[grain][0], ",")
    key = "table5/ito/%s/%s" % (tid.split("_")[1], grain)
    sp = table5_speedups(by_key, key)
    cpus = by_key[key].cpus if key in by_key else 1
    return (sum(sp) / cpus if sp else None), [seqk, key], "%d CPUs" % cpus


def evaluate_targets(by_key, ran):
    out = []
    for tid, exp, key, op, thr, unit, text, peer in TARGETS:
        t = {"id": tid, "exp": exp, "text": text, "op": op, "threshold": thr, "unit": unit, "peer": peer,
             "value": None, "met": None, "note": ""}
        if exp not in ran:
            t["note"] = "not run (--only)"
            out.append(t)
            continue
        failed = short = False
        keys = None
        if tid.startswith("fig3_"):
            v, keys, t["note"] = fig3_value(by_key, tid)
            failed = any(by_key[k].failures() for k in keys if k in by_key)
        elif tid.startswith("table5_"):
            v, keys, t["note"] = table5_value(by_key, tid)
            failed = any(by_key[k].failures() for k in keys if k in by_key)
        elif tid.startswith("groups_"):
            v, keys, t["note"], measurable = groups_value(by_key, tid)
            failed = any(by_key[k].failures() for k in keys if k in by_key)
            if not measurable:
                t["unmeasurable"] = True
        elif tid == "nbody2":
            v = nbody_speedup(by_key, "ito", 2)[0]
            failed = any(by_key[k].failures() for k in ("nbody/seq", "nbody/ito/2") if k in by_key)
            if "nbody/ito/2" not in by_key:
                t["note"] = "needs 2 CPUs"
        elif tid in RELATIVE:
            v = relative_value(by_key, key, RELATIVE[tid][0])
            cfg = by_key.get(key)
            pcfg = by_key.get(cfg.pair) if cfg else None
            failed = bool(cfg and cfg.failures() or pcfg and pcfg.failures())
            why = [c.skipped() for c in (cfg, pcfg) if c and c.skipped()]
            if cfg is None:
                t["note"] = "needs 2 CPUs"
            elif why:
                t["note"] = "skipped: " + why[0]
        elif tid.startswith("procprio_"):
            cfg = by_key.get(key)
            v = cfg.field_stats("slowdown")[0] if cfg else None
            failed = bool(cfg and cfg.failures())
            if cfg is None:
                t["note"] = "needs 2 CPUs"
        elif tid == "realloc_p99":
            cfg = by_key.get(key)
            v = cfg.field_stats("p99_us")[0] * 1e3 if cfg and cfg.field_stats("p99_us")[0] is not None else None
            failed = bool(cfg and cfg.failures())
            if cfg is None:
                t["note"] = "needs 2 CPUs"
        elif tid == "decision_flat":
            a, b = by_key.get("decision/prio/10"), by_key.get("decision/prio/100000")
            v = b.median() / a.median() if a and b and a.median() and b.median() else None
            keys = ["decision/prio/10", "decision/prio/100000"]
            failed = bool(a and a.failures() or b and b.failures())
        elif tid == "sum_vs_pthread":
            keys = [c.key for c in by_key.values() if c.exp == "sumthreads" and c.group == "a" and
                    c.key.startswith("sumthreads/prio/")]
            ratios = []
            for k in keys:
                c, pc = by_key[k], by_key.get(by_key[k].pair)
                if c.median() and pc and pc.median():
                    ratios.append(pc.median() / c.median())
            v = min(ratios) if ratios else None
            failed = any(by_key[k].failures() for k in keys)
        elif tid == "matmul4096":
            a, b = by_key.get("matmul/fig5/ito/4"), by_key.get("matmul/fig5/ito/4096")
            v = None
            if a and b and a.median() and b.median():
                v = b.median() / a.median()
                failed = bool(a.failures() or b.failures())
        else:
            cfg = by_key.get(key)
            v = cfg.median() if cfg else None
            if cfg is None:
                t["note"] = "needs 2 CPUs"
            else:
                failed = bool(cfg.failures())
            if tid == "memory" and cfg is not None and cfg.ok_runs():
                counts = [r["data"]["count"] for r in cfg.ok_runs()]
                if min(counts) < 1000000:
                    t["note"] = "measured with %s threads only (memory)" % format(min(counts), ",")
                    short = True
        t["value"] = v
        involved = keys or {"nbody2": ["nbody/seq", "nbody/ito/2"],
                            "matmul4096": ["matmul/fig5/ito/4", "matmul/fig5/ito/4096"]}.get(tid, [key])
        if tid in RELATIVE and key in by_key:
            involved = [key, by_key[key].pair]
        loaded = [k for k in involved if k in by_key and any(
            by_key[k].load(r) >= LOADED_FRACTION for r in by_key[k].used_runs())]
        if loaded:
            t["note"] = (t["note"] + "; " if t["note"] else "") + "from loaded runs (%s)" % ", ".join(loaded)
        if tid == "nbody2" and v is not None and v > 2.0:
            t["note"] = (t["note"] + "; " if t["note"] else "") + \
                "above the ideal 2: the runs compared saw different machine load"
        if v is not None:
            t["met"] = {"<=": v <= thr, "<": v < thr, ">": v > thr}.get(op, v >= thr)
            if short:
                t["met"] = False
        if failed:
            t["met"] = False
            t["note"] = (t["note"] + "; " if t["note"] else "") + "a run failed"
        out.append(t)
    return out


def target_of(targets, key):
    """The target evaluated on configuration `key`, if any."""
    ids = [tid for tid, _, k, *_ in TARGETS if k == key]
    return next((t for t in targets if t["id"] in ids), None)


def met_str(t):
    if t is None:
        return ""
    if t["met"] is None:
        return "not measurable" if t.get("unmeasurable") else "not measured"
    return "MET" if t["met"] else "NOT MET"


def target_str(t):
    if t is None:
        return ""
    thr = t["threshold"]
    if t["id"] in RELATIVE:
        return RELATIVE[t["id"]][1]
    if t["unit"] == "ns":
        s = "%s %s" % (t["op"], fmt_ns(thr))
    elif t["unit"] in ("KiB", "us"):
        s = "%s %g %s" % (t["op"], thr, t["unit"])
    else:
        s = "%s %gx" % (t["op"], thr)
    return s


# --------------------------------------------------------------------------
# tables

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


def notes_for(cfg):
    notes = []
    ok = cfg.used_runs()
    if not ok:
        return ""
    if disturbed_str(cfg):
        notes.append(disturbed_str(cfg))
    d = ok[-1]["data"]
    lim = [r["data"] for r in ok if r["data"].get("limited")]
    if cfg.exp in ("forkmany", "memory") or lim:
        counts = sorted({r["data"].get("count") for r in ok})
        s = "count " + "/".join(format(c, ",") for c in counts if c is not None)
        if lim:
            s += " (limited from %s: %s)" % (format(lim[0]["requested"], ","), lim[0].get("limit_reason", ""))
        notes.append(s)
    if cfg.exp == "memory":
        cb = statistics.median([r["data"]["create_block_s"] for r in ok])
        notes.append("create+block %.2f s" % cb)
    if cfg.exp == "yield":
        ns = max(r["data"].get("no_switch", 0) for r in ok)
        notes.append("yields without a switch: <= %d" % ns)
    if cfg.exp in ("signalwait", "kpingpong") and cfg.impl == "ito":
        mis = [r["data"]["misplaced"] / max(1, r["data"]["placement_checks"]) for r in ok]
        notes.append("off its vproc: %.0f%% of checks (median)" % (100 * statistics.median(mis)))
    if cfg.impl == "ito" and d.get("io_uring") is False:
        notes.append("io_uring OFF: plain blocking calls")
    if cfg.impl == "ito" and "switches" in d:
        ops = d.get("n", d.get("count"))
        if ops:
            notes.append("switches/op %.2f" % statistics.median([r["data"]["switches"] / ops for r in ok]))
    if cfg.impl == "ito" and "steals" in d and cfg.exp not in ("signalwait", "kpingpong"):
        notes.append("steals %d" % statistics.median([r["data"].get("steals", 0) for r in ok]))
    return "; ".join(notes)


def micro_table(exp, cfgs, by_key, targets):
    headers = ["configuration", "impl", "CPUs", "median", "min - max", "reps", "pthread/ito", "target", "met",
               "notes"]
    rows = []
    for c in cfgs:
        med, lo, hi = c.stats()
        ratio = ""
        if c.pair and c.pair in by_key:
            pm = by_key[c.pair].median()
            if pm and med:
                ratio = fmt_ratio(pm / med)
        t = target_of(targets, c.key)
        note = notes_for(c)
        st = status_str(c)
        if st:
            note = st + ("; " + note if note else "")
        rows.append([c.label, c.impl, c.cpus, fmt_val(med, c.unit), fmt_range(lo, hi, c.unit),
                     reps_str(c), ratio, target_str(t), met_str(t), note])
    return headers, rows


def nbody_table(cfgs, by_key, targets):
    headers = ["CPUs", "seq", "ito", "ito speedup (min-max)", "pthread", "pthread speedup (min-max)",
               "pthread/ito", "target", "met", "notes"]
    seq = by_key.get("nbody/seq")
    rows = []
    cs = sorted({c.x for c in cfgs if c.impl != "seq"})
    t = next((x for x in targets if x["id"] == "nbody2"), None)
    for c in cs:
        ito, pth = by_key.get("nbody/ito/%d" % c), by_key.get("nbody/pthread/%d" % c)
        si = nbody_speedup(by_key, "ito", c)
        sp = nbody_speedup(by_key, "pthread", c)
        ratio = ""
        if ito and pth and ito.median() and pth.median():
            ratio = fmt_ratio(pth.median() / ito.median())
        notes = []
        for cfg in (seq, ito, pth):
            if cfg and status_str(cfg):
                notes.append("%s %s" % (cfg.impl, status_str(cfg)))
            if cfg and disturbed_str(cfg) and (cfg.impl != "seq" or c == cs[0]):
                notes.append("%s: %s" % (cfg.impl, disturbed_str(cfg)))
        if ito and ito.ok_runs():
            notes.append("ito threads/step %d" % ito.ok_runs()[0]["data"].get("threads_per_step", 0))
        rows.append([c, fmt_ns(seq.median()) if seq else "-", fmt_ns(ito.median()) if ito else "-",
                     "%.2f (%.2f-%.2f)" % si if si[0] else "-", fmt_ns(pth.median()) if pth else "-",
                     "%.2f (%.2f-%.2f)" % sp if sp[0] else "-", ratio,
                     target_str(t) if c == 2 else "", met_str(t) if c == 2 else "", "; ".join(notes)])
    return headers, rows


def matmul_tables(cfgs, by_key, targets, ncpu):
    cpus_list = [1] if ncpu == 1 else [1, ncpu]
    sizes = sorted({c.x for c in cfgs if c.group == "fig4"})
    h4 = ["size"]
    for c in cpus_list:
        h4 += ["ito %s" % vp_label(c), "pthread %s" % cpu_label(c), "pthread/ito"]
    if len(cpus_list) > 1:
        h4 += ["ito speedup %d vs 1" % ncpu]
    h4 += ["notes"]
    r4 = []
    for s in sizes:
        row, notes = [s], []
        for c in cpus_list:
            i, p = by_key.get("matmul/fig4/ito/%d/%d" % (s, c)), by_key.get("matmul/fig4/pthread/%d/%d" % (s, c))
            row += [fmt_ns(i.median()) if i else "-", fmt_ns(p.median()) if p else "-",
                    fmt_ratio(p.median() / i.median()) if i and p and i.median() and p.median() else "-"]
            for cfg in (i, p):
                if cfg and status_str(cfg):
                    notes.append("%s: %s" % (cfg.label, status_str(cfg)))
                if cfg and disturbed_str(cfg):
                    notes.append("%s %s: %s" % (cfg.impl, cfg.label.split(", ")[1], disturbed_str(cfg)))
        if len(cpus_list) > 1:
            a, b = by_key.get("matmul/fig4/ito/%d/1" % s), by_key.get("matmul/fig4/ito/%d/%d" % (s, ncpu))
            row.append("%.2fx" % (a.median() / b.median()) if a and b and a.median() and b.median() else "-")
        row.append("; ".join(notes))
        r4.append(row)

    t = next((x for x in targets if x["id"] == "matmul4096"), None)
    h5 = ["threads", "ito (min-max)", "pthread (min-max)", "pthread/ito", "ito vs 4 threads", "target", "met",
          "notes"]
    r5 = []
    ito4 = by_key.get("matmul/fig5/ito/4")
    for th in sorted({c.x for c in cfgs if c.group == "fig5"}):
        i, p = by_key.get("matmul/fig5/ito/%d" % th), by_key.get("matmul/fig5/pthread/%d" % th)
        im, ilo, ihi = i.stats() if i else (None, None, None)
        pm, plo, phi = p.stats() if p else (None, None, None)
        rel = "-"
        if ito4 and ito4.median() and im:
            rel = "%+.1f %%" % (100 * (im / ito4.median() - 1))
        notes = ["%s: %s" % (cfg.impl, status_str(cfg)) for cfg in (i, p) if cfg and status_str(cfg)]
        notes += ["%s: %s" % (cfg.impl, disturbed_str(cfg)) for cfg in (i, p) if cfg and disturbed_str(cfg)]
        r5.append([th, "%s (%s)" % (fmt_ns(im), fmt_range(ilo, ihi, "ns")) if im else "-",
                   "%s (%s)" % (fmt_ns(pm), fmt_range(plo, phi, "ns")) if pm else "-",
                   fmt_ratio(pm / im) if pm and im else "-", rel,
                   target_str(t) if th == 4096 else "", met_str(t) if th == 4096 else "", "; ".join(notes)])
    return (h4, r4), (h5, r5)


def echo_table(cfgs, by_key, targets):
    headers = ["connections", "ito msg/s (min-max)", "pthread msg/s (min-max)", "ito/pthread", "ito p50",
               "pthread p50", "ito p99 (min-max)", "pthread p99 (min-max)", "p99 ito/pthread", "target", "met",
               "notes"]
    tt = [next((x for x in targets if x["id"] == i), None) for i in ("echo_tput", "echo_p99")]
    rows = []

    def rng(m, lo, hi, f):
        return "%s (%s - %s)" % (f(m), f(lo), f(hi)) if m is not None else "-"

    def rate(v):
        return "%.0fk" % (v / 1e3) if v >= 1e4 else "%.0f" % v

    def us(v):
        return fmt_ns(v * 1e3)

    for conns in sorted({c.x for c in cfgs}):
        i, p = by_key.get("echo/ito/%d" % conns), by_key.get("echo/pthread/%d" % conns)
        iq, pq = i.field_stats("msgs_per_s"), p.field_stats("msgs_per_s")
        i50, p50 = i.field_stats("p50_us")[0], p.field_stats("p50_us")[0]
        i99, p99 = i.field_stats("p99_us"), p.field_stats("p99_us")
        notes = []
        for c in (i, p):
            for what in (c.skipped() and "skipped: " + c.skipped(), status_str(c), disturbed_str(c)):
                if what:
                    notes.append("%s: %s" % (c.impl, what))
            fair = c.field_stats("fairness")[0]
            if fair is not None:
                notes.append("%s fairness %.2f, stalled conns %d, setup %.2f s" % (
                    c.impl, fair, c.field_stats("stalled_conns")[0], c.field_stats("setup_s")[0]))
        last = conns == 10000
        rows.append([format(conns, ","), rng(*iq, rate), rng(*pq, rate),
                     fmt_ratio(iq[0] / pq[0]) if iq[0] and pq[0] else "-",
                     us(i50) if i50 is not None else "-", us(p50) if p50 is not None else "-",
                     rng(*i99, us), rng(*p99, us), fmt_ratio(i99[0] / p99[0]) if i99[0] and p99[0] else "-",
                     "; ".join(target_str(t) for t in tt if t) if last else "",
                     " / ".join(met_str(t) for t in tt if t) if last else "", "; ".join(notes)])
    return headers, rows


def fig3_table(miss, cfgs, by_key, targets):
    """One miss mode: run time of the three implementations per fit."""
    headers = ["fit (pages in cache)", "pthread (min-max)", "ito (min-max)", "ito ACT=0 (min-max)", "ito/pthread",
               "within 10 %", "ACT=0/ito", ">= 1.5x", "misses pthread / ito / ACT=0",
               "most reads at once pthread / ito / ACT=0", "notes"]
    tag = "ann" if miss == "annotated" else "plain"
    t_act = next((x for x in targets if x["id"] == "fig3_%s_act" % tag), None)
    fits = sorted({c.x for c in cfgs}, reverse=True)
    rows = []

    def cell(c):
        m, lo, hi = c.stats() if c else (None, None, None)
        return "%s (%s)" % (fmt_ns(m), fmt_range(lo, hi, "ns")) if m is not None else "-"

    def field(cs, f):
        return " / ".join("%g" % c.field_stats(f)[0] if c and c.field_stats(f)[0] is not None else "-" for c in cs)

    for fit in fits:
        ks = fig3_keys(miss, fit)
        i, off, p = (by_key.get(k) for k in ks)
        r_pt, r_act = median_ratio(by_key, ks[0], ks[2]), median_ratio(by_key, ks[1], ks[0])
        notes = []
        for c, who in ((p, "pthread"), (i, "ito"), (off, "ACT=0")):
            for what in (status_str(c) if c else "", disturbed_str(c) if c else ""):
                if what:
                    notes.append("%s: %s" % (who, what))
        d = next((r["data"] for c in (p, i, off) if c for r in c.ok_runs()), {})
        low = fit == fits[-1]
        rows.append(["%g (%s of %s)" % (fit, d.get("cache_pages", "?"), d.get("pages", "?")), cell(p), cell(i),
                     cell(off), "%.2fx" % r_pt if r_pt else "-",
                     ("MET" if r_pt <= 1.10 else "NOT MET") if r_pt else "not measured",
                     "%.2fx" % r_act if r_act else "-", met_str(t_act) if low else "",
                     field((p, i, off), "misses"), field((p, i, off), "max_inflight"), "; ".join(notes)])
    return headers, rows


def table5_table(cfgs, by_key, targets, grain):
    headers = ["barriers", "impl", "program 1 (min-max)", "program 2 (min-max)", "speedups", "sum",
               "sum / CPUs", "target", "met", "notes"]
    rows = []
    for c in cfgs:
        if c.impl == "seq" or not c.key.endswith("/" + grain):
            continue
        sp = table5_speedups(by_key, c.key)
        cells = []
        for f in ("seconds_0", "seconds_1"):
            m, lo, hi = c.field_stats(f)
            cells.append("%s (%s)" % (fmt_ns(m * 1e9), fmt_range(lo * 1e9, hi * 1e9, "ns")) if m else "-")
        tid = "table5_%s_%s" % (c.group, grain) if c.key.startswith("table5/ito/") else None
        t = next((x for x in targets if x["id"] == tid), None)
        note = "; ".join(x for x in (status_str(c), disturbed_str(c)) if x)
        rows.append([c.group, c.label] + cells +
                    ["%.2f + %.2f" % sp if sp else "-", "%.2f" % sum(sp) if sp else "-",
                     "%.2f" % (sum(sp) / c.cpus) if sp else "-", target_str(t) if t else "", met_str(t) if t else "",
                     note])
    t = next((x for x in targets if x["id"] == "table5_vs_noalloc_" + grain), None)
    if t:
        rows.append(["spin", "ito sum / ITO_ALLOCATOR=0 sum", "", "", "",
                     "%.2fx" % t["value"] if t["value"] else "-", "", target_str(t), met_str(t), ""])
    return headers, rows


def handoff_table(cfgs, by_key, targets):
    headers = ["configuration", "impl", "p50 (min-max)", "p90", "p99", "max", "reps", "p50 / kernel floor", "target",
               "met", "notes"]
    rows = []
    for c in cfgs:
        med, lo, hi = c.stats()
        pm = by_key[c.pair].median() if c.pair in by_key else None
        t = target_of(targets, c.key)
        us = [c.field_stats(f)[0] for f in ("p90_us", "p99_us", "max_us")]
        note = "; ".join(x for x in (status_str(c), disturbed_str(c)) if x)
        rows.append([c.label, c.impl, "%s (%s)" % (fmt_ns(med), fmt_range(lo, hi, "ns")) if med else "-"]
                    + [fmt_ns(u * 1e3) if u is not None else "-" for u in us]
                    + [reps_str(c), fmt_ratio(med / pm) if pm and med else "", target_str(t), met_str(t), note])
    return headers, rows


REALLOC_KINDS = (("arrive", "a process arrives (its join) -> the old owner off the processor"),
                 ("more", "its want rises -> the old owner off the processor"),
                 ("idle", "its vprocs go idle -> the other's vproc running there"),
                 ("leave", "it exits -> the other's vproc running there"))


def realloc_table(cfgs, by_key, targets):
    headers = ["what happened", "samples", "p50", "p99", "max", "notes"]
    rows = []
    for c in cfgs:
        for kind, text in REALLOC_KINDS:
            n = c.field_stats(kind + "_n")[0]
            us = [c.field_stats("%s_%s_us" % (kind, f))[0] for f in ("p50", "p99", "max")]
            rows.append([text, "%d" % n if n is not None else "-"] +
                        [fmt_ns(u * 1e3) if u is not None else "-" for u in us] + [""])
        us = [c.field_stats(f)[0] for f in ("p50_us", "p99_us", "max_us")]
        note = "; ".join(x for x in (status_str(c), disturbed_str(c)) if x)
        met = [met_str(next((x for x in targets if x["id"] == i), None)) for i in ("realloc_p50", "realloc_p99")]
        n = c.field_stats("samples")[0]
        rows.append(["all, pooled (targets: p50 %s, p99 %s)" % tuple(met), "%d" % n if n is not None else "-"] +
                    [fmt_ns(u * 1e3) if u is not None else "-" for u in us] + [note])
        pk = c.field_stats("parked_p50_us")[0], c.field_stats("parked_p99_us")[0]
        if pk[0] is not None:
            rows.append(["(the old owner's vproc parked: its VPROC_REMOVED)", "", fmt_ns(pk[0] * 1e3),
                         fmt_ns(pk[1] * 1e3), "", "on the processors it kept"])
    return headers, rows


def procprio_table(cfgs, by_key, targets):
    headers = ["high program uses", "impl", "priorities", "high alone", "high beside low", "slowdown (min-max)",
               "low's share of its rate alone", "target", "met", "notes"]
    rows = []
    for c in cfgs:
        a, h, (sd, lo, hi), share = (c.field_stats("alone_s")[0], c.field_stats("high_s")[0],
                                     c.field_stats("slowdown"), c.field_stats("low_share")[0])
        t = target_of(targets, c.key)
        note = "; ".join(x for x in (status_str(c), disturbed_str(c)) if x)
        rows.append([cpu_label(c.x), c.impl, c.label, fmt_ns(a * 1e9) if a else "-", fmt_ns(h * 1e9) if h else "-",
                     "%.2fx (%.2f-%.2f)" % (sd, lo, hi) if sd else "-", "%.2f" % share if share is not None else "-",
                     target_str(t) if t else "", met_str(t) if t else "", note])
    return headers, rows


def groups_table(cfgs, by_key, targets, wp):
    """One write share: every configuration's run time and cache misses beside fifo's and POSIX threads'."""
    headers = ["configuration", "impl", "CPUs", "run time (min-max)", "fifo/this", "pthread/this",
               "cache misses (min-max)", "misses this/fifo", "L1d read misses", "ns per line", "turns after another CPU",
               "reps", "target", "met", "notes"]
    fifo, pth = by_key.get("groups/fifo/%d" % wp), by_key.get("groups/pthread/%d" % wp)
    fm = groups_misses(fifo)[0] if fifo else None
    why = groups_counters_reason(cfgs)
    tt = [next((x for x in targets if x["id"] == i), None) for i in ("groups_time", "groups_misses")]
    rows = []
    for c in cfgs:
        med, lo, hi = c.stats()
        mm, mlo, mhi = groups_misses(c)
        l1 = [r["data"]["l1d_misses"] for r in c.used_runs() if r["data"].get("l1d_misses") is not None]
        if why:
            miss, rel, l1s = "unavailable", "-", "unavailable"
        else:
            miss = "%s (%s - %s)" % (format(int(mm), ","), format(int(mlo), ","), format(int(mhi), ",")) \
                if mm is not None else "-"
            rel = "%.2fx" % (mm / fm) if mm is not None and fm else "-"
            l1s = format(int(statistics.median(l1)), ",") if l1 else "-"
        npl, cross = c.field_stats("ns_per_line")[0], c.field_stats("cross_pct")[0]
        notes = [x for x in (status_str(c), disturbed_str(c)) if x]
        if c.impl == "ito" and c.used_runs():
            notes.append("steals %d, idle sleeps %d, switches %s" % (
                c.field_stats("steals")[0], c.field_stats("idle_sleeps")[0],
                format(int(c.field_stats("switches")[0]), ",")))
        elif c.used_runs():
            notes.append("kernel switches %s" % format(int(c.field_stats("kernel_switches")[0]), ","))
        busy = c.field_stats("busiest_cpu_pct")[0]
        if busy is not None and c.cpus > 1 and busy > 100.0 / c.cpus + 10:
            notes.append("unbalanced: %.0f %% of the turns on one CPU" % busy)
        mig = c.field_stats("migrations_pct")[0]
        if mig is not None and mig >= 0.05:
            notes.append("a thread on another CPU than its previous turn: %.1f %%" % mig)
        is_t = c.key == "groups/affinity-groups/%d" % GROUPS_WRITE_PCT
        rows.append([c.label, c.impl, c.cpus, "%s (%s)" % (fmt_ns(med), fmt_range(lo, hi, "ns")) if med else "-",
                     "%.2fx" % (fifo.median() / med) if fifo and fifo.median() and med else "-",
                     "%.2fx" % (pth.median() / med) if pth and pth.median() and med else "-",
                     miss, rel, l1s, "%.2f" % npl if npl is not None else "-",
                     "%.0f %%" % cross if cross is not None else "-", reps_str(c),
                     "; ".join("%s %s" % (("time" if t["id"] == "groups_time" else "misses"), target_str(t))
                               for t in tt if t) if is_t else "",
                     " / ".join(met_str(t) for t in tt if t) if is_t else "", "; ".join(notes)])
    return headers, rows


def load_line(cfgs, ncpu):
    """How busy the rest of the machine kept the CPUs during an experiment."""
    v = [(r["other_load_cpus"], r["wall_s"]) for c in cfgs for r in c.runs
         if r.get("other_load_cpus") is not None and r["wall_s"]]
    if not v:
        return ""
    # weighted by run time: /proc/stat counts in clock ticks (10 ms), too
    # coarse for one short run, fine summed over many
    avg = sum(o * w for o, w in v) / sum(w for _, w in v)
    s = "Other processes' load on the CPUs of these runs: %.2f CPUs on average (machine: %d CPUs)" % (avg, ncpu)
    if avg >= 0.25:
        s += " -- a busy machine: treat these figures with care"
    return s + "."


def experiment_tables(exp, cfgs, by_key, targets, ncpu):
    """[(subtitle, headers, rows)]"""
    if exp == "nbody":
        h, r = nbody_table(cfgs, by_key, targets)
        seq = by_key.get("nbody/seq")
        d = seq.ok_runs()[0]["data"] if seq and seq.ok_runs() else {}
        sub = "%s bodies, %s steps; speedup = median sequential time / median parallel time" % (
            format(d.get("n", 0), ","), d.get("steps", "?"))
        return [(sub, h, r)]
    if exp == "matmul":
        (h4, r4), (h5, r5) = matmul_tables(cfgs, by_key, targets, ncpu)
        where = "on 1 CPU and on %s" % cpu_label(ncpu) if ncpu > 1 else "on the only CPU"
        return [("Fig. 4: 4 threads, run time vs matrix size, %s" % where, h4, r4),
                ("Fig. 5: 512 x 512, run time vs thread count, on %s" % cpu_label(ncpu), h5, r5)]
    if exp == "echo":
        h, r = echo_table(cfgs, by_key, targets)
        c = cfgs[0]
        d = c.ok_runs()[0]["data"] if c.ok_runs() else {}
        sub = ("64-byte messages, closed loop, %s warm-up + %s measured per run; server on %s, load generator "
               "on %s" % ("%g s" % d["warmup_s"] if d else "?", "%g s" % d["duration_s"] if d else "?",
                          cpu_label(c.cpus), "another CPU" if c.load_cpus > c.cpus else "the same CPUs"))
        return [(sub, h, r)]
    if exp == "fig3":
        c = cfgs[0]
        d = c.ok_runs()[0]["data"] if c.ok_runs() else {}
        out = []
        for miss in ("annotated", "plain"):
            h, r = fig3_table(miss, [x for x in cfgs if x.group in (miss, None)], by_key, targets)
            out.append(("%s misses (%s): %s bodies in %s pages, %s step(s), %s threads on %s; a miss sleeps %s ms "
                        "in the kernel; times: median (min-max); ratios of medians; misses and most reads at once "
                        "(threads in a miss's nanosleep together): medians" % (
                            miss, "ITO_BLOCKING(nanosleep)" if miss == "annotated" else "bare nanosleep, not "
                            "bracketed", format(d.get("n", 0), ","), d.get("pages", "?"), d.get("steps", "?"),
                            d.get("threads", "?"), cpu_label(c.cpus), d.get("miss_ms", "?")), h, r))
        return out
    if exp == "table5":
        out = []
        for grain, (n, _) in TABLE5_GRAINS.items():
            h, r = table5_table(cfgs, by_key, targets, grain)
            seq = by_key.get("table5/seq/" + grain)
            c = next((x for x in cfgs if x.impl != "seq" and x.key.endswith("/" + grain)), None)
            d = seq.ok_runs()[0]["data"] if seq and seq.ok_runs() else {}
            if not r:
                continue
            out.append(("%s grain: %s bodies, %s steps of about %s each on one CPU. Two copies of bench/nbody's worker "
                        "version started together on %s, each with a worker per CPU; spinning barriers spin %d ms "
                        "before blocking; speedup = the sequential run alone (%s) / the program's time" % (
                            grain, format(n, ","), d.get("steps", "?"),
                            fmt_ns(seq.median() / d["steps"]) if seq and seq.median() and d.get("steps") else "?",
                            cpu_label(c.cpus) if c else "?", TABLE5_SPIN_US // 1000,
                            fmt_ns(seq.median()) if seq and seq.median() else "?"), h, r))
        return out
    if exp == "procprio":
        h, r = procprio_table(cfgs, by_key, targets)
        d = cfgs[0].ok_runs()[0]["data"] if cfgs and cfgs[0].ok_runs() else {}
        return [("bench/procprio on %s: a low-priority program L computes with a thread per CPU in rounds of %s us "
                 "and a barrier; a high-priority program H of %s such rounds arrives; slowdown = H's time beside L / "
                 "H's time alone; medians" % (cpu_label(cfgs[0].cpus) if cfgs else "?", d.get("round_us", "?"),
                                             d.get("rounds", "?")), h, r)]
    if exp == "realloc":
        h, r = realloc_table(cfgs, by_key, targets)
        c = cfgs[0]
        d = c.ok_runs()[0]["data"] if c.ok_runs() else {}
        return [("bench/realloc: process A computes on %s throughout; in each of %s rounds a process B starts, "
                 "computes %s ms, sleeps %s ms, computes again, exits (a thread per CPU in both); medians over the "
                 "runs of each run's percentiles" % (cpu_label(c.cpus), d.get("rounds", "?"), d.get("phase_ms", "?"),
                                                      d.get("phase_ms", "?")), h, r)]
    if exp == "groups":
        out = []
        why = groups_counters_reason(cfgs)
        for wp in sorted({c.group for c in cfgs}):
            cs = [c for c in cfgs if c.group == wp]
            d = next((r["data"] for c in cs for r in c.ok_runs()), {})
            h, r = groups_table(cs, by_key, targets, wp)
            sub = ("%d %% writes. bench/groups on %s: %s groups of %s threads, each group a working set of %s KiB (%s KiB per CPU "
                   "when the groups are spread evenly, %s KiB in all; L2 %s KiB per CPU%s, L3 %s KiB); each thread "
                   "makes %s turns, each a sweep of its group's set in scattered order reading in every line a word "
                   "another member writes and adding to its own word in %d %% of the lines, then yields; times: "
                   "median (min-max); fifo/this and pthread/this: how many times faster than fifo and than POSIX "
                   "threads; ns per line: a turn's time per line visited; turns after another CPU: the share of "
                   "turns whose group's previous turn ran on another CPU (vproc)" % (
                       wp, cpu_label(cs[0].cpus), d.get("ngroups", "?"), d.get("threads_per_group", "?"),
                       d.get("ws_kib", "?"), d.get("sets_per_cpu_kib", "?"), d.get("sets_total_kib", "?"),
                       d.get("l2_kib", "?"), ", shared" if d.get("l2_shared") else ", private",
                       d.get("l3_kib", "?"), format(d.get("rounds", 0), ","), wp))
            if why:
                sub += ". Cache misses: hardware counters unavailable: " + why
            out.append((sub, h, r))
        return out
    if exp == "handoff":
        h, r = handoff_table(cfgs, by_key, targets)
        c = cfgs[0]
        d = c.ok_runs()[0]["data"] if c.ok_runs() else {}
        return [("latency from A entering nanosleep(%s us) (B already made ready) to B running on the same "
                 "processor; %s samples per run; p90, p99, max: medians over the runs" % (
                     d.get("block_us", "?"), d.get("n", "?")), h, r)]
    h, r = micro_table(exp, cfgs, by_key, targets)
    return [("", h, r)]


# --------------------------------------------------------------------------
# plots

def plots(report, by_key, cfgs_by_exp, ncpu, cpu_model):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return [], "matplotlib is not available (%s): no plots" % e
    made = []
    machine = "%s, %s" % (cpu_model, cpu_label(ncpu))

    def save(fig, name):
        path = os.path.join(report, name)
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        made.append(name)

    def err(cfg, scale=1.0):
        m, lo, hi = cfg.stats()
        return m * scale, (m - lo) * scale, (hi - m) * scale

    # microbenchmarks: log-scale bars, ito vs pthread
    micro = []
    for exp in ("nullfork", "forkmany", "fork1000", "yield", "signalwait", "kpingpong"):
        for c in cfgs_by_exp.get(exp, []):
            if c.impl == "ito" and c.pair in by_key and c.median() and by_key[c.pair].median():
                if exp == "yield" and c.cpus != 1:
                    continue
                name = {"nullfork": "null fork", "forkmany": "fork-many\n/thread", "fork1000": "1000 forks\n/thread",
                        "yield": "yield", "signalwait": "signal-wait", "kpingpong": "kernel s-w"}[exp]
                if exp == "kpingpong":
                    name += " " + c.key.split("/")[2]
                if exp in ("signalwait", "kpingpong"):
                    name += "\n" + ("same vproc/CPU" if c.key.endswith("same") else "across 2")
                else:
                    name += "\n%s" % cpu_label(c.cpus)
                micro.append((name, c, by_key[c.pair]))
    if micro:
        fig, ax = plt.subplots(figsize=(max(7, 1.25 * len(micro)), 4.8))
        xs = list(range(len(micro)))
        w = 0.38
        for off, idx, label, color in ((-w / 2, 1, "ito", "tab:blue"), (w / 2, 2, "POSIX threads", "tab:orange")):
            vals, lo, hi = [], [], []
            for m in micro:
                v, a, b = err(m[idx])
                vals.append(v)
                lo.append(a)
                hi.append(b)
            ax.bar([x + off for x in xs], vals, w, yerr=[lo, hi], capsize=3, label=label, color=color)
        for x, m in zip(xs, micro):
            ax.text(x, m[2].median() * 1.4, fmt_ratio(m[2].median() / m[1].median()), ha="center", fontsize=8)
        ax.set_yscale("log")
        ax.set_xticks(xs)
        ax.set_xticklabels([m[0] for m in micro], fontsize=8)
        ax.set_ylabel("time per operation (ns, log scale)")
        ax.set_title("Microbenchmarks: ito vs POSIX threads (median, min-max; label: pthread/ito)\n" + machine,
                     fontsize=9)
        ax.legend()
        ax.grid(axis="y", which="both", alpha=0.3)
        save(fig, "micro.png")

    # N-body speedup
    nb = cfgs_by_exp.get("nbody", [])
    if nb and by_key.get("nbody/seq") and by_key["nbody/seq"].median():
        cs = sorted({c.x for c in nb if c.impl != "seq"})
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        for impl, color, label in (("ito", "tab:blue", "ito (fine-grained fork/join)"),
                                   ("pthread", "tab:orange", "POSIX threads (1 per CPU, static)")):
            pts = [(c,) + nbody_speedup(by_key, impl, c) for c in cs]
            pts = [p for p in pts if p[1] is not None]
            if pts:
                ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                            yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                            marker="o", capsize=3, color=color, label=label)
        ax.plot([1, max(cs)], [1, max(cs)], "k--", label="ideal", linewidth=1)
        ax.set_xlabel("processors (vprocs / CPUs)")
        ax.set_ylabel("speedup over the sequential version")
        ax.set_xticks(cs)
        d = by_key["nbody/seq"].ok_runs()[0]["data"]
        ax.set_title("Barnes-Hut N-body (seed 000 Fig. 2): %s bodies, %d steps\n%s" % (
            format(d["n"], ","), d["steps"], machine), fontsize=9)
        ax.legend()
        ax.grid(alpha=0.3)
        save(fig, "nbody_speedup.png")

    # Table 5: sum of the two programs' speedups, per grain and barrier kind
    t5 = cfgs_by_exp.get("table5", [])
    if any(c.ok_runs() for c in t5 if c.impl != "seq"):
        grains = [g for g in TABLE5_GRAINS if any(c.ok_runs() for c in t5 if c.key.endswith("/" + g))]
        fig, axs = plt.subplots(1, len(grains), figsize=(5.6 * len(grains), 4.4), sharey=True, squeeze=False)
        kinds = (("ito", "ito (allocator)", "tab:blue"), ("ito-noalloc", "ito, ITO_ALLOCATOR=0", "tab:red"),
                 ("pthread", "POSIX threads", "tab:orange"))
        cpus = next(c.cpus for c in t5 if c.impl != "seq")
        for ax, grain in zip(axs[0], grains):
            w = 0.26
            for i, (kind, label, color) in enumerate(kinds):
                for j, sync in enumerate(("spin", "block")):
                    sp = table5_speedups(by_key, "table5/%s/%s/%s" % (kind, sync, grain))
                    if sp:
                        ax.bar(j + (i - 1) * w, sp[0], w, color=color, label=label if j == 0 else None)
                        ax.bar(j + (i - 1) * w, sp[1], w, bottom=sp[0], color=color, alpha=0.6)
                        ax.text(j + (i - 1) * w, sum(sp) + 0.03, "%.2f" % sum(sp), ha="center", fontsize=8)
            ax.axhline(cpus, color="k", linestyle="--", linewidth=1, label="CPUs")
            ax.set_xticks([0, 1])
            ax.set_xticklabels(["spinning barriers", "blocking barriers"])
            ax.set_title("%s grain: %s bodies" % (grain, format(TABLE5_GRAINS[grain][0], ",")), fontsize=9)
            ax.grid(axis="y", alpha=0.3)
        axs[0][0].set_ylabel("sum of the two programs' speedups\n(lower bar: program 1, upper: program 2)")
        fig.legend(*axs[0][0].get_legend_handles_labels(), fontsize=8, loc="lower center", ncol=4,
                   bbox_to_anchor=(0.5, -0.06))
        fig.suptitle("Two N-body programs at once (seed 000 Table 5), each asking for every CPU; medians\n" + machine,
                     fontsize=9)
        save(fig, "table5.png")

    # N-body behind a buffer cache (seed 000 Fig. 3): run time vs fit, one panel per miss mode
    f3 = cfgs_by_exp.get("fig3", [])
    if any(c.ok_runs() for c in f3):
        fig, axs = plt.subplots(1, 2, figsize=(11, 4.4), sharey=True)
        fits = sorted({c.x for c in f3})
        for ax, miss in zip(axs, ("annotated", "plain")):
            for idx, color, label in ((2, "tab:orange", "POSIX threads"), (0, "tab:blue", "ito (activations)"),
                                      (1, "tab:red", "ito, ITO_ACTIVATIONS=0")):
                pts = [by_key.get(fig3_keys(miss, f)[idx]) for f in fits]
                pts = [c for c in pts if c and c.median()]
                if pts:
                    ax.errorbar([100 * c.x for c in pts], [c.median() / 1e9 for c in pts],
                                yerr=[[(c.median() - c.stats()[1]) / 1e9 for c in pts],
                                      [(c.stats()[2] - c.median()) / 1e9 for c in pts]],
                                marker="o", capsize=3, color=color, label=label)
            ax.set_xlabel("data in the buffer cache (%)")
            ax.set_title("misses " + ("in ITO_BLOCKING" if miss == "annotated" else "not annotated"), fontsize=9)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.legend()
        axs[0].set_ylabel("run time (s)")
        d = next(r["data"] for c in f3 for r in c.ok_runs())
        fig.suptitle("N-body behind a buffer cache, a miss blocks %d ms in the kernel (seed 000 Fig. 3): %s bodies, "
                     "%d threads on %s (median, min-max)\n%s" % (d["miss_ms"], format(d["n"], ","), d["threads"],
                                                                   cpu_label(f3[0].cpus), machine), fontsize=9)
        save(fig, "fig3.png")

    # matmul Fig. 4
    mm = cfgs_by_exp.get("matmul", [])
    f4 = [c for c in mm if c.group == "fig4"]
    if f4:
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        styles = {"ito": "-", "pthread": "--"}
        colors = {1: "tab:green", ncpu: "tab:blue"} if ncpu > 1 else {1: "tab:green"}
        for impl in ("ito", "pthread"):
            for c in sorted({x.cpus for x in f4}):
                pts = [x for x in f4 if x.impl == impl and x.cpus == c and x.median()]
                pts.sort(key=lambda x: x.x)
                if not pts:
                    continue
                ax.errorbar([p.x for p in pts], [p.median() / 1e9 for p in pts],
                            yerr=[[(p.median() - p.stats()[1]) / 1e9 for p in pts],
                                  [(p.stats()[2] - p.median()) / 1e9 for p in pts]],
                            linestyle=styles[impl], marker="o", capsize=3, color=colors.get(c, "tab:red"),
                            label="%s, %s" % ("ito" if impl == "ito" else "POSIX threads",
                                              vp_label(c) if impl == "ito" else cpu_label(c)))
        ax.set_yscale("log")
        ax.set_xlabel("matrix size n (n x n doubles)")
        ax.set_ylabel("run time (s, log scale)")
        ax.set_title("Matrix multiply with 4 threads (seed 001 Fig. 4)\n" + machine, fontsize=9)
        ax.legend()
        ax.grid(alpha=0.3, which="both")
        save(fig, "matmul_size.png")

    f5 = [c for c in mm if c.group == "fig5"]
    if f5:
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        for impl, color, label in (("ito", "tab:blue", "ito"), ("pthread", "tab:orange", "POSIX threads")):
            pts = sorted([x for x in f5 if x.impl == impl and x.median()], key=lambda x: x.x)
            if pts:
                ax.errorbar([p.x for p in pts], [p.median() / 1e9 for p in pts],
                            yerr=[[(p.median() - p.stats()[1]) / 1e9 for p in pts],
                                  [(p.stats()[2] - p.median()) / 1e9 for p in pts]],
                            marker="o", capsize=3, color=color, label=label)
        i4 = by_key.get("matmul/fig5/ito/4")
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
        ax.set_title("Matrix multiply 512 x 512 vs thread count (seed 001 Fig. 5), %s\n%s" % (
            cpu_label(ncpu), machine), fontsize=9)
        ax.legend()
        ax.grid(alpha=0.3, which="both")
        save(fig, "matmul_threads.png")

    # echo server: throughput and p99 vs connections
    ec = cfgs_by_exp.get("echo", [])
    if any(c.ok_runs() for c in ec):
        fig, axs = plt.subplots(1, 2, figsize=(11, 4.4))
        for impl, color, label in (("ito", "tab:blue", "ito"), ("pthread", "tab:orange", "POSIX threads")):
            pts = sorted([c for c in ec if c.impl == impl and c.ok_runs()], key=lambda c: c.x)
            for ax, field, scale in ((axs[0], "msgs_per_s", 1e-3), (axs[1], "p99_us", 1e-3)):
                st = [c.field_stats(field) for c in pts]
                ax.errorbar([c.x for c in pts], [m * scale for m, _, _ in st],
                            yerr=[[(m - lo) * scale for m, lo, _ in st], [(hi - m) * scale for m, _, hi in st]],
                            marker="o", capsize=3, color=color, label=label)
        srv = ec[0]
        for ax, ylabel in ((axs[0], "throughput (thousand messages/s)"), (axs[1], "p99 latency (ms, log scale)")):
            ax.set_xscale("log")
            ax.set_xticks([100, 1000, 10000])
            ax.set_xticklabels(["100", "1,000", "10,000"])
            ax.minorticks_off()
            ax.set_xlabel("concurrent connections (one thread each)")
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3, which="both")
            ax.legend()
        axs[0].set_ylim(bottom=0)
        axs[1].set_yscale("log")
        fig.suptitle("TCP echo server on loopback, 64-byte messages, closed loop (median, min-max); server on %s, "
                     "load generator on %s\n%s" % (cpu_label(srv.cpus), "another CPU" if srv.load_cpus > srv.cpus
                                                    else "the same CPUs", machine), fontsize=9)
        save(fig, "echo.png")

    mem = [by_key.get("memory/ito"), by_key.get("memory/pthread")]
    if all(m and m.median() for m in mem):
        fig, ax = plt.subplots(figsize=(5, 4))
        labels = []
        for i, (m, color) in enumerate(zip(mem, ("tab:blue", "tab:orange"))):
            v, lo, hi = err(m)
            ax.bar([i], [v], 0.6, yerr=[[lo], [hi]], capsize=3, color=color)
            cnt = m.ok_runs()[0]["data"]["count"]
            labels.append("%s\n%s threads" % ("ito" if m.impl == "ito" else "POSIX threads", format(cnt, ",")))
            ax.text(i, v, "%.2f KiB" % v, ha="center", va="bottom")
        ax.axhline(16, color="k", linestyle=":", linewidth=1, label="target (ito): 16 KiB")
        ax.set_xticks([0, 1])
        ax.set_xticklabels(labels)
        ax.set_ylabel("resident memory per blocked thread (KiB)")
        ax.set_title("Memory per blocked thread (VmRSS; pthreads' kernel stacks not counted)\n" + machine,
                     fontsize=9)
        ax.legend()
        save(fig, "memory.png")
    # scheduling policies: decision cost vs ready threads; seed 002 section 7
    dec = [c for c in cfgs_by_exp.get("decision", []) if c.median()]
    if dec:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for pol in POLICIES:
            cs = sorted((c for c in dec if c.group == pol), key=lambda c: c.x)
            if cs:
                ax.errorbar([c.x for c in cs], [err(c)[0] for c in cs],
                            yerr=[[err(c)[1] for c in cs], [err(c)[2] for c in cs]], marker="o", capsize=3,
                            label=pol)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("ready threads")
        ax.set_ylabel("cycles per decision (the policy's pick)")
        ax.set_title("Cost of one scheduling decision, 1 vproc\n" + machine)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        save(fig, "decision.png")
    # thread groups (seed 004): run time per configuration, and the misses where counted
    gr = [c for c in cfgs_by_exp.get("groups", []) if c.median()]
    if gr:
        wps = sorted({c.group for c in gr})
        counted = not groups_counters_reason(gr)
        fig, axs = plt.subplots(1, 2, figsize=(11, 4.4))
        names = [n for n, *_ in GROUPS_CONFIGS]
        colors = ["tab:red", "tab:green", "tab:purple", "tab:blue", "tab:orange"]
        w = 0.8 / len(wps)
        for k, wp in enumerate(wps):
            for i, (name, label, _, _) in enumerate(GROUPS_CONFIGS):
                c = by_key.get("groups/%s/%d" % (name, wp))
                if not c or not c.median():
                    continue
                x = i + (k - (len(wps) - 1) / 2) * w
                v, lo, hi = err(c, 1e-9)
                axs[0].bar([x], [v], w, yerr=[[lo], [hi]], capsize=3, color=colors[i],
                           alpha=1.0 if wp == GROUPS_WRITE_PCT else 0.5)
                f = by_key.get("groups/fifo/%d" % wp)
                tag = ("%d%%: " % wp if len(wps) > 1 else "") + (
                    "%.2fx" % (f.median() / c.median()) if f and f.median() else "")
                axs[0].text(x, v + hi + 0.01 * v, tag, ha="center", va="bottom", fontsize=7)
                if counted:
                    m, mlo, mhi = groups_misses(c)
                    if m is not None:
                        axs[1].bar([x], [m / 1e6], w, yerr=[[(m - mlo) / 1e6], [(mhi - m) / 1e6]], capsize=3,
                                   color=colors[i], alpha=1.0 if wp == GROUPS_WRITE_PCT else 0.5)
                else:
                    npl = c.field_stats("ns_per_line")
                    axs[1].bar([x], [npl[0]], w, yerr=[[npl[0] - npl[1]], [npl[2] - npl[0]]], capsize=3,
                               color=colors[i], alpha=1.0 if wp == GROUPS_WRITE_PCT else 0.5)
        labels = ["fifo", "ws", "affinity\nno groups", "affinity\n+ groups", "POSIX\nthreads"]
        for ax in axs:
            ax.set_xticks(range(len(names)))
            ax.set_xticklabels(labels, fontsize=8)
            ax.grid(axis="y", alpha=0.3)
            ax.set_ylim(bottom=0)
        axs[0].set_ylabel("run time (s), median and min-max")
        axs[0].set_title("run time (label: fifo time / this)", fontsize=9)
        if counted:
            axs[1].set_ylabel("cache misses (millions, user space, whole process)")
            axs[1].set_title("PERF_COUNT_HW_CACHE_MISSES, median and min-max", fontsize=9)
        else:
            axs[1].set_ylabel("ns per line visited (a turn's time / its lines)")
            axs[1].set_title("hardware counters unavailable: a turn's time per line instead", fontsize=9)
        d = next(r["data"] for c in gr for r in c.ok_runs())
        fig.suptitle("Threads sharing data (seed 004): %d groups of %d threads, %d KiB per group, %s writes, %s\n%s" % (
            d["ngroups"], d["threads_per_group"], d["ws_kib"], ", ".join("%d %%" % x for x in wps),
            cpu_label(gr[0].cpus), machine), fontsize=9, y=1.04)
        save(fig, "groups.png")
    for part, xlabel in (("a", "threads T (n = 1,000)"), ("b", "integers summed per thread n (T = 25)")):
        cs_all = [c for c in cfgs_by_exp.get("sumthreads", []) if c.group == part and c.median()]
        if not cs_all:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for name in ["pthread"] + POLICIES:
            cs = sorted((c for c in cs_all if (c.impl == "pthread" if name == "pthread" else
                                                c.env.get("ITO_POLICY") == name)), key=lambda c: c.x)
            if cs:
                ax.errorbar([c.x for c in cs], [err(c, 1e-6)[0] for c in cs],
                            yerr=[[err(c, 1e-6)[1] for c in cs], [err(c, 1e-6)[2] for c in cs]], marker="o",
                            capsize=3, label="POSIX threads" if name == "pthread" else "ito " + name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("total time (ms)")
        ax.set_title("Seed 002 section 7: spawn, sum, collect\n" + machine)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        save(fig, "sumthreads_%s.png" % part)
    return made, None


# --------------------------------------------------------------------------
# the report

INTRO = """\
This report is written by `bench/run.py` (`make run`). Every experiment reproduces one of the seed
papers' measurements (see `../shared/seeds/README.md` for the papers) on the machine at hand, and
measures ito beside POSIX threads (glibc NPTL) in the same run:

| experiment | reproduces | what one measurement is |
|---|---|---|
| null fork | seed 000 Table 4 | mean cost of creating and joining an empty thread, one after another |
| fork-many | seed 000/003 | create 100,000 threads, then join them all; cost per thread |
| 1,000 forks | seed 003 Table 1 | create 1,000 threads, then join them all; cost per thread (x1000 = the paper's figure) |
| yield | seed 003 Table 2 | two threads on one processor yield to each other 100,000 times; cost per yield |
| signal-wait | seed 000 Table 4 | two threads ping-pong through a mutex and condition variables; round trip, on one processor and across two |
| hand-off | seed 000 Table 2 ("blocked" event) | one processor: thread A makes B ready, then blocks 2 ms in nanosleep inside ITO_BLOCKING; time until B runs (ito: the monitor hands the vproc to a spare kernel thread; POSIX threads: the kernel switches) |
| N-body, buffer cache | seed 000 Fig. 3 | all-pairs N-body whose pages sit behind an LRU buffer cache holding a given share of them; a miss blocks 50 ms in nanosleep (in ITO_BLOCKING, or bare); 4 threads per CPU; ito with activations, with ITO_ACTIVATIONS=0, and POSIX threads; run time vs that share |
| N-body | seed 000 Fig. 2 | Barnes-Hut simulation (2D); ito forks thousands of threads per step recursively, POSIX threads use one thread per CPU and a static partition; speedup over a sequential version; results checked bit for bit against it |
| matrix multiply | seed 001 Figs. 4, 5 | C = A x B in doubles; Fig. 4: 4 threads, size varied, 1 CPU vs all; Fig. 5: 512 x 512, 1 to 4096 threads; results checked |
| memory | the issue | resident memory per thread with 1,000,000 ito threads blocked at once (POSIX threads: up to 10,000) |
| kernel signal-wait | seed 000 section 5.2 | two threads ping-pong a message through two pipes (or eventfds) with blocking reads and writes (ito: ito_read/ito_write on io_uring); round trip, on one processor and across two |
| thread groups | seed 004 section 3 | groups of threads sharing a working set each (4 groups per CPU, 4 threads each), every thread sweeping its group's set and writing a share of its lines, then yielding; fifo, ws, affinity without and with groups, POSIX threads; run time and hardware cache misses |
| echo server | the issue | TCP echo server on loopback, one thread per connection, 100 / 1,000 / 10,000 connections of a closed-loop client (a separate process, the same for both); throughput and p99 latency |

How to read the tables: each configuration ran several times, each time in a fresh process (`reps`:
successful/total); the figure is the **median**, with the **min - max** beside it. **pthread/ito** is
the POSIX-threads median divided by the ito median under the same conditions (same number of CPUs):
how many times faster (or smaller) ito is. ito's vprocs are pinned one per CPU by ito; POSIX threads
are pinned where the experiment says "one CPU" / "two CPUs", otherwise the process is restricted to
the CPUs it may use. The targets come from the issue and were set for the 2-core development machine;
"MET" means the median meets the target.

The machine is shared. For every run, `run.py` measures how busy other processes kept the CPUs the run
used (from /proc/stat, minus the run's own CPU time). A run during which they kept %.0f %% or more of
its CPUs busy on average is *loaded*: it stays in results.json, another run replaces it (up to twice
the repetitions), and the figures come from the unloaded runs when there are at least half the
repetitions of them (the notes say "k loaded set aside"); otherwise from that many of the least-loaded
runs (the notes say "LOADED", and how much of their CPUs others took at worst). Runs are chosen by the
load measured beside them, never by their results. CPU accounting cannot tell whether that load
delayed a run or only used a CPU the run left idle (a run with fewer busy threads than CPUs, an ito
vproc asleep for lack of work), so a loaded run is only less trustworthy, not wrong.
`reps` is runs used / runs made.
""" % (100 * LOADED_FRACTION)


def write_report(path, info, args, ran, cfgs_by_exp, by_key, targets, ncpu, pngs, plot_err, failures,
                 duration, table_texts):
    L = []
    L.append("# ito benchmark report\n")
    L.append("Generated %s by `bench/run.py` (%s mode%s) in %s; ito commit %s.\n" % (
        info["finished"], "full" if args.full else "quick",
        ", only: " + ", ".join(ran) if args.only else "", "%d min %02d s" % (duration // 60, duration % 60),
        info.get("commit") or "unknown"))
    L.append("## Machine\n")
    L.append("- CPU: %s; %d online, **%d usable by this process** (affinity %s%s); every figure below "
             "states how many it used." % (
                 info["cpu_model"], info["cpus_online"], ncpu, compress_cpus(info["cpus_affinity"]),
                 ", cgroup limit %s" % info["cgroup_cpu_limit"] if info["cgroup_cpu_limit"] else ""))
    L.append("- Memory: %s GiB; kernel %s; pid_max %s, vm.max_map_count %s (defaults left alone)." % (
        "%.1f" % (info["mem_total_kib"] / 1048576) if info["mem_total_kib"] else "?", info["kernel"],
        info["pid_max"], info["max_map_count"]))
    L.append("- Load average at start: %s; at end: %s." % (info["loadavg_start"], info.get("loadavg_end")))
    allruns = [c for exp in ran for c in cfgs_by_exp[exp]]
    ll = load_line(allruns, ncpu)
    if ll:
        L.append("- " + ll.replace("during these runs", "during the benchmark runs (all experiments; "
                                   "measured from /proc/stat minus the benchmark's own CPU time)"))
    L.append("- Compiler: %s (benchmarks -O2, no -march=native; ito built in Release mode, linked as a "
             "shared library)." % (info["compiler"] or "?"))
    if info["ito_env"]:
        L.append("- ITO_* environment: %s" % ", ".join("%s=%s" % kv for kv in sorted(info["ito_env"].items())))
    L.append("")
    L.append("## What is measured\n")
    L.append(INTRO)
    L.append("## Targets\n")
    rows = []
    for t in targets:
        if t["exp"] not in ran:
            continue
        rows.append([t["text"], t["peer"], fmt_val(t["value"], t["unit"]) if t["value"] is not None else "-",
                     met_str(t), t["note"]])
    L.append(md_table(["target (issue)", "best peer", "ito measured (median)", "result", "note"], rows))
    L.append("\nThe issue's POSIX-threads figures on its machine (for reference; ours are in the tables): "
             "21,305 ns, 42,735 ns, 1,386 ns, 8,562 ns, 48,252 ns.\n")
    if failures:
        L.append("## Failures\n")
        L.append("These runs failed (crash, time-out, wrong result); the run as a whole fails:\n")
        for f in failures:
            L.append("- `%s` rep %d: %s" % (f["argv"], f["rep"], f["error"]))
        L.append("")
    figs = {"nullfork": None, "signalwait": "micro.png", "nbody": "nbody_speedup.png", "memory": "memory.png",
            "echo": "echo.png", "fig3": "fig3.png", "groups": "groups.png"}
    for exp in ran:
        L.append("## %s\n" % TITLES[exp])
        L.append("Reproduces %s.\n" % SOURCES[exp])
        for sub, h, r in table_texts[exp]:
            if sub:
                L.append("**%s**\n" % sub)
            L.append(md_table(h, r))
            L.append("")
        L.append(load_line(cfgs_by_exp[exp], ncpu) + "\n")
        if exp == "matmul":
            for p in ("matmul_size.png", "matmul_threads.png"):
                if p in pngs:
                    L.append("![%s](%s)\n" % (p, p))
        elif figs.get(exp) in pngs:
            L.append("![%s](%s)\n" % (figs[exp], figs[exp]))
        L.append(EXP_NOTES.get(exp, "") + "\n")
    if "micro.png" in pngs and "signalwait" not in ran:
        L.append("![micro.png](micro.png)\n")
    if plot_err:
        L.append("**Plots:** %s\n" % plot_err)
    L.append("## Raw data\n")
    L.append("Every run (command line, exit status, the JSON it printed, errors) is in "
             "[results.json](results.json).\n")
    with open(path, "w") as f:
        f.write("\n".join(L))


EXP_NOTES = {
    "nullfork": "ito runs on the given number of vprocs (the main thread is an ito thread on vproc 0); "
                "POSIX threads run with the process restricted to the same number of CPUs. "
                "A warm-up of a tenth of the operations precedes the timed ones. \"switches/op\" and "
                "\"steals\" are ito's own counters over the timed part (ito may run a child that has not "
                "started yet inside the join that waits for it: see src/core/inline.c).",
    "forkmany": "POSIX threads cannot have 100,000 unjoined threads at once with default limits (each keeps "
                "its stack mapping until joined; vm.max_map_count and pid_max bound them): the program "
                "lowers the count and says so in the notes.",
    "yield": "\"yields without a switch\" counts the yields after which the other thread had not run: "
             "such a yield is not the operation measured. The ito row \"both on vproc 0 of N\" places both "
             "threads on vproc 0 while the other vprocs idle (the policy may move one of them away).",
    "signalwait": "ito threads are placed with ito_attr_set_vproc; \"off its vproc\" is how often (every "
                  "64th iteration) a thread found itself on another vproc than the one it was placed on. "
                  "POSIX threads are pinned with pthread_attr_setaffinity_np. The \"hardware floor\" row is "
                  "two pinned threads handing one cache line back and forth by spinning: no round trip "
                  "between two CPUs can be faster, and a mutex + condition round trip moves several lines "
                  "(the mutex word, the condition's queue, the woken thread's state) each way.",
    "nbody": "Each parallel run's final positions are compared (hash) with the sequential run's: they must be "
             "bit-for-bit equal, else the run counts as failed.",
    "handoff": "B waits on a semaphore; A notes the time, posts it and calls nanosleep (2 ms) inside "
               "ito_blocking_begin/end; B notes when it runs. ito runs both on one vproc, so B can only run once the "
               "monitor has seen A's call (after about 20 us) and handed the vproc to a spare kernel thread; with "
               "ITO_ACTIVATIONS=0 B waits for the whole sleep. In the plain-call row A's nanosleep (10 ms) is not "
               "bracketed: the monitor must find the vproc stalled -- no pick and no CPU time for 1 ms, its kernel "
               "thread asleep -- and the p99 holds the first stall after a quiet spell, which takes longer. "
               "POSIX threads are both pinned to one CPU: the kernel switches to B when A sleeps (the floor).",
    "table5": "bench/together starts two copies of bench/nbody at once, in an allocation domain of their own "
              "(ITO_ALLOC_DOMAIN), so that other ito processes do not count. Each copy runs the worker version: one "
              "worker per CPU (POSIX threads pinned, as in the nbody experiment; ito threads on a vproc per CPU), "
              "barriers between phases. With ito's allocator the two processes divide the CPUs (half each on 2 "
              "CPUs); with ITO_ALLOCATOR=0 and with POSIX threads both run a worker per CPU and the kernel "
              "time-slices them. Spinning barriers: a waiter spins for the time given (an ito thread by yielding "
              "its vproc) before it blocks; blocking ones block at once. Time-slicing costs a program whose "
              "workers spin at a barrier the time its other worker is off the CPU, up to a kernel slice (a few ms) "
              "per barrier: little when a phase lasts tens of ms (coarse grain), much when it lasts about 1 ms "
              "(fine grain, three barriers in a 4 ms step).",
    "procprio": "ito: the processes are ITO_PRIORITY=10 and 0, in an allocation domain of their own; the "
                "division gives the high one every processor it wants and the low one the rest, but never fewer "
                "than one: where H wants every CPU, L's one vproc time-shares a CPU with one of H's, and H's "
                "barriers wait for the worker that shares it. H also asks for more processors only when a time "
                "slice ends, or a thread yields, while another waits: workers that block at a barrier every 500 "
                "us on one vproc never do. POSIX threads: L at nice 19, H at nice 0, unpinned.",
    "realloc": "Times are the library's own, CLOCK_MONOTONIC in both processes: a hint's time is "
               "ito_alloc_info().hinted_ns (B's join, its want rising or falling), polled from a plain kernel thread "
               "of B every 0.5 ms; 'leave' is timed just before B exits. A processor taken from A is B's when A's "
               "threads last ran on it (they log sched_getcpu() intervals), since B's vprocs already run there, "
               "time-shared; one given to A is A's when its vproc there reports VPROC_ADDED. A hint after which "
               "nothing moved before the next one is left out (counted as unmatched), as is an arrival whose join "
               "the poller missed.",
    "fig3": "bench/nbodycache: direct-sum 2D N-body; the bodies are split into pages behind an application-level "
            "buffer cache (LRU, one lock: ito_mutex for ito, pthread_mutex for POSIX threads) holding the given "
            "share of the pages, warm at the start. Each step forks one thread per chunk of bodies (4 per CPU); a "
            "thread visits every page once in a pseudo-random order and adds its pull to each of its bodies. A miss "
            "drops the lock and calls nanosleep(50 ms), inside ITO_BLOCKING (annotated) or bare (plain); a thread "
            "that wants a page already being read waits for that read. ITO_ACTIVATIONS=0 makes ito ignore the "
            "brackets, so a blocked miss holds its vproc (seed 000's FastThreads on kernel threads); ito does not "
            "yet detect un-annotated blocking calls, so plain misses hold the vproc with activations on too. The "
            "POSIX-threads row is one set of runs shown in both tables (a pthread run never calls ito). Misses "
            "differ between implementations: when many reads are in flight at once, more threads find their page "
            "already being read and wait for it instead of reading it again. Every run's final positions must be "
            "bit-for-bit those of the first POSIX-threads run (same chunks, same order).",
    "matmul": "The time covers creating the threads, the multiplication and the joins. Thread t computes "
              "the t-th of T equal contiguous ranges of C's elements (whole rows while T <= n), each element "
              "a dot product with B stored transposed, so the work per element and its memory access do not "
              "change with T. Each result is verified by exact checksums.",
    "kpingpong": "Each thread blocks in read until the other writes: ito threads park in ito_read on their vproc's "
                 "io_uring ring (the vproc runs other threads or sleeps on the ring), POSIX threads block in the "
                 "kernel. Placement as in signal-wait. Every message is checked. Across two CPUs the round trip "
                 "is dominated by waking a sleeping CPU, which costs tens of microseconds on some virtual machines.",
    "echo": "bench/echo starts bench/echoload (one kernel thread, epoll, non-blocking sockets) as a child "
            "process and runs the server: an accept loop spawning one thread per connection (64 KiB stacks for "
            "both), each receiving until end of file and sending back what it got; ito threads use "
            "ito_accept/ito_recv/ito_send. The client connects in batches of 500 (each connection makes one "
            "round trip before the next batch), loops during the warm-up, then counts the round trips that "
            "complete in the window (throughput). Latency: every round trip under way at some moment of the "
            "window, including those still in flight at its end (they complete after it, with no new load), "
            "so a connection the server starves counts with the time it waited (log-linear histogram, < 3 % "
            "error); a starved connection's wait, hence p99, grows with the length of the run. Every echo is "
            "checked byte for byte, and the server's bytes echoed must equal the client's bytes sent. "
            "\"fairness\" is Jain's index of round trips per connection in the window (1: equal; "
            "1/connections: one got all), \"stalled\" the connections that completed none in it; in a closed "
            "loop the mean latency is connections / throughput whatever the server does. A point "
            "that a system limit (RLIMIT_NOFILE, ephemeral ports, RLIMIT_NPROC) does not allow is skipped "
            "and says so.",
    "groups": "bench/groups: word j of a line belongs to member j, the only one that writes it; every member reads "
              "a word of the next member's, so each line is shared by the group, and the writes invalidate the copies "
              "other CPUs hold (seed 004's shared data). The default working set per group is L2 / (2 x groups per "
              "CPU), rounded down to a power of two: the sets of the groups one CPU holds under affinity with groups "
              "fill half its L2, while a CPU that runs every group's threads (fifo) cycles through all of them. The "
              "visits are scattered (a stride of 0.6 of the set, a page or more apart), so that no prefetcher "
              "follows them, but independent: the CPU overlaps their misses. Threads are spawned group by group; "
              "with 'affinity' and groups each group gets a home vproc round-robin and runs only there. Cache "
              "misses are PERF_COUNT_HW_CACHE_MISSES for the whole process (user space, counters inherited by every "
              "thread, ito's vprocs included), over the same span as the time; where the machine exposes no PMU (a "
              "virtual machine) the table says so and the target on misses is not measurable. Every run verifies "
              "every word of every set (each writer's additions, whatever the interleaving). How the policies place "
              "the threads (main spawns them all on vproc 0): fifo runs whichever thread is oldest on whichever vproc "
              "is free, so a group's consecutive turns land on either CPU and two members often run at once; ws "
              "leaves a thread where it is, and the idle vproc steals half of vproc 0's deque, the oldest threads, "
              "which with group-by-group spawning tends to be whole groups (with members spawned interleaved, ws "
              "splits every group); affinity without groups keeps a thread where it last ran and lets an idle "
              "vproc take only a thread that never ran or has waited ITO_AFFINITY_IDLE_US (500 us), which threads "
              "that yield every few microseconds never do: the notes say when one CPU ran most of the turns.",
    "memory": "VmRSS after all threads block, minus VmRSS before creating them, divided by the count. "
              "VmRSS does not include the kernel's own 16 KiB stack per kernel thread, so the POSIX-threads "
              "figure understates their cost. The count is lowered (and the target not met) only if the "
              "machine lacks the memory.",
}


def compress_cpus(cpus):
    if not cpus:
        return "-"
    out, start, prev = [], cpus[0], cpus[0]
    for c in cpus[1:] + [None]:
        if c is not None and c == prev + 1:
            prev = c
            continue
        out.append(str(start) if start == prev else "%d-%d" % (start, prev))
        if c is not None:
            start = prev = c
    return ",".join(out)


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build directory (binaries in <build>/bench/)")
    ap.add_argument("--report", required=True, help="where to write REPORT.md, results.json and PNGs")
    ap.add_argument("--full", action="store_true", help="the long version: more repetitions, bigger sizes")
    ap.add_argument("--only", help="comma-separated experiments: " + ", ".join(EXPERIMENTS))
    ap.add_argument("--reps", type=int, help="repetitions of every configuration (overrides the defaults)")
    args = ap.parse_args()

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = os.path.abspath(args.build)
    ran = EXPERIMENTS
    if args.only:
        ran = [e.strip() for e in args.only.split(",") if e.strip()]
        bad = [e for e in ran if e not in EXPERIMENTS]
        if bad:
            ap.error("unknown experiment(s) %s; choose from %s" % (", ".join(bad), ", ".join(EXPERIMENTS)))
        ran = [e for e in EXPERIMENTS if e in ran]
    missing = [p for p in ("nullfork", "forkmany", "yield", "signalwait", "nbody", "matmul", "memory", "kpingpong",
                           "echo", "echoload", "handoff", "nbodycache")
               if not os.access(os.path.join(build, "bench", p), os.X_OK)]
    if missing:
        sys.exit("run.py: missing benchmark programs in %s/bench: %s (build first)" % (build, ", ".join(missing)))
    os.makedirs(args.report, exist_ok=True)

    start = time.monotonic()
    info = machine_info(root)
    ncpu = info["cpus_usable"]
    affinity = info["cpus_affinity"]
    env = dict(os.environ)
    env.pop("ITO_VPROCS", None)   # every run says how many vprocs it wants
    prog = Progress(start)

    print("ito benchmarks (%s mode) on %s: %s usable%s" % (
        "full" if args.full else "quick", info["cpu_model"], cpu_label(ncpu),
        " of %d online" % info["cpus_online"] if info["cpus_online"] != ncpu else ""))
    print("commit %s; load average %s\n" % (info.get("commit") or "?", info["loadavg_start"]))
    sys.stdout.flush()

    extra = {}
    cfgs_by_exp, by_key, table_texts = {}, {}, {}
    targets = []
    for exp in ran:
        if exp == "memory":
            extra["memory_count"] = memory_count(build, env, prog)
        cfgs = build_configs(exp, ncpu, args.full, args.reps, extra)
        cfgs_by_exp[exp] = cfgs
        for c in cfgs:
            by_key[c.key] = c
        total = sum(c.reps for c in cfgs)
        k = 0
        prog.show(exp, 0, total, "starting", force=True)
        # Rounds over all configurations (slow drifts of the machine hit them
        # alike); later rounds only for the configurations that still need a
        # run to replace a loaded one.
        while True:
            todo = [c for c in cfgs if c.needs_more()]
            if not todo:
                break
            for c in todo:
                k += 1
                extra_run = len(c.runs) >= c.reps
                if extra_run:
                    total += 1
                prog.show(exp, k, total, "%s %s (rep %d/%d%s)" % (
                    c.impl, c.label, len(c.runs) + 1, c.reps, ", replaces a loaded one" if extra_run else ""))
                rec = run_one(c, build, env, affinity)
                if rec["error"]:
                    prog.note("run.py: FAILED %s rep %d: %s" % (c.cmdline(build), rec["rep"], rec["error"]))
        if exp == "nbody":
            check_nbody(cfgs, prog)
        if exp == "fig3":
            check_fig3(cfgs, prog)
        prog.clear()
        targets = evaluate_targets(by_key, ran)
        table_texts[exp] = experiment_tables(exp, cfgs, by_key, targets, ncpu)
        print("== %s (%s) ==" % (TITLES[exp], SOURCES[exp]))
        for sub, h, r in table_texts[exp]:
            if sub:
                print(sub)
            print(text_table(h, r))
        print(load_line(cfgs, ncpu))
        print()
        sys.stdout.flush()

    targets = evaluate_targets(by_key, ran)
    # the tables again, now that every target is known (matmul/nbody targets span configurations)
    for exp in ran:
        table_texts[exp] = experiment_tables(exp, cfgs_by_exp[exp], by_key, targets, ncpu)
    duration = time.monotonic() - start
    info["loadavg_end"] = read_first("/proc/loadavg")
    info["finished"] = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")

    failures = []
    for exp in ran:
        for c in cfgs_by_exp[exp]:
            for r in c.failures():
                failures.append({"key": c.key, "argv": c.cmdline(),
                                 "rep": r["rep"], "error": r["error"]})

    pngs, plot_err = plots(args.report, by_key, cfgs_by_exp, ncpu, info["cpu_model"])
    write_report(os.path.join(args.report, "REPORT.md"), info, args, ran, cfgs_by_exp, by_key, targets, ncpu,
                 pngs, plot_err, failures, duration, table_texts)
    with open(os.path.join(args.report, "results.json"), "w") as f:
        json.dump({"machine": info, "mode": "full" if args.full else "quick", "only": ran,
                   "duration_s": round(duration, 1), "targets": targets, "failures": failures,
                   "configs": [c.to_json() for exp in ran for c in cfgs_by_exp[exp]]}, f, indent=1)

    print("== Targets (issue; set for the 2-core development machine) ==")
    print(text_table(["target", "best peer", "ito (median)", "result", "note"],
                     [[t["text"], t["peer"], fmt_val(t["value"], t["unit"]) if t["value"] is not None else "-",
                       met_str(t), t["note"]] for t in targets if t["exp"] in ran]))
    print()
    print("report: %s (%s); %d runs in %d:%02d" % (
        os.path.join(args.report, "REPORT.md"), ", ".join(pngs) if pngs else "no plots",
        sum(len(c.runs) for exp in ran for c in cfgs_by_exp[exp]), int(duration) // 60, int(duration) % 60))
    bad = False
    if failures:
        print("run.py: %d run(s) FAILED:" % len(failures))
        for f in failures:
            print("  %s (rep %d): %s" % (f["argv"], f["rep"], f["error"]))
        bad = True
    if plot_err:
        print("run.py: " + plot_err)
        bad = True
    return 1 if bad else 0


def check_nbody(cfgs, prog):
    """Every run must end with the sequential run's positions, bit for bit."""
    seq = [c for c in cfgs if c.impl == "seq"]
    hashes = [r["data"]["hash"] for c in seq for r in c.ok_runs()]
    if not hashes:
        return
    want = hashes[0]
    for c in cfgs:
        for r in c.ok_runs():
            if r["data"].get("hash") != want:
                r["error"] = "result differs from the sequential one (hash %s, sequential %s)" % (
                    r["data"].get("hash"), want)
                prog.note("run.py: FAILED nbody %s %s rep %d: %s" % (c.impl, c.label, r["rep"], r["error"]))


def check_fig3(cfgs, prog):
    """Same chunks in the same order: every run ends with the same positions."""
    ref = [r["data"]["hash"] for c in cfgs if c.impl == "pthread" for r in c.ok_runs()]
    if not ref:
        return
    for c in cfgs:
        for r in c.ok_runs():
            if r["data"].get("hash") != ref[0]:
                r["error"] = "result differs from the POSIX-threads one (hash %s, pthread %s)" % (
                    r["data"].get("hash"), ref[0])
                prog.note("run.py: FAILED fig3 %s rep %d: %s" % (c.cmdline(), r["rep"], r["error"]))


def memory_count(build, env, prog):
    """1,000,000 unless the machine lacks the memory: a small ito run measures
    the cost per thread first, and the count is lowered to fit in 70 % of
    MemAvailable (the report then says so)."""
    want = 1000000
    avail = mem_available_kib()
    try:
        p = subprocess.run([os.path.join(build, "bench", "memory"), "--impl", "ito", "--count", "20000"],
                           capture_output=True, text=True, timeout=300, env=env)
        d = parse_json_line(p.stdout)
        per = d["kib_per_thread"] if d and "kib_per_thread" in d else 16.0
    except (OSError, subprocess.SubprocessError):
        per = 16.0
    if avail is None:
        return want
    fit = int(avail * 0.7 / max(per * 1.1, 1.0))
    if fit < want:
        n = max(10000, fit // 10000 * 10000)
        prog.note("run.py: memory: %d MiB available, %.1f KiB per ito thread: measuring %s threads, not 1,000,000"
                  % (avail // 1024, per, format(n, ",")))
        return n
    return want


if __name__ == "__main__":
    sys.exit(main())
