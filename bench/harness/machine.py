# SPDX-License-Identifier: MIT
"""The machine the benchmarks run on."""
import math
import os
import platform
import subprocess


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


def meminfo_kib(field):
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def mem_available_kib():
    return meminfo_kib("MemAvailable")


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
        "mem_total_kib": meminfo_kib("MemTotal"),
        "kernel": platform.release(),
        "pid_max": read_first("/proc/sys/kernel/pid_max"),
        "max_map_count": read_first("/proc/sys/vm/max_map_count"),
        "loadavg_start": read_first("/proc/loadavg"),
        "compiler": cc,
        "commit": commit,
        "ito_env": {k: v for k, v in os.environ.items() if k.startswith("ITO_")},
        "python": platform.python_version(),
    }


def compress_cpus(cpus):
    """[0, 1, 2, 5] -> "0-2,5"."""
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
