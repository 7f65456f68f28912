#!/bin/sh
# SPDX-License-Identifier: MIT
# ito-ctl shows the ito processes of this user: two computing processes and
# an idle one of one domain all appear, with their processors (the idle one
# wanting none), their threads (a computing one: a thread per vproc and
# main) and a line per vproc; one that runs with ITO_VIEW=0 is shown from
# the allocation table alone; an idle one killed with SIGKILL is gone from
# the next table (ito-ctl divides again, which drops the dead); --pid shows
# one process; output that is not a terminal is plain lines, refreshed, with
# rates; a domain no process has used is reported as such (exit status 2).
# Usage: ito_ctl.sh ITO_CTL TEST_ALLOC_PROCESSES
set -u
ctl=$1 prog=$2
export ITO_ALLOC_DOMAIN=test-ito_ctl-$$
"$prog" compute & a=$!
"$prog" compute & b=$!
"$prog" idle & c=$!
ITO_VIEW=0 "$prog" idle & d=$!
out=/tmp/ito_ctl.$$
# (The domain's table is removed by the alloc_domains fixture.)
trap 'kill -9 $a $b $c $d 2>/dev/null; rm -f $out' EXIT
fail() { echo "ito_ctl: $*"; exit 1; }
# The row of a process: PID PROGRAM POLICY PRIO HELD WANT CPUS THREADS RUN READY BLOCKED SWITCH/S
col() { awk -v p="$1" -v k="$2" '$1 == p { print $k; exit }' "$out"; }
# Is $1 a number of at least $2?
atleast() { case $1 in ''|*[!0-9]*) return 1;; esac; [ "$1" -ge "$2" ]; }
ok=0
for i in $(seq 1 200); do
    "$ctl" --once --domain "$ITO_ALLOC_DOMAIN" > $out 2>&1
    if grep -q "4 ito processes (3 answered)" $out && [ "$(col $c 6)" = 0 ] && atleast "$(col $a 8)" 2 &&
       atleast "$(col $b 8)" 2; then
        ok=1
        break
    fi
    sleep 0.05
done
cat $out
[ $ok = 1 ] || fail "the four processes did not all appear, three answering, the idle one wanting 0"
n=$(grep -c "^ *VP  CPU STATE" $out)
[ "$n" = 3 ] || fail "$n vproc tables, not one per answering process"
vps=$(awk -v p="$a" '$1 == p { on = 1; next } on && $1 == "VP" { next }
    on && $3 ~ /^(run|idle|sleep|kernel|off)$/ { n++; next } on { exit } END { print n + 0 }' $out)
atleast "$vps" 1 || fail "no vproc lines under process $a"
[ "$(col $a 8)" = "$(( $(col $a 9) + $(col $a 10) + $(col $a 11) ))" ] || fail "threads of $a: alive is not running + ready + blocked"
grep "^ *$d " $out | grep -q "no view" || fail "the ITO_VIEW=0 process is not shown from the table"
grep -q "$(printf '\033')" $out && fail "screen codes in output that is not a terminal"
# --pid: that process only.
"$ctl" --once --pid $a > $out 2>&1
cat $out
grep -q "1 ito process (1 answered)" $out && grep -q "^ *$a " $out && ! grep -q "^ *$b " $out ||
    fail "--pid $a did not show that process alone"
# Refreshing into a file: plain lines, several tables, rates after the first.
"$ctl" --interval 200 --pid $a > $out 2>&1 & r=$!
sleep 1.5
kill $r
wait $r 2>/dev/null
tables=$(grep -c "^ito-ctl " $out)
[ "$tables" -ge 3 ] || { cat $out; fail "$tables tables in 1.5 s at 200 ms"; }
grep -q "$(printf '\033')" $out && fail "screen codes in output that is not a terminal"
rate=$(awk -v p="$a" '$1 == p { r = $12 } END { print r }' $out)
case $rate in ''|*[!0-9]*) cat $out; fail "no switch rate for $a after several refreshes: '$rate'";; esac
# The dead are dropped.
kill -9 $c
wait $c 2>/dev/null
"$ctl" --once --domain "$ITO_ALLOC_DOMAIN" > $out 2>&1
cat $out
if grep -q "^ *$c " $out || ! grep -q "3 ito processes" $out; then
    fail "the killed idle process is still listed"
fi
"$ctl" --once --domain never-used-$$ >/dev/null 2>&1
[ $? = 2 ] || fail "a domain nobody used should give exit status 2"
"$ctl" --bogus >/dev/null 2>&1
[ $? = 1 ] || fail "a bad option should give exit status 1"
"$ctl" --interval 0 >/dev/null 2>&1
[ $? = 1 ] || fail "--interval 0 should give exit status 1"
echo "ito_ctl: ok"
