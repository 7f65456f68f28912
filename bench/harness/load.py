# SPDX-License-Identifier: MIT
"""Load accounting: how busy other processes kept the CPUs a run used."""
import os

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

# A run during which other processes kept this fraction of its CPUs busy on
# average is "loaded" (a compute-bound run on them would have lost about that
# much of its time): it is kept in results.json and replaced by another run
# (see Config.used_runs). CPU accounting cannot tell whether that load delayed
# the run or only used a CPU the run left idle, so a loaded run is not called
# wrong, only less trustworthy: the figures prefer the runs without it.
LOADED_FRACTION = 0.1


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
