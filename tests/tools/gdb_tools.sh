#!/bin/sh
# SPDX-License-Identifier: MIT
# Check tools/ito-gdb.py on a live process: `info ito-threads` lists the
# parked threads and `ito-bt` shows a parked thread's stack.
# Usage: gdb_tools.sh <gdb_target binary> <source-dir>
set -eu
target=$1
src=$2
out=$(mktemp)
trap 'kill -9 $pid 2>/dev/null; rm -f "$out"' EXIT
"$target" > "$out" &
pid=$!
for i in $(seq 1 100); do grep -q ready "$out" && break; sleep 0.1; done
report=$(gdb -p "$pid" -batch -nx -x "$src/tools/ito-gdb.py" -ex "info ito-threads" 2>&1) ||
  { echo "$report"; echo "gdb failed (status $?)"; exit 1; }
echo "$report"
echo "$report" | grep -q "the-waiter" || { echo "no named thread listed"; exit 1; }
echo "$report" | grep -q "BLOCKED" || { echo "no parked thread listed"; exit 1; }
idx=$(echo "$report" | awk '/the-waiter/ { print $1 }')
bt=$(gdb -p "$pid" -batch -nx -x "$src/tools/ito-gdb.py" -ex "ito-bt $idx" 2>&1) ||
  { echo "$bt"; echo "gdb failed (status $?)"; exit 1; }
echo "$bt"
echo "$bt" | grep -q "ito_cond_wait" || { echo "ito-bt did not show the thread's stack"; exit 1; }
echo "$bt" | grep -q "waiter" || { echo "ito-bt did not reach the thread's function"; exit 1; }
echo "gdb tools: ok"
