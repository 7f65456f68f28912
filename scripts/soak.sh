#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make soak: the reliability suite of tests/soak/ (docs/reliability.md) run
# for minutes instead of seconds, and a table of its figures.
#
#   scripts/soak.sh BUILD_DIR        (a test build: make soak uses build/test)
#
# Settings (environment):
#   SOAK_SECONDS   seconds of the mixed workload per policy (120)
#   SOAK_POLICIES  the policies (ws fifo prio prio-shared affinity)
#   SOAK_KILLS     sharing peers killed with SIGKILL (30)
#   SOAK_SIGNALS   signals of the storm (100000)
#   SOAK_FORK_RUNS runs of tests/runtime/fork_busy (3 forking scenarios each) (5)
#   SOAK_STALL_S   the soak's stall time (5 s)
# Every run has a time limit; a run that fails is reported and the others
# go on; the exit status is 1 if any failed. Logs and the table (REPORT.md)
# go to BUILD_DIR/soak/.
set -u
build=${1:?usage: scripts/soak.sh BUILD_DIR}
secs=${SOAK_SECONDS:-120}
policies=${SOAK_POLICIES:-ws fifo prio prio-shared affinity}
kills=${SOAK_KILLS:-30}
signals=${SOAK_SIGNALS:-100000}
fork_runs=${SOAK_FORK_RUNS:-5}
out=$build/soak
mkdir -p "$out"
bin=$build/tests/soak
for t in test_soak test_peer_kill test_signal_storm test_exhaust; do
    [ -x "$bin/$t" ] || { echo "soak: $bin/$t missing: build $build first" >&2; exit 2; }
done
fork_busy=$build/tests/runtime/test_fork_busy

# Each run shares processors only with itself (its own allocation domain);
# the tables are removed at the end, as ctest's cleanup does.
domain=soak-$$
uid=$(id -u)
cleanup() {
    for d in /run/user/$uid /run /dev/shm; do rm -f "$d"/ito-alloc-"$uid"-"$domain"-* 2>/dev/null; done
}
trap cleanup EXIT

failed=0
rows=()
# run NAME LIMIT_S ENV... -- COMMAND...: the log in $out/NAME.log; sets rc.
run() {
    local name=$1 limit=$2
    shift 2
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    local t0=$(date +%s.%N)
    env ITO_ALLOC_DOMAIN="$domain-$name" "${envs[@]}" timeout -s KILL "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
    took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
    if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then   # 77: skipped
        failed=1
        echo "soak: $name FAILED (exit status $rc, ${took} s); the log, $out/$name.log, says:" >&2
        grep -v '^    ' "$out/$name.log" | grep -E 'STALL|FAILED|CHECK|failed|lost|not recovered|Killed' | head -5 >&2
        [ $rc -eq 137 ] && echo "soak: $name: killed after its time limit of $limit s" >&2
    fi
}
# kv FILE PREFIX KEY: the value of KEY= on the line starting with PREFIX.
kv() { grep -h "^$2" "$1" 2>/dev/null | tail -1 | tr ' ' '\n' | sed -n "s/^$3=//p"; }

load0=$(cut -d' ' -f1-3 /proc/loadavg)
t_start=$(date +%s)
echo "soak: ${secs} s of the mixed workload under each of: $policies ($(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ), load average $load0)"
table="| policy | result | queue items | spawn/join | semaphore ops | ping-pong | sleeps (latest, µs) | pipe words | longest stall, wall / CPU (ms) | s |
|---|---|---|---|---|---|---|---|---|---|"
failures=""
for p in $policies; do
    run "soak-$p" $((secs + 120)) ITO_POLICY="$p" SOAK_SECONDS="$secs" ${SOAK_STALL_S:+SOAK_STALL_S=$SOAK_STALL_S} -- "$bin/test_soak"
    f=$out/soak-$p.log
    if [ $rc -eq 0 ]; then
        res=ok
        row="| $p | ok | $(kv "$f" 'soak: result' queue_items) | $(kv "$f" 'soak: result' spawn_joins) | $(kv "$f" 'soak: result' sem_ops) | $(kv "$f" 'soak: result' pingpong) | $(kv "$f" 'soak: result' sleeps) ($(kv "$f" 'soak: result' sleep_late_max_us)) | $(kv "$f" 'soak: result' pipe_words) | $(kv "$f" 'soak: result' longest_gap_ms) / $(kv "$f" 'soak: result' longest_cpu_gap_ms) | $took |"
    else
        # The counts when it failed; the message below the table.
        why=$(grep -h -o "STALL.*\|FAILED.*\|CHECK.*" "$f" | head -1)
        c=$(grep -h '^soak: counts so far' "$f" | tail -1)
        cv() { echo "$c" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
        pw=$(cv pipe)
        row="| $p | **failed** (below) | $(cv queue) | $(cv spawn) | $(cv sem) | $(cv pingpong) | $(cv sleep) | ${pw:+$((pw / 8))} | | $took |"
        failures+=$'\n'"- $p: ${why:-exit status $rc} ($out/soak-$p.log)"
    fi
    table+=$'\n'"$row"
    echo "$row"
done

echo "soak: a sharing peer killed $kills times"
run peer_kill $((kills * 25 + 60)) SOAK_KILLS="$kills" -- "$bin/test_peer_kill"
pk=$out/peer_kill.log
if [ $rc -eq 0 ]; then
    pkrow="| sharing peer killed (SIGKILL) | $(kv "$pk" 'peer_kill: result' kills) kills, $(kv "$pk" 'peer_kill: result' survived) survived; of the $(kv "$pk" 'peer_kill: result' shared_at_kill) while sharing (the others before the peer had joined), all CPUs back in $(kv "$pk" 'peer_kill: result' recovery_ms_min) / $(kv "$pk" 'peer_kill: result' recovery_ms_median) / $(kv "$pk" 'peer_kill: result' recovery_ms_max) ms (min/median/max) | $took |"
elif [ $rc -eq 77 ]; then
    pkrow="| sharing peer killed (SIGKILL) | skipped: $(tail -1 "$pk") | $took |"
else
    pkrow="| sharing peer killed (SIGKILL) | **failed**: $(grep -h 'peer_kill:' "$pk" | tail -1) | $took |"
fi
echo "$pkrow"

echo "soak: a storm of $signals signals over parked threads"
run signal_storm 600 SOAK_SIGNALS="$signals" -- "$bin/test_signal_storm"
ss=$out/signal_storm.log
if [ $rc -eq 0 ]; then
    ssrow="| signal storm over parked threads | $(kv "$ss" 'signal_storm: result' signals) signals ($(kv "$ss" 'signal_storm: result' usr1) SIGUSR1, $(kv "$ss" 'signal_storm: result' rt_process) + $(kv "$ss" 'signal_storm: result' rt_thread) real-time to the process / to a kernel thread), each handled once; EINTR $(kv "$ss" 'signal_storm: result' eintr); $(kv "$ss" 'signal_storm: result' records_read) pipe records, $(kv "$ss" 'signal_storm: result' sleeps) sleeps, $(kv "$ss" 'signal_storm: result' cond_tokens) condvar tokens + $(kv "$ss" 'signal_storm: result' cond_timeouts) timeouts, $(kv "$ss" 'signal_storm: result' accepts) accepts, $(kv "$ss" 'signal_storm: result' sem_posts) posts, all exact | $took |"
else
    ssrow="| signal storm over parked threads | **failed**: $(grep -h 'signal_storm:\|CHECK' "$ss" | tail -1) | $took |"
fi
echo "$ssrow"

echo "soak: descriptors and kernel threads running out"
run exhaust 600 -- "$bin/test_exhaust"
ex=$out/exhaust.log
if [ $rc -eq 0 ]; then
    exrow="| RLIMIT_NOFILE, RLIMIT_NPROC | $(grep -h '^exhaust: part=' "$ex" | sed 's/^exhaust: //' | tr '\n' ';' | sed 's/;$//; s/;/; /g') | $took |"
else
    exrow="| RLIMIT_NOFILE, RLIMIT_NPROC | **failed**: $(grep -h 'exhaust:' "$ex" | tail -1) | $took |"
fi
echo "$exrow"

forkrow=
if [ -x "$fork_busy" ]; then
    echo "soak: fork with threads running, $fork_runs runs (tests/runtime/fork_busy, ITO_VPROCS=4)"
    ok=0
    t_all=0
    for i in $(seq "$fork_runs"); do
        run "fork_busy-$i" 300 ITO_POLICY=ws ITO_VPROCS=4 -- "$fork_busy"
        t_all=$((t_all + took))
        [ $rc -eq 0 ] && ok=$((ok + 1))
    done
    forkrow="| fork with 100 threads running (fork_busy, ws, 4 vprocs) | $ok of $fork_runs runs passed ($((fork_runs * 3)) forking scenarios: from main, from a thread, amid spawns) | $t_all |"
    echo "$forkrow"
fi

report="## make soak, $(date -u +%Y-%m-%d), $(nproc) CPUs

\`SOAK_SECONDS=$secs SOAK_KILLS=$kills SOAK_SIGNALS=$signals SOAK_FORK_RUNS=$fork_runs make soak\`: $(( $(date +%s) - t_start )) s in all;
load average (1, 5, 15 min) $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end.

The mixed workload (tests/soak/soak.c) under each policy (sleeps: the latest, in µs, after the
count; the longest stall: the longest time a part made no progress, in wall time less the time
the machine held the process back, and in the process's CPU time per vproc):

$table
${failures:+
Failed (the counts above are those at the failure):
$failures
}
| test | result | s |
|---|---|---|
$pkrow
$ssrow
$exrow${forkrow:+
$forkrow}
"
echo "$report" >"$out/REPORT.md"
echo
echo "$report"
echo "soak: logs and this table in $out/"
[ "$failed" -eq 0 ] && { echo "soak: everything passed"; exit 0; }
echo "soak: some runs failed (above)"
exit 1
