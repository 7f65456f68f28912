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

EXPERIMENTS = ["nullfork", "forkmany", "fork1000", "yield", "signalwait", "nbody", "matmul", "memory"]

TITLES = {
    "nullfork": "Null fork: create + join of an empty thread",
    "forkmany": "Fork many: create 100,000 threads, then join them all",
    "fork1000": "1,000 forks: create 1,000 threads, then join them all",
    "yield": "Yield: 100,000 yields between two threads on one processor",
    "signalwait": "Signal-wait: mutex + condition ping-pong, round trip",
    "nbody": "Barnes-Hut N-body: speedup vs processors",
    "matmul": "Matrix multiply",
    "memory": "Memory: resident memory per blocked thread",
}

SOURCES = {
    "nullfork": "seed 000 Table 4 (null fork)",
    "forkmany": "seed 000 / 003 (thread creation in bulk)",
    "fork1000": "seed 003 Table 1 (1,000 thread-forks)",
    "yield": "seed 003 Table 2 (100,000 thread-yields)",
    "signalwait": "seed 000 Table 4 (signal-wait)",
    "nbody": "seed 000 Fig. 2 (N-body speedup)",
    "matmul": "seed 001 Figs. 4 and 5 (matrix multiply)",
    "memory": "the issue's 1,000,000-thread target",
}


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
                 pair=None, x=None, scale=1.0, group=None):
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
        self.runs = []            # dicts: rep, rc, wall_s, data, error

    def argv(self, build):
        return [os.path.join(build, "bench", self.prog)] + [str(a) for a in self.args]

    def ok_runs(self):
        return [r for r in self.runs if not r["error"]]

    def load(self, r):
        """Fraction of this run's CPUs that other processes kept busy."""
        return r.get("other_load_cpus", 0.0) / max(1, self.cpus)

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

    def to_json(self):
        med, lo, hi = self.stats()
        return {"exp": self.exp, "key": self.key, "impl": self.impl, "label": self.label,
                "argv": [self.prog] + [str(a) for a in self.args], "cpus": self.cpus,
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
    used_cpus = affinity[:max(1, cfg.cpus)]   # ito pins vproc i, pthreads use the first N
    busy0 = cpu_busy_s(used_cpus)
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=cfg.timeout, env=env)
        rec["rc"] = p.returncode
        rec["stderr"] = p.stderr[-2000:]
        rec["data"] = parse_json_line(p.stdout)
        if rec["data"] and "error" in rec["data"]:
            rec["error"] = rec["data"]["error"]
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
]


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
        if tid == "nbody2":
            v = nbody_speedup(by_key, "ito", 2)[0]
            failed = any(by_key[k].failures() for k in ("nbody/seq", "nbody/ito/2") if k in by_key)
            if "nbody/ito/2" not in by_key:
                t["note"] = "needs 2 CPUs"
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
        involved = {"nbody2": ["nbody/seq", "nbody/ito/2"],
                    "matmul4096": ["matmul/fig5/ito/4", "matmul/fig5/ito/4096"]}.get(tid, [key])
        loaded = [k for k in involved if k in by_key and any(
            by_key[k].load(r) >= LOADED_FRACTION for r in by_key[k].used_runs())]
        if loaded:
            t["note"] = (t["note"] + "; " if t["note"] else "") + "from loaded runs (%s)" % ", ".join(loaded)
        if tid == "nbody2" and v is not None and v > 2.0:
            t["note"] = (t["note"] + "; " if t["note"] else "") + \
                "above the ideal 2: the runs compared saw different machine load"
        if v is not None:
            t["met"] = (v <= thr) if op == "<=" else (v >= thr)
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
        return "not measured"
    return "MET" if t["met"] else "NOT MET"


def target_str(t):
    if t is None:
        return ""
    thr = t["threshold"]
    if t["unit"] == "ns":
        s = "%s %s" % (t["op"], fmt_ns(thr))
    elif t["unit"] == "KiB":
        s = "%s %g KiB" % (t["op"], thr)
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
    if cfg.exp == "signalwait" and cfg.impl == "ito":
        mis = [r["data"]["misplaced"] / max(1, r["data"]["placement_checks"]) for r in ok]
        notes.append("off its vproc: %.0f%% of checks (median)" % (100 * statistics.median(mis)))
    if cfg.impl == "ito" and "switches" in d:
        ops = d.get("n", d.get("count"))
        if ops:
            notes.append("switches/op %.2f" % statistics.median([r["data"]["switches"] / ops for r in ok]))
    if cfg.impl == "ito" and "steals" in d and cfg.exp != "signalwait":
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
    for exp in ("nullfork", "forkmany", "fork1000", "yield", "signalwait"):
        for c in cfgs_by_exp.get(exp, []):
            if c.impl == "ito" and c.pair in by_key and c.median() and by_key[c.pair].median():
                if exp == "yield" and c.cpus != 1:
                    continue
                name = {"nullfork": "null fork", "forkmany": "fork-many\n/thread", "fork1000": "1000 forks\n/thread",
                        "yield": "yield", "signalwait": "signal-wait"}[exp]
                if exp == "signalwait":
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
| N-body | seed 000 Fig. 2 | Barnes-Hut simulation (2D); ito forks thousands of threads per step recursively, POSIX threads use one thread per CPU and a static partition; speedup over a sequential version; results checked bit for bit against it |
| matrix multiply | seed 001 Figs. 4, 5 | C = A x B in doubles; Fig. 4: 4 threads, size varied, 1 CPU vs all; Fig. 5: 512 x 512, 1 to 4096 threads; results checked |
| memory | the issue | resident memory per thread with 1,000,000 ito threads blocked at once (POSIX threads: up to 10,000) |

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
    figs = {"nullfork": None, "signalwait": "micro.png", "nbody": "nbody_speedup.png", "memory": "memory.png"}
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
    "matmul": "The time covers creating the threads, the multiplication and the joins. Thread t computes "
              "the t-th of T equal contiguous ranges of C's elements (whole rows while T <= n), each element "
              "a dot product with B stored transposed, so the work per element and its memory access do not "
              "change with T. Each result is verified by exact checksums.",
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
    missing = [p for p in ("nullfork", "forkmany", "yield", "signalwait", "nbody", "matmul", "memory")
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
                    prog.note("run.py: FAILED %s rep %d: %s" % (" ".join(c.argv(build)), rec["rep"], rec["error"]))
        if exp == "nbody":
            check_nbody(cfgs, prog)
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
                failures.append({"key": c.key, "argv": " ".join([c.prog] + [str(a) for a in c.args]),
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
