#!/bin/sh
# SPDX-License-Identifier: MIT
# Check tools/ito-gdb.py on gdb_target.c, live and on a core file: `info
# ito-threads` lists every thread with its state, what it waits on (the
# mutex's owner, the thread joined, inline joins) and its first user frame
# (function and line), and `ito-bt` prints each thread's backtrace — a
# running one's from its kernel thread, a parked one's from its saved frame,
# an inline child's and its joiner's from the shared stack.
# Usage: gdb_tools.sh <gdb_target binary> <source-dir> [gdb option...]
#   The gdb options load the script (default: -x <source-dir>/tools/ito-gdb.py,
#   with auto-loading off); gdb_installed.sh passes auto-load settings instead.
# Exit status 77: skipped (no gdb with Python, or attaching is not allowed).
set -eu
target=$1
src=$2
shift 2
[ $# -gt 0 ] || set -- -iex "set auto-load python-scripts off" -x "$src/tools/ito-gdb.py"
command -v gdb >/dev/null 2>&1 || { echo "SKIP: no gdb"; exit 77; }
gdb -batch -nx -ex "python print('py-ok')" 2>/dev/null | grep -q py-ok ||
  { echo "SKIP: gdb without Python"; exit 77; }

tmp=$(mktemp -d)
pid=
trap '[ -z "$pid" ] || kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# One vproc: gdb_target.c says why. One malloc arena: the reserved address
# space of per-thread arenas would make the core file 300 MB instead of 15.
ITO_VPROCS=1 MALLOC_ARENA_MAX=1 "$target" > "$tmp/out" &
pid=$!
for i in $(seq 1 200); do grep -q ready "$tmp/out" && break; sleep 0.1; done
grep -q ready "$tmp/out" || fail "the target did not get ready"

# Live: list, every backtrace, and a core file of this very moment.
if ! gdb -p "$pid" -batch -nx "$@" -ex "info ito-threads" -ex "ito-bt all" -ex "gcore $tmp/core" \
     > "$tmp/live" 2>&1; then
  if grep -q "ptrace: Operation not permitted" "$tmp/live"; then
    echo "SKIP: not allowed to attach to a process (ptrace)"; exit 77
  fi
  cat "$tmp/live"; fail "gdb on the live process"
fi
kill -0 "$pid" 2>/dev/null || fail "the target died under gdb"
kill -9 "$pid"; wait "$pid" 2>/dev/null || true; pid=
[ -s "$tmp/core" ] || { cat "$tmp/live"; fail "gcore wrote no core file"; }

line() { grep -n "/\* at: $1 " "$src/tests/tools/gdb_target.c" | cut -d: -f1; }
row() { awk -v n="$1" '$3 == n' "$report"; }
id() { row "$1" | awk '{ print $1 }'; }
expect_row() {   # name, extended regex the row must match
  row "$1" | grep -Eq -- "$2" || { cat "$report"; fail "$kind: the row of $1 does not match /$2/"; }
}
block() {   # the ito-bt output of thread <id> "<name>"
  awk -v h="Thread $1 \"$2\"" 'index($0, h) == 1 { p = 1 } p && /^$/ { exit } p' "$report"
}
expect_bt() {   # name, extended regex its backtrace must contain
  block "$(id "$1")" "$1" | grep -Eq -- "$2" ||
    { block "$(id "$1")" "$1"; fail "$kind: ito-bt of $1 has no /$2/"; }
}

check() {
  kind=$1 report=$2
  grep -q "^10 ito thread(s)" "$report" || { cat "$report"; fail "$kind: not 10 threads listed"; }
  owner=$(id owner) sleeper=$(id sleeper) child=$(id inline-child) ijoiner=$(id inline-joiner)
  at='\(gdb_target\.c:'
  hex='0x[0-9a-f]+'
  expect_row main "RUNNING +main +- +main $at$(line main)\) \[LWP [0-9]+\]"
  for t in spinner-a spinner-b; do
    expect_row $t "(RUNNING +$t +- +spinner $at[0-9]+\) \[LWP [0-9]+\]|READY +$t +- +spinner $at[0-9]+\)$)"
  done
  [ "$(row spinner-a | awk '{ print $2 }')$(row spinner-b | awk '{ print $2 }')" != READYREADY ] ||
    { cat "$report"; fail "$kind: no spinner runs"; }
  expect_row owner "BLOCKED +owner +sem $hex <s> +owner $at$(line owner)\)"
  expect_row locker "BLOCKED +locker +mutex $hex <m> held by $owner +locker $at$(line locker)\)"
  expect_row the-waiter "BLOCKED +the-waiter +cond $hex <c> +cond_waiter $at$(line the-waiter)\)"
  expect_row sleeper "BLOCKED +sleeper +sleep +sleeper $at$(line sleeper)\)"
  expect_row joiner "BLOCKED +joiner +join $sleeper +joiner $at$(line joiner)\)"
  expect_row inline-child "BLOCKED +inline-child +sleep +inline_child $at$(line inline-child)\) \[inline on $ijoiner's stack\]"
  expect_row inline-joiner "BLOCKED +inline-joiner +join $child \(inline\) +inline_joiner $at$(line inline-joiner)\)"
  # Backtraces: each reaches its thread's function; a parked one starts in
  # ito's switch; the running ones are their kernel threads'.
  for t in owner:owner locker:locker the-waiter:cond_waiter sleeper:sleeper joiner:joiner \
           inline-child:inline_child inline-joiner:inline_joiner spinner-a:spinner \
           spinner-b:spinner main:main; do
    expect_bt "${t%%:*}" "^#[0-9]+ .*[ ]${t#*:} \(.*gdb_target\.c:[0-9]+"
  done
  for t in owner locker the-waiter sleeper joiner inline-child; do
    expect_bt $t "^#0 .*(switch|ctx_jump)"
  done
  expect_bt main "^\(on LWP [0-9]+\)"
  for t in spinner-a spinner-b; do   # running: its kernel thread's; preempted: through the signal frame
    case $(row $t | awk '{ print $2 }') in
      RUNNING) expect_bt $t "^\(on LWP [0-9]+\)" ;;
      *) expect_bt $t "^#[0-9]+ +<signal handler called>" ;;
    esac
  done
  expect_bt inline-child "runs inline on the stack of thread $ijoiner"
  expect_bt inline-child "^#[0-9]+ .* inline_joiner \("   # it goes on into its joiner's frames
  expect_bt inline-joiner "^#0 .*ito__join_inline"        # the joiner's part only
  if block "$ijoiner" inline-joiner | grep -q "inline_child ("; then
    block "$ijoiner" inline-joiner; fail "$kind: the joiner's backtrace shows its child's frames"
  fi
  if grep -q "Python Exception" "$report"; then cat "$report"; fail "$kind: a Python exception"; fi
}

check live "$tmp/live"

# The core file: the same report, and one backtrace by id.
locker=$(awk '$3 == "locker" { print $1 }' "$tmp/live")
# (gdb -batch exits with the status of its last command: the error first.)
gdb -batch -nx "$@" "$target" "$tmp/core" -ex "ito-bt 99999" -ex "info ito-threads" -ex "ito-bt all" \
  -ex "ito-bt $locker" > "$tmp/corereport" 2>&1 ||
  { cat "$tmp/corereport"; fail "gdb on the core file (status $?)"; }
check core "$tmp/corereport"
# The core was written while the process stood where the live listing saw it.
table() { awk '/^Id +State/ { p = 1 } p; /ito thread\(s\)$/ { exit }' "$1"; }
[ "$(table "$tmp/live")" = "$(table "$tmp/corereport")" ] ||
  { table "$tmp/live"; table "$tmp/corereport"; fail "the core's list differs from the live one"; }
awk '/^Thread .*"locker", BLOCKED/ { n++ } END { exit n == 2 ? 0 : 1 }' "$tmp/corereport" ||
  { cat "$tmp/corereport"; fail "core: ito-bt $locker did not print locker's backtrace"; }
grep -q "no ito thread 99999" "$tmp/corereport" ||
  { cat "$tmp/corereport"; fail "core: ito-bt of an unknown id does not say so"; }

echo "--- live"; cat "$tmp/live"
echo "--- core"; cat "$tmp/corereport"
echo "gdb tools: ok"
