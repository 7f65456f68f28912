#!/bin/sh
# SPDX-License-Identifier: MIT
# The echo pair (echo_server.c, echo_client.c):
#  1. a server with --max-conns 10; a client with 8 connections of 200 small
#     messages, then one with 2 connections of 20 messages of 100000 bytes
#     (sent in pieces). Every byte echoed is checked by the client; both
#     clients and the server exit 0, and the server's summary counts 10
#     connections and every byte.
#  2. a server stopped by SIGTERM while a client is sending: it exits 0 with
#     its summary, and the client, cut off, exits on its own.
# Every process runs under timeout: the test never hangs.
# Usage: echo_test.sh <echo_server> <echo_client>
set -eu
server=$1
client=$2
tmp=$(mktemp -d)
spid=
cpid=
# On a failure: timeout passes SIGTERM on to the server or client it runs,
# and kills it 5 s later if it is still there.
cleanup() {
  for p in $spid $cpid; do kill -TERM "$p" 2>/dev/null || :; done
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "echo_test: FAILED: $*"
  for f in "$tmp"/*; do
    [ -s "$f" ] && { echo "--- ${f##*/}:"; cat "$f"; }
  done
  exit 1
}

# start_server ARGS...: a server in the background ($spid), its port in $port,
# read from its first line.
start_server() {
  : >"$tmp/server.out"   # now: the loop below must not read the last server's line
  timeout -k 5 60 "$server" "$@" >"$tmp/server.out" 2>"$tmp/server.err" &
  spid=$!
  n=0
  while port=$(sed -n '1s/^listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$tmp/server.out") &&
        [ -z "$port" ]; do
    kill -0 "$spid" 2>/dev/null || fail "the server exited before it listened"
    n=$((n + 1))
    [ "$n" -lt 300 ] || fail "no 'listening on 127.0.0.1:PORT' line from the server within 30 s"
    sleep 0.1
  done
}

# 1. --max-conns: two clients, then the server exits by itself.
start_server 0 --max-conns 10
timeout -k 5 60 "$client" 127.0.0.1 "$port" --conns 8 --msgs 200 --size 100 >"$tmp/client1.out" 2>"$tmp/client1.err" ||
  fail "client 1 exited with status $?"
timeout -k 5 60 "$client" 127.0.0.1 "$port" --conns 2 --msgs 20 --size 100000 >"$tmp/client2.out" 2>"$tmp/client2.err" ||
  fail "client 2 exited with status $?"
st=0
wait "$spid" || st=$?
spid=
[ "$st" -eq 0 ] || fail "the server (--max-conns 10) exited with status $st"
bytes=$((8 * 200 * 100 + 2 * 20 * 100000))
grep -qx "echo_server: 10 connections, $bytes bytes echoed" "$tmp/server.out" ||
  fail "the server's summary is not '10 connections, $bytes bytes echoed'"
[ ! -s "$tmp/server.err" ] || fail "the server reported errors"
grep -q 'messages/s' "$tmp/client1.out" && grep -q 'median .* us, p99 .* us' "$tmp/client1.out" ||
  fail "client 1 printed no rate or round trips"
cat "$tmp/client1.out" "$tmp/client2.out"

# 2. SIGTERM while a client sends (timeout passes the signal on to the
# server). Its connections read end of file, so the server exits 0; the
# client sees its connections end and fails (exit 1), but must not hang.
start_server
timeout -k 5 60 "$client" 127.0.0.1 "$port" --conns 2 --msgs 5000000 >"$tmp/client3.out" 2>"$tmp/client3.err" &
cpid=$!
sleep 1
kill -TERM "$spid"
st=0
wait "$spid" || st=$?
spid=
[ "$st" -eq 0 ] || fail "the server exited with status $st after SIGTERM"
summary=$(grep -x 'echo_server: [0-9]* connections, [0-9]* bytes echoed' "$tmp/server.out") ||
  fail "no summary from the server after SIGTERM"
st=0
wait "$cpid" || st=$?
cpid=
[ "$st" -ne 124 ] && [ "$st" -ne 137 ] || fail "the client did not end after the server stopped"
echo "after SIGTERM: $summary (the client exited with status $st)"
echo "echo_test: ok"
