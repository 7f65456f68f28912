# SPDX-License-Identifier: MIT
"""Running a program and collecting its JSON: a configuration (one command
line, repeated), one run of it, and the progress line on stderr."""
import json
import os
import resource
import statistics
import subprocess
import sys
import time

from harness.load import LOADED_FRACTION, cpu_busy_s
from harness.machine import read_first


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
    """One status line on stderr: the runs done of all those planned, the
    time left estimated from the runs so far, the run under way, elapsed."""

    def __init__(self, start, cfgs):
        self.start = start
        self.cfgs = list(cfgs)      # every configuration of the experiments to run
        self.extra = 0              # runs added to replace loaded ones
        self.tty = sys.stderr.isatty()
        self.last = 0.0
        self.shown = False

    def replace(self, old, new):
        """A configuration list rebuilt before it ran (memory: its count)."""
        self.cfgs = [c for c in self.cfgs if c not in old] + list(new)

    def elapsed(self):
        s = int(time.monotonic() - self.start)
        return "%d:%02d" % (s // 60, s % 60)

    def counts(self):
        done = sum(len(c.runs) for c in self.cfgs)
        total = sum(c.reps for c in self.cfgs) + self.extra
        return done, max(total, done)

    def time_left(self):
        """Seconds: each run still planned costs its configuration's mean run
        time so far, else its experiment's, else that of all runs so far."""
        walls = [r["wall_s"] for c in self.cfgs for r in c.runs if r.get("wall_s") is not None]
        if not walls:
            return None
        overall = sum(walls) / len(walls)
        by_exp = {}
        for c in self.cfgs:
            by_exp.setdefault(c.exp, []).extend(r["wall_s"] for r in c.runs if r.get("wall_s") is not None)
        left = 0.0
        for c in self.cfgs:
            n = max(0, c.reps - len(c.runs))
            if not n:
                continue
            own = [r["wall_s"] for r in c.runs if r.get("wall_s") is not None]
            exp = by_exp.get(c.exp)
            left += n * (sum(own) / len(own) if own else sum(exp) / len(exp) if exp else overall)
        return left

    def head(self):
        done, total = self.counts()
        left = self.time_left()
        if left is None:
            return "[%d/%d runs]" % (done, total)
        if left < 60:
            t = "~%d s left" % max(1, round(left / 10) * 10) if left >= 10 else "<10 s left"
        else:
            t = "~%d min left" % round(left / 60)
        return "[%d/%d runs, %s]" % (done, total, t)

    def show(self, exp, what, force=False):
        line = "%s %s: %s  elapsed %s" % (self.head(), exp, what, self.elapsed())
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
