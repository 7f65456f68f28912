#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks of the execution timeline and the probes (runtime/trace.c).

  trace_check.py json FINAL MID   the files tests/runtime/trace.c made: valid
                                  Chrome trace-event JSON with the metadata,
                                  spawns, runs on every vproc, parks with their
                                  reasons, wakes with their flows, exits
  trace_check.py probes LIB...    readelf -n lists every probe of provider ito
                                  (stapsdt notes) in each library
"""
import json
import subprocess
import sys

PROBES = ("run", "spawn", "park", "wake", "exit", "steal", "handoff", "preempt",
          "vproc_added", "vproc_removed")
REASONS = {"nothing", "mutex", "cond", "rwlock", "sem", "barrier", "once", "join", "sleep", "io", "?"}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def load(path):
    with open(path) as f:
        return json.load(f)


def check_trace(path, final):
    d = load(path)
    od = d.get("otherData", {})
    check(od.get("clock") == "CLOCK_MONOTONIC", f"{path}: otherData.clock")
    nv = od.get("vprocs")
    check(nv == 2, f"{path}: otherData.vprocs is {nv}, not 2")
    check(od.get("buffer_events") == 65536, f"{path}: otherData.buffer_events")
    for key in ("events_recorded", "events_in_file", "events_overwritten", "foreign_events_dropped"):
        check(isinstance(od.get(key), int), f"{path}: otherData.{key} is not a count")
    bufs = od.get("buffers", [])
    check(len(bufs) == nv + 1, f"{path}: otherData.buffers has {len(bufs)} entries")
    check(sum(b["recorded"] for b in bufs) == od["events_recorded"], f"{path}: buffers do not add up")
    check(od["events_in_file"] + od["events_overwritten"] == od["events_recorded"],
          f"{path}: in file + overwritten != recorded")

    ev = d["traceEvents"]
    pids = {e["pid"] for e in ev}
    check(len(pids) == 1, f"{path}: several pids {pids}")
    meta = [e for e in ev if e["ph"] == "M"]
    check(any(e["name"] == "process_name" and e["args"]["name"].startswith("ito: ") for e in meta),
          f"{path}: no process_name")
    names = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    vtid = {}
    for v in range(nv):
        tids = [t for t, n in names.items() if n == f"vproc {v}"]
        if check(len(tids) == 1, f"{path}: no track named 'vproc {v}'"):
            vtid[v] = tids[0]
    ftids = [t for t, n in names.items() if n == "foreign kernel threads"]
    check(len(ftids) == 1, f"{path}: no track for foreign kernel threads")
    for e in ev:
        if e["ph"] != "M":
            check(isinstance(e["ts"], (int, float)), f"{path}: ts of {e} is not a number")

    # Spawns, with the names the threads were given.
    spawns = [e for e in ev if e["name"] == "spawn"]
    spawn_names = {e["args"]["name"] for e in spawns}
    want = {"yield-0", "yield-1", "contender", "consumer", "main"} | ({"late"} if final else set())
    check(want <= spawn_names, f"{path}: spawns named {sorted(spawn_names)}, want {sorted(want)}")

    # Runs: slices on every vproc, never overlapping on a track; names say thread and name.
    runs = [e for e in ev if e["ph"] == "X" and e.get("cat") == "run"]
    slices = [e for e in ev if e["ph"] == "X" and e.get("cat") in ("run", "scheduler")]
    # (Every vproc runs some thread; which ones is the scheduler's choice: on a
    # loaded machine one vproc may sleep while the other steals every yield
    # thread, preferences notwithstanding.)
    check(any(e["args"]["name"].startswith("yield") for e in runs), f"{path}: no run of a yield thread")
    for v, tid in vtid.items():
        mine = sorted((e for e in slices if e["tid"] == tid), key=lambda e: e["ts"])
        check(any(e["cat"] == "run" for e in mine), f"{path}: no run of any thread on vproc {v}")
        for a, b in zip(mine, mine[1:]):
            if not check(a["ts"] + a["dur"] <= b["ts"] + 0.0015, f"{path}: slices overlap on vproc {v}: {a} {b}"):
                break
    # (A thread's index is reused once it has exited: its name is its latest spawn's.)
    spawn_times = {}
    for e in spawns:
        spawn_times.setdefault(e["args"]["thread"], []).append((e["ts"], e["args"]["name"]))
    for e in runs:
        t = e["args"]["thread"]
        n = e["args"]["name"]
        check(e["name"] == (f"thread {t} ({n})" if n else f"thread {t}"), f"{path}: run named {e['name']}")
        check(e["dur"] >= 0, f"{path}: negative duration {e}")
        before = [name for ts, name in sorted(spawn_times.get(t, [])) if ts <= e["ts"]]
        if before:
            check(n == before[-1], f"{path}: run of thread {t} at {e['ts']} named {n!r}, spawned as {before[-1]!r}")

    # Parks with their reasons.
    parks = [e for e in ev if e["name"] == "park"]
    for e in parks:
        check(e["args"]["reason"] in REASONS, f"{path}: park reason {e['args']['reason']}")
    by_name = lambda who: {e["args"]["thread"] for e in spawns if e["args"]["name"] == who}
    contenders, consumers = by_name("contender"), by_name("consumer")
    check(any(e["args"]["reason"] == "mutex" and e["args"]["thread"] in contenders for e in parks),
          f"{path}: no contender parked on a mutex")
    check(any(e["args"]["reason"] == "sem" and e["args"]["thread"] in consumers for e in parks),
          f"{path}: no consumer parked on a semaphore")
    check(any(e["args"]["reason"] == "join" for e in parks), f"{path}: no park on a join")

    # Wakes, each with its flow to the woken thread's next run.
    flows_s = {e["id"]: e for e in ev if e["ph"] == "s"}
    flows_f = {e["id"]: e for e in ev if e["ph"] == "f"}
    check(set(flows_s) == set(flows_f), f"{path}: flow starts and ends do not pair")
    check(len(flows_s) > 0, f"{path}: no flows")
    runs_by_tid = {}
    for e in runs:
        runs_by_tid.setdefault(e["tid"], []).append(e)
    wakes = [e for e in ev if e["name"] == "wake" and e["ph"] in ("i", "X")]
    starts = {(e["tid"], e["ts"]): e for e in flows_s.values()}
    found = set()
    for w in wakes:
        t = w["args"]["thread"]
        s = starts.get((w["tid"], w["ts"])) or starts.get((w["tid"], round(w["ts"] + 0.001, 3)))
        if s is None:
            continue
        f = flows_f[s["id"]]
        check(f.get("bp") == "e", f"{path}: flow end without bp=e")
        inside = [r for r in runs_by_tid.get(f["tid"], []) if r["ts"] <= f["ts"] <= r["ts"] + r["dur"]]
        if not check(len(inside) == 1 and inside[0]["args"]["thread"] == t,
                     f"{path}: the flow of the wake of thread {t} ends in {inside}"):
            continue
        check(inside[0]["ts"] >= w["ts"], f"{path}: thread {t} ran before its wake")
        found.add(w["args"]["reason"])
    check("mutex" in found, f"{path}: no wake from a mutex with its flow (found {sorted(found)})")
    check("sem" in found, f"{path}: no wake from a semaphore with its flow (found {sorted(found)})")

    # Exits of the threads spawned.
    exits = {e["args"]["thread"] for e in ev if e["name"] == "exit"}
    check(contenders | consumers <= exits, f"{path}: exits missing")
    return d


def check_json(final, mid):
    m = check_trace(mid, False)
    f = check_trace(final, True)
    check(f["otherData"]["events_recorded"] > m["otherData"]["events_recorded"],
          "the trace written at exit holds no more events than the one written before")


def check_probes(libs):
    for lib in libs:
        out = subprocess.run(["readelf", "-n", lib], capture_output=True, text=True, check=True).stdout
        notes = []
        cur = {}
        for line in out.splitlines():
            line = line.strip()
            if line.startswith("stapsdt"):
                cur = {}
                notes.append(cur)
            elif ":" in line and notes and cur is notes[-1]:
                k, _, v = line.partition(":")
                cur[k.strip()] = v.strip()
        ito = [n for n in notes if n.get("Provider") == "ito"]
        names = {n.get("Name") for n in ito}
        check(not (set(PROBES) - names), f"{lib}: probes missing: {sorted(set(PROBES) - names)}")
        check(not (names - set(PROBES)), f"{lib}: unexpected probes: {sorted(names - set(PROBES))}")
        for n in ito:
            check(n.get("Arguments"), f"{lib}: probe {n.get('Name')} has no arguments")
        print(f"{lib}: {len(ito)} probe sites, {len(names)} probes: {' '.join(sorted(names))}")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "json":
        check_json(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 3 and sys.argv[1] == "probes":
        check_probes(sys.argv[2:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for f in failures[:30]:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
